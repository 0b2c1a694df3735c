// Dynamic shapes in the tracer: sizes and ints that are symbolic.
//
// A size stays a ConstantValue while it is static, so static traces are unchanged. When the
// compile makes an input's dimension (or an int argument) symbolic, the torch bridge gives a
// fake whose size is a torch SymInt of the trace's ShapeEnv; the tracer then keeps it as a
// SymNumberValue backed by a graph node: a placeholder for a symbol of an input (`s0`, read by
// generated code from `L['x'].shape[0]`), or the node computing it (`x.size(1)`, `s0 * 2`).
// Arithmetic on them is recorded; a Python branch on one asks the ShapeEnv, which guards on
// the answer; where Python needs a concrete number (range(), formatting) the value is
// specialised, which the ShapeEnv also guards. All symbolic algebra is torch's.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/tracer.h"

namespace bytegraph::trace {

struct TraceResult;

// A Python int, float or bool the trace only knows symbolically (a torch SymInt, SymFloat or
// SymBool of its ShapeEnv), computed by graph node `node`.
class SymNumberValue : public Value {
 public:
  SymNumberValue(int node, py::Ref<> fake, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), node_(node), fake_(std::move(fake)) {}
  int node() const { return node_; }
  PyObject* fake() const { return fake_.get(); }  // borrowed
  std::string repr() const override;
  PyObject* python_type() const override;
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  // Asks the ShapeEnv, which records a guard on the answer (not a graph break).
  bool truthy(Tracer& tracer) const override;
  // The number's other methods and attributes (bit_length, is_integer, real): read on its
  // value, specialised (a guard on it).
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;

 private:
  int node_;
  py::Ref<> fake_;
};

// slice(start, stop[, step]) with a symbolic bound (`x[:, :n]`).
class SliceValue : public Value {
 public:
  explicit SliceValue(Args parts) : parts_(std::move(parts)) {}
  const Args& parts() const { return parts_; }
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)&PySlice_Type; }
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;

 private:
  Args parts_;
};

// One trace's symbolic state: the bridge session's shape methods, the symbols lifted as
// graph inputs, and the sources the shape guards will read.
class SymbolicShapes {
 public:
  SymbolicShapes(Tracer& tracer, PyObject* session);

  struct TensorInput {
    py::Ref<> fake;
    std::vector<int> unchecked_sizes, unchecked_strides;  // left to the shape guards
    std::vector<SymbolicInnerTensor> inner;
    std::vector<int> symbol_nodes;  // the placeholders of the symbols in its sizes, strides, offset
  };
  // The fake of input tensor `real`; symbolic sizes that are fresh symbols become size
  // placeholders (added to the graph before the tensor's own placeholder).
  TensorInput tensor_input(PyObject* real, const guards::SourcePtr& source);
  // A symbolic int input (an int placeholder), or null when `real` stays a constant.
  // `attribute`: an int an object keeps (symbolic only once seen to change, even under
  // dynamic=True, where arguments are symbolic from the start).
  ValuePtr int_input(PyObject* real, const guards::SourcePtr& source, bool attribute = false);
  // A value for symbolic number `fake` (a SymInt/SymFloat/SymBool computed from fakes): a
  // constant when the ShapeEnv knows it, the placeholder of a lifted symbol, or make_node().
  ValuePtr number(PyObject* fake, const std::function<ValuePtr()>& make_node);

  // Calls into the bridge's Shapes; `where` is the user's location.
  bool guard_bool(PyObject* fake);
  py::Ref<> specialize(PyObject* fake, const std::string& reason);
  // Whether `Tensor.item()` stays in the graph as an unbacked symbol (config's
  // capture_scalar_outputs, or fullgraph, as under torch.compile), and switching the ShapeEnv
  // to make one.
  bool captures_scalar_outputs() const;
  void allow_scalar_outputs();
  // After an op ran on fakes: logs the guards it added (only when the dynamic log is on).
  void after_op();
  // Whether any value of this trace is symbolic (the session made a ShapeEnv).
  bool active() const;
  // The shape guards as the trace leaves them, as text ("SHAPE_GUARD: ..."), for the viewer.
  std::vector<std::string> guard_preview() const;
  // Rollback: forgets lifted symbols whose placeholders were dropped.
  void truncate(size_t length);

  // Source name -> source of every input the shape guards may read.
  std::unordered_map<std::string, guards::SourcePtr> input_sources;

 private:
  std::string where() const;
  py::Ref<> shapes() const;  // the session's Shapes, or null

  Tracer& tracer_;
  PyObject* session_;  // borrowed: the tracer owns the session
  bool may_be_dynamic_ = false;
  bool log_guards_ = false;
  bool capture_scalar_outputs_ = false;
  std::unordered_map<std::string, ValuePtr> symbols_;  // lifted symbol name -> placeholder value
};

// A torch SymInt/SymFloat/SymBool object; or a tuple/list holding one.
bool is_symbolic_object(PyObject* object);
bool contains_symbolic_object(PyObject* object);
// Any SymNumberValue among the arguments (not looking inside containers).
bool has_symbolic(const Args& args, const KwArgs& kwargs = {});
// The graph node behind a tensor or symbolic number, else -1.
int graph_node_of(const ValuePtr& value);

// The result of recorded node `node` when it is a symbolic number: folded to a constant when
// the ShapeEnv knows it, else a SymNumberValue.
ValuePtr wrap_symbolic_number(Tracer& tracer, int node, PyObject* result);
// Tensor metadata read from the fake (x.shape, x.size(), x.stride(1), x.numel(), ...):
// constants when static; symbolic items become SymNumberValues. Null for a method whose
// result is a tensor (`x.type(dtype)` converts): the caller records it as an op.
ValuePtr tensor_metadata(Tracer& tracer, const ValuePtr& tensor, const std::string& name, bool attribute,
                         const Args& args, const KwArgs& kwargs);
ValuePtr tensor_size(Tracer& tracer, const ValuePtr& tensor, int dim);
// `tensor.item()` kept in the graph (SymbolicShapes::captures_scalar_outputs): a fresh unbacked
// symbol while tracing, the tensor's value when the graph runs.
ValuePtr scalar_output(Tracer& tracer, const ValuePtr& tensor);
// Python operators with a symbolic operand and no tensor: recorded; null when not applicable.
ValuePtr symbolic_operator(Tracer& tracer, PyObject* function, const Args& operands);
// Builtins called with symbolic arguments (int(), min(), range(), ...); null when the usual
// handling applies.
ValuePtr symbolic_builtin(Tracer& tracer, Value& builtin, PyObject* function, const Args& args, const KwArgs& kwargs);
// The concrete number a symbolic value has now, guarded (logged with `reason`); other values
// are returned as they are.
ValuePtr specialize(Tracer& tracer, const ValuePtr& value, const std::string& reason);
// A key or index for a Python container: symbolic numbers and slices with symbolic bounds are
// specialised (`reason` for the log); anything else is returned as it is.
ValuePtr concrete_key(Tracer& tracer, const ValuePtr& key, const std::string& reason);
// BUILD_SLICE / BINARY_SLICE parts with a symbolic bound: a SliceValue; null otherwise.
ValuePtr symbolic_slice(const Args& parts);

// After the backend ran (it may add guards of its own): adds the ShapeEnv's guards to the
// result's guard set and refreshes its guard listing. Nothing for a static trace.
void add_shape_guards(TraceResult& result);

}  // namespace bytegraph::trace
