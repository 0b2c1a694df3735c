// Structural pattern matching (`match` statements): GET_LEN and the MATCH_* instructions,
// answered as CPython's ceval does, through the traced values' own protocols (isinstance,
// getattr, the mapping's get), so each read is guarded where it came from.
#include "python/import.h"
#include "trace/interpreter.h"
#include "trace/operators.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

// CPython marks the builtin classes whose single positional sub-pattern matches the subject
// itself (`case int(n)`): bool, bytearray, bytes, dict, float, frozenset, int, list, set, str,
// tuple and their subclasses (_Py_TPFLAGS_MATCH_SELF, the same bit on 3.10–3.13).
constexpr unsigned long kMatchSelf = 1UL << 22;

ValuePtr call_builtin(Tracer& tracer, const char* name, const Args& args) {
  BuiltinValue function(py::Ref<>::newref(builtin_object(name)));
  return function.call(tracer, args, {});
}

// A marker no traced value can be: the default of the lookups below, told apart by identity.
ValuePtr missing_marker() {
  static PyObject* marker = PyObject_CallNoArgs((PyObject*)&PyBaseObject_Type);
  return std::make_shared<ConstantValue>(py::Ref<>::newref(marker));
}

bool is_missing(const ValuePtr& value, const ValuePtr& marker) {
  return value.get() == marker.get() || (value->is_constant() && value->constant() == marker->constant());
}

unsigned long type_flags(const ValuePtr& subject) {
  PyObject* type = subject->python_type();
  if (type == nullptr || !PyType_Check(type)) unsupported("unsupported_opcode", "matching a pattern against " + subject->repr());
  return PyType_GetFlags(reinterpret_cast<PyTypeObject*>(type));
}

void get_len(Tracer& tracer, FrameState& frame, const Instruction&) {
  frame.push(call_builtin(tracer, "len", {frame.top(0)}));
}

void match_sequence(Tracer&, FrameState& frame, const Instruction&) {
  frame.push(make_bool((type_flags(frame.top(0)) & Py_TPFLAGS_SEQUENCE) != 0));
}

void match_mapping(Tracer&, FrameState& frame, const Instruction&) {
  frame.push(make_bool((type_flags(frame.top(0)) & Py_TPFLAGS_MAPPING) != 0));
}

// Stack: subject, keys (a constant tuple) -> subject, keys, the values in the keys' order, or
// None when a key is missing (subject.get(key, marker), as CPython asks).
void match_keys(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr keys = frame.top(0);
  ValuePtr subject = frame.top(1);
  auto items = keys->unpack(tracer);
  if (!items) unsupported("unsupported_opcode", "matching the keys " + keys->repr());
  if (items->empty()) {
    frame.push(std::make_shared<SequenceValue>(false, Args{}));
    return;
  }
  ValuePtr get = subject->get_attr(tracer, "get");
  ValuePtr marker = missing_marker();
  Args values;
  for (size_t i = 0; i < items->size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (!(*items)[i]->is_constant() || !(*items)[j]->is_constant()) continue;
      int same = PyObject_RichCompareBool((*items)[i]->constant(), (*items)[j]->constant(), Py_EQ);
      check_status(same);
      if (same) raise_error("value_error", PyExc_ValueError, "mapping pattern checks duplicate key (" + (*items)[i]->repr() + ")");
    }
    ValuePtr value = get->call(tracer, {(*items)[i], marker}, {});
    if (is_missing(value, marker)) {
      frame.push(ConstantValue::none());
      return;
    }
    values.push_back(std::move(value));
  }
  frame.push(std::make_shared<SequenceValue>(false, std::move(values)));
}

std::string class_name(PyObject* type) { return reinterpret_cast<PyTypeObject*>(type)->tp_name; }

