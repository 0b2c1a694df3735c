// Arithmetic, comparisons, identity, membership, unary operators and subscripts.
#include <unordered_map>
#include <vector>

#include "bytecode/arguments.h"
#include "trace/values/deque.h"
#include "trace/interpreter.h"
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/values/instance_dict.h"
#include "trace/values/exceptions.h"
#include "trace/values/keys.h"
#include "trace/values/list_methods.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

// BINARY_OP's argument indexes dis._nb_ops ("NB_ADD", "NB_INPLACE_ADD", ...); map each to
// the operator module's function of the same meaning.
const std::vector<PyObject*>& binary_operators() {
  static const std::vector<PyObject*> table = [] {
    static const std::unordered_map<std::string, std::string> names = {
        {"ADD", "add"}, {"AND", "and_"}, {"FLOOR_DIVIDE", "floordiv"}, {"LSHIFT", "lshift"},
        {"MATRIX_MULTIPLY", "matmul"}, {"MULTIPLY", "mul"}, {"REMAINDER", "mod"}, {"OR", "or_"},
        {"POWER", "pow"}, {"RSHIFT", "rshift"}, {"SUBTRACT", "sub"}, {"TRUE_DIVIDE", "truediv"},
        {"XOR", "xor"}};
    py::Ref<> dis = check(PyImport_ImportModule("dis"));
    py::Ref<> ops = check(PyObject_GetAttrString(dis.get(), "_nb_ops"));
    std::vector<PyObject*> result;
    for (Py_ssize_t i = 0; i < PySequence_Size(ops.get()); ++i) {
      py::Ref<> pair = check(PySequence_GetItem(ops.get(), i));
      std::string name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair.get(), 0));
      bool inplace = name.rfind("NB_INPLACE_", 0) == 0;
      std::string base = name.substr(inplace ? 11 : 3);
      auto found = names.find(base);
      if (found == names.end()) {
        result.push_back(nullptr);
        continue;
      }
      std::string function = found->second;
      if (inplace) {
        if (function.back() == '_') function.pop_back();
        function = "i" + function;
      }
      result.push_back(operator_function(function.c_str()));
    }
    return result;
  }();
  return table;
}

void binary_op(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  const auto& table = binary_operators();
  if (inst.arg < 0 || static_cast<size_t>(inst.arg) >= table.size() || table[inst.arg] == nullptr)
    unsupported("unsupported_operator", "BINARY_OP " + std::to_string(inst.arg));
  ValuePtr right = frame.pop();
  ValuePtr left = frame.pop();
  frame.push(apply_operator(tracer, table[inst.arg], {left, right}));
}

PyObject* compare_function(const Instruction& inst) {
  static const std::unordered_map<std::string, const char*> names = {
      {"<", "lt"}, {"<=", "le"}, {"==", "eq"}, {"!=", "ne"}, {">", "gt"}, {">=", "ge"}};
  std::string symbol;
  if (inst.argval && PyUnicode_Check(inst.argval.get())) {
    symbol = PyUnicode_AsUTF8(inst.argval.get());
  } else {
    py::Ref<> dis = check(PyImport_ImportModule("dis"));
    py::Ref<> cmp_op = check(PyObject_GetAttrString(dis.get(), "cmp_op"));
    int index = bytecode::table_index(inst.opcode, inst.arg);
    symbol = PyUnicode_AsUTF8(check(PySequence_GetItem(cmp_op.get(), index)).get());
  }
  auto found = names.find(symbol);
  if (found == names.end()) unsupported("unsupported_operator", "comparison " + symbol);
  return operator_function(found->second);
}

// == on a value of this kind is identity: its class compares as object does (a constant's
// own == answers NotImplemented for objects of other kinds, which falls back to identity).
bool compares_by_identity(const ValuePtr& value) {
  if (value->is_constant()) return true;
  PyObject* type = value->python_type();
  return type != nullptr && reinterpret_cast<PyTypeObject*>(type)->tp_richcompare == PyBaseObject_Type.tp_richcompare;
}

void compare_op(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr right = frame.pop();
  ValuePtr left = frame.pop();
  PyObject* function = compare_function(inst);
  // == and != between values of different known kinds (a module and None, ...) are decidable,
  // unless a class defines its own == (then it runs, or the trace breaks).
  bool equality = function == operator_function("eq") || function == operator_function("ne");
  if (equality && !left->is_tensor() && !right->is_tensor() && !(left->is_constant() && right->is_constant()) &&
      (left->real_object() || right->real_object()) && compares_by_identity(left) && compares_by_identity(right)) {
    bool same = same_object(tracer, left, right);
    frame.push(make_bool(function == operator_function("eq") ? same : !same));
    return;
  }
  frame.push(apply_operator(tracer, function, {left, right}));
}

// 3.13: conditions and `not` go through TO_BOOL first. A tensor stays as it is, so the
// branch that follows decides (or breaks) on it as on earlier versions.
void to_bool(Tracer& tracer, FrameState& frame, const Instruction&) {
  if (frame.top()->is_tensor()) return;
  ValuePtr value = frame.pop();
  frame.push(make_bool(value->truthy(tracer)));
}

void is_op(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr right = frame.pop();
  ValuePtr left = frame.pop();
  bool same = same_object(tracer, left, right);
  frame.push(make_bool(inst.arg ? !same : same));
}

