#include "codegen/side_effects.h"
#include "python/type_dict.h"

#include "python/errors.h"

namespace bytegraph::codegen {


namespace {

std::string target_name(size_t i) { return "___effect_target" + std::to_string(i); }
std::string value_name(size_t i) { return "___effect_value" + std::to_string(i); }

bool has_target(const SideEffectPlan& effect) {
  return effect.kind != SideEffectPlan::Kind::StoreGlobal && effect.kind != SideEffectPlan::Kind::StoreDeref;
}
bool has_value(const SideEffectPlan& effect) {
  return effect.kind != SideEffectPlan::Kind::DelAttr && effect.kind != SideEffectPlan::Kind::DelItem;
}

PyObject* builtin_attr(PyObject* type, const char* name) {
  // Borrowed from the type's dict, which lives as long as the interpreter.
  PyObject* found = py::own_type_attribute(reinterpret_cast<PyTypeObject*>(type), name);
  if (found == nullptr) throw InternalError(std::string("no builtin ") + name);
  return found;
}

// callable(*loaded) with its result dropped; `load` pushes the arguments.
template <class Load>
void call_and_drop(CodeBuilder& builder, PyObject* callable, int nargs, Load load) {
  builder.before_callable();
  builder.load_const(callable);
  builder.after_callable();
  load();
  builder.call(nargs);
  builder.pop_top();
}

// The replay of `del obj.name`: the trace saw the deletion succeed, and afterwards the
// attribute is gone whatever it was before: set and deleted in the trace, it may be absent
// from the real object (a plain delattr would raise). The class's __delattr__ already ran in
// the trace, so this is object.__delattr__'s generic deletion, as SetAttr is __setattr__'s.
PyObject* delete_attribute(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "delete_attribute(obj, name)");
    return nullptr;
  }
  if (PyObject_GenericSetAttr(args[0], args[1], nullptr) < 0) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return nullptr;
    PyErr_Clear();  // not there: nothing to delete
  }
  Py_RETURN_NONE;
}

// The replay of a dict subclass instance's items: cleared and refilled with its C base class's
// own methods (OrderedDict.__setitem__ keeps OrderedDict's order; update would call the
// subclass's __setitem__ again, which already ran in the trace).
PyObject* replace_dict_items(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyType_Check(args[0]) || !PyDict_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "replace_dict_items(dict_class, target, items)");
    return nullptr;
  }
  PyObject* result = PyObject_CallMethod(args[0], "clear", "O", args[1]);
  if (result == nullptr) return nullptr;
  Py_DECREF(result);
  PyObject* setitem = PyObject_GetAttrString(args[0], "__setitem__");  // dict's, inherited by defaultdict
  if (setitem == nullptr) return nullptr;
  PyObject *key, *value;  // borrowed
  Py_ssize_t position = 0;
  while (PyDict_Next(args[2], &position, &key, &value)) {
    PyObject* stored = PyObject_CallFunctionObjArgs(setitem, args[1], key, value, nullptr);
    if (stored == nullptr) {
      Py_DECREF(setitem);
      return nullptr;
    }
    Py_DECREF(stored);
  }
  Py_DECREF(setitem);
  Py_RETURN_NONE;
}

