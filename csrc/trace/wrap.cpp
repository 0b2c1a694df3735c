// Wrapping real values read by the traced code (Dynamo's VariableBuilder): each kind of
// object becomes its symbolic value, with the source it was read from and the guards the
// trace relies on.
#include "codegen/resume_function.h"
#include "guards/tensor_meta.h"
#include "trace/comptime.h"
#include "trace/symbolic.h"
#include "trace/tracer.h"
#include "trace/values/dict_views.h"
#include "trace/values/environ.h"
#include "trace/values/exceptions.h"
#include "python/type_dict.h"
#include "trace/values/autocast.h"
#include "trace/values/cached_function.h"
#include "trace/values/state_switch.h"
#include "trace/values/null_context.h"
#include "trace/values/torch_function.h"
#include "trace/values/numpy_array.h"
#include "trace/values/partial.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

using guards::SourcePtr;

namespace {

// Values EQUALS_MATCH can compare; other constants (dtypes, devices, code) are pinned by identity.
bool is_literal(PyObject* value) {
  if (value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
      PyComplex_CheckExact(value) || PyUnicode_CheckExact(value) || PyBytes_CheckExact(value))
    return true;
  if (!PyTuple_CheckExact(value)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i)
    if (!is_literal(PyTuple_GET_ITEM(value, i))) return false;
  return true;
}

// How a constant read from a source is pinned: literals by value, opaque value types (a
// placement made anew each call) by their own ==, everything else (dtypes, devices, code, a
// device mesh) by identity.
GuardLog::Kind constant_guard(PyObject* value) {
  if (is_literal(value)) return GuardLog::Kind::Equals;
  py::Ref<> by_value = check(PyObject_CallOneArg(Bridge::get().compared_by_value.get(), value));
  return by_value.get() == Py_True ? GuardLog::Kind::Value : GuardLog::Kind::Id;
}

// Int arguments (or items of argument tuples/lists) may become symbolic; ints read from
// globals, attributes or defaults stay constants, as under torch.compile.
// An argument, an item of one, or a variable a function argument closes over
// (`L['g'].__closure__[0].cell_contents`): values that change from call to call, which
// automatic dynamic shapes follow.
bool is_argument(const SourcePtr& source) {
  using K = guards::Source::Kind;
  if (!source) return false;
  if (source->kind == K::Local) return true;
  bool closure_step = source->kind == K::Attr && (source->name == "__closure__" || source->name == "cell_contents");
  return (source->kind == K::Item || closure_step) && is_argument(source->base);
}

// An attribute an object reached from the arguments keeps in its __dict__ (`self.step` of a
// module): an int there follows the automatic-dynamic policy as an int argument does (a step
// counter becomes symbolic once it changes, instead of one compile per value).
bool is_instance_attribute_of_argument(const SourcePtr& source) {
  using K = guards::Source::Kind;
  return source && source->kind == K::Item && source->base && source->base->kind == K::InstanceDict &&
         is_argument(source->base->base);
}

// `type(obj).name` or `cls.name`: a function a class holds, which stays the same object
// until the class is changed.
bool is_class_attribute(const SourcePtr& source) {
  using K = guards::Source::Kind;
  if (source->kind != K::Attr || !source->base) return false;
  const guards::Source& base = *source->base;
  return base.kind == K::Type || (base.kind == K::Held && base.key && PyType_Check(base.key.get()));
}

// The object a builtin method is bound to when each read makes the method anew (`xs.append`,
// `d.get`, a method-wrapper), so the method's own identity cannot be guarded. Functions of
// modules (`math.sqrt`) and of types (`dict.fromkeys`) are bound to objects that stay.
// `None.__repr__`'s type: the type of a bound slot wrapper (its C name is private from 3.13).
PyTypeObject* method_wrapper_type() {
  static PyTypeObject* type = [] {
    py::Ref<> wrapper = check(PyObject_GetAttrString(Py_None, "__repr__"));
    return Py_TYPE(wrapper.get());  // a static type: lives for the process
  }();
  return type;
}

PyObject* per_read_self(PyObject* callable) {
  PyObject* self = nullptr;
  if (PyCFunction_Check(callable)) {
    self = PyCFunction_GET_SELF(callable);
  } else if (Py_IS_TYPE(callable, method_wrapper_type())) {
    py::Ref<> bound = check(PyObject_GetAttrString(callable, "__self__"));
    self = bound.get();  // the wrapper keeps it alive
  }
  if (self == nullptr || PyModule_Check(self)) return nullptr;
  if (PyType_Check(self)) {
    // A C classmethod (OrderedDict.fromkeys, MyDict.fromkeys) is bound anew on each read: pinned
    // by the class and its name, as `xs.append` is. A method stored in the class dict
    // (tuple.__new__) is one object, pinned as it is.
    auto* type = reinterpret_cast<PyTypeObject*>(self);
    py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(callable, "__name__"));
    if (!name) {
      PyErr_Clear();
      return nullptr;
    }
    py::Ref<> dict = py::type_dict(type);
    PyObject* stored = dict ? PyDict_GetItemWithError(dict.get(), name.get()) : nullptr;  // borrowed
    if (stored == nullptr && PyErr_Occurred()) PyErr_Clear();
    return stored != callable ? self : nullptr;
  }
  return self;
}

