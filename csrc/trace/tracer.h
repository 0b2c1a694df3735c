// One trace: the symbolic state shared by every frame of it (graph, guards, fake-tensor
// session, decoded code) and the per-frame interpreter state.
#pragma once

#include <Python.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bytecode/instruction.h"
#include "graph/graph.h"
#include "trace/bridge.h"
#include "trace/guard_log.h"
#include "trace/journal.h"
#include "trace/side_effects.h"
#include "trace/value.h"
#include "trace/values/state_switch.h"

namespace bytegraph::record {
class TraceEvents;
}

namespace bytegraph::trace {

class SymbolicShapes;

// An inner tensor of a wrapper-subclass input whose sizes the trace made symbolic (a DTensor's
// local shard of a dynamic batch): the sizes and strides its tensor guard leaves to the shape
// guards.
struct SymbolicInnerTensor {
  std::string name;
  std::vector<int> unchecked_sizes, unchecked_strides;
};

// A code object decoded once per trace, with what the interpreter needs to index it.
struct CodeInfo {
  py::Ref<> code;
  bytecode::InstructionList instructions;
  std::unordered_map<const bytecode::Instruction*, size_t> index;
  std::vector<std::string> localsplus_names;  // co_varnames + new cellvars + co_freevars
  std::vector<bool> is_cell;
  int nvarnames = 0;
  int nfree = 0;
  int argcount = 0, posonlyargcount = 0, kwonlyargcount = 0, flags = 0;
  std::string filename, name;
};

struct FrameState {
  CodeInfo* code = nullptr;
  py::Ref<> globals;
  py::Ref<> builtins;
  bool root_globals = false;  // globals of the traced function: reads get G['name'] sources
  // Otherwise the globals dict itself, held by the guards (`G(torch.nn.functional)`).
  guards::SourcePtr globals_source;
  bool root_builtins = false;  // the same builtins as the traced function
  guards::SourcePtr builtins_source;  // otherwise the builtins, held
  Args stack;
  Args locals;   // localsplus order
  Args closure;  // CellValues for the free variables
  py::Ref<> kw_names;
  size_t pc = 0;
  const bytecode::Instruction* current = nullptr;
  ValuePtr result;  // set by RETURN_VALUE
  bool outermost = false;
  // A generator's frame (values/generators.h) runs until it yields: run_frame then returns
  // with the yielded value here, and the frame resumes from the next instruction.
  bool generator = false;
  ValuePtr yielded;
  // An exception thrown into a suspended generator's frame (gen.throw(), gen.close()): raised
  // at its yield when the frame resumes.
  ValuePtr thrown;
  // Except and finally blocks being run (PUSH_EXC_INFO entered them, POP_EXCEPT not yet left).
  int handlers_open = 0;

