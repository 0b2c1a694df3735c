#include "trace/plan_writer.h"
#include "python/type_dict.h"

#include <algorithm>

#include "trace/symbolic.h"
#include "trace/values/deque.h"
#include "trace/values/numpy_array.h"

namespace bytegraph::trace {

using codegen::OutputPlan;

OutputPlan PlanWriter::plan(const ValuePtr& value) {
  if (value->is_null()) return OutputPlan::null();
  // A value read from somewhere is read again: rebuilding a list, a module or an input
  // tensor would lose its identity.
  if (value->source()) return OutputPlan::of_source(value->source());
  if (auto* tensor_value = dynamic_cast<TensorValue*>(value.get())) return tensor(*tensor_value);
  // A symbolic size or int computed by the graph: one of its outputs.
  if (auto* number = dynamic_cast<SymNumberValue*>(value.get())) return OutputPlan::graph_output(output_index(number->node()));
  if (value->is_constant()) return OutputPlan::of_constant(value->constant());
  // A class, module or builtin reached without a name of its own (a dict key, a set member, what
  // a cache answered): pinned by the guards on where it came from, so it is that very object.
  if (dynamic_cast<BuiltinValue*>(value.get()) || dynamic_cast<OpaqueValue*>(value.get()) ||
      dynamic_cast<PythonModuleValue*>(value.get()) || dynamic_cast<ClassValue*>(value.get()))
    if (PyObject* real = value->real_object()) return OutputPlan::of_constant(real);
  if (auto* object = dynamic_cast<ObjectValue*>(value.get()); object && object->is_new()) return new_object(*object);
  if (shared_lists_.count(value.get())) return new_list(static_cast<const SequenceValue&>(*value));
  require_single_reference(value);
  if (auto made = value->remake(*this)) return std::move(*made);
  if (auto [owner, name] = value->bound_attribute(); owner) {
    OutputPlan plan;
    plan.kind = OutputPlan::Kind::Attr;
    plan.items.push_back(this->plan(owner));
    plan.attribute = name;
    return plan;
  }
  throw NotRestorable{value->repr()};
}

std::vector<codegen::SideEffectPlan> PlanWriter::side_effects() {
  std::vector<codegen::SideEffectPlan> effects;
  for (const ValuePtr& value : tracer_.side_effects.mutated()) value->write_changes(*this, effects);
  global_effects(effects);
  return effects;
}

// Each global written in the trace gets its last value, or is removed if it was deleted last.
void PlanWriter::global_effects(std::vector<codegen::SideEffectPlan>& effects) {
  using Effect = codegen::SideEffectPlan;
  const auto& writes = tracer_.side_effects.global_writes();
  for (size_t i = 0; i < writes.size(); ++i) {
    const auto& write = writes[i];
    if (tracer_.side_effects.global_written(write.globals, write.name) != &write) continue;  // overwritten later
    Effect effect;
    effect.name = write.name;
    if (!write.value) {
      effect.kind = Effect::Kind::DelItem;
      bool own = write.globals == frame_.globals.get();
      effect.target = OutputPlan::of_source(own ? guards::globals_dict_source() : held_globals_source(write.globals));
      effects.push_back(std::move(effect));
      continue;
    }
    effect.value = plan(write.value);
    if (write.globals == frame_.globals.get()) {
      effect.kind = Effect::Kind::StoreGlobal;
    } else {
      effect.kind = Effect::Kind::SetItem;
      effect.target = OutputPlan::of_source(held_globals_source(write.globals));
    }
    effects.push_back(std::move(effect));
  }
}

namespace {

// set_function_attributes(function, names, *values) -> function: the attributes a function
// made in the trace was given there (functools.wraps), set on the function made again.
PyObject* set_function_attributes(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != nargs - 2) {
    PyErr_SetString(PyExc_TypeError, "set_function_attributes(function, names, *values)");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[1]); ++i)
    if (PyObject_SetAttr(args[0], PyTuple_GET_ITEM(args[1], i), args[i + 2]) < 0) return nullptr;
  return Py_NewRef(args[0]);
}

