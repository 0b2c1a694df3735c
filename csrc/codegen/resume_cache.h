// Resume functions, made once per (original code, offset, stack shape, live locals) and kept
// for the process (until reset): recompiles and repeated breaks reuse them, and a resume
// function that breaks again gets its continuation built from the ORIGINAL code too (its
// offsets are mapped back first).
#pragma once

#include <Python.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/resume_function.h"
#include "python/ref.h"

namespace bytegraph::codegen {

// The resume code continuing `code` (an original code or a resume code) at `offset` in it.
py::Ref<> resume_code_for(PyCodeObject* code /* borrowed */, int offset, const std::vector<StackSlot>& stack,
                          const std::vector<py::Ref<>>& contexts, const std::vector<std::string>& live_locals);

// For a resume code: its original code and the original offset of each of its instructions.
struct ResumeOrigin {
  py::Ref<> original;
  std::vector<std::pair<int, int>> offsets;  // (offset in the resume code, offset in the original)
  int offset = -1;                           // the original instruction it continues at
  std::vector<StackSlot> stack;              // the stack it takes there, bottom first
};
const ResumeOrigin* resume_origin(PyObject* code /* borrowed */);
bool is_resume_code(PyObject* code /* borrowed */);
// `offset` in `code` mapped to the original code's offset (itself for an original code).
int original_offset(PyObject* code /* borrowed */, int offset);
// Whether instruction `offset` of `code` is one of its original's (true for code that is not
// resume code); false for what a resume function adds, such as an unbound cell's handler.
bool has_original_instruction(PyObject* code /* borrowed */, int offset);

size_t resume_cache_size();
// Every resume code made so far (for tests and tools).
std::vector<py::Ref<>> resume_codes();
void reset_resume_cache();

}  // namespace bytegraph::codegen
