// Symbolic values: what the interpreter keeps on its stack and in its locals.
//
// Each kind knows its readable repr (logs, comptime), its source (where the real value came
// from, for guards and input names), what `getattr` and calling it mean symbolically, and
// how it appears as an argument of a recorded graph operation. The defaults decline with
// Unsupported, so a kind only implements what it understands.
#pragma once

#include <Python.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/output_plan.h"
#include "graph/graph.h"
#include "guards/source.h"
#include "python/errors.h"
#include "python/ref.h"

namespace bytegraph::codegen {
struct SideEffectPlan;
}

namespace bytegraph::trace {

class Tracer;
class PlanWriter;
class Value;
class SetValue;
using ValuePtr = std::shared_ptr<Value>;
using Args = std::vector<ValuePtr>;
using KwArgs = std::vector<std::pair<std::string, ValuePtr>>;

// Sets `name` in name/value pairs kept in first-write order (keyword arguments, the attributes
// an object gained in the trace): replaced where present, appended otherwise.
inline void assign_named(KwArgs& entries, const std::string& name, ValuePtr value) {
  for (auto& [entry_name, current] : entries) {
    if (entry_name == name) {
      current = std::move(value);
      return;
    }
  }
  entries.emplace_back(name, std::move(value));
}

// How a value is turned into a Python object for a graph operation: markers naming graph
// nodes (recording), or the fake values themselves (running the op on fakes).
enum class ArgMode { Graph, Fake };

class Value : public std::enable_shared_from_this<Value> {
 public:
  explicit Value(guards::SourcePtr source = nullptr) : source_(std::move(source)) {}
  virtual ~Value() = default;

  virtual std::string repr() const = 0;
  const guards::SourcePtr& source() const { return source_; }
  // The type of the value at run time, or null where the tracer does not know it. Borrowed.
  virtual PyObject* python_type() const { return nullptr; }
  virtual bool is_constant() const { return false; }
  // The constant's Python object (borrowed); only when is_constant().
  virtual PyObject* constant() const;
  virtual bool is_tensor() const { return false; }
  virtual bool is_null() const { return false; }

  virtual ValuePtr get_attr(Tracer& tracer, const std::string& name);
  // STORE_ATTR / DELETE_ATTR: the default is a break (the kind cannot record the change).
  virtual void set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value);
  virtual void del_attr(Tracer& tracer, const std::string& name);
  virtual ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs);
  virtual py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const;
  // Truthiness for branches; a tensor's is data dependent.
  virtual bool truthy(Tracer& tracer) const;
  // The items of a value with a statically known length (iteration, unpacking, *args).
  virtual std::optional<Args> unpack(Tracer& tracer);
  virtual ValuePtr get_item(Tracer& tracer, const ValuePtr& key);
  // The value's identity object if it stands for one known real object (modules, functions).
  virtual PyObject* real_object() const { return nullptr; }
  // A method read from another value and not called yet (`x.sum`, `xs.append`): that value
  // and the attribute name, so generated code can read it again at a graph break.
  virtual std::pair<ValuePtr, std::string> bound_attribute() const { return {}; }
  // Iterators (loop iterators, generators, map/filter/zip objects): the next item, or null
  // once exhausted. Advancing is journaled, so a rolled-back instruction un-advances it.
  virtual bool is_iterator() const { return false; }
  virtual ValuePtr next_item(Tracer& tracer);
  // For mutable kinds the journal has no record of its own for (sets, generators): what puts
  // the value's current state back on rollback; null for immutable kinds.
  virtual std::function<void()> saved_state() { return nullptr; }
  // How generated code makes this value again after the graph, for a kind that knows it (a
  // lazy iterator, an unstarted generator); nullopt leaves it to PlanWriter's rules. Throws
  // NotRestorable where the kind knows it cannot be made again.
  virtual std::optional<codegen::OutputPlan> remake(PlanWriter& writer);
  // For a value from outside the trace that the trace changed (Tracer::side_effects): what
  // generated code writes back to the real object, appended to `effects`. Throws
  // NotRestorable for a kind whose changes cannot be written back.
  virtual void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects);
  // BEFORE_WITH on a context manager the tracer models itself (grad modes, autocast,
  // profilers): {the __exit__ value, what __enter__ returned}; nullopt for the others, whose
  // Python __enter__/__exit__ are inlined.
  virtual std::optional<std::pair<ValuePtr, ValuePtr>> enter_with(Tracer&) { return std::nullopt; }

 private:
  guards::SourcePtr source_;
};