  ValuePtr pop();
  ValuePtr& top(size_t depth = 0);
  void push(ValuePtr value) { stack.push_back(std::move(value)); }
  Args pop_n(size_t n);  // in stack order
  void jump_to(const bytecode::Instruction* target);
};

// Where a trace stopped early: the instruction of the outermost frame it was rolled back to.
struct BreakInfo {
  std::string kind;
  std::string message;
  int offset = -1;
  std::string opname;
  std::vector<std::string> user_stack;  // "file:line in function", outermost first
  // The symbolic state restored at the break, as reprs (for logs, explain and tests).
  std::vector<std::string> stack;
  std::vector<std::pair<std::string, std::string>> locals;  // bound locals only
};

class Tracer {
 public:
  // `shape_policy`: what may be symbolic (bytegraph._dynamic.ShapePolicy), or null: static.
  explicit Tracer(py::Ref<> function, PyObject* shape_policy = nullptr);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  const Bridge& bridge;
  graph::Graph graph;
  GuardLog guards;
  Journal journal;  // undo records of the current outermost instruction
  SideEffects side_effects;
  std::vector<FrameState*> frames;  // outermost first
  std::vector<std::string> pending_user_stack;  // filled by the innermost frame on a break
  // Called with one "TRACE <opname> <argval> [<stack reprs>]" line before each instruction;
  // null when nobody listens (then logging costs nothing).
  py::Ref<> log;
  // The event stream (csrc/record/) while a recorder is attached; null when nobody listens,
  // which is the interpreter's only per-instruction cost of recording.
  std::shared_ptr<record::TraceEvents> events;
  // Symbolic sizes and ints (symbolic.h); dormant while every value is static.
  std::unique_ptr<SymbolicShapes> shapes;
  // Whether the trace may break where one graph would be less faithful than two (a failing op
  // after a side effect): false under fullgraph, which keeps one graph as torch.compile does.
  bool may_split = false;
  // __torch_function__ dispatch (values/torch_function.h): off inside an override, as in eager;
  // `torch_function_inlined` once the trace modelled dispatch (an override traced, a tensor of
  // a dispatching subclass read), so the graph must run with subclass dispatch off.
  bool torch_function_subclass_enabled = true;
  bool torch_function_inlined = false;
  // An op on a tensor whose override runs with the op (a traceable wrapper subclass's own, as
  // NestedTensor's): the graph must run with subclass dispatch on, so no override is modelled.
  bool override_runs_with_op = false;
  // A folded query read autocast settings (the global-state guard then compares them always).
  bool read_autocast_settings = false;
  // State the trace read or switched that the global-state guard compares only then
  // (values/state_switch.h): bit i for guards::TracedState i.
  unsigned read_traced_states = 0;
  void read_state(guards::TracedState state) { read_traced_states |= 1u << static_cast<int>(state); }
  // sys.exception() / sys.exc_info() was answered as none outside the trace's except blocks:
  // the global-state guard checks that the frame starts with no exception handled.
  bool read_no_handled_exception = false;
  // The exception being handled (what sys.exception() returns), as the trace's except blocks
  // set it; null where it is whatever it is outside the trace.
  ValuePtr handled_exception;
  // Exceptions raised where that was unknown: their __context__ is the caller's.
  Args exceptions_with_outside_context;
  // The grad mode before each torch._C._set_grad_enabled the trace recorded (which switched the
  // mode the fakes run under): a rollback puts the mode back.
  std::vector<bool> grad_modes_before;
  // The state before each switch of torch's state the trace recorded (values/state_switch.h).
  std::vector<StateBefore> torch_state_before;
  // The real autocast modes the trace's autocast blocks entered (innermost last): a rollback
  // leaves those entered after its checkpoint, the end of the trace all of them.
  std::vector<py::Ref<>> autocast_modes;

  // Run when the trace ends: values that can reach themselves (a generator whose frame holds
  // it) drop what they hold, so the reference cycles are broken.
  std::vector<std::function<void()>> at_end;

  CodeInfo& code_info(PyObject* code);
  // The same, shared: a trace result keeps its root code's decoded copy for codegen.
  std::shared_ptr<CodeInfo> shared_code_info(PyObject* code);
  PyObject* function() const { return function_.get(); }
  PyObject* session() const { return session_.get(); }  // the bridge Session (borrowed)

  // Wraps a real value read from the frame, a global or an attribute (Dynamo's
  // VariableBuilder), installing the guards its kind needs.
  ValuePtr wrap(PyObject* real, guards::SourcePtr source);
  // A Python function to inline, with its defaults and closure cells wrapped.
  std::shared_ptr<UserFunctionValue> wrap_user_function(PyObject* function, const guards::SourcePtr& source);
  // Call before changing `value` in place: saves its state for rollback and, for a value from
  // outside the trace, records the change so generated code writes it back. A value from
  // outside that has no source cannot be written back: that is a break.
  void will_mutate(const ValuePtr& value);
  // `value` stored into local `name`: the op node behind it is named after the local, the
  // first time only (graph inputs keep theirs).
  void name_after_local(const ValuePtr& value, const std::string& name);
  // The trace relied on which object `value` is: guard its identity (a no-op for values
  // made during the trace, and for those already pinned).
  void pin_identity(const ValuePtr& value);
  // The real tensor behind a tensor read from outside the frame (an input or a module's), or null.
  PyObject* real_tensor(const ValuePtr& value) const;
  // A module's tensor that the graph holds (a get_attr node, a leaf module's parameter):
  // guarded by identity and metadata at `source`.
  // Guards a wrapper subclass's flatten metadata and inner tensors (nothing for other tensors).
  // Guards a traceable wrapper subclass's class, flatten metadata and inner tensors; inner
  // tensors with symbolic sizes (symbolic_inner) leave those to the shape guards.
  void guard_wrapper_subclass(PyObject* real, const guards::SourcePtr& source,
                              const std::vector<SymbolicInnerTensor>& symbolic_inner = {});
  void pin_module_tensor(PyObject* real, const guards::SourcePtr& source);
  // Guards which callable `real` is, at `source` (see wrap.cpp).
  void pin_callable(PyObject* real, const guards::SourcePtr& source);
  // The value already made for a mutable object from outside the trace (one value per object),
  // or null.
  ValuePtr known_object(PyObject* real, const guards::SourcePtr& source);
  // A tensor reached through a module: a get_attr node on the GraphModule root.
  ValuePtr wrap_module_tensor(PyObject* real, const guards::SourcePtr& source);