PyObject* set_function_attributes_function() {
  static PyMethodDef definition = {"set_function_attributes",
                                   reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(set_function_attributes)),
                                   METH_FASTCALL, "Sets the attributes a function was given while traced."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}


// The first class along the MRO that C code made (dict, OrderedDict, defaultdict): whose
// methods store the items.
PyObject* builtin_base(PyObject* type) {
  for (auto* base = reinterpret_cast<PyTypeObject*>(type); base != nullptr; base = base->tp_base)
    if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE) || PyType_HasFeature(base, Py_TPFLAGS_IMMUTABLETYPE))
      return reinterpret_cast<PyObject*>(base);
  return reinterpret_cast<PyObject*>(&PyDict_Type);
}

}  // namespace

void PlanWriter::object_effects(ObjectValue& object, std::vector<codegen::SideEffectPlan>& effects) {
  using Effect = codegen::SideEffectPlan;
  static PyObject* setattr = py::own_type_attribute(&PyBaseObject_Type, "__setattr__");  // borrowed, immortal
  for (const auto& [name, attr] : object.attrs) {
    Effect effect;
    effect.target = OutputPlan::of_source(object.source());
    effect.name = name;
    if (attr) {
      // The class's own __setattr__ already ran in the trace: write what it wrote.
      effect.kind = Effect::Kind::SetAttr;
      effect.value = plan(attr);
      effect.setter = py::Ref<>::newref(setattr);
    } else {
      effect.kind = Effect::Kind::DelAttr;
    }
    effects.push_back(std::move(effect));
  }
  if (object.has_dict_storage()) {
    // Written with the C base class's own methods (dict's, OrderedDict's): the trace already
    // ran the class's Python overrides, and OrderedDict keeps an order of its own.
    Effect effect;
    effect.kind = Effect::Kind::ReplaceDictItems;
    effect.target = OutputPlan::of_source(object.source());
    effect.value = remake_dict(*object.dict_storage(tracer_));
    effect.setter = py::Ref<>::newref(builtin_base(object.python_type()));
    effects.push_back(std::move(effect));
  }
  if (object.has_sequence_storage() && object.is_list_subclass()) {
    // list.__setitem__(target, slice(None), items): the class's overrides already ran.
    Effect effect;
    effect.kind = Effect::Kind::ReplaceListItems;
    effect.target = OutputPlan::of_source(object.source());
    OutputPlan items;
    items.kind = OutputPlan::Kind::List;
    items.items = plans_of(object.sequence_storage(tracer_)->items);
    effect.value = std::move(items);
    effect.setter = py::Ref<>::newref(py::own_type_attribute(&PyList_Type, "__setitem__"));
    effects.push_back(std::move(effect));
  }
  if (object.has_set_storage()) {
    // Written with set's own methods (the trace already ran the class's overrides).
    Effect effect;
    effect.kind = Effect::Kind::ReplaceSetItems;
    effect.target = OutputPlan::of_source(object.source());
    effect.value = remake_set(*object.set_storage(tracer_));
    effects.push_back(std::move(effect));
  }
}

// The first __setitem__ along the MRO that is not Python code: the dict base's own (dict's,
// OrderedDict's), which stores an item without running the class's overrides.
py::Ref<> base_set_item(PyObject* type) {
  PyObject* mro = reinterpret_cast<PyTypeObject*>(type)->tp_mro;  // borrowed
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* found = py::own_type_attribute(reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i)), "__setitem__");
    if (found && !PyFunction_Check(found)) return py::Ref<>::newref(found);
  }
  throw InternalError("a dict subclass without a builtin __setitem__");
}

OutputPlan PlanWriter::temp(int index) {
  OutputPlan result;
  result.kind = OutputPlan::Kind::Temp;
  result.index = index;
  return result;
}