// A value the resume function was handed on the stack (or reached from one): what the code
// before the break computed, often an object it made.
bool made_before_a_break(const SourcePtr& source) {
  const guards::Source* root = source.get();
  while (root && root->base) root = root->base.get();
  return root && root->kind == guards::Source::Kind::Local && root->name.rfind(codegen::kStackArgumentPrefix, 0) == 0;
}

}  // namespace

void Tracer::pin_callable(PyObject* real, const SourcePtr& source) {
  if (!source) return;
  using K = GuardLog::Kind;
  PyObject* self = per_read_self(real);
  if (self == nullptr) {
    // Which callable is called is what the trace relies on, wherever it was read from: a
    // dict, a list, a class or module attribute can hold another one on the next call.
    guards.add(K::Id, source, real);
    return;
  }
  // Read from its own object (`xs.append`): that object's type pins the method; a C class
  // pins its classmethods, which a Python class could have replaced since.
  const bool mutable_class = PyType_Check(self) && PyType_HasFeature(reinterpret_cast<PyTypeObject*>(self), Py_TPFLAGS_HEAPTYPE) &&
                             !PyType_HasFeature(reinterpret_cast<PyTypeObject*>(self), Py_TPFLAGS_IMMUTABLETYPE);
  if (source->kind == guards::Source::Kind::Attr && !mutable_class) return;
  // Held somewhere else (a dict holding `xs.append`), or read from a Python class: a C method
  // of that object, of that name.
  guards.add(K::Type, source, (PyObject*)Py_TYPE(real));
  guards.add(K::Id, guards::attr_source(source, "__self__"), self);
  py::Ref<> name = check(PyObject_GetAttrString(real, "__name__"));
  guards.add(K::Equals, guards::attr_source(source, "__name__"), name.get());
}

namespace {

// What torch.compile keeps of a wrapped tensor's __dict__ (node.meta["tensor_dict"]).
py::Ref<> tensor_dict_of(PyObject* real) {
  py::Ref<> kept = check(PyDict_New());
  PyObject** dict_slot = _PyObject_GetDictPtr(real);
  if (dict_slot == nullptr || *dict_slot == nullptr) return kept;
  for (const char* key : {"_dynamo_static_input_type", "tag"}) {
    PyObject* value = PyDict_GetItemString(*dict_slot, key);  // borrowed
    if (value == nullptr) continue;
    py::Ref<> copy_module = check(PyImport_ImportModule("copy"));
    py::Ref<> copied = check(PyObject_CallMethod(copy_module.get(), "copy", "O", value));
    check_status(PyDict_SetItemString(kept.get(), key, copied.get()));
  }
  return kept;
}

}  // namespace

namespace {

// A wrapper subclass's fake is made by its class's __tensor_unflatten__; one inherited from a
// base that builds the base (a subclass of TwoTensor) gives a fake of another class, and ops
// on it would give that class where the real ones give the subclass: not traced.
void check_fake_class(PyObject* real, PyObject* fake, const SourcePtr& source) {
  if (Py_TYPE(fake) == Py_TYPE(real) || !guards::TensorMeta::get().dispatches(real)) return;
  if (!PyObject_HasAttrString((PyObject*)Py_TYPE(real), "__tensor_flatten__")) return;
  unsupported("unfakeable_tensor", source->repr() + " is a " + Py_TYPE(real)->tp_name + " whose fake is a " +
                                       Py_TYPE(fake)->tp_name + " (its __tensor_unflatten__ makes another class)");
}

}  // namespace