  // Records one operation: runs it on fakes, appends the node, wraps the result.
  ValuePtr record(graph::Op op, py::Ref<> target, const Args& args, const KwArgs& kwargs);
  ValuePtr record_module_call(PyObject* module, const std::string& name, const Args& args, const KwArgs& kwargs);

  // Inlines a user function: runs its bytecode in a child frame sharing this trace.
  ValuePtr inline_call(const UserFunctionValue& function, const Args& args, const KwArgs& kwargs);

  graph::UserLocation location();
  PyObject* fake_of(int node) { return graph.node(node).fake.get(); }
  std::string describe_fake(int node);

  // Graph inputs: placeholder nodes with their source names and real tensors.
  struct Input {
    int node;
    std::string source;
    py::Ref<> real;
    ValuePtr value;
  };
  std::vector<Input> inputs;
  // A module's tensor among the inputs (a tensor attribute of a module, or a parameter or
  // buffer passed in as well): its placeholder's tensor_dict says so (graph::Node::tensor_dict).
  void mark_static_input(PyObject* real /* borrowed */);
  struct ModuleTensor {
    int node;
    py::Ref<> real;
    ValuePtr value;
  };
  std::vector<ModuleTensor> module_tensors;
  // The real tensor a value read from outside stands for (an input, a module's parameter or
  // buffer), or null for tensors the graph makes; and the value standing for a real tensor.
  PyObject* real_tensor_of(const Value* value) const;
  ValuePtr value_of_real_tensor(PyObject* real) const;
  // Drops inputs and cached wrappers of nodes at or after `length` (rollback).
  void truncate(size_t length);

 private:
  ValuePtr wrap_tensor(PyObject* real, const guards::SourcePtr& source);
  ValuePtr wrap_result(int node, PyObject* result);
  bool in_handled_region() const;
  bool writes_outside(PyObject* target, PyObject* fake_args, PyObject* fake_kwargs);
  bool has_side_effects() const;
  void keep_failures_recoverable(const std::string& what, const char* lasting);
  const char* lasting_effect(PyObject* target, PyObject* fake_args, PyObject* fake_kwargs);
  bool graph_has_handled_op_ = false;  // an op an except or finally block covers
  bool graph_cannot_rerun_ = false;    // an op whose effect outlasts the graph (lasting, above)
  py::Ref<> outside_tensors_;          // a list: the fakes of inputs and module tensors seen so far
  size_t outside_inputs_seen_ = 0, outside_module_tensors_seen_ = 0;
  ValuePtr wrap_items(int node, PyObject* result);
  py::Ref<> function_;
  py::Ref<> session_, run_op_, fake_input_;
  std::unordered_map<PyObject*, std::shared_ptr<CodeInfo>> codes_;
  std::unordered_map<std::string, std::string> source_lines_;  // "file:line" -> text
  int inline_depth_ = 0;
  // Values reachable from themselves (a closure holding its own function, a list containing
  // itself) would make eager wrapping recurse without end: wrapping is bounded instead.
  int wrap_depth_ = 0;
  // Functions being wrapped right now: a closure that holds its own function gets the same
  // value back. Every wrapped function is remembered so that the reference cycles this makes
  // (function -> cell -> function) are broken when the trace ends.
  std::unordered_map<PyObject*, std::shared_ptr<UserFunctionValue>> functions_in_progress_;
  std::vector<std::shared_ptr<UserFunctionValue>> wrapped_functions_;
};

// The globals dict of another module as a guard source that holds it (`G(module.name)`).
guards::SourcePtr held_globals_source(PyObject* globals);

// Builds Python arguments for a recorded op from symbolic ones.
py::Ref<> graph_args(Tracer& tracer, const Args& args, ArgMode mode);
py::Ref<> graph_kwargs(Tracer& tracer, const KwArgs& kwargs, ArgMode mode);

// Runs a frame to its RETURN_VALUE (interpreter.cpp). Outermost frames checkpoint each
// instruction and stop at a graph break, filling `break_info` and returning null.
ValuePtr run_frame(Tracer& tracer, FrameState& frame, BreakInfo* break_info);

}  // namespace bytegraph::trace