OutputPlan PlanWriter::new_list(const SequenceValue& list) {
  if (auto found = temps_.find(&list); found != temps_.end()) return temp(found->second);
  const int index = static_cast<int>(new_objects_.size());
  temps_.emplace(&list, index);
  new_objects_.emplace_back();  // reserved: an item may be the list itself
  OutputPlan made;
  made.kind = OutputPlan::Kind::NewObject;
  PyObject* list_type = reinterpret_cast<PyObject*>(&PyList_Type);
  made.constant = py::Ref<>::newref(list_type);
  made.make = check(PyObject_GetAttrString(list_type, "__new__"));
  made.extend = check(PyObject_GetAttrString(list_type, "extend"));
  made.items = plans_of(list.items);
  new_objects_[index] = std::move(made);
  return temp(index);
}

OutputPlan PlanWriter::new_object(ObjectValue& object) {
  if (auto found = temps_.find(&object); found != temps_.end()) return temp(found->second);
  if (object.is_tuple_subclass()) {
    // tuple.__new__(cls, items): immutable, made where it is needed (its attributes set after).
    OutputPlan items;
    items.kind = OutputPlan::Kind::Tuple;
    items.items = plans_of(object.sequence_storage(tracer_)->items);
    OutputPlan made;
    made.kind = OutputPlan::Kind::Call;
    made.constant = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyTuple_Type), "__new__"));
    made.items.push_back(OutputPlan::of_constant(object.python_type()));
    made.items.push_back(std::move(items));
    if (object.attrs.empty()) return made;
    // Set as the trace set them, by setattr: only where the class's own __setattr__ is object's.
    PyObject* setattr = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(object.python_type()), check(PyUnicode_InternFromString("__setattr__")).get());
    if (setattr != py::own_type_attribute(&PyBaseObject_Type, "__setattr__"))
      throw NotRestorable{object.repr() + ", a tuple whose class has its own __setattr__"};
    OutputPlan with_attributes;
    with_attributes.kind = OutputPlan::Kind::Call;
    with_attributes.constant = py::Ref<>::newref(set_function_attributes_function());
    with_attributes.items.push_back(std::move(made));
    Args values;
    std::vector<std::string> written;
    for (const auto& [name, attr] : object.attrs) {
      if (!attr) continue;
      written.push_back(name);
      values.push_back(attr);
    }
    py::Ref<> names = check(PyTuple_New(static_cast<Py_ssize_t>(written.size())));
    for (size_t i = 0; i < written.size(); ++i)
      PyTuple_SET_ITEM(names.get(), static_cast<Py_ssize_t>(i), check(PyUnicode_FromString(written[i].c_str())).release());
    with_attributes.items.push_back(OutputPlan::of_constant(names.get()));
    for (auto& value : plans_of(values)) with_attributes.items.push_back(std::move(value));
    return with_attributes;
  }
  const int index = static_cast<int>(new_objects_.size());
  temps_.emplace(&object, index);
  new_objects_.emplace_back();  // reserved: the object's own values may refer back to it
  OutputPlan made;
  made.kind = OutputPlan::Kind::NewObject;
  made.constant = py::Ref<>::newref(object.python_type());
  made.make = check(PyObject_GetAttrString(object.python_type(), "__new__"));
  for (const auto& [name, attr] : object.attrs) {
    if (!attr) continue;  // deleted: never set
    made.names.push_back(name);
    made.items.push_back(plan(attr));
  }
  if (object.has_dict_storage()) {
    std::shared_ptr<DictValue> items = object.dict_storage(tracer_);
    made.keys = check(PyTuple_New(static_cast<Py_ssize_t>(items->keys.size())));
    for (size_t i = 0; i < items->keys.size(); ++i) {
      PyTuple_SET_ITEM(made.keys.get(), i, items->keys[i].copy().release());
      made.items.push_back(plan(items->values[i]));
    }
    made.set_item = base_set_item(object.python_type());
  }
  if (object.has_sequence_storage()) {
    for (const ValuePtr& item : object.sequence_storage(tracer_)->items) made.items.push_back(plan(item));
    made.extend = py::Ref<>::newref(py::own_type_attribute(&PyList_Type, "extend"));
  }
  if (object.has_set_storage()) {
    std::shared_ptr<SetValue> members = object.set_storage(tracer_);
    if (object.is_frozenset_subclass()) {
      // Members are constants and objects held by identity: real objects, passed to __new__.
      made.made_from = check(PySequence_Tuple(members->keys(false).get()));
    } else {
      Args items = *members->unpack(tracer_);
      for (const ValuePtr& member : items) made.items.push_back(plan(member));
      made.extend = py::Ref<>::newref(py::own_type_attribute(&PySet_Type, "update"));
    }
  }
  new_objects_[index] = std::move(made);
  return temp(index);
}

