// Resume functions: the continuation of a frame split at a graph break, as a code object made
// from the ORIGINAL code, named after the user's function and the line it continues at
// (`foo2 (resumed at line 7)`), so tracebacks and logs name the user's code.
//
// The function takes the value stack at `offset` (NULLs excepted: trap 9, they are pushed
// again by PUSH_NULL; a loop's iterator comes as a tuple of the items it has left, so the
// resumed loop is traced over a known sequence; an open `with torch.no_grad()` block is entered
// again by the prologue, so the mode and its exit are those of a real with statement) and the
// live locals as positional arguments, named `___stack<i>` and by
// the locals' own names. Its prologue is the original prefix (COPY_FREE_VARS, RESUME), the
// stack rebuilt from those arguments, and a jump to `offset`; after it come the original
// instructions, exception table included, so the rest runs exactly as before and can be
// captured (and split again) like any other frame. Its free variables are the original's free
// variables followed by its cell variables, so the caller passes its own cells in the closure
// and closures made before the break keep sharing them (the prologue has COPY_FREE_VARS, and
// no MAKE_CELL).
#pragma once

#include <Python.h>

#include <string>
#include <utility>
#include <vector>

#include "python/ref.h"

namespace bytegraph::codegen {

// What one stack slot at the continuation holds, and how the prologue rebuilds it.
enum class StackSlot {
  Value,     // an argument, pushed by LOAD_FAST
  Null,      // the call protocol's NULL: PUSH_NULL, no argument
  Iterator,  // a loop's iterator, passed as a tuple of its remaining items: LOAD_FAST, GET_ITER
  Context,   // the __exit__ of an open grad-mode `with` block: the prologue enters it again
  ListIterator,  // a loop's iterator over a list, passed as (list, index): the prologue calls the
                 // slot's context (list_iterator_at) on it, which gives the list's own iterator
};

struct ResumeSpec {
  int offset = -1;                  // the original instruction to continue at
  std::vector<StackSlot> stack;     // the stack there, bottom first
  std::vector<py::Ref<>> contexts;  // per slot: the context manager class of a Context slot
  std::vector<std::string> locals;  // live locals, passed after the stack values
  std::string name;                 // co_name
  std::string qualname;             // co_qualname (empty: the name)
};

struct ResumeCode {
  py::Ref<> code;
  // (offset in `code`, offset in the original) for every instruction taken from the original.
  std::vector<std::pair<int, int>> original_offsets;
};

ResumeCode make_resume_code(PyCodeObject* original /* borrowed */, const ResumeSpec& spec);

// The name of the argument that carries stack position `position`: the prefix and the number.
inline constexpr const char* kStackArgumentPrefix = "___stack";
std::string stack_argument_name(std::size_t position);

}  // namespace bytegraph::codegen
