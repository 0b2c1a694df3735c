#include "guards/shape_guard.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "guards/tensor_meta.h"
#include "python/errors.h"

namespace bytegraph::guards {

// ---- bindings -------------------------------------------------------------------------------

namespace {

// Item `dim` of a tuple of ints (torch.Size or the stride tuple), or false.
bool tuple_item(PyObject* tuple, int dim, int64_t* out) {
  if (!PyTuple_Check(tuple) || dim < 0 || dim >= PyTuple_GET_SIZE(tuple)) return false;
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(tuple, dim), &overflow);
  if (value == -1 && PyErr_Occurred()) throw_python_error();
  if (overflow != 0) return false;
  *out = value;
  return true;
}

}  // namespace

bool SymbolBinding::bind(PyObject* value, int64_t* slots) const {
  if (slots == nullptr) return false;
  if (kind_ == Kind::Int) {
    if (!PyLong_CheckExact(value)) return false;
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) throw_python_error();
    if (overflow != 0) return false;
    slots[slot_] = number;
    return true;
  }
  const TensorMeta& meta = TensorMeta::get();
  if (!meta.is_tensor(value)) return false;
  if (kind_ == Kind::StorageOffset) {
    py::Ref<> offset = check(meta.storage_offset(value));
    slots[slot_] = PyLong_AsLongLong(offset.get());  // an offset into a real storage fits
    if (slots[slot_] == -1 && PyErr_Occurred()) throw_python_error();
    return true;
  }
  py::Ref<> values = check(kind_ == Kind::Size ? meta.shape(value) : meta.stride(value));
  return tuple_item(values.get(), dim_, &slots[slot_]);
}

std::string SymbolBinding::explain(PyObject* value, const std::string& source) const {
  if (kind_ == Kind::Int) return source + ": expected an int, got " + Py_TYPE(value)->tp_name;
  if (!TensorMeta::get().is_tensor(value)) return source + ": expected a tensor, got " + Py_TYPE(value)->tp_name;
  return name(source) + ": the tensor has no dimension " + std::to_string(dim_);
}

std::string SymbolBinding::name(const std::string& source) const {
  switch (kind_) {
    case Kind::Size: return source + ".size()[" + std::to_string(dim_) + "]";
    case Kind::Stride: return source + ".stride()[" + std::to_string(dim_) + "]";
    case Kind::StorageOffset: return source + ".storage_offset()";
    case Kind::Int: return source;
  }
  return source;
}

// ---- parsing ------------------------------------------------------------------------------

namespace {

using Op = ShapeExpr::Op;

[[noreturn]] void bad_tree(const std::string& why) {
  throw PythonError::make(PyExc_ValueError, "shape guard expression: " + why);
}

int64_t int_of(PyObject* object) {
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
  if (value == -1 && PyErr_Occurred()) throw_python_error();
  if (overflow != 0) bad_tree("a constant beyond int64");
  return value;
}

const std::unordered_map<std::string, Op>& op_names() {
  static const std::unordered_map<std::string, Op> names = {
      {"add", Op::Add}, {"mul", Op::Mul}, {"pow", Op::Pow}, {"floordiv", Op::FloorDiv},
      {"mod", Op::Mod}, {"max", Op::Max}, {"min", Op::Min}, {"abs", Op::Abs}, {"eq", Op::Eq},
      {"ne", Op::Ne}, {"lt", Op::Lt}, {"le", Op::Le}, {"gt", Op::Gt}, {"ge", Op::Ge},
      {"and", Op::And}, {"or", Op::Or}, {"not", Op::Not}};
  return names;
}

size_t arity_min(Op op) {
  switch (op) {
    case Op::Abs:
    case Op::Not: return 1;
    case Op::Add:
    case Op::Mul:
    case Op::Max:
    case Op::Min:
    case Op::And:
    case Op::Or: return 1;
    default: return 2;
  }
}

bool variadic(Op op) {
  return op == Op::Add || op == Op::Mul || op == Op::Max || op == Op::Min || op == Op::And || op == Op::Or;
}

void collect_slots(const ShapeExpr& expr, std::vector<int>& slots) {
  if (expr.op == Op::Slot) slots.push_back(static_cast<int>(expr.value));
  if (expr.op == Op::Python) slots.insert(slots.end(), expr.slots.begin(), expr.slots.end());
  for (const auto& arg : expr.args) collect_slots(arg, slots);
}

}  // namespace

