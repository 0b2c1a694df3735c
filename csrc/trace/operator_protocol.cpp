// Operators on instances of user classes, as Python dispatches them: `a + b` calls
// type(a).__add__(a, b), then type(b).__radd__(b, a) if that answered NotImplemented (the
// reflected method first when b's class is a subclass of a's that overrides it); `a += b` tries
// __iadd__ first; comparisons reflect (< with >), and == / != fall back to identity. The
// Python methods are inlined, each guarded where its class holds it.
#include <cstring>
#include <string>
#include <unordered_map>

#include "python/type_dict.h"
#include "trace/operators.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

struct Dunders {
  std::string method, reflected, inplace;
  bool comparison = false;
  std::string symbol;  // as CPython's TypeError names the operator: "-", "-=", "<", "unary -"
};

std::string operator_symbol(const std::string& base, bool inplace) {
  static const std::unordered_map<std::string, std::string> symbols = {
      {"add", "+"},  {"sub", "-"},   {"mul", "*"},  {"matmul", "@"},     {"truediv", "/"}, {"floordiv", "//"},
      {"mod", "%"},  {"pow", "**"},  {"lshift", "<<"}, {"rshift", ">>"}, {"and", "&"},      {"or", "|"},
      {"xor", "^"},  {"lt", "<"},    {"le", "<="},  {"gt", ">"},         {"ge", ">="},     {"eq", "=="},
      {"ne", "!="},  {"neg", "unary -"}, {"pos", "unary +"}, {"invert", "unary ~"}, {"abs", "abs()"}};
  auto found = symbols.find(base);
  std::string symbol = found == symbols.end() ? base : found->second;
  if (inplace) return symbol + "=";
  return base == "pow" ? "** or pow()" : symbol;
}

// The special methods of operator.<name>; empty for operators without them here.
std::optional<Dunders> dunders_of(PyObject* function) {
  py::Ref<> name_object = check(PyObject_GetAttrString(function, "__name__"));
  std::string name = PyUnicode_AsUTF8(name_object.get());
  static const std::unordered_map<std::string, std::string> comparisons = {
      {"lt", "gt"}, {"le", "ge"}, {"gt", "lt"}, {"ge", "le"}, {"eq", "eq"}, {"ne", "ne"}};
  if (auto found = comparisons.find(name); found != comparisons.end())
    return Dunders{"__" + name + "__", "__" + found->second + "__", "", true, operator_symbol(name, false)};
  static const char* unary[] = {"neg", "pos", "invert", "abs"};
  for (const char* op : unary)
    if (name == op) return Dunders{"__" + name + "__", "", "", false, operator_symbol(name, false)};
  static const char* binary[] = {"add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
                                 "lshift", "rshift", "and", "or", "xor"};
  bool inplace = name.size() > 1 && name[0] == 'i' && name != "invert";
  std::string base = inplace ? name.substr(1) : name;
  if (!base.empty() && base.back() == '_') base.pop_back();  // and_, or_
  for (const char* op : binary)
    if (base == op)
      return Dunders{"__" + base + "__", "__r" + base + "__", inplace ? "__i" + base + "__" : "", false,
                     operator_symbol(base, inplace)};
  return std::nullopt;
}

bool not_implemented(const ValuePtr& value) { return value->is_constant() && value->constant() == Py_NotImplemented; }

// A named tuple of a Python class (a namedtuple subclass defining __add__): the class's
// methods apply to it as to an instance.
bool is_user_tuple(const ValuePtr& value) {
  auto* sequence = dynamic_cast<SequenceValue*>(value.get());
  return sequence != nullptr && sequence->tuple_type && !sequence->is_size();
}

bool is_user_operand(const ValuePtr& value) { return dynamic_cast<ObjectValue*>(value.get()) || is_user_tuple(value); }

// The Python function the operand's class defines as `name`; null where it has none.
PyObject* python_special(const ValuePtr& value, const std::string& name) {
  if (!is_user_operand(value)) return nullptr;
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* found = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(value->python_type()), key.get());
  return found != nullptr && PyFunction_Check(found) ? found : nullptr;
}

// The class's Python method `name` called on `self`, or null where the class has none.
ValuePtr call_special(Tracer& tracer, const ValuePtr& self, const std::string& name, const Args& args) {
  if (auto* object = dynamic_cast<ObjectValue*>(self.get())) return object->inline_special(tracer, name.c_str(), args);
  PyObject* function = python_special(self, name);
  if (function == nullptr) return nullptr;
  Args call_args{self};
  call_args.insert(call_args.end(), args.begin(), args.end());
  return tracer.wrap_user_function(function, guards::class_attr_source(self->python_type(), name))->call(tracer, call_args, {});
}

bool overrides(const ValuePtr& value, const std::string& name) { return python_special(value, name) != nullptr; }

// An instance of a class with no builtin base but object, or a constant (a number, a string,
// None): what one of these answers to an operator the other's class does not define is known
// (NotImplemented, then TypeError or identity for == and !=).
bool plain(const ValuePtr& value) {
  if (value->is_constant()) return true;
  auto* object = dynamic_cast<ObjectValue*>(value.get());
  if (object == nullptr) return false;
  for (auto* base = reinterpret_cast<PyTypeObject*>(object->python_type()); base != nullptr; base = base->tp_base)
    if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE) && base != &PyBaseObject_Type) return false;
  // `"ab" * obj` repeats by obj.__index__(): not answered here.
  return !overrides(value, "__index__");
}