// The field names of a named tuple class (a tuple of str), or null.
py::Ref<> named_tuple_fields(PyObject* type);
// What builds an instance of the named tuple class from one tuple of its items:
// `cls._make` for collections.namedtuple classes, the class itself for structseqs.
py::Ref<> named_tuple_constructor(PyObject* type);
// torch.Size: a tuple subclass whose slices, concatenations and repetitions are torch.Size
// again (those of a named tuple are plain tuples).
bool is_torch_size(PyObject* type);

// Throws Unsupported(kind, message) (the tracer adds the user's location).
[[noreturn]] void unsupported(const std::string& kind, const std::string& message);

std::string py_repr(PyObject* object);
std::string py_str(PyObject* object);

// ---- constants ------------------------------------------------------------------------
// An immutable Python object known at trace time: numbers, strings, None, Ellipsis, dtypes,
// devices, torch.Size, ranges, slices, tuples of constants. Operations on constants are
// folded (computed for real), never recorded.
class ConstantValue : public Value {
 public:
  ConstantValue(py::Ref<> object, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), object_(std::move(object)) {}
  static ValuePtr make(py::Ref<> object, guards::SourcePtr source = nullptr);
  static ValuePtr none();
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(object_.get()); }
  bool is_constant() const override { return true; }
  PyObject* constant() const override { return object_.get(); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  bool truthy(Tracer& tracer) const override;
  std::optional<Args> unpack(Tracer& tracer) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;

 private:
  py::Ref<> object_;
};

// The constant True or False.
ValuePtr make_bool(bool value);

// ---- tensors --------------------------------------------------------------------------
class TensorValue : public Value {
 public:
  TensorValue(int node, py::Ref<> fake, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), node_(node), fake_(std::move(fake)) {}
  // The type user code sees (torch.Tensor, nn.Parameter, a subclass), never the fake's.
  void set_python_type(PyObject* type) { type_ = py::Ref<>::newref(type); }
  int node() const { return node_; }
  std::string repr() const override;
  PyObject* python_type() const override;
  bool is_tensor() const override { return true; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  bool truthy(Tracer& tracer) const override;
  std::optional<Args> unpack(Tracer& tracer) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  PyObject* fake() const { return fake_.get(); }  // borrowed
  std::string display_name;  // placeholders and get_attr: the node's name, for reprs
  py::Ref<> target;          // other nodes: what they call, named in reprs

 private:
  int node_;
  py::Ref<> fake_;
  py::Ref<> type_;  // null: torch.Tensor (what operations return)
};

// `x.sum`: a tensor method not yet called; calling it records a call_method node (or folds
// metadata methods such as size()/dim() to constants).
class TensorMethodValue : public Value {
 public:
  TensorMethodValue(ValuePtr tensor, std::string name, bool acts_outside_graph = false)
      : tensor_(std::move(tensor)), name_(std::move(name)), acts_outside_graph_(acts_outside_graph) {}
  std::string repr() const override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {tensor_, name_}; }

 private:
  ValuePtr tensor_;
  std::string name_;
  bool acts_outside_graph_;  // backward(), register_hook(), ...: calling it is a break
};

// ---- markers --------------------------------------------------------------------------
class NullValue : public Value {
 public:
  static ValuePtr get();
  std::string repr() const override { return "NullVariable"; }
  bool is_null() const override { return true; }
};

