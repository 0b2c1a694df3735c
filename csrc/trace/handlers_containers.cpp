// Building and unpacking tuples, lists, dicts, slices and strings.
#include "trace/interpreter.h"
#include "trace/operators.h"
#include "trace/values/exceptions.h"
#include "trace/values/sets.h"
#include "trace/values/strings.h"
#include "trace/symbolic.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

void build_tuple(Tracer&, FrameState& frame, const Instruction& inst) {
  frame.push(std::make_shared<SequenceValue>(false, frame.pop_n(inst.arg)));
}

void build_list(Tracer&, FrameState& frame, const Instruction& inst) {
  frame.push(std::make_shared<SequenceValue>(true, frame.pop_n(inst.arg)));
}

void build_map(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Args flat = frame.pop_n(2 * static_cast<size_t>(inst.arg));
  auto dict = std::make_shared<DictValue>();
  for (size_t i = 0; i < flat.size(); i += 2) dict->set_item(dict_key(tracer, flat[i], "unsupported_dict").get(), flat[i + 1]);
  frame.push(dict);
}

void build_const_key_map(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr keys = frame.pop();
  Args values = frame.pop_n(inst.arg);
  auto dict = std::make_shared<DictValue>();
  for (size_t i = 0; i < values.size(); ++i)
    dict->set_item(PyTuple_GET_ITEM(keys->constant(), static_cast<Py_ssize_t>(i)), values[i]);
  frame.push(dict);
}

void build_set(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Args items = frame.pop_n(inst.arg);
  frame.push(make_set(tracer, false, items));
}

SetValue& set_at(FrameState& frame, int depth) {
  auto* set = dynamic_cast<SetValue*>(frame.top(depth).get());
  if (set == nullptr) throw InternalError("expected a set on the stack");
  return *set;
}

void set_add(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr item = frame.pop();
  tracer.journal.save(frame.top(inst.arg - 1));
  set_at(frame, inst.arg - 1).add(tracer, item);
}

// {*a, *b} and {1, 2, 3} (the constants arrive as one frozenset).
void set_update(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr iterable = frame.pop();
  auto items = iterable->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "a set of the items of " + iterable->repr());
  tracer.journal.save(frame.top(inst.arg - 1));
  SetValue& set = set_at(frame, inst.arg - 1);
  for (const auto& item : *items) set.add(tracer, item);
}

void build_slice(Tracer&, FrameState& frame, const Instruction& inst) {
  Args parts = frame.pop_n(inst.arg);
  if (ValuePtr slice = symbolic_slice(parts)) {
    frame.push(std::move(slice));
    return;
  }
  for (const auto& part : parts)
    if (!part->is_constant()) unsupported("unsupported_subscript", "slice with a symbolic bound " + part->repr());
  py::Ref<> slice = check(PySlice_New(parts[0]->constant(), parts[1]->constant(),
                                      parts.size() > 2 ? parts[2]->constant() : nullptr));
  frame.push(ConstantValue::make(std::move(slice)));
}

SequenceValue& sequence_at(FrameState& frame, int depth) {
  auto* seq = dynamic_cast<SequenceValue*>(frame.top(depth).get());
  if (seq == nullptr) throw InternalError("expected a list on the stack");
  return *seq;
}

DictValue& dict_at(FrameState& frame, int depth) {
  auto* dict = dynamic_cast<DictValue*>(frame.top(depth).get());
  if (dict == nullptr) throw InternalError("expected a dict on the stack");
  return *dict;
}

void list_append(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  tracer.journal.save(frame.top(inst.arg - 1));
  sequence_at(frame, inst.arg - 1).items.push_back(std::move(value));
}

void list_extend(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr iterable = frame.pop();
  auto items = iterable->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "extending a list with " + iterable->repr());
  auto& list = sequence_at(frame, inst.arg - 1);
  tracer.journal.save(frame.top(inst.arg - 1));
  list.items.insert(list.items.end(), items->begin(), items->end());
}