OutputPlan PlanWriter::remake_dict(const DictValue& dict) {
  OutputPlan plan;
  plan.kind = OutputPlan::Kind::Dict;
  plan.keys = check(PyTuple_New(static_cast<Py_ssize_t>(dict.keys.size())));
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    PyTuple_SET_ITEM(plan.keys.get(), i, dict.keys[i].copy().release());
    plan.items.push_back(this->plan(dict.values[i]));
  }
  return plan;
}

OutputPlan PlanWriter::remake_set(SetValue& set) {
  OutputPlan plan;
  plan.kind = OutputPlan::Kind::Set;
  if (set.frozen()) plan.constant = py::Ref<>::newref(reinterpret_cast<PyObject*>(&PyFrozenSet_Type));
  plan.items = plans_of(*set.unpack(tracer_));
  return plan;
}

OutputPlan PlanWriter::tensor(const TensorValue& tensor) {
  // The graph's inputs and module tensors are read again where they came from: the very
  // tensor object comes back (an output of a compiled graph may be a new alias of it).
  if (tensor.source()) return OutputPlan::of_source(tensor.source());
  OutputPlan output = OutputPlan::graph_output(output_index(tensor.node()));
  PyObject* cls = tensor.python_type();
  if (!tracer_.torch_function_inlined || cls == Bridge::get().tensor_type.get()) return output;
  // A tensor subclass's override gave the result its class; the graph, run with subclass
  // dispatch off, returns a plain tensor: torch.Tensor.as_subclass(output, cls).
  static PyObject* as_subclass = PyObject_GetAttrString(Bridge::get().tensor_type.get(), "as_subclass");  // kept for the process
  if (as_subclass == nullptr) throw_python_error();
  OutputPlan plan;
  plan.kind = OutputPlan::Kind::Call;
  plan.constant = py::Ref<>::newref(as_subclass);
  plan.items.push_back(std::move(output));
  plan.items.push_back(OutputPlan::of_constant(cls));
  return plan;
}

// Each plan builds a new object: a list, dict, iterator or function made in the frame and
// reachable twice (two locals, a local and the loop) would become two objects.
void PlanWriter::require_single_reference(const ValuePtr& value) {
  const bool is_mutable = dynamic_cast<DictValue*>(value.get()) != nullptr || dynamic_cast<DequeValue*>(value.get()) != nullptr ||
                          dynamic_cast<UserFunctionValue*>(value.get()) != nullptr || value->is_iterator() ||
                          (dynamic_cast<SequenceValue*>(value.get()) != nullptr &&
                           static_cast<SequenceValue&>(*value).is_list());
  if (is_mutable && !made_here_.insert(value.get()).second) {
    auto* list = dynamic_cast<SequenceValue*>(value.get());
    throw NotRestorable{value->repr() + ", which is referenced from two places", list && list->is_list() ? value : nullptr};
  }
}