// ---- containers -----------------------------------------------------------------------
class SequenceValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  // `mutable_here`: created during the trace, so mutating it is a local effect.
  SequenceValue(bool is_list, Args items, guards::SourcePtr source = nullptr, bool mutable_here = true)
      : Value(std::move(source)), is_list_(is_list), mutable_here_(mutable_here), items(std::move(items)) {}
  std::string repr() const override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  PyObject* python_type() const override;
  bool is_list() const { return is_list_; }
  bool mutable_here() const { return mutable_here_; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  bool truthy(Tracer&) const override { return !items.empty(); }
  std::optional<Args> unpack(Tracer&) override { return items; }
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  bool is_size() const { return tuple_type && is_torch_size(tuple_type.get()); }
  // A named tuple's class (collections.namedtuple, a torch.return_types structseq), or null
  // for a plain tuple or list. Its fields name the items.
  py::Ref<> tuple_type;

 private:
  bool is_list_;
  bool mutable_here_;

 public:
  Args items;
};

class DictValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  DictValue(guards::SourcePtr source = nullptr, bool mutable_here = true)
      : Value(std::move(source)), mutable_here_(mutable_here) {}
  std::string repr() const override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  PyObject* python_type() const override { return (PyObject*)&PyDict_Type; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  bool truthy(Tracer&) const override { return !keys.empty(); }
  std::optional<Args> unpack(Tracer& tracer) override;  // the keys
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  void set_item(PyObject* key, ValuePtr value);
  int find(PyObject* key) const;  // index or -1
  bool mutable_here() const { return mutable_here_; }

  std::vector<py::Ref<>> keys;  // real keys (see dict_key), in insertion order
  Args values;

 private:
  bool mutable_here_;
};


// A for-loop iterator over a known list of items (lists, tuples, ranges, dict views,
// ModuleList/Sequential children, enumerate/zip results).
// iter(iterable) for a value whose items the tracer knows (a list, live; others as a
// snapshot of their items), or null.
ValuePtr iterator_over(Tracer& tracer, const ValuePtr& iterable);

class IteratorValue : public Value {
 public:
  explicit IteratorValue(Args items) : items_(std::move(items)) {}
  // An iterator over a list reads the list as it is at each step, as CPython's list
  // iterator does: items appended while a loop walks the list are reached too.
  explicit IteratorValue(std::shared_ptr<SequenceValue> list) : list_(std::move(list)) {}
  // enumerate(list, start), live the same way: items are (start + index, item) pairs.
  IteratorValue(std::shared_ptr<SequenceValue> list, long enumerate_start)
      : list_(std::move(list)), enumerating_(true), enumerate_start_(enumerate_start) {}
  std::string repr() const override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  // The builtin iterator type CPython's iter() gives for what it iterates (list_iterator,
  // dict_keyiterator, ...); unknown (null) for the iterators of zip(), enumerate() and others.
  PyObject* python_type() const override { return type_.get(); }
  void set_python_type(PyObject* type) { type_ = type ? py::Ref<>::newref(type) : py::Ref<>(); }
  ValuePtr next();  // null when exhausted
  std::optional<Args> unpack(Tracer& tracer) override;
  bool is_iterator() const override { return true; }
  ValuePtr next_item(Tracer& tracer) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  size_t size() const { return items().size(); }
  size_t position() const { return position_; }
  void set_position(size_t position) { position_ = position; }
  // The list a live iterator walks (null for a snapshot), and enumerate's start, if any.
  const std::shared_ptr<SequenceValue>& live_list() const { return list_; }
  std::optional<long> enumerate_start() const {
    return enumerating_ ? std::optional<long>(enumerate_start_) : std::nullopt;
  }
  // Over a dict's keys or items: a loop step after the dict changed size raises for real.
  void watch(std::shared_ptr<DictValue> dict) {
    watched_size_ = dict->keys.size();
    watched_ = std::move(dict);
  }

 private:
  const Args& items() const { return list_ ? list_->items : items_; }
  ValuePtr item_at(size_t index) const;
  Args items_;
  std::shared_ptr<SequenceValue> list_;
  bool enumerating_ = false;
  long enumerate_start_ = 0;
  std::shared_ptr<DictValue> watched_;
  size_t watched_size_ = 0;
  size_t position_ = 0;
  py::Ref<> type_;
};