ValuePtr Tracer::wrap_tensor(PyObject* real, const SourcePtr& source) {
  if (!source) unsupported("untracked_tensor", "a tensor with no known source");
  guards::SubclassDispatchOff undispatched(real);
  note_real_tensor(*this, real);
  for (const auto& input : inputs) {
    if (input.real.get() != real) continue;
    // The same tensor reached twice (passed twice, or as an argument and a global): one
    // placeholder, valid while both sources stay one tensor.
    guards.add_same_object(input.value->source(), source);
    return input.value;
  }
  // A tensor whose autograd metadata raises when read (a view of a multi-output op written in
  // place) cannot be faked or guarded; the frame runs eagerly, where the same read raises.
  py::Ref<> problem = check(PyObject_CallOneArg(bridge.tensor_read_error.get(), real));
  if (problem.get() != Py_None) {
    unsupported("unfakeable_tensor", "reading " + source->repr() + " raises " + py_str(problem.get()));
  }
  // Symbolic sizes get their own placeholders, before the tensor's.
  SymbolicShapes::TensorInput input = shapes->tensor_input(real, source);
  guards.add_tensor(source, real, input.unchecked_sizes, input.unchecked_strides);
  guard_wrapper_subclass(real, source, input.inner);
  py::Ref<> fake = std::move(input.fake);
  check_fake_class(real, fake.get(), source);
  std::string target_name = graph.unique_name(graph::input_name_from(source->repr()));
  std::string name = graph::snake_case(target_name);
  py::Ref<> target = check(PyUnicode_FromString(target_name.c_str()));
  graph::Node& node = graph.append(graph::Op::Placeholder, std::move(target), nullptr, nullptr,
                                   fake.copy(), {}, name);
  node.binds = std::move(input.symbol_nodes);
  node.tensor_dict = tensor_dict_of(real);
  auto value = std::make_shared<TensorValue>(node.index, std::move(fake), source);
  value->display_name = name;
  value->set_python_type((PyObject*)Py_TYPE(real));
  inputs.push_back(Input{node.index, source->repr(), py::Ref<>::newref(real), value});
  return value;
}

void Tracer::mark_static_input(PyObject* real) {
  static PyObject* key = PyUnicode_InternFromString("_dynamo_static_input_type");
  static PyObject* unguarded = PyUnicode_InternFromString("unguarded");
  for (const auto& input : inputs) {
    if (input.real.get() != real || input.node < 0 || static_cast<size_t>(input.node) >= graph.size()) continue;
    graph::Node& node = graph.node(input.node);
    if (node.tensor_dict && !PyDict_Contains(node.tensor_dict.get(), key))
      check_status(PyDict_SetItem(node.tensor_dict.get(), key, unguarded));
  }
}

ValuePtr Tracer::wrap_module_tensor(PyObject* real, const SourcePtr& source) {
  // The same tensor passed in as well: that input is a module's tensor too.
  mark_static_input(real);
  for (const auto& known : module_tensors)
    if (known.real.get() == real) return known.value;
  py::Ref<> problem = check(PyObject_CallOneArg(bridge.tensor_read_error.get(), real));
  if (problem.get() != Py_None)
    unsupported("unfakeable_tensor", "reading " + source->repr() + " raises " + py_str(problem.get()));
  pin_module_tensor(real, source);
  note_real_tensor(*this, real);
  std::string name = graph.add_root_attr(graph::identifier_from(source->repr()), real);
  py::Ref<> fake = py::Ref<>::steal(PyObject_CallOneArg(fake_input_.get(), real));
  if (!fake) fake_failed(source->repr());
  check_fake_class(real, fake.get(), source);
  py::Ref<> target = check(PyUnicode_FromString(name.c_str()));
  graph::Node& node = graph.append(graph::Op::GetAttr, std::move(target), nullptr, nullptr,
                                   fake.copy(), location(), name);
  auto value = std::make_shared<TensorValue>(node.index, std::move(fake), source);
  value->display_name = name;
  value->set_python_type((PyObject*)Py_TYPE(real));
  module_tensors.push_back(ModuleTensor{node.index, py::Ref<>::newref(real), value});
  return value;
}

ValuePtr Tracer::known_object(PyObject* real, const SourcePtr& source) {
  ValuePtr known = side_effects.known(real);
  if (!known) return nullptr;
  // One object reached again, maybe under another name: the same value, valid while both
  // names stay one object.
  if (source && known->source()) guards.add_same_object(known->source(), source);
  return known;
}

void Tracer::name_after_local(const ValuePtr& value, const std::string& name) {
  const auto* tensor = dynamic_cast<const TensorValue*>(value.get());
  if (!tensor || tensor->node() < 0 || static_cast<size_t>(tensor->node()) >= graph.size()) return;
  graph::Node& node = graph.node(tensor->node());
  if (node.op == graph::Op::Placeholder || node.op == graph::Op::GetAttr || !node.local_name.empty()) return;
  node.local_name = name;
}