namespace {

// call_with(function, args, kwargs) -> function(*args, **kwargs): a call whose callable is
// itself rebuilt (a generator function made in the frame).
PyObject* call_with(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyTuple_Check(args[1]) || !PyDict_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "call_with(function, args, kwargs)");
    return nullptr;
  }
  return PyObject_Call(args[0], args[1], args[2]);
}

PyObject* call_with_function() {
  static PyMethodDef definition = {"call_with", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call_with)),
                                   METH_FASTCALL, "function(*args, **kwargs)."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

}  // namespace

OutputPlan PlanWriter::call(PyObject* callable, const Args& arguments) {
  OutputPlan result;
  result.kind = OutputPlan::Kind::Call;
  result.constant = py::Ref<>::newref(callable);
  result.items = plans_of(arguments);
  return result;
}

OutputPlan PlanWriter::call(const ValuePtr& function, const Args& arguments, const KwArgs& keywords) {
  OutputPlan positional;
  positional.kind = OutputPlan::Kind::Tuple;
  positional.items = plans_of(arguments);
  OutputPlan named;
  named.kind = OutputPlan::Kind::Dict;
  named.keys = check(PyTuple_New(static_cast<Py_ssize_t>(keywords.size())));
  for (size_t i = 0; i < keywords.size(); ++i) {
    PyTuple_SET_ITEM(named.keys.get(), static_cast<Py_ssize_t>(i), check(PyUnicode_FromString(keywords[i].first.c_str())).release());
    named.items.push_back(plan(keywords[i].second));
  }
  OutputPlan result;
  result.kind = OutputPlan::Kind::Call;
  result.constant = py::Ref<>::newref(call_with_function());
  result.items.push_back(plan(function));
  result.items.push_back(std::move(positional));
  result.items.push_back(std::move(named));
  return result;
}

// An iterator over a list stays one: the same list, from the same index, rebuilt from the
// pair (list, index) by list_iterator_at (a loop resumed after a break reaches what its body
// appends later). The pair is what a resume function is passed for it.
OutputPlan PlanWriter::live_list_iterator(const IteratorValue& iterator) {
  OutputPlan state;
  state.kind = OutputPlan::Kind::Tuple;
  state.items.push_back(plan(iterator.live_list()));
  state.items.push_back(OutputPlan::of_constant(check(PyLong_FromSize_t(iterator.position())).get()));
  OutputPlan result;
  result.kind = OutputPlan::Kind::Iterator;
  result.constant = tracer_.bridge.list_iterator_at.copy();
  result.items.push_back(std::move(state));
  return result;
}

// A function made in this frame: MAKE_FUNCTION again, with this frame's globals and with its
// closure read from this frame's cells (LOAD_CLOSURE by name).

OutputPlan PlanWriter::make_function(UserFunctionValue& function) {
  OutputPlan made = make_function_itself(function);
  KwArgs attributes;
  for (const auto& [name, value] : function.written_attributes()) {
    // An empty __annotations__ (read by functools.wraps, maybe shared with the function it
    // wraps) is what a function made again has anyway.
    auto* dict = dynamic_cast<DictValue*>(value.get());
    if (name == "__annotations__" && dict && dict->keys.empty()) continue;
    attributes.emplace_back(name, value);
  }
  if (function.has_attribute_dict()) {
    std::shared_ptr<DictValue> dict = function.attribute_dict();
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      if (!PyUnicode_Check(dict->keys[i].get())) throw NotRestorable{"a non-string key in the __dict__ of " + function.repr()};
      attributes.emplace_back(PyUnicode_AsUTF8(dict->keys[i].get()), dict->values[i]);
    }
  }
  if (attributes.empty()) return made;
  OutputPlan call;
  call.kind = OutputPlan::Kind::Call;
  call.constant = py::Ref<>::newref(set_function_attributes_function());
  call.items.push_back(std::move(made));
  py::Ref<> names = check(PyTuple_New(static_cast<Py_ssize_t>(attributes.size())));
  for (size_t i = 0; i < attributes.size(); ++i)
    PyTuple_SET_ITEM(names.get(), static_cast<Py_ssize_t>(i), check(PyUnicode_FromString(attributes[i].first.c_str())).release());
  call.items.push_back(OutputPlan::of_constant(names.get()));
  for (const auto& [name, value] : attributes) call.items.push_back(plan(value));
  return call;
}