// A closure cell. Cells of the traced function come from its real closure; cells made by
// MAKE_CELL during the trace are local and may be written.
class CellValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  CellValue(ValuePtr contents, bool mutable_here) : contents(std::move(contents)), mutable_here(mutable_here) {}
  std::string repr() const override;
  ValuePtr contents;  // null: empty cell
  bool mutable_here;
  py::Ref<> real;  // the real cell, for cells of real functions' closures (comptime reuses it)
  // Where a real cell is written back: the traced function's own free variable (by name,
  // with STORE_DEREF), or the cell object read through the inlined function's source.
  std::string root_name;
  guards::SourcePtr cell_source;
};

// ---- callables ------------------------------------------------------------------------
// A Python function whose bytecode the tracer inlines.
class UserFunctionValue : public Value {
 public:
  UserFunctionValue(py::Ref<> code, py::Ref<> globals, std::string name, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), code(std::move(code)), globals(std::move(globals)), name(std::move(name)) {}
  std::string repr() const override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  PyObject* python_type() const override { return (PyObject*)&PyFunction_Type; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // On a function made in the trace (functools.wraps's writes); written when it is made again.
  void set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) override;
  PyObject* real_object() const override { return function.get(); }
  std::function<void()> saved_state() override;
  // A function made in the trace: its __dict__ (made on first use) and the special
  // attributes written in the trace (__name__, __qualname__, __doc__, __module__, ...).
  std::shared_ptr<DictValue> attribute_dict();
  const KwArgs& written_attributes() const { return written_; }
  bool has_attribute_dict() const { return static_cast<bool>(dict_); }

  py::Ref<> code;
  py::Ref<> globals;
  std::string name;
  Args defaults;
  KwArgs kwdefaults;
  Args closure;       // CellValues, one per free variable
  py::Ref<> function; // the real function object, when there is one

 private:
  ValuePtr made_function_attribute(Tracer& tracer, const std::string& attr);
  KwArgs written_;
  std::shared_ptr<DictValue> dict_;
};

// A user function bound to `self` (a user method, or a module's forward).
class BoundMethodValue : public Value {
 public:
  BoundMethodValue(ValuePtr function, ValuePtr self) : function(std::move(function)), self(std::move(self)) {}
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)&PyMethod_Type; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // __func__, __self__, and the function's own attributes (__name__, __wrapped__, ...), as a
  // real method object forwards them.
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // types.MethodType(function, self) at run time.
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  ValuePtr function, self;
};

// A callable recorded as a call_function node: torch.*, torch.nn.functional.*, torch._C._nn.*.
class TorchFunctionValue : public Value {
 public:
  TorchFunctionValue(py::Ref<> function, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), function_(std::move(function)) {}
  std::string repr() const override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  PyObject* real_object() const override { return function_.get(); }

 private:
  py::Ref<> function_;
};

// Python builtins (len, isinstance, range, ...) and pure functions (math.*, operator.*):
// folded on constants; operator.* on tensors records the operator.
class BuiltinValue : public Value {
 public:
  // `pure`: safe to run for real on constant arguments whatever the function is.
  BuiltinValue(py::Ref<> function, guards::SourcePtr source = nullptr, bool pure = false)
      : Value(std::move(source)), function_(std::move(function)), pure_(pure) {}
  std::string repr() const override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  PyObject* real_object() const override { return function_.get(); }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(function_.get()); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;  // list[int]

 private:
  py::Ref<> function_;
  bool pure_;
};

// super(cls, self): attribute lookups start after `cls` in type(self)'s MRO.
class SuperValue : public Value {
 public:
  SuperValue(py::Ref<> cls, ValuePtr self) : cls_(std::move(cls)), self_(std::move(self)) {}
  std::string repr() const override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;

 private:
  py::Ref<> cls_;
  ValuePtr self_;
};