// The attribute names the positional sub-patterns bind: the class's __match_args__, or the
// subject itself for the match-self builtins (an empty name stands for it).
std::vector<std::string> positional_names(Tracer& tracer, const ValuePtr& cls, PyObject* type, Py_ssize_t count) {
  if (count == 0) return {};
  ValuePtr marker = missing_marker();
  ValuePtr match_args = call_builtin(tracer, "getattr", {cls, ConstantValue::make(check(PyUnicode_FromString("__match_args__"))), marker});
  std::vector<std::string> names;
  if (is_missing(match_args, marker)) {
    if (!(PyType_GetFlags(reinterpret_cast<PyTypeObject*>(type)) & kMatchSelf) || count > 1)
      raise_error("python_error", PyExc_TypeError, class_name(type) + "() accepts 0 positional sub-patterns (" +
                                                      std::to_string(count) + " given)");
    return {""};
  }
  py::Ref<> real = constant_of(match_args);
  if (!real) unsupported("unsupported_opcode", class_name(type) + ".__match_args__ is " + match_args->repr());
  if (!PyTuple_Check(real.get()))
    raise_error("python_error", PyExc_TypeError, class_name(type) + ".__match_args__ must be a tuple (got " + Py_TYPE(real.get())->tp_name + ")");
  PyObject* tuple = real.get();
  if (count > PyTuple_GET_SIZE(tuple))
    raise_error("python_error", PyExc_TypeError, class_name(type) + "() accepts " + std::to_string(PyTuple_GET_SIZE(tuple)) +
                                                    " positional sub-pattern" + (PyTuple_GET_SIZE(tuple) == 1 ? "" : "s") + " (" +
                                                    std::to_string(count) + " given)");
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* name = PyTuple_GET_ITEM(tuple, i);
    if (!PyUnicode_Check(name))
      raise_error("python_error", PyExc_TypeError, "__match_args__ elements must be strings (got " + std::string(Py_TYPE(name)->tp_name) + ")");
    names.push_back(PyUnicode_AsUTF8(name));
  }
  return names;
}

// Stack: subject, class, keyword names (a constant tuple) -> the attributes the sub-patterns
// bind (positional ones first), or None when the subject is no instance or lacks one.
void match_class(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr keywords = frame.pop();
  ValuePtr cls = frame.pop();
  ValuePtr subject = frame.pop();
  PyObject* type = cls->is_constant() ? cls->constant() : cls->real_object();
  if (type == nullptr || !PyType_Check(type)) {
    if (type != nullptr) raise_error("python_error", PyExc_TypeError, "called match pattern must be a class");
    unsupported("unsupported_opcode", "matching against the class " + cls->repr());
  }
  if (!call_builtin(tracer, "isinstance", {subject, cls})->truthy(tracer)) {
    frame.push(ConstantValue::none());
    return;
  }
  std::vector<std::string> names = positional_names(tracer, cls, type, inst.arg);
  if (!keywords->is_constant() || !PyTuple_Check(keywords->constant())) throw InternalError("MATCH_CLASS without a names tuple");
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keywords->constant()); ++i)
    names.push_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(keywords->constant(), i)));
  ValuePtr marker = missing_marker();
  Args attributes;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) {
      attributes.push_back(subject);
      continue;
    }
    for (size_t j = 0; j < i; ++j)
      if (names[j] == names[i])
        raise_error("python_error", PyExc_TypeError, class_name(type) + "() got multiple sub-patterns for attribute '" + names[i] + "'");
    ValuePtr name = ConstantValue::make(check(PyUnicode_FromString(names[i].c_str())));
    ValuePtr attribute = call_builtin(tracer, "getattr", {subject, name, marker});
    if (is_missing(attribute, marker)) {
      frame.push(ConstantValue::none());
      return;
    }
    attributes.push_back(std::move(attribute));
  }
  frame.push(std::make_shared<SequenceValue>(false, std::move(attributes)));
}

}  // namespace

void register_match_handlers(HandlerTable& table) {
  table.add(op::GET_LEN, get_len);
  table.add(op::MATCH_SEQUENCE, match_sequence);
  table.add(op::MATCH_MAPPING, match_mapping);
  table.add(op::MATCH_KEYS, match_keys);
  table.add(op::MATCH_CLASS, match_class);
}

}  // namespace bytegraph::trace