OutputPlan PlanWriter::make_function_itself(const UserFunctionValue& function) {
  if (function.function || function.globals.get() != frame_.globals.get())
    throw NotRestorable{function.repr() + " (not made in this frame)"};
  constexpr int kDefaults = 0x01, kKwDefaults = 0x02, kClosure = 0x08;
  OutputPlan result;
  result.kind = OutputPlan::Kind::MakeFunction;
  result.constant = function.code.copy();
  result.index = 0;
  for (const ValuePtr& cell : function.closure) {
    std::string name = cell_name(cell);
    if (name.empty()) throw NotRestorable{function.repr() + ", whose closure is not this frame's"};
    result.names.push_back(name);
  }
  if (!function.defaults.empty()) {
    OutputPlan defaults;
    defaults.kind = OutputPlan::Kind::Tuple;
    defaults.items = plans_of(function.defaults);
    result.items.push_back(std::move(defaults));
    result.index |= kDefaults;
  }
  if (!function.kwdefaults.empty()) {
    OutputPlan kwdefaults;
    kwdefaults.kind = OutputPlan::Kind::Dict;
    kwdefaults.keys = check(PyTuple_New(static_cast<Py_ssize_t>(function.kwdefaults.size())));
    for (size_t i = 0; i < function.kwdefaults.size(); ++i) {
      PyTuple_SET_ITEM(kwdefaults.keys.get(), i, check(PyUnicode_FromString(function.kwdefaults[i].first.c_str())).release());
      kwdefaults.items.push_back(plan(function.kwdefaults[i].second));
    }
    result.items.push_back(std::move(kwdefaults));
    result.index |= kKwDefaults;
  }
  if (!result.names.empty()) {
    result.index |= kClosure;
    made_closures_ = true;
  }
  return result;
}

void PlanWriter::own_cell_effects(std::vector<codegen::SideEffectPlan>& effects) {
  if (!made_closures_) return;
  const auto& names = frame_.code->localsplus_names;
  const size_t first_free = frame_.locals.size() - std::min(frame_.locals.size(), static_cast<size_t>(frame_.code->nfree));
  for (size_t slot = 0; slot < first_free && slot < names.size(); ++slot) {
    if (slot >= frame_.code->is_cell.size() || !frame_.code->is_cell[slot]) continue;
    auto* cell = dynamic_cast<CellValue*>(frame_.locals[slot].get());
    if (cell == nullptr || !cell->contents) continue;
    codegen::SideEffectPlan effect;
    effect.kind = codegen::SideEffectPlan::Kind::StoreDeref;
    effect.name = names[slot];
    effect.value = plan(cell->contents);
    effects.push_back(std::move(effect));
  }
}

// The name of this frame's cell or free variable that is `cell`, or "" if none is.
std::string PlanWriter::cell_name(const ValuePtr& cell) const {
  const auto& names = frame_.code->localsplus_names;
  for (size_t slot = 0; slot < frame_.locals.size() && slot < names.size(); ++slot)
    if (frame_.locals[slot] == cell) return names[slot];
  const size_t first_free = names.size() - std::min(names.size(), frame_.closure.size());
  for (size_t i = 0; i < frame_.closure.size(); ++i)
    if (frame_.closure[i] == cell && first_free + i < names.size()) return names[first_free + i];
  return "";
}

std::vector<OutputPlan> PlanWriter::plans_of(const Args& items) {
  std::vector<OutputPlan> plans;
  plans.reserve(items.size());
  for (const ValuePtr& item : items) plans.push_back(plan(item));
  return plans;
}