// torch.no_grad / torch.enable_grad (the classes) and their instances used in `with`:
// entering records torch._C._set_grad_enabled(...) into the graph (which also switches the
// real mode the fakes run under); the exit value restores the previous mode.
class GradModeValue : public Value {
 public:
  // torch.no_grad / torch.enable_grad (the mode switches on entering the block), or the class
  // torch.set_grad_enabled (`switch_when_made`: making one switches the mode, its block
  // restores the mode from before on the way out).
  GradModeValue(bool enabled, bool is_class, guards::SourcePtr source = nullptr, bool switch_when_made = false)
      : Value(std::move(source)), enabled_(enabled), is_class_(is_class), switch_when_made_(switch_when_made) {}
  std::string repr() const override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // Switches the mode; the __exit__ value restores it (__enter__ returns None).
  std::optional<std::pair<ValuePtr, ValuePtr>> enter_with(Tracer& tracer) override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

 private:
  bool enabled_, is_class_, switch_when_made_;
  bool before_made_ = false;  // a torch.set_grad_enabled(mode): the mode before it was made
};

// torch._C._set_grad_enabled: a call records itself into the graph and switches the mode the
// fakes run under (torch.set_grad_enabled(mode) and hand-written context managers call it).
class SetGradEnabledValue : public Value {
 public:
  explicit SetGradEnabledValue(py::Ref<> function, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), function_(std::move(function)) {}
  std::string repr() const override { return "SetGradEnabledVariable()"; }
  PyObject* real_object() const override { return function_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  py::Ref<> function_;
};

// Records torch._C._set_grad_enabled(enabled) (values/grad_mode.cpp); with `coalesce`, nothing
// when the mode is already `enabled`.
void record_set_grad_enabled(Tracer& tracer, bool enabled, bool coalesce = true);

class GradModeExitValue : public Value {
 public:
  explicit GradModeExitValue(bool previous) : previous_(previous) {}
  std::string repr() const override { return "GradModeExit(" + std::string(previous_ ? "True" : "False") + ")"; }
  bool previous() const { return previous_; }  // the mode the exit restores
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // Whether generated code may enter the block again at a break (a grad-mode block: always).
  virtual bool re_enterable(Tracer&) const { return true; }
  // The block's exit as a plan (split planning turns it into re-entering the block).
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

 private:
  bool previous_;
};

// A callable whose call is always a break: bytegraph.graph_break(), torch._dynamo.graph_break(),
// and functions wrapped by torch.compiler.disable (which then run eagerly).
class GraphBreakValue : public Value {
 public:
  GraphBreakValue(guards::SourcePtr source, std::string kind, std::string message)
      : Value(std::move(source)), kind_(std::move(kind)), message_(std::move(message)) {}
  std::string repr() const override { return "GraphBreakVariable"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  std::string kind_, message_;
};

// A query whose answer under tracing is known (is_compiling(), torch.jit.is_scripting()):
// calling it is that constant, whatever the arguments.
class FoldedCallValue : public Value {
 public:
  FoldedCallValue(py::Ref<> function, py::Ref<> result, guards::SourcePtr source)
      : Value(std::move(source)), function_(std::move(function)), result_(std::move(result)) {}
  std::string repr() const override;
  PyObject* real_object() const override { return function_.get(); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  py::Ref<> function_, result_;
};

// LazyModuleMixin._infer_parameters(module, args, kwargs) called in the trace (the forward
// pre-hook of a lazy module's first call): run for real on the arguments' example values.
ValuePtr initialize_lazy_module(Tracer& tracer, const Args& args, const KwArgs& kwargs);

// ---- objects --------------------------------------------------------------------------
// An nn.Module instance. Leaf torch.nn modules are recorded as call_module nodes; other
// modules are inlined by calling type(m).forward with self.
class ModuleValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  // `pinned`: its identity is guarded, so the graph may hold the module and its tensors (a
  // call_module leaf, get_attr nodes). A module that may be another object on each call (one
  // made by the code before a break, handed to the resume function) is traced through
  // instead, its tensors graph inputs read from it on each call.
  ModuleValue(py::Ref<> module, bool leaf, guards::SourcePtr source, bool pinned = true)
      : Value(std::move(source)), module_(std::move(module)), leaf_(leaf && pinned), pinned_(pinned) {}
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(module_.get()); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // Plain attributes and buffers (a tensor stored under a buffer's name); written back with
  // the module's own __setattr__ after the graph. New parameters or submodules are a break.
  void set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) override;
  // Attributes written during the trace, in first-write order.
  std::vector<std::pair<std::string, ValuePtr>> attrs;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  std::optional<Args> unpack(Tracer& tracer) override;  // ModuleList / Sequential children
  // Valid while the children stay these, in this order (a module appended, inserted or
  // removed changes what is iterated, indexed and measured).
  void guard_children(Tracer& tracer);
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  PyObject* real_object() const override { return module_.get(); }
  bool truthy(Tracer&) const override { return true; }