void Tracer::will_mutate(const ValuePtr& value) {
  journal.save(value);
  if (value->source()) {
    side_effects.mark_mutated(value);
    return;
  }
  bool made_here = true;
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) made_here = seq->mutable_here();
  if (auto* dict = dynamic_cast<DictValue*>(value.get())) made_here = dict->mutable_here();
  if (auto* set = dynamic_cast<SetValue*>(value.get())) made_here = set->mutable_here();
  if (auto* object = dynamic_cast<ObjectValue*>(value.get())) made_here = object->is_new();
  if (dynamic_cast<ModuleValue*>(value.get())) made_here = false;
  if (!made_here) unsupported("side_effect", "changing " + value->repr() + ", which the trace has no name for");
}

void Tracer::pin_module_tensor(PyObject* real, const SourcePtr& source) {
  // The graph holds this very tensor: a module whose attribute is given another tensor (a
  // parameter replaced, load_state_dict(assign=True)) must not keep running with the old one,
  // nor one whose tensor changed dtype or device in place (module.to(), .data = ...).
  guards.add(GuardLog::Kind::Id, source, real);
  guards.add_tensor(source, real, {}, {});
  guard_wrapper_subclass(real, source);
}

void Tracer::guard_wrapper_subclass(PyObject* real, const SourcePtr& source,
                                    const std::vector<SymbolicInnerTensor>& symbolic_inner) {
  // A traceable wrapper subclass (__tensor_flatten__) is compiled, by AOTAutograd and the
  // fakes, for its metadata and the layout of its inner tensors: both are guarded, each inner
  // tensor where the class keeps it.
  // torch.Tensor and nn.Parameter (every plain input and weight) are no wrapper subclasses.
  if (!guards::TensorMeta::get().dispatches(real) || !PyObject_HasAttrString((PyObject*)Py_TYPE(real), "__tensor_flatten__"))
    return;
  py::Ref<> compare = check(PyObject_CallOneArg(bridge.subclass_metadata_guard.get(), (PyObject*)Py_TYPE(real)));
  py::Ref<> pinned = check(PyTuple_Pack(2, real, compare.get()));
  guards.add(GuardLog::Kind::SubclassMetadata, source, pinned.get());
  guards::SubclassDispatchOff undispatched(real);
  py::Ref<> flat = check(PyObject_CallMethod(real, "__tensor_flatten__", nullptr));
  if (!PyTuple_Check(flat.get()) || PyTuple_GET_SIZE(flat.get()) != 2)
    unsupported("unfakeable_tensor", source->repr() + ".__tensor_flatten__() did not return (names, metadata)");
  py::Ref<> names = check(PySequence_Tuple(PyTuple_GET_ITEM(flat.get(), 0)));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names.get()); ++i) {
    PyObject* name = PyTuple_GET_ITEM(names.get(), i);
    if (!PyUnicode_Check(name)) unsupported("unfakeable_tensor", source->repr() + " names an inner tensor by a non-string");
    py::Ref<> inner = check(PyObject_GetAttr(real, name));
    SourcePtr inner_source = guards::attr_source(source, PyUnicode_AsUTF8(name));
    if (!guards::TensorMeta::get().is_tensor(inner.get())) {
      // An opaque object flattened beside the tensors (DTensor's device mesh): the same one.
      guards.add(GuardLog::Kind::Id, inner_source, inner.get());
      continue;
    }
    // Sizes the trace made symbolic (a dynamic batch's local shard) are the shape guards'.
    std::vector<int> unchecked_sizes, unchecked_strides;
    for (const auto& symbolic : symbolic_inner)
      if (symbolic.name == PyUnicode_AsUTF8(name)) unchecked_sizes = symbolic.unchecked_sizes, unchecked_strides = symbolic.unchecked_strides;
    guards.add_tensor(inner_source, inner.get(), unchecked_sizes, unchecked_strides);
    guard_wrapper_subclass(inner.get(), inner_source);
  }
}

PyObject* Tracer::real_tensor(const ValuePtr& value) const {
  if (!value->source()) return nullptr;
  for (const auto& input : inputs)
    if (input.value == value) return input.real.get();
  for (const auto& known : module_tensors)
    if (known.value == value) return known.real.get();
  return nullptr;
}

void Tracer::pin_identity(const ValuePtr& value) {
  if (value->source() && value->real_object()) guards.add(GuardLog::Kind::Id, value->source(), value->real_object());
}