// CPython's message for operands no method answered.
[[noreturn]] void unsupported_operands(const Dunders& names, const Args& operands) {
  auto type_name = [&](size_t i) {
    return std::string("'") + reinterpret_cast<PyTypeObject*>(operands[i]->python_type())->tp_name + "'";
  };
  std::string text;
  if (operands.size() == 1)
    text = "bad operand type for " + names.symbol + ": " + type_name(0);
  else if (names.comparison)
    text = "'" + names.symbol + "' not supported between instances of " + type_name(0) + " and " + type_name(1);
  else
    text = "unsupported operand type(s) for " + names.symbol + ": " + type_name(0) + " and " + type_name(1);
  raise_error("python_error", PyExc_TypeError, text);
}

}  // namespace

bool is_protocol_operator(PyObject* function) {
  if (!PyCFunction_Check(function)) return false;
  PyObject* module = PyCFunction_GET_SELF(function);  // borrowed
  if (module == nullptr || !PyModule_Check(module)) return false;
  const char* module_name = PyModule_GetName(module);
  if (module_name == nullptr) {
    PyErr_Clear();
    return false;
  }
  if (std::strcmp(module_name, "_operator") != 0 && std::strcmp(module_name, "operator") != 0) return false;
  return dunders_of(function).has_value();
}

ValuePtr user_class_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  bool any_user_object = false;
  for (const ValuePtr& operand : operands) any_user_object = any_user_object || is_user_operand(operand);
  if (!any_user_object || operands.empty() || operands.size() > 2) return nullptr;
  std::optional<Dunders> names = dunders_of(function);
  if (!names) return nullptr;
  const ValuePtr& left = operands[0];
  if (operands.size() == 1) {
    if (!overrides(left, names->method)) return nullptr;
    return call_special(tracer, left, names->method, {});
  }
  const ValuePtr& right = operands[1];
  // A tensor on the other side has its own protocol (torch's); not this one.
  if (left->is_tensor() || right->is_tensor()) {
    if (!left->is_tensor() && overrides(left, names->inplace.empty() ? names->method : names->inplace)) {
      // obj + tensor: the object's method first.
    } else {
      return nullptr;
    }
  }
  const bool any_method = overrides(left, names->method) || (!names->inplace.empty() && overrides(left, names->inplace)) ||
                          overrides(right, names->reflected) || (names->method == "__ne__" && overrides(left, "__eq__"));
  if (!any_method) {
    // A list or tuple subclass that overrides none of it: the base's operator on its items.
    auto as_base = [&](const ValuePtr& value) -> ValuePtr {
      auto* object = dynamic_cast<ObjectValue*>(value.get());
      if (object == nullptr || !(object->is_list_subclass() || object->is_tuple_subclass())) return value;
      auto items = object->sequence_storage(tracer);
      return std::make_shared<SequenceValue>(items->is_list(), items->items);
    };
    ValuePtr base_left = as_base(left), base_right = as_base(right);
    if (base_left != left || base_right != right) return apply_operator(tracer, function, {base_left, base_right});
  }
  if (!any_method && !(plain(left) && plain(right))) return nullptr;
  if (!names->inplace.empty() && overrides(left, names->inplace)) {
    ValuePtr result = call_special(tracer, left, names->inplace, {right});
    if (!not_implemented(result)) return result;
  }
  PyObject* left_type = left->python_type();
  PyObject* right_type = right->python_type();
  const bool different_types = left_type != right_type;
  const bool reflected_first = different_types && right_type && left_type &&
                               PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(right_type), reinterpret_cast<PyTypeObject*>(left_type)) &&
                               overrides(right, names->reflected);
  if (reflected_first) {
    ValuePtr result = call_special(tracer, right, names->reflected, {left});
    if (!not_implemented(result)) return result;
  }
  if (overrides(left, names->method)) {
    ValuePtr result = call_special(tracer, left, names->method, {right});
    if (!not_implemented(result)) return result;
  } else if (names->method == "__ne__" && overrides(left, "__eq__")) {
    // object.__ne__ inverts __eq__.
    ValuePtr equal = call_special(tracer, left, "__eq__", {right});
    if (!not_implemented(equal)) return ConstantValue::make(py::Ref<>::newref(equal->truthy(tracer) ? Py_False : Py_True));
  }
  if ((different_types || names->comparison) && !reflected_first && overrides(right, names->reflected)) {
    ValuePtr result = call_special(tracer, right, names->reflected, {left});
    if (!not_implemented(result)) return result;
  }
  if (names->method == "__eq__" || names->method == "__ne__") {
    const bool same = same_object(tracer, left, right);
    return ConstantValue::make(py::Ref<>::newref((names->method == "__eq__") == same ? Py_True : Py_False));
  }
  unsupported_operands(*names, operands);
}

}  // namespace bytegraph::trace