 private:
  void guard_leaf_tensors(Tracer& tracer);
  py::Ref<> module_;
  bool leaf_;
  bool pinned_;
};

// A Python module (torch, math, a user module): attributes are wrapped with attribute sources.
class PythonModuleValue : public Value {
 public:
  PythonModuleValue(py::Ref<> module, guards::SourcePtr source)
      : Value(std::move(source)), module_(std::move(module)) {}
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)&PyModule_Type; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  void set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) override;
  void del_attr(Tracer& tracer, const std::string& name) override;
  PyObject* real_object() const override { return module_.get(); }

 private:
  void write(Tracer& tracer, const std::string& name, ValuePtr value);
  py::Ref<> module_;
};

// An instance of a Python class with no kind of its own (a config, a cache, a dataclass, a
// model output): one that exists outside the trace (`real`, guarded by its type, its
// attributes read through its source) or one the trace made by calling its class (`real`
// null: generated code makes it after the graph, attributes and dict items included).
// Attribute access follows object.__getattribute__ / __setattr__: data descriptors, the
// instance's attributes, methods and class attributes, __getattr__; Python overrides of
// these, properties, __call__, __getitem__, __bool__ and __len__ are inlined.
class ObjectValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  ObjectValue(py::Ref<> type, py::Ref<> real, guards::SourcePtr source)
      : Value(std::move(source)), type_(std::move(type)), real_(std::move(real)) {}
  std::string repr() const override;
  PyObject* python_type() const override { return type_.get(); }
  PyObject* real_object() const override { return real_.get(); }
  bool is_new() const { return !real_; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  void set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) override;
  void del_attr(Tracer& tracer, const std::string& name) override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  bool truthy(Tracer& tracer) const override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  // `obj[key] = value`: the class's Python __setitem__ inlined, or a dict subclass's own items.
  void set_item(Tracer& tracer, const ValuePtr& key, const ValuePtr& value);
  std::optional<Args> unpack(Tracer& tracer) override;
  // An iterator object: its class defines __next__ in Python.
  bool is_iterator() const override;
  ValuePtr next_item(Tracer& tracer) override;

  // object.__getattribute__ / __setattr__ / __delattr__ themselves (what the class's own
  // overrides reach through super() or object.__setattr__(self, ...)).
  ValuePtr generic_get_attr(Tracer& tracer, const std::string& name);
  void generic_set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value);
  void generic_del_attr(Tracer& tracer, const std::string& name);
  // A dict subclass instance's own items (made on first use; new objects start empty).
  std::shared_ptr<DictValue> dict_storage(Tracer& tracer);
  bool has_dict_storage() const { return static_cast<bool>(items_); }
  // A set or frozenset subclass instance's members, likewise.
  std::shared_ptr<SetValue> set_storage(Tracer& tracer);
  bool has_set_storage() const { return static_cast<bool>(members_); }
  // A list or tuple subclass instance's items, likewise.
  std::shared_ptr<SequenceValue> sequence_storage(Tracer& tracer);
  bool has_sequence_storage() const { return static_cast<bool>(sequence_); }
  bool is_list_subclass() const;
  bool is_tuple_subclass() const;
  // The dict, set, list or tuple holding the items of an instance of a subclass of one; null
  // for other classes.
  ValuePtr builtin_items(Tracer& tracer);
  // Whether the class derives from set or frozenset (and which).
  bool is_set_subclass() const;
  bool is_frozenset_subclass() const;
  // The class's Python override of special method `name`, inlined on this object; null when
  // the class has none.
  ValuePtr inline_special(Tracer& tracer, const char* name, const Args& args);
  // Whether the class defines special method `name` in Python.
  bool overrides(const char* name) const;
  // The class's Python override of special method `name` bound to this object (guarded where
  // the class holds it), not called yet; null when the class has none.
  ValuePtr bound_special(Tracer& tracer, const char* name);

  // Attributes written during the trace, in first-write order; a null value is a delete.
  std::vector<std::pair<std::string, ValuePtr>> attrs;
  guards::SourcePtr class_source;  // new objects: where their class was read from
  // A new object made by calling its class: the arguments, its attributes when __init__
  // returned, and how many switches of torch state the trace had made by then
  // (values/context_reentry.h makes such an object again).
  struct Construction {
    Args args;
    KwArgs kwargs;
    std::vector<std::pair<std::string, ValuePtr>> attrs;
    size_t state_switches = 0, grad_switches = 0;
  };
  std::optional<Construction> construction;
  // A new object is released when the trace ends (it drops its attributes, items and
  // construction), so objects that reach themselves (`self.me = self`, a child appended to
  // its parent's list) are freed with the trace.
  static std::shared_ptr<ObjectValue> made_new(Tracer& tracer, PyObject* type /* borrowed */);

 private:
  ValuePtr class_attribute(Tracer& tracer, PyObject* descriptor, const std::string& name);
  ValuePtr default_dict_missing(Tracer& tracer, const ValuePtr& key);
  guards::SourcePtr class_attribute_source(const std::string& name) const;
  ValuePtr exposed_dict(Tracer& tracer);
  void check_dict_unchanged(Tracer& tracer, const std::string& name) const;

  py::Ref<> type_, real_;
  std::shared_ptr<DictValue> items_;
  std::shared_ptr<SetValue> members_;
  std::shared_ptr<SequenceValue> sequence_;
  ValuePtr exposed_dict_;  // an object from outside: its __dict__, once the trace read it
};