std::shared_ptr<UserFunctionValue> Tracer::wrap_user_function(PyObject* real, const SourcePtr& source) {
  if (auto found = functions_in_progress_.find(real); found != functions_in_progress_.end()) return found->second;
  auto* function = reinterpret_cast<PyFunctionObject*>(real);
  py::Ref<> name = check(PyObject_GetAttrString(real, "__name__"));
  auto value = std::make_shared<UserFunctionValue>(py::Ref<>::newref(function->func_code),
                                                   py::Ref<>::newref(function->func_globals),
                                                   PyUnicode_AsUTF8(name.get()), source);
  value->function = py::Ref<>::newref(real);
  wrapped_functions_.push_back(value);
  functions_in_progress_.emplace(real, value);
  struct Done {
    std::unordered_map<PyObject*, std::shared_ptr<UserFunctionValue>>& in_progress;
    PyObject* key;
    ~Done() { in_progress.erase(key); }
  } done{functions_in_progress_, real};
  // What the trace relies on is the code, and the defaults and closure contents it read
  // (guarded through their sources): not the function object, which code that makes a
  // closure per call (a lambda passed in, a resume function's argument) makes anew.
  if (source && is_class_attribute(source)) {
    // A method patched on the class (or a base) is another function object.
    guards.add(GuardLog::Kind::Id, source, real);
  } else if (source) {
    using K = GuardLog::Kind;
    guards.add(K::Id, guards::attr_source(source, "__code__"), function->func_code);
    guards.add(K::Id, guards::attr_source(source, "__globals__"), function->func_globals);
    SourcePtr defaults = guards::attr_source(source, "__defaults__");
    if (function->func_defaults) guards.add(K::Length, defaults, nullptr, PyTuple_GET_SIZE(function->func_defaults));
    else guards.add(K::None, defaults, nullptr, 1);
    SourcePtr kwdefaults = guards::attr_source(source, "__kwdefaults__");
    if (function->func_kwdefaults) guards.add(K::DictKeys, kwdefaults, check(PySequence_Tuple(function->func_kwdefaults)).get());
    else guards.add(K::None, kwdefaults, nullptr, 1);
  }
  if (function->func_defaults) {
    SourcePtr defaults = source ? guards::attr_source(source, "__defaults__") : nullptr;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(function->func_defaults); ++i)
      value->defaults.push_back(wrap(PyTuple_GET_ITEM(function->func_defaults, i),
                                     defaults ? guards::item_source(defaults, check(PyLong_FromSsize_t(i))) : nullptr));
  }
  if (function->func_kwdefaults) {
    SourcePtr defaults = source ? guards::attr_source(source, "__kwdefaults__") : nullptr;
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(function->func_kwdefaults, &position, &key, &item))
      value->kwdefaults.emplace_back(PyUnicode_AsUTF8(key),
                                     wrap(item, defaults ? guards::item_source(defaults, py::Ref<>::newref(key)) : nullptr));
  }
  if (function->func_closure) {
    SourcePtr cells = source ? guards::attr_source(source, "__closure__") : nullptr;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(function->func_closure); ++i) {
      PyObject* cell = PyTuple_GET_ITEM(function->func_closure, i);
      PyObject* contents = PyCell_GET(cell);
      SourcePtr cell_source = cells ? guards::attr_source(guards::item_source(cells, check(PyLong_FromSsize_t(i))), "cell_contents") : nullptr;
      if (ValuePtr known = side_effects.known(cell)) {
        // A cell the trace already knows (the traced function's own, or another function's):
        // one value, so a write through one closure is seen through the other.
        auto& shared = static_cast<CellValue&>(*known);
        if (cell_source && contents) wrap(contents, cell_source);  // guard this closure's view too
        if (!shared.cell_source && cells) shared.cell_source = guards::item_source(cells, check(PyLong_FromSsize_t(i)));
        value->closure.push_back(known);
        continue;
      }
      auto symbolic = std::make_shared<CellValue>(contents ? wrap(contents, cell_source) : nullptr, false);
      symbolic->real = py::Ref<>::newref(cell);
      if (cells) symbolic->cell_source = guards::item_source(cells, check(PyLong_FromSsize_t(i)));
      side_effects.remember(cell, symbolic);
      value->closure.push_back(std::move(symbolic));
    }
  }
  return value;
}