PyObject* replace_dict_items_function() {
  static PyMethodDef definition = {"replace_dict_items", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(replace_dict_items)),
                                   METH_FASTCALL, "Replaces a dict subclass instance's items through its C base class."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

PyObject* delete_attribute_function() {
  static PyMethodDef definition = {"delete_attribute", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(delete_attribute)),
                                   METH_FASTCALL, "Deletes an instance attribute if it is there (replays `del obj.name`)."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

}  // namespace

bool uses_graph_outputs(const std::vector<SideEffectPlan>& effects) {
  for (const SideEffectPlan& effect : effects)
    if ((has_target(effect) && effect.target.uses_graph_outputs()) || (has_value(effect) && effect.value.uses_graph_outputs()))
      return true;
  return false;
}

void emit_side_effect_operands(CodeBuilder& builder, const std::vector<SideEffectPlan>& effects, PyCodeObject* code) {
  for (size_t i = 0; i < effects.size(); ++i) {
    if (has_target(effects[i])) {
      emit_plan(builder, effects[i].target, code);
      builder.store_fast(target_name(i));
    }
    if (has_value(effects[i])) {
      emit_plan(builder, effects[i].value, code);
      builder.store_fast(value_name(i));
    }
  }
}

void emit_side_effect_writes(CodeBuilder& builder, const std::vector<SideEffectPlan>& effects) {
  using Kind = SideEffectPlan::Kind;
  for (size_t i = 0; i < effects.size(); ++i) {
    const SideEffectPlan& effect = effects[i];
    const std::string target = target_name(i), value = value_name(i);
    switch (effect.kind) {
      case Kind::ReplaceListItems: {
        if (effect.setter) {  // list.__setitem__: a subclass's own __setitem__ already ran in the trace
          py::Ref<> everything = check(PySlice_New(nullptr, nullptr, nullptr));
          call_and_drop(builder, effect.setter.get(), 3, [&] {
            builder.load_fast(target);
            builder.load_const(everything.get());
            builder.load_fast(value);
          });
          break;
        }
        builder.load_fast(value);
        builder.load_fast(target);
        py::Ref<> everything = check(PySlice_New(nullptr, nullptr, nullptr));
        builder.load_const(everything.get());
        builder.store_subscr();
        break;
      }
      case Kind::ReplaceDictItems:
        if (effect.setter) {
          call_and_drop(builder, replace_dict_items_function(), 3, [&] {
            builder.load_const(effect.setter.get());
            builder.load_fast(target);
            builder.load_fast(value);
          });
          break;
        }
        [[fallthrough]];
      case Kind::ReplaceSetItems: {
        // The base type's own methods: what the trace changed is the items, not through overrides.
        PyObject* type = reinterpret_cast<PyObject*>(effect.kind == Kind::ReplaceDictItems ? &PyDict_Type : &PySet_Type);
        call_and_drop(builder, builtin_attr(type, "clear"), 1, [&] { builder.load_fast(target); });
        call_and_drop(builder, builtin_attr(type, "update"), 2, [&] {
          builder.load_fast(target);
          builder.load_fast(value);
        });
        break;
      }
      case Kind::SetAttr:
        if (effect.setter) {
          py::Ref<> name = interned(effect.name);
          call_and_drop(builder, effect.setter.get(), 3, [&] {
            builder.load_fast(target);
            builder.load_const(name.get());
            builder.load_fast(value);
          });
        } else {
          builder.load_fast(value);
          builder.load_fast(target);
          builder.store_attr(effect.name);
        }
        break;
      case Kind::DelAttr: {
        py::Ref<> name = interned(effect.name);
        call_and_drop(builder, delete_attribute_function(), 2, [&] {
          builder.load_fast(target);
          builder.load_const(name.get());
        });
        break;
      }
      case Kind::StoreGlobal:
        builder.load_fast(value);
        builder.store_global(effect.name);
        break;
      case Kind::StoreDeref:
        builder.load_fast(value);
        builder.store_deref(effect.name);
        break;
      case Kind::SetItem:
        builder.load_fast(value);
        builder.load_fast(target);
        builder.load_const(interned(effect.name).get());
        builder.store_subscr();
        break;
      case Kind::DelItem: {
        py::Ref<> name = interned(effect.name);
        call_and_drop(builder, builtin_attr(reinterpret_cast<PyObject*>(&PyDict_Type), "pop"), 3, [&] {
          builder.load_fast(target);
          builder.load_const(name.get());
          builder.load_const(Py_None);
        });
        break;
      }
    }
  }
}

}  // namespace bytegraph::codegen