// A method of object or of a builtin base class reached on an ObjectValue (through super(),
// `object.__setattr__(self, ...)` or a dict subclass's dict methods): applied to the
// symbolic object, never run for real.
class ObjectSlotValue : public Value {
 public:
  ObjectSlotValue(std::shared_ptr<ObjectValue> self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string repr() const override { return "ObjectSlotVariable(" + self_->repr() + ", " + name_ + ")"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // Read again as `obj.name` where generated code needs it (on the stack at a break).
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {self_, name_}; }

 private:
  std::shared_ptr<ObjectValue> self_;
  std::string name_;
};

// `__name__`, `__qualname__` and `__self__` of a builtin method bound to `self` (what
// unittest and functools read off a callable); a break for other attributes.
ValuePtr builtin_method_attribute(Tracer& tracer, const ValuePtr& self, const std::string& method, const std::string& name);

// Any other real object: usable as a constant-like opaque value (identity comparisons,
// isinstance), but attribute reads and calls are not understood yet.
class OpaqueValue : public Value {
 public:
  OpaqueValue(py::Ref<> object, guards::SourcePtr source)
      : Value(std::move(source)), object_(std::move(object)) {}
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(object_.get()); }
  PyObject* real_object() const override { return object_.get(); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  bool truthy(Tracer&) const override { return true; }

 private:
  py::Ref<> object_;
};

// `cls[key]` for a builtin class or a typing generic, computed for real (no code of the
// program runs); null where that is not known to hold.
ValuePtr class_subscript(Tracer& tracer, PyObject* cls, const ValuePtr& key);

// A Python class: its attributes as OpaqueValue reads them; calling it makes a new
// ObjectValue and inlines __init__ (or builds a named tuple).
class ClassValue : public OpaqueValue {
 public:
  using OpaqueValue::OpaqueValue;
  std::string repr() const override;
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // `cls[key]`: a generic alias (OrderedSet[T], list[int]), made for real.
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;

 private:
  ValuePtr make_stateless_module(Tracer& tracer, const Args& args, const KwArgs& kwargs);
};

}  // namespace bytegraph::trace