namespace {

using K = GuardLog::Kind;

ValuePtr wrap_module(Tracer& t, PyObject* real, const SourcePtr& source, bool leaf) {
  if (ValuePtr known = t.known_object(real, source)) return known;
  // One the code made before a break is a new object on each call: never pinned.
  bool pinned = !made_before_a_break(source);
  t.guards.add(pinned ? K::Id : K::Type, source, pinned ? real : (PyObject*)Py_TYPE(real));
  if (source) {
    // A module inside its own __init__, before torch.nn.Module.__init__ ran, has none of a
    // module's state yet: nothing about it is a module's to trace.
    py::Ref<> dict = check(PyObject_GenericGetDict(real, nullptr));
    if (PyDict_GetItemString(dict.get(), "_parameters") == nullptr)
      unsupported("unsupported_call", std::string("a ") + Py_TYPE(real)->tp_name + " whose torch.nn.Module.__init__ has not run");
    py::Ref<> training = check(PyObject_GetAttrString(real, "training"));
    t.guards.add(K::Equals, guards::attr_source(source, "training"), training.get());
  }
  auto module = std::make_shared<ModuleValue>(py::Ref<>::newref(real), leaf, source, pinned);
  t.side_effects.remember(real, module);
  return module;
}

// A list or tuple from outside: its type and length guarded, each item wrapped at its index.
ValuePtr wrap_sequence(Tracer& t, PyObject* real, const SourcePtr& source) {
  bool is_list = PyList_Check(real);
  if (is_list) {
    if (ValuePtr known = t.known_object(real, source)) return known;
  }
  t.guards.add(K::Type, source, (PyObject*)Py_TYPE(real));
  Py_ssize_t n = PySequence_Size(real);
  t.guards.add(K::Length, source, nullptr, n);
  Args items;
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::Ref<> item = check(PySequence_GetItem(real, i));
    py::Ref<> key = check(PyLong_FromSsize_t(i));
    items.push_back(t.wrap(item.get(), source ? guards::item_source(source, std::move(key)) : nullptr));
  }
  auto sequence = std::make_shared<SequenceValue>(is_list, std::move(items), source, false);
  if (!is_list && !PyTuple_CheckExact(real)) sequence->tuple_type = py::Ref<>::newref((PyObject*)Py_TYPE(real));
  if (is_list) t.side_effects.remember(real, sequence);
  return sequence;
}

// A dict from outside: its keys guarded, each value wrapped under its key.
ValuePtr wrap_dict(Tracer& t, PyObject* real, const SourcePtr& source) {
  if (!PyDict_CheckExact(real)) unsupported("unsupported_dict", "dict subclass input " + py_repr((PyObject*)Py_TYPE(real)));
  if (ValuePtr known = t.known_object(real, source)) return known;
  py::Ref<> keys = check(PySequence_Tuple(check(PyDict_Keys(real)).get()));
  t.guards.add(K::DictKeys, source, keys.get());
  auto dict = std::make_shared<DictValue>(source, false);
  PyObject *key, *item;  // borrowed
  Py_ssize_t position = 0;
  while (PyDict_Next(real, &position, &key, &item))
    dict->set_item(key, t.wrap(item, source ? guards::item_source(source, py::Ref<>::newref(key)) : nullptr));
  t.side_effects.remember(real, dict);
  return dict;
}

// Pinned by its class, not its identity: an object made anew per call (a cache, an output
// structure) must not fail an identity guard each time. What the trace reads from it is
// guarded through its sources.
ValuePtr wrap_object(Tracer& t, PyObject* real, const SourcePtr& source) {
  if (ValuePtr known = t.known_object(real, source)) return known;
  t.guards.add(K::Type, source, (PyObject*)Py_TYPE(real));
  auto object = std::make_shared<ObjectValue>(py::Ref<>::newref((PyObject*)Py_TYPE(real)), py::Ref<>::newref(real), source);
  t.side_effects.remember(real, object);
  return object;
}

ValuePtr wrap_set_input(Tracer& t, PyObject* real, const SourcePtr& source) {
  if (ValuePtr known = t.known_object(real, source)) return known;
  std::shared_ptr<SetValue> set = source ? wrap_set(t, real, source) : nullptr;
  if (!set) return wrap_object(t, real, source);  // members the tracer cannot hold: only passed along
  t.side_effects.remember(real, set);
  return set;
}