void list_to_tuple(Tracer&, FrameState& frame, const Instruction&) {
  ValuePtr list = frame.pop();
  auto* items = dynamic_cast<SequenceValue*>(list.get());
  if (items == nullptr) throw InternalError("LIST_TO_TUPLE on " + list->repr());
  frame.push(std::make_shared<SequenceValue>(false, items->items));
}

// 3.12: CALL_INTRINSIC_1's argument indexes dis._intrinsic_1_descs; only the pure ones are
// understood (the others print, import or wrap generators).
void call_intrinsic_1(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  py::Ref<> dis = check(PyImport_ImportModule("dis"));
  py::Ref<> names = check(PyObject_GetAttrString(dis.get(), "_intrinsic_1_descs"));
  py::Ref<> name = check(PySequence_GetItem(names.get(), inst.arg));
  std::string intrinsic = PyUnicode_AsUTF8(name.get());
  if (intrinsic == "INTRINSIC_LIST_TO_TUPLE") return list_to_tuple(tracer, frame, inst);
  if (intrinsic == "INTRINSIC_UNARY_POSITIVE") {
    ValuePtr value = frame.pop();
    frame.push(apply_operator(tracer, operator_function("pos"), {value}));
    return;
  }
  if (intrinsic == "INTRINSIC_STOPITERATION_ERROR") {
    frame.push(stop_iteration_error(frame.pop()));
    return;
  }
  unsupported("unsupported_opcode", "CALL_INTRINSIC_1 " + intrinsic + " is not supported");
}

void map_add(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  ValuePtr key = frame.pop();
  py::Ref<> real_key = dict_key(tracer, key, "unsupported_dict");
  tracer.journal.save(frame.top(inst.arg - 1));
  dict_at(frame, inst.arg - 1).set_item(real_key.get(), value);
}

void dict_update(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr other = frame.pop();
  auto* source = dynamic_cast<DictValue*>(other.get());
  std::shared_ptr<DictValue> read;
  if (source == nullptr && (read = mapping_items(tracer, other))) source = read.get();  // {**m}, f(**m)
  if (source == nullptr) unsupported("unsupported_dict", "updating a dict with " + other->repr());
  auto& dict = dict_at(frame, inst.arg - 1);
  tracer.journal.save(frame.top(inst.arg - 1));
  for (size_t i = 0; i < source->keys.size(); ++i) dict.set_item(source->keys[i].get(), source->values[i]);
}

void unpack_sequence(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr sequence = frame.pop();
  auto items = sequence->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "unpacking " + sequence->repr());
  if (items->size() != static_cast<size_t>(inst.arg))
    raise_error("value_error", PyExc_ValueError, items->size() > static_cast<size_t>(inst.arg) ? "too many values to unpack (expected " + std::to_string(inst.arg) + ")" : "not enough values to unpack (expected " + std::to_string(inst.arg) + ", got " + std::to_string(items->size()) + ")");
  for (auto it = items->rbegin(); it != items->rend(); ++it) frame.push(*it);
}

void unpack_ex(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr sequence = frame.pop();
  auto items = sequence->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "unpacking " + sequence->repr());
  size_t before = inst.arg & 0xFF, after = inst.arg >> 8;
  if (items->size() < before + after) raise_error("value_error", PyExc_ValueError, "not enough values to unpack (expected at least " + std::to_string(before + after) + ", got " + std::to_string(items->size()) + ")");
  for (size_t i = 0; i < after; ++i) frame.push((*items)[items->size() - 1 - i]);
  Args middle(items->begin() + static_cast<long>(before), items->end() - static_cast<long>(after));
  frame.push(std::make_shared<SequenceValue>(true, std::move(middle)));
  for (size_t i = before; i-- > 0;) frame.push((*items)[i]);
}

// f-strings: a conversion (str, repr, ascii) then format() with an optional spec, in one
// instruction (FORMAT_VALUE) or, on 3.13, in CONVERT_VALUE and FORMAT_SIMPLE/FORMAT_WITH_SPEC.
py::Ref<> format_operand(Tracer& tracer, const ValuePtr& value) { return formattable_object(tracer, value, "formatting"); }