ShapeExpr parse_shape_expr(PyObject* tree) {
  if (!PyTuple_Check(tree) || PyTuple_GET_SIZE(tree) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(tree, 0)))
    bad_tree("expected a tuple starting with an operation name");
  const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(tree, 0));
  if (name == nullptr) throw_python_error();
  Py_ssize_t size = PyTuple_GET_SIZE(tree);
  ShapeExpr expr;
  if (std::strcmp(name, "int") == 0 || std::strcmp(name, "sym") == 0) {
    if (size != 2 || !PyLong_Check(PyTuple_GET_ITEM(tree, 1))) bad_tree(std::string(name) + " takes one int");
    expr.op = name[0] == 'i' ? Op::Int : Op::Slot;
    expr.value = int_of(PyTuple_GET_ITEM(tree, 1));
    if (expr.op == Op::Slot && expr.value < 0) bad_tree("a negative slot");
    return expr;
  }
  if (std::strcmp(name, "python") == 0) {
    if (size != 3 || !PyCallable_Check(PyTuple_GET_ITEM(tree, 1)) || !PyTuple_Check(PyTuple_GET_ITEM(tree, 2)))
      bad_tree("python takes a function and a tuple of slots");
    expr.op = Op::Python;
    expr.function = py::Ref<>::newref(PyTuple_GET_ITEM(tree, 1));
    PyObject* slots = PyTuple_GET_ITEM(tree, 2);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); ++i) {
      int64_t slot = int_of(PyTuple_GET_ITEM(slots, i));
      if (slot < 0) bad_tree("a negative slot");
      expr.slots.push_back(static_cast<int>(slot));
    }
    return expr;
  }
  auto found = op_names().find(name);
  if (found == op_names().end()) bad_tree(std::string("unknown operation '") + name + "'");
  expr.op = found->second;
  size_t operands = static_cast<size_t>(size - 1);
  if (operands < arity_min(expr.op) || (!variadic(expr.op) && operands != arity_min(expr.op)))
    bad_tree(std::string(name) + " with " + std::to_string(operands) + " operands");
  for (Py_ssize_t i = 1; i < size; ++i) expr.args.push_back(parse_shape_expr(PyTuple_GET_ITEM(tree, i)));
  return expr;
}

// ---- evaluation ---------------------------------------------------------------------------

namespace {

// Python's floor division and modulo on int64; false on division by zero or overflow.
bool floor_divide(int64_t a, int64_t b, int64_t* out) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  *out = q;
  return true;
}

bool modulo(int64_t a, int64_t b, int64_t* out) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *out = r;
  return true;
}

bool evaluate(const ShapeExpr& e, const int64_t* slots, int64_t* out);

bool evaluate_python(const ShapeExpr& e, const int64_t* slots, int64_t* out) {
  py::Ref<> values = check(PyTuple_New(static_cast<Py_ssize_t>(e.slots.size())));
  for (size_t i = 0; i < e.slots.size(); ++i)
    PyTuple_SET_ITEM(values.get(), i, check(PyLong_FromLongLong(slots[e.slots[i]])).release());
  py::Ref<> result = check(PyObject_CallOneArg(e.function.get(), values.get()));
  int truth = PyObject_IsTrue(result.get());
  if (truth < 0) throw_python_error();
  *out = truth;
  return true;
}

bool fold(const ShapeExpr& e, const int64_t* slots, int64_t* out) {
  int64_t acc = 0;
  if (!evaluate(e.args[0], slots, &acc)) return false;
  for (size_t i = 1; i < e.args.size(); ++i) {
    int64_t next = 0;
    if (!evaluate(e.args[i], slots, &next)) return false;
    switch (e.op) {
      case Op::Add:
        if (__builtin_add_overflow(acc, next, &acc)) return false;
        break;
      case Op::Mul:
        if (__builtin_mul_overflow(acc, next, &acc)) return false;
        break;
      case Op::Max: acc = std::max(acc, next); break;
      case Op::Min: acc = std::min(acc, next); break;
      default: return false;
    }
  }
  *out = acc;
  return true;
}