// A view of a dict from outside (`d.keys()` passed in): the dict it shows, read (and guarded)
// through the view; the same dict reached another way is the same value. Other classes and
// views: opaque, pinned by identity.
ValuePtr wrap_class_or_view(Tracer& t, PyObject* real, const SourcePtr& source) {
  PyObject* dict = guards::viewed_dict(real);
  if (dict == nullptr || source == nullptr) {
    t.guards.add(K::Id, source, real);
    return std::make_shared<OpaqueValue>(py::Ref<>::newref(real), source);
  }
  t.guards.add(K::Type, source, (PyObject*)Py_TYPE(real));
  auto shown = std::dynamic_pointer_cast<DictValue>(t.wrap(dict, guards::viewed_dict_source(source)));
  if (!shown) unsupported("unsupported_dict", "a view of a " + std::string(Py_TYPE(dict)->tp_name));
  auto kind = PyDictKeys_Check(real)     ? DictViewValue::Kind::Keys
              : PyDictValues_Check(real) ? DictViewValue::Kind::Values
                                         : DictViewValue::Kind::Items;
  return std::make_shared<DictViewValue>(std::move(shown), kind, source);
}

ValuePtr wrap_torch_function(Tracer& t, PyObject* real, const SourcePtr& source) {
  if (PyMethod_Check(real) && source) {
    // A bound classmethod (MyFunction.apply) is a new object per read: its class is guarded.
    t.guards.add(K::Id, guards::attr_source(source, "__self__"), PyMethod_GET_SELF(real));
    py::Ref<> target = check(PyObject_CallOneArg(t.bridge.autograd_apply_target.get(), real));
    return std::make_shared<TorchFunctionValue>(std::move(target), source);
  }
  t.pin_callable(real, source);
  return std::make_shared<TorchFunctionValue>(py::Ref<>::newref(real), source);
}

// Callables the tracer models by what they do (switches and queries of torch's or Python's
// state, builtins): which one is called is what the trace relies on, so each is pinned.
// Null for other kinds.
ValuePtr wrap_modelled_callable(Tracer& t, ObjectKind kind, PyObject* real, const SourcePtr& source) {
  switch (kind) {
    case ObjectKind::Builtin:
    case ObjectKind::PureFunction:
    case ObjectKind::Disabled:
    case ObjectKind::Folded:
    case ObjectKind::GradMode:
    case ObjectKind::Autocast:
    case ObjectKind::HandledException:
    case ObjectKind::DefaultDtypeSwitch:
    case ObjectKind::SavedTensorsHooks:
    case ObjectKind::SdpBackends:
    case ObjectKind::SubclassDispatchSwitch:
    case ObjectKind::NullContext:
      t.pin_callable(real, source);
      break;
    default:
      return nullptr;
  }
  const Bridge& bridge = t.bridge;
  switch (kind) {
    case ObjectKind::Builtin:
    case ObjectKind::PureFunction:
      return std::make_shared<BuiltinValue>(py::Ref<>::newref(real), source, kind == ObjectKind::PureFunction);
    case ObjectKind::Disabled:
      return std::make_shared<GraphBreakValue>(source, "disabled_function",
                                               "calling " + py_repr(real) + ", which is wrapped by disable() and runs eagerly");
    case ObjectKind::Folded:
      return std::make_shared<FoldedCallValue>(py::Ref<>::newref(real),
                                               check(PyObject_CallOneArg(bridge.folded_result.get(), real)), source);
    case ObjectKind::GradMode:
      if (real == bridge.set_grad_enabled.get()) return std::make_shared<SetGradEnabledValue>(py::Ref<>::newref(real), source);
      if (real == bridge.set_grad_enabled_class.get()) return std::make_shared<GradModeValue>(true, true, source, true);
      return std::make_shared<GradModeValue>(real != bridge.no_grad.get(), true, source);
    case ObjectKind::Autocast:
      return std::make_shared<AutocastValue>(source);
    case ObjectKind::HandledException: {
      py::Ref<> name = check(PyObject_GetAttrString(real, "__name__"));
      const bool exc_info = PyUnicode_CompareWithASCIIString(name.get(), "exc_info") == 0;
      return std::make_shared<HandledExceptionQueryValue>(py::Ref<>::newref(real), exc_info, source);
    }
    case ObjectKind::DefaultDtypeSwitch:
      return std::make_shared<StateSwitchValue>(TorchState::DefaultDtype, py::Ref<>::newref(real), source);
    case ObjectKind::SavedTensorsHooks:
      return std::make_shared<StateSwitchValue>(TorchState::SavedTensorsHooks, py::Ref<>::newref(real), source);
    case ObjectKind::SdpBackends:
      return std::make_shared<StateSwitchValue>(TorchState::SdpBackends, py::Ref<>::newref(real), source);
    case ObjectKind::SubclassDispatchSwitch:
      return std::make_shared<SubclassDispatchSwitchValue>(py::Ref<>::newref(real), true, source);
    default:  // NullContext
      return std::make_shared<NullContextValue>(py::Ref<>::newref(real), true, source);
  }
}

}  // namespace