int PlanWriter::output_index(int node) {
  auto found = std::find(outputs_.begin(), outputs_.end(), node);
  if (found != outputs_.end()) return static_cast<int>(found - outputs_.begin());
  outputs_.push_back(node);
  return static_cast<int>(outputs_.size()) - 1;
}

// ---- how the container and function kinds are made again (their Value::remake) ---------------

std::optional<OutputPlan> SequenceValue::remake(PlanWriter& writer) {
  OutputPlan plan;
  plan.items = writer.plans_of(items);
  if (is_list()) {
    plan.kind = OutputPlan::Kind::List;
  } else if (tuple_type) {
    plan.kind = OutputPlan::Kind::NamedTuple;
    plan.constant = named_tuple_constructor(tuple_type.get());
  } else {
    plan.kind = OutputPlan::Kind::Tuple;
  }
  return plan;
}

std::optional<OutputPlan> DictValue::remake(PlanWriter& writer) { return writer.remake_dict(*this); }

std::optional<OutputPlan> SetValue::remake(PlanWriter& writer) { return writer.remake_set(*this); }

std::optional<OutputPlan> IteratorValue::remake(PlanWriter& writer) {
  if (live_list() && !enumerate_start()) return writer.live_list_iterator(*this);
  const size_t start = position();
  Args rest;
  while (ValuePtr item = next()) rest.push_back(std::move(item));
  set_position(start);  // describing must not advance the loop
  OutputPlan plan;
  plan.kind = OutputPlan::Kind::Iterator;
  plan.items = writer.plans_of(rest);
  return plan;
}

std::optional<OutputPlan> UserFunctionValue::remake(PlanWriter& writer) { return writer.make_function(*this); }

// ---- what generated code writes back to each kind of changed outside object -------------------

using Effect = codegen::SideEffectPlan;

void Value::write_changes(PlanWriter&, std::vector<Effect>&) { throw NotRestorable{"changes to " + repr()}; }

void CellValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) {
  Effect effect;
  if (!root_name.empty()) {
    effect.kind = Effect::Kind::StoreDeref;
    effect.name = root_name;
  } else {
    effect.kind = Effect::Kind::SetAttr;
    effect.target = OutputPlan::of_source(cell_source);
    effect.name = "cell_contents";
  }
  if (!contents) throw NotRestorable{"a closure variable deleted in the trace"};
  effect.value = writer.plan(contents);
  effects.push_back(std::move(effect));
}

void ObjectValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) { writer.object_effects(*this, effects); }

void ModuleValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) {
  // The module's own __setattr__ puts a buffer's new tensor in its buffers.
  for (const auto& [name, attr] : attrs) {
    Effect effect;
    effect.kind = Effect::Kind::SetAttr;
    effect.target = OutputPlan::of_source(source());
    effect.name = name;
    effect.value = writer.plan(attr);
    effects.push_back(std::move(effect));
  }
}

namespace {

// The whole contents of a list, dict or set from outside replaced by what the trace left.
Effect replacing_items(const Value& container, Effect::Kind kind, OutputPlan items) {
  Effect effect;
  effect.kind = kind;
  effect.target = OutputPlan::of_source(container.source());
  effect.value = std::move(items);
  return effect;
}

}  // namespace

void SequenceValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) {
  OutputPlan list;
  list.kind = OutputPlan::Kind::List;
  list.items = writer.plans_of(items);
  effects.push_back(replacing_items(*this, Effect::Kind::ReplaceListItems, std::move(list)));
}

void DictValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) {
  effects.push_back(replacing_items(*this, Effect::Kind::ReplaceDictItems, writer.remake_dict(*this)));
}

void SetValue::write_changes(PlanWriter& writer, std::vector<Effect>& effects) {
  effects.push_back(replacing_items(*this, Effect::Kind::ReplaceSetItems, writer.remake_set(*this)));
}

}  // namespace bytegraph::trace
