// How generated code rebuilds a Python value after the compiled graph has run: from the
// graph's outputs, constants, and values re-read from their sources. At a graph break the
// value stack may also hold the call protocol's NULL, a loop's iterator and the exit of an
// open grad-mode block.
//
// The contract between the tracer (trace/plan_writer.h writes plans from symbolic values) and
// codegen (emit_plan turns them into instructions). Plans never travel through Python.
#pragma once

#include <Python.h>

#include <string>
#include <vector>

#include "codegen/code_builder.h"

#include "guards/source.h"
#include "python/ref.h"

namespace bytegraph::codegen {

struct OutputPlan {
  enum class Kind {
    GraphOutput, Constant, Source, Tuple, List, Dict, NamedTuple, Null, Iterator, Attr, EnterContext, BoundMethod,
    MakeFunction,
    Set,           // a new set of `items`; with `constant` (frozenset), that class called on their tuple
    Call,          // `constant` called with `items` as its arguments
    GradModeExit,  // the exit of an open grad-mode block (`constant`: the mode it restores); split planning
                   // replaces it by EnterContext, it is never emitted
    ContextExit,   // the exit of an open block whose context `constant()` makes again (trace/values/
                   // context_reentry.h); likewise replaced by EnterContext
    Temp,          // an object generated code made before anything else (`index`: see new_objects.h)
    NewObject,     // how that object is made: `constant` the class, `make` its allocator; attributes
                   // `names` = `items`, then (dict subclasses) `keys` = the remaining items, set with `set_item`;
                   // a list or set subclass: the items after the attributes', added with `extend`
  };
  Kind kind = Kind::Constant;
  int index = -1;                // GraphOutput: position in the graph's output tuple; MakeFunction: flags
  py::Ref<> constant;            // Constant; MakeFunction: the code object; EnterContext: what makes the context (called with no arguments); BoundMethod: types.MethodType;
                                 // NamedTuple: what builds one from a tuple of its items (cls._make, or a structseq class)
  guards::SourcePtr source;      // Source
  std::vector<OutputPlan> items; // Tuple, List, NamedTuple, Dict (values), Iterator (remaining items; or, with `constant`
                                 // the function that makes it, that function's arguments), Attr (the owner), BoundMethod (function, self)
  std::string attribute;         // Attr
  std::vector<std::string> names;  // MakeFunction: the closure's cell/free variables
  py::Ref<> keys;                // Dict: a tuple of constant keys, in insertion order
  py::Ref<> make, set_item, extend;  // NewObject
  py::Ref<> made_from;           // NewObject: a second argument of `make` (a frozenset subclass's members)

  OutputPlan() = default;
  OutputPlan(OutputPlan&&) noexcept = default;
  OutputPlan& operator=(OutputPlan&&) noexcept = default;
  // Plans are values: copying one takes new references to its objects.
  OutputPlan(const OutputPlan& other);
  OutputPlan& operator=(const OutputPlan& other);

  bool uses_graph_outputs() const;

  static OutputPlan graph_output(int index);
  static OutputPlan of_constant(PyObject* value /* borrowed */);
  static OutputPlan of_source(guards::SourcePtr source);
  static OutputPlan null();
};

// Visits the Python objects `plan` owns (its constants, keys and sources' objects), for
// the cycle collector (python/gc.h).
void traverse(const OutputPlan& plan, py::Visitor& visit);

// The local that holds the graph's output tuple while values are rebuilt from it.
inline constexpr const char* kGraphOutputLocal = "___graph_out";

// Emits the instructions that push the value `plan` describes (code: the code being
// replaced, whose cells and free variables sources may name).
void emit_plan(CodeBuilder& builder, const OutputPlan& plan, PyCodeObject* code /* borrowed */);

// `with cls():` up to its body: pushes the instance's __exit__ (the value a with block keeps
// on the stack) with the context entered.
void emit_enter_context(CodeBuilder& builder, PyObject* cls /* borrowed */);

}  // namespace bytegraph::codegen