ValuePtr Tracer::wrap(PyObject* real, SourcePtr source) {
  constexpr int kMaxWrapDepth = 48;
  if (wrap_depth_ >= kMaxWrapDepth) {
    unsupported("cyclic_value", "a value nested " + std::to_string(kMaxWrapDepth) +
                                    " levels deep (or reachable from itself, e.g. a function whose closure holds it)");
  }
  struct DepthScope {
    int& depth;
    explicit DepthScope(int& d) : depth(d) { ++depth; }
    ~DepthScope() { --depth; }
  } depth_scope{wrap_depth_};
  if (source && is_os_environ(real)) return std::make_shared<EnvironValue>(py::Ref<>::newref(real), source);
  ObjectKind kind = classify(real);
  // functools.partial, operator.itemgetter/attrgetter (classes and instances): known calls.
  if (kind == ObjectKind::UserClass || kind == ObjectKind::Object || kind == ObjectKind::Class || kind == ObjectKind::Unknown)
    if (ValuePtr functional = wrap_functional(*this, real, source)) return functional;
  if (kind == ObjectKind::Unknown)
    if (ValuePtr cached = wrap_cached_function(*this, real, source)) return cached;
  if (ValuePtr modelled = wrap_modelled_callable(*this, kind, real, source)) return modelled;
  switch (kind) {
    case ObjectKind::Constant:
      if (PyLong_CheckExact(real) && (is_argument(source) || is_instance_attribute_of_argument(source)))
        if (ValuePtr symbolic = shapes->int_input(real, source, !is_argument(source))) return symbolic;
      guards.add(constant_guard(real), source, real);
      return ConstantValue::make(py::Ref<>::newref(real), source);
    case ObjectKind::Tensor:
      return wrap_tensor(real, source);
    case ObjectKind::DistributedTensor:
      unsupported("distributed_tensor", std::string("a ") + Py_TYPE(real)->tp_name +
                                            " does not flatten (__tensor_flatten__): what reads it runs eagerly");
    case ObjectKind::Module:
    case ObjectKind::LeafModule:
      return wrap_module(*this, real, source, kind == ObjectKind::LeafModule);
    case ObjectKind::Tuple:
    case ObjectKind::List:
      return wrap_sequence(*this, real, source);
    case ObjectKind::Dict:
      return wrap_dict(*this, real, source);
    case ObjectKind::Set:
      return wrap_set_input(*this, real, source);
    case ObjectKind::PythonModule:
      guards.add(K::Id, source, real);
      return std::make_shared<PythonModuleValue>(py::Ref<>::newref(real), source);
    case ObjectKind::UserFunction:
      return wrap_user_function(real, source);
    case ObjectKind::UserMethod: {
      py::Ref<> function = check(PyObject_GetAttrString(real, "__func__"));
      py::Ref<> self = check(PyObject_GetAttrString(real, "__self__"));
      return std::make_shared<BoundMethodValue>(
          wrap(function.get(), source ? guards::attr_source(source, "__func__") : nullptr),
          wrap(self.get(), source ? guards::attr_source(source, "__self__") : nullptr));
    }
    case ObjectKind::TorchFunction:
      return wrap_torch_function(*this, real, source);
    case ObjectKind::GraphBreak:
      return std::make_shared<GraphBreakValue>(source, "explicit_graph_break", "graph_break() called");
    case ObjectKind::Comptime:
      return std::make_shared<ComptimeFunctionValue>(py::Ref<>::newref(real), source);
    case ObjectKind::DefaultTorchFunction:
      return std::make_shared<DefaultTorchFunctionValue>(py::Ref<>::newref(real));
    case ObjectKind::UserClass:
      guards.add(K::Id, source, real);
      return std::make_shared<ClassValue>(py::Ref<>::newref(real), source);
    case ObjectKind::Object:
      return wrap_object(*this, real, source);
    case ObjectKind::NumpyFunction:
      return wrap_numpy_function(*this, real, source);
    case ObjectKind::Class:
    case ObjectKind::DictView:
      return wrap_class_or_view(*this, real, source);
    case ObjectKind::Unknown:
      guards.add(K::Id, source, real);
      return std::make_shared<OpaqueValue>(py::Ref<>::newref(real), source);
    default:  // the modelled callables, above
      break;
  }
  throw InternalError("unhandled object kind");
}

}  // namespace bytegraph::trace
