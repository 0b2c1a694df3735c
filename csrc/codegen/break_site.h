// Whether (and how) a frame can be split at the instruction a trace stopped at.
//
// The split runs that instruction for real between the graph call and the resume call(s),
// so generated code must know where execution goes next and what the value stack looks like
// there: each continuation is (offset, values popped, values pushed) relative to the stack
// the trace restored. Pushed values are never NULL (instructions that may push one, such as
// LOAD_METHOD, are not split at). A continuation is not possible where an exception handler
// protects the instruction: generated code has no handler, so the frame runs eagerly.
#pragma once

#include <string>
#include <vector>

#include "bytecode/instruction.h"

namespace bytegraph::codegen {

struct Continuation {
  int offset = -1;  // the original code's instruction to resume at
  int pops = 0;
  int pushes = 0;
};

struct BreakSite {
  enum class Kind { Call, Branch, Simple, Terminal };
  Kind kind = Kind::Simple;
  std::size_t index = 0;  // of the breaking instruction in the decoded list
  // Branch: [fall-through, jump taken]; Terminal: empty; otherwise [fall-through].
  std::vector<Continuation> continuations;
  std::string not_splittable;  // empty when generated code can run the instruction
};

// `in_grad_mode_block`: the caller checked that the handlers protecting the instruction only
// close grad-mode `with` blocks, which generated code handles by restoring the mode.
BreakSite find_break_site(const bytecode::InstructionList& instructions, int offset, bool in_grad_mode_block = false);

}  // namespace bytegraph::codegen