bool evaluate(const ShapeExpr& e, const int64_t* slots, int64_t* out) {
  int64_t a = 0, b = 0;
  switch (e.op) {
    case Op::Int: *out = e.value; return true;
    case Op::Slot: *out = slots[e.value]; return true;
    case Op::Python: return evaluate_python(e, slots, out);
    case Op::Add:
    case Op::Mul:
    case Op::Max:
    case Op::Min: return fold(e, slots, out);
    case Op::And:
    case Op::Or: {
      const bool is_and = e.op == Op::And;
      for (const auto& arg : e.args) {
        if (!evaluate(arg, slots, &a)) return false;
        if ((a != 0) != is_and) {  // and: first false decides; or: first true
          *out = is_and ? 0 : 1;
          return true;
        }
      }
      *out = is_and ? 1 : 0;
      return true;
    }
    case Op::Not:
      if (!evaluate(e.args[0], slots, &a)) return false;
      *out = a == 0;
      return true;
    case Op::Abs:
      if (!evaluate(e.args[0], slots, &a) || a == INT64_MIN) return false;
      *out = a < 0 ? -a : a;
      return true;
    default: break;
  }
  if (!evaluate(e.args[0], slots, &a) || !evaluate(e.args[1], slots, &b)) return false;
  switch (e.op) {
    case Op::FloorDiv: return floor_divide(a, b, out);
    case Op::Mod: return modulo(a, b, out);
    case Op::Pow: {
      if (b < 0) return false;
      int64_t result = 1;
      for (int64_t i = 0; i < b; ++i)
        if (__builtin_mul_overflow(result, a, &result)) return false;
      *out = result;
      return true;
    }
    case Op::Eq: *out = a == b; return true;
    case Op::Ne: *out = a != b; return true;
    case Op::Lt: *out = a < b; return true;
    case Op::Le: *out = a <= b; return true;
    case Op::Gt: *out = a > b; return true;
    case Op::Ge: *out = a >= b; return true;
    default: return false;
  }
}

}  // namespace

ShapeGuard::ShapeGuard(ShapeExpr expr, std::string text)
    : expr_(std::make_shared<const ShapeExpr>(std::move(expr))), text_(std::move(text)) {
  collect_slots(*expr_, slots_);
  std::sort(slots_.begin(), slots_.end());
  slots_.erase(std::unique(slots_.begin(), slots_.end()), slots_.end());
}

bool ShapeGuard::check(const int64_t* slots) const {
  int64_t result = 0;
  return evaluate(*expr_, slots, &result) && result != 0;
}

void ShapeGuards::set_slot_name(int slot, std::string name) {
  if (slot < 0) throw InternalError("negative shape guard slot");
  if (static_cast<size_t>(slot) >= slot_names_.size()) slot_names_.resize(static_cast<size_t>(slot) + 1);
  slot_names_[static_cast<size_t>(slot)] = std::move(name);
}

int ShapeGuards::unbound_slot() const {
  for (const ShapeGuard& guard : guards_)
    for (int slot : guard.slots())
      if (static_cast<size_t>(slot) >= slot_names_.size() || slot_names_[static_cast<size_t>(slot)].empty()) return slot;
  return -1;
}

bool ShapeGuards::check(const int64_t* slots) const {
  for (const ShapeGuard& guard : guards_)
    if (!guard.check(slots)) return false;
  return true;
}

std::string ShapeGuards::explain(const int64_t* slots) const {
  for (const ShapeGuard& guard : guards_) {
    bool passed = false;
    try {
      passed = guard.check(slots);
    } catch (PythonError& error) {
      return "shape guard " + guard.text() + " raised " + error.what();
    }
    if (passed) continue;
    std::string values;
    for (int slot : guard.slots()) {
      if (!values.empty()) values += ", ";
      values += slot_names_.at(static_cast<size_t>(slot)) + " = " + std::to_string(slots[slot]);
    }
    return "shape guard " + guard.text() + " failed" + (values.empty() ? "" : ": " + values);
  }
  return {};
}

std::vector<std::string> ShapeGuards::describe() const {
  std::vector<std::string> lines;
  for (const ShapeGuard& guard : guards_) lines.push_back("SHAPE_GUARD: " + guard.text());
  return lines;
}

}  // namespace bytegraph::guards
