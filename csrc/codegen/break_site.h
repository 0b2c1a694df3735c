// Whether (and how) a frame can be split at the instruction a trace stopped at.
//
// The split runs that instruction for real between the graph call and the resume call(s),
// so generated code must know where execution goes next and what the value stack looks like
// there: each continuation is (offset, values popped, values pushed) relative to the stack
// the trace restored. Pushed values are never NULL (instructions that may push one, such as
// LOAD_METHOD, are not split at). Where an exception handler protects the instruction (a try
// block, a with statement), generated code protects it the same way and continues in the
// handler, in a resume function of its own, if it raises.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bytecode/instruction.h"

namespace bytegraph::codegen {

struct Continuation {
  int offset = -1;  // the original code's instruction to resume at
  int pops = 0;
  int pushes = 0;
  int null_pushed = -1;  // which of the pushed values is the call protocol's NULL, or -1
};

// The exception handler protecting the breaking instruction: where the original continues if
// the instruction raises, with the stack cut to `depth` and (with `lasti`) the offset of the
// raising instruction pushed below the exception.
struct ExceptionHandler {
  int offset = -1;
  int depth = 0;
  bool lasti = false;
};

struct BreakSite {
  // MethodLoad: a method-form attribute load (LOAD_METHOD, LOAD_ATTR with its method bit),
  // which generated code runs as a plain attribute load plus the call protocol's NULL.
  enum class Kind { Call, Branch, Simple, Terminal, MethodLoad };
  Kind kind = Kind::Simple;
  std::size_t index = 0;  // of the breaking instruction in the decoded list
  // Branch: [fall-through, jump taken]; Terminal: empty; otherwise [fall-through].
  std::vector<Continuation> continuations;
  std::optional<ExceptionHandler> handler;
  std::string not_splittable;  // empty when generated code can run the instruction
};

// `in_grad_mode_block`: the caller checked that the handlers protecting the instruction only
// close grad-mode `with` blocks, which generated code handles by restoring the mode.
BreakSite find_break_site(const bytecode::InstructionList& instructions, int offset, bool in_grad_mode_block = false);

}  // namespace bytegraph::codegen
