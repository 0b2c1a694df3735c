// Shape guards: what a graph with symbolic sizes assumes about the sizes, strides and ints of
// its inputs, e.g. `2 <= L['x'].size()[0]` or `L['x'].size()[1] == L['y'].size()[0]` (torch
// ShapeEnv guards). Each is translated once, when the entry is built, from the bridge's
// expression tuples into a small tree evaluated in C++ over int64 slots.
//
// Slots are filled during the ordinary walk of the guard tree: a `SymbolBinding` on the manager
// of a tensor (or int) source reads one size/stride/offset (or the int) into its slot, so a value is
// fetched once, by the accessors that already read it for the other guards. The tree's root
// then checks the shape guards over the filled slots; nothing enters Python, except for a
// guard the evaluator cannot express (kept as a Python function of the slot values).
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "python/ref.h"

namespace bytegraph::guards {

class SymbolBinding {
 public:
  enum class Kind { Size, Stride, StorageOffset, Int };
  SymbolBinding(Kind kind, int dim, int slot) : kind_(kind), dim_(dim), slot_(slot) {}

  // Reads the bound value of `value` into slots[slot]. False when `value` is not what was
  // traced (not a tensor with that dimension, not exactly an int, an int beyond int64).
  bool bind(PyObject* value, int64_t* slots) const;
  // Why bind() failed, naming the value `source`.
  std::string explain(PyObject* value, const std::string& source) const;
  // The bound value's name: "L['x'].size()[0]", "L['x'].stride()[1]",
  // "L['x'].storage_offset()" or "L['n']".
  std::string name(const std::string& source) const;
  int slot() const { return slot_; }

 private:
  Kind kind_;
  int dim_;
  int slot_;
};

// One node of a shape expression. Integer arithmetic follows Python (floor division, modulo
// with the divisor's sign); comparisons and logic give 0 or 1.
struct ShapeExpr {
  enum class Op { Int, Slot, Add, Mul, Pow, FloorDiv, Mod, Max, Min, Abs, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not, Python };
  Op op = Op::Int;
  int64_t value = 0;  // Int: the constant; Slot: the slot index
  std::vector<ShapeExpr> args;
  py::Ref<> function;      // Python: fn(tuple of slot values) -> truthy
  std::vector<int> slots;  // Python: the slots it reads, in order
};

// Parses the bridge's tuples: ("int", v), ("sym", slot), (op, operand...), or
// ("python", fn, (slot, ...)). Raises PythonError (ValueError) on anything else.
ShapeExpr parse_shape_expr(PyObject* tree);

class ShapeGuard {
 public:
  ShapeGuard(ShapeExpr expr, std::string text);
  // False when the expression is false, or cannot be computed in int64 (overflow, division by
  // zero: the call is compiled again rather than trusted). Throws PythonError if a Python
  // fallback raised.
  bool check(const int64_t* slots) const;
  const std::string& text() const { return text_; }
  // The slots the expression reads.
  const std::vector<int>& slots() const { return slots_; }

 private:
  std::shared_ptr<const ShapeExpr> expr_;  // immutable, shared by every tree built from the set
  std::string text_;
  std::vector<int> slots_;
};

// The shape guards of one tree and the names of the slots they read.
class ShapeGuards {
 public:
  void add(ShapeGuard guard) { guards_.push_back(std::move(guard)); }
  void set_slot_name(int slot, std::string name);
  size_t slot_count() const { return slot_names_.size(); }
  bool empty() const { return guards_.empty(); }
  // A slot some guard reads but no binding fills, or -1.
  int unbound_slot() const;
  size_t size() const { return guards_.size(); }

  bool check(const int64_t* slots) const;
  // The first failing guard with the values it read, e.g. "shape guard 2 <= L['x'].size()[0]
  // failed: L['x'].size()[0] = 1"; empty if all pass.
  std::string explain(const int64_t* slots) const;
  std::vector<std::string> describe() const;  // "SHAPE_GUARD: <text>"

 private:
  std::vector<ShapeGuard> guards_;
  std::vector<std::string> slot_names_;
};

}  // namespace bytegraph::guards