void contains_op(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr haystack = frame.pop();
  ValuePtr needle = frame.pop();
  bool found = contains(tracer, haystack, needle);
  frame.push(make_bool(inst.arg ? !found : found));
}

void unary_not(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr value = frame.pop();
  frame.push(make_bool(!value->truthy(tracer)));
}

template <const char* Name>
void unary(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr value = frame.pop();
  frame.push(apply_operator(tracer, operator_function(Name), {value}));
}
constexpr char kNeg[] = "neg";
constexpr char kPos[] = "pos";
constexpr char kInvert[] = "invert";

void binary_subscr(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr key = frame.pop();
  ValuePtr container = frame.pop();
  frame.push(container->get_item(tracer, key));
}


// The name CPython's messages give the value's class (tp_name).
std::string type_name(const Value& value) {
  PyObject* type = value.python_type();
  return type && PyType_Check(type) ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "tuple";
}

// A slice of the two bounds BINARY_SLICE and STORE_SLICE take (3.12+).
ValuePtr slice_of(const ValuePtr& start, const ValuePtr& stop) {
  if (ValuePtr slice = symbolic_slice({start, stop})) return slice;
  if (!start->is_constant() || !stop->is_constant()) unsupported("unsupported_subscript", "slice with symbolic bounds");
  return ConstantValue::make(check(PySlice_New(start->constant(), stop->constant(), nullptr)));
}

void binary_slice(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr stop = frame.pop();
  ValuePtr start = frame.pop();
  ValuePtr container = frame.pop();
  frame.push(container->get_item(tracer, slice_of(start, stop)));
}

void store_item(Tracer& tracer, const ValuePtr& container, const ValuePtr& key, const ValuePtr& value) {
  if (auto* seq = dynamic_cast<SequenceValue*>(container.get())) {
    if (!seq->is_list())
      raise_error("python_error", PyExc_TypeError, "'" + type_name(*container) + "' object does not support item assignment");
    assign_list_item(tracer, container, key, value);
    return;
  }
  if (auto* dict = dynamic_cast<DictValue*>(container.get())) {
    py::Ref<> real_key = dict_key(tracer, key, "unsupported_subscript");
    tracer.will_mutate(container);
    dict->set_item(real_key.get(), value);
    return;
  }
  if (auto* object = dynamic_cast<ObjectValue*>(container.get())) {
    object->set_item(tracer, key, value);
    return;
  }
  if (auto* attributes = dynamic_cast<InstanceDictValue*>(container.get())) {
    attributes->call_method(tracer, "__setitem__", {key, value}, {});
    return;
  }
  if (auto* deque = dynamic_cast<DequeValue*>(container.get())) {
    deque->set_item(tracer, key, value);
    return;
  }
  if (container->is_tensor()) {
    // x[idx] = v mutates x in place: recorded as operator.setitem, like Dynamo.
    tracer.record(graph::Op::CallFunction, py::Ref<>::newref(operator_function("setitem")), {container, key, value}, {});
    return;
  }
  unsupported("unsupported_subscript", "assigning an item of " + container->repr());
}

void store_subscr(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr key = frame.pop();
  ValuePtr container = frame.pop();
  ValuePtr value = frame.pop();
  store_item(tracer, container, key, value);
}

// 3.12+: container[start:stop] = value.
void store_slice(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr stop = frame.pop();
  ValuePtr start = frame.pop();
  ValuePtr container = frame.pop();
  ValuePtr value = frame.pop();
  store_item(tracer, container, slice_of(start, stop), value);
}

// `del container[key]`.
void delete_subscr(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr key = frame.pop();
  ValuePtr container = frame.pop();
  if (auto* seq = dynamic_cast<SequenceValue*>(container.get())) {
    if (!seq->is_list()) raise_error("python_error", PyExc_TypeError, "'" + type_name(*container) + "' object doesn't support item deletion");
    assign_list_item(tracer, container, key, nullptr);
    return;
  }
  if (dynamic_cast<DictValue*>(container.get())) {
    container->get_attr(tracer, "pop")->call(tracer, {key}, {});  // KeyError when absent, as del
    return;
  }
  if (auto* object = dynamic_cast<ObjectValue*>(container.get())) {
    object->get_attr(tracer, "__delitem__")->call(tracer, {key}, {});
    return;
  }
  if (auto* attributes = dynamic_cast<InstanceDictValue*>(container.get())) {
    attributes->call_method(tracer, "__delitem__", {key}, {});
    return;
  }
  unsupported("unsupported_subscript", "deleting an item of " + container->repr());
}

}  // namespace

void register_operator_handlers(HandlerTable& table) {
  table.add(op::BINARY_OP, binary_op);
  table.add(op::COMPARE_OP, compare_op);
  table.add(op::IS_OP, is_op);
  table.add(op::CONTAINS_OP, contains_op);
  table.add(op::UNARY_NOT, unary_not);
  table.add(op::UNARY_NEGATIVE, unary<kNeg>);
  table.add(Family::kUnaryPositive, unary<kPos>);
  table.add(op::UNARY_INVERT, unary<kInvert>);
  table.add(op::BINARY_SUBSCR, binary_subscr);
  table.add(Family::kBinarySlice, binary_slice);
  table.add(op::STORE_SUBSCR, store_subscr);
  table.add(Family::kStoreSlice, store_slice);
  table.add(op::DELETE_SUBSCR, delete_subscr);
  table.add(Family::kToBool, to_bool);
}

}  // namespace bytegraph::trace