py::Ref<> converted(py::Ref<> object, int conversion) {
  switch (conversion) {
    case 1: return check(PyObject_Str(object.get()));
    case 2: return check(PyObject_Repr(object.get()));
    case 3: return check(PyObject_ASCII(object.get()));
    default: return object;
  }
}

void push_formatted(Tracer& tracer, FrameState& frame, const py::Ref<>& object, const ValuePtr& spec) {
  py::Ref<> spec_object = spec ? format_operand(tracer, spec) : py::Ref<>();
  frame.push(ConstantValue::make(check(PyObject_Format(object.get(), spec_object.get()))));
}

// f"{obj}", f"{obj!s}", f"{obj!r}" of a user class's instance with a Python __str__/__repr__.
bool push_object_text(Tracer& tracer, FrameState& frame, const ValuePtr& value, int conversion, const ValuePtr& spec) {
  if (spec && !(spec->is_constant() && PyUnicode_Check(spec->constant()) && PyUnicode_GetLength(spec->constant()) == 0)) return false;
  if (conversion == 3) return false;
  ValuePtr text = object_text(tracer, value, conversion == 2 ? 'r' : conversion == 1 ? 's' : 'f');
  if (!text) return false;
  frame.push(std::move(text));
  return true;
}

void format_value(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr spec = (inst.arg & 0x04) ? frame.pop() : nullptr;
  ValuePtr value = frame.pop();
  if (push_object_text(tracer, frame, value, inst.arg & 0x03, spec)) return;
  push_formatted(tracer, frame, converted(format_operand(tracer, value), inst.arg & 0x03), spec);
}

void convert_value(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  if (push_object_text(tracer, frame, value, inst.arg, nullptr)) return;
  frame.push(ConstantValue::make(converted(format_operand(tracer, value), inst.arg)));
}

void format_simple(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr value = frame.pop();
  if (push_object_text(tracer, frame, value, 0, nullptr)) return;
  push_formatted(tracer, frame, format_operand(tracer, value), nullptr);
}

void format_with_spec(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr spec = frame.pop();
  ValuePtr value = frame.pop();
  push_formatted(tracer, frame, format_operand(tracer, value), spec);
}

void build_string(Tracer&, FrameState& frame, const Instruction& inst) {
  Args parts = frame.pop_n(inst.arg);
  py::Ref<> text = check(PyUnicode_FromString(""));
  for (const auto& part : parts) {
    if (!part->is_constant()) unsupported("unsupported_format", "building a string from " + part->repr());
    text = check(PyUnicode_Concat(text.get(), part->constant()));
  }
  frame.push(ConstantValue::make(std::move(text)));
}

}  // namespace

void register_container_handlers(HandlerTable& table) {
  table.add(op::BUILD_TUPLE, build_tuple);
  table.add(op::BUILD_LIST, build_list);
  table.add(op::BUILD_MAP, build_map);
  table.add(op::BUILD_CONST_KEY_MAP, build_const_key_map);
  table.add(op::BUILD_SLICE, build_slice);
  table.add(op::BUILD_SET, build_set);
  table.add(op::SET_ADD, set_add);
  table.add(op::SET_UPDATE, set_update);
  table.add(op::LIST_APPEND, list_append);
  table.add(op::LIST_EXTEND, list_extend);
  table.add(Family::kListToTuple, list_to_tuple);
  table.add(Family::kCallIntrinsic1, call_intrinsic_1);
  table.add(op::MAP_ADD, map_add);
  table.add(op::DICT_UPDATE, dict_update);
  table.add(op::DICT_MERGE, dict_update);
  table.add(op::UNPACK_SEQUENCE, unpack_sequence);
  table.add(op::UNPACK_EX, unpack_ex);
  table.add(Family::kFormatValue, format_value);
  table.add(Family::kConvertValue, convert_value);
  table.add(Family::kFormatSimple, format_simple);
  table.add(Family::kFormatWithSpec, format_with_spec);
  table.add(op::BUILD_STRING, build_string);
}

}  // namespace bytegraph::trace
