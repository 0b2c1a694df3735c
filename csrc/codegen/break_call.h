// Code generation for a frame split at a graph break (Dynamo's "compile the partial graph
// and resume"). The new code object
//   1. runs the original prefix and calls the compiled graph (everything before the break);
//   2. rebuilds the value stack the trace stopped with, stores the live locals in their slots
//      and the cell variables' contents in their cells (all values are computed before any
//      slot or cell is written, so a value re-read from an argument sees the argument);
//   3. runs the breaking instruction itself, for real (a CALL with its KW_NAMES and PRECALL;
//      for a branch on a tensor, the original conditional jump choosing between two paths);
//   4. on each path, calls that continuation's resume function with the stack left there
//      and the live locals, and returns its result. The resume function's closure is built
//      from this frame's cells and free variables, named by its co_freevars.
#pragma once

#include <Python.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/instruction.h"
#include "codegen/break_site.h"
#include "codegen/eager_fallback.h"
#include "codegen/output_plan.h"
#include "codegen/side_effects.h"
#include "guards/source.h"
#include "python/ref.h"

namespace bytegraph::codegen {

struct ResumeCall {
  py::Ref<> code;                   // the resume function's code object
  std::vector<bool> stack_nulls;    // the stack on this path after the instruction (true: a NULL or
                                    // the exit of a block the resume function enters again, not passed)
  std::vector<bool> exits;          // which of those are such exits
  std::vector<std::string> locals;  // locals passed after the non-NULL stack values
};

struct BreakCall {
  std::vector<OutputPlan> stack;  // bottom first
  std::vector<std::pair<std::string, OutputPlan>> locals;
  std::vector<std::pair<std::string, OutputPlan>> cells;  // contents of cell variables, by name
  std::vector<SideEffectPlan> effects;  // written back once the stack and locals are evaluated
  std::vector<OutputPlan> new_objects;  // made first (codegen/new_objects.h)
  py::Ref<> kw_names;  // the CALL's pending keyword names, or null
  int offset = -1;     // of the breaking instruction in the code being replaced
  std::vector<ResumeCall> resumes;  // one per continuation of find_break_site, in order
  // With a handler protecting the instruction (BreakSite::handler): the resume function that
  // continues in it, and the offset (in code units) of the instruction in that resume code,
  // which replaces the raising offset CPython pushes for a handler that wants it.
  std::optional<ResumeCall> handler_resume;
  int handler_lasti = 0;
  // Set when the break is inside grad-mode `with` blocks: torch._C._set_grad_enabled and the
  // mode outside the blocks. The graph leaves the blocks' mode on; generated code sets the
  // outside mode before rebuilding the stack (whose Enter plans enter the blocks again), when
  // the breaking instruction raises (then re-raises), and before each resume call (the
  // resume function enters the blocks itself).
  py::Ref<> set_grad_enabled, grad_enabled_outside;
  // Set when the break is inside other `with` blocks entered again (trace/values/
  // context_reentry.h): the graph put back the state outside them, the stack's Enter plans make
  // and enter fresh contexts for the breaking instruction, and generated code exits them
  // (innermost first) before each resume call; if the instruction raises, the original's
  // cleanup of the innermost block gets their exits.
  bool close_contexts = false;
};

// `instructions`: `code` decoded (the trace's copy); `site`: find_break_site's answer there.
// `compiled_fn` (borrowed) is called with `inputs`; null when the graph has no operations.
// `fallback`: what runs when the graph raises (codegen/eager_fallback.h).
py::Ref<> generate_break_call(PyCodeObject* code /* borrowed */, const bytecode::InstructionList& instructions,
                              const BreakSite& site, const BreakCall& call, const std::vector<guards::SourcePtr>& inputs,
                              PyObject* compiled_fn, const EagerFallback& fallback);

}  // namespace bytegraph::codegen
