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
bool has_value(const SideEffectPlan& effect) { return effect.kind != SideEffectPlan::Kind::DelAttr; }

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
        builder.load_fast(value);
        builder.load_fast(target);
        py::Ref<> everything = check(PySlice_New(nullptr, nullptr, nullptr));
        builder.load_const(everything.get());
        builder.store_subscr();
        break;
      }
      case Kind::ReplaceDictItems: {
        PyObject* dict_type = reinterpret_cast<PyObject*>(&PyDict_Type);
        call_and_drop(builder, builtin_attr(dict_type, "clear"), 1, [&] { builder.load_fast(target); });
        call_and_drop(builder, builtin_attr(dict_type, "update"), 2, [&] {
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
        py::Ref<> builtins = check(PyImport_ImportModule("builtins"));
        py::Ref<> delattr = check(PyObject_GetAttrString(builtins.get(), "delattr"));
        py::Ref<> name = interned(effect.name);
        call_and_drop(builder, delattr.get(), 2, [&] {
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
    }
  }
}

}  // namespace bytegraph::codegen
