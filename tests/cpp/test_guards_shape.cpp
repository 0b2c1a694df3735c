// Shape guards on plain ints: bindings fill slots during the tree walk, expressions follow
// Python's integer semantics, failures are explained with the values read.
#include <gtest/gtest.h>

#include <vector>

#include "guards/guard_set.h"
#include "guards/source.h"
#include "python/errors.h"

namespace bytegraph::guards {
namespace {

py::Ref<> eval(const char* expression) {
  py::Ref<> globals = check(PyDict_New());
  check_status(PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()));
  return check(PyRun_String(expression, Py_eval_input, globals.get(), globals.get()));
}

py::Ref<> pyint(long value) { return py::Ref<>::steal(PyLong_FromLong(value)); }

struct IntFrame {
  std::vector<py::Ref<>> slots;
  std::vector<PyObject*> raw;

  FrameValues values() {
    raw.clear();
    for (auto& slot : slots) raw.push_back(slot.get());
    FrameValues frame;
    frame.locals = raw.data();
    frame.nlocals = static_cast<int>(raw.size());
    frame.builtins = PyEval_GetBuiltins();
    return frame;
  }
};

// A tree over ints a (slot 0) and b (slot 1) with one shape guard.
std::unique_ptr<GuardTree> tree_for(const char* guard, const char* text) {
  GuardSet set;
  set.add_symbol_binding(local_source("a", 0), "int", -1, 0);
  set.add_symbol_binding(local_source("b", 1), "int", -1, 1);
  set.add_shape_guard(eval(guard).get(), text);
  return set.build();
}

bool passes(const GuardTree& tree, long a, long b) {
  IntFrame frame;
  frame.slots.push_back(pyint(a));
  frame.slots.push_back(pyint(b));
  return tree.check(frame.values());
}

TEST(ShapeGuard, RelationBetweenTwoInputs) {
  auto tree = tree_for("('eq', ('sym', 0), ('mul', ('int', 2), ('sym', 1)))", "L['a'] == 2*L['b']");
  EXPECT_TRUE(passes(*tree, 6, 3));
  EXPECT_FALSE(passes(*tree, 7, 3));
  IntFrame frame;
  frame.slots.push_back(pyint(7));
  frame.slots.push_back(pyint(3));
  EXPECT_EQ(tree->explain_failure(frame.values()), "shape guard L['a'] == 2*L['b'] failed: L['a'] = 7, L['b'] = 3");
  std::vector<std::string> lines = tree->describe();
  EXPECT_EQ(lines.back(), "SHAPE_GUARD: L['a'] == 2*L['b']");
}

TEST(ShapeGuard, FloorDivisionAndModuloFollowPython) {
  // -7 // 2 == -4 and -7 % 2 == 1 in Python (C would say -3 and -1).
  auto div = tree_for("('eq', ('floordiv', ('sym', 0), ('sym', 1)), ('int', -4))", "a // b == -4");
  EXPECT_TRUE(passes(*div, -7, 2));
  EXPECT_FALSE(passes(*div, 7, 2));
  auto mod = tree_for("('eq', ('mod', ('sym', 0), ('sym', 1)), ('int', 1))", "a % b == 1");
  EXPECT_TRUE(passes(*mod, -7, 2));
  // Division by zero is never trusted: the guard fails (the call compiles again).
  EXPECT_FALSE(passes(*mod, 7, 0));
}

TEST(ShapeGuard, LogicRangesAndPowers) {
  auto tree = tree_for("('and', ('le', ('int', 2), ('sym', 0)), ('not', ('gt', ('pow', ('sym', 1), ('int', 2)), ('int', 50))),"
                       " ('or', ('ne', ('sym', 0), ('int', 5)), ('eq', ('max', ('sym', 0), ('sym', 1)), ('int', 5))))",
                       "combined");
  EXPECT_TRUE(passes(*tree, 2, 7));   // 49 <= 50
  EXPECT_FALSE(passes(*tree, 1, 7));  // 2 <= a fails
  EXPECT_FALSE(passes(*tree, 3, 8));  // 64 > 50
  EXPECT_TRUE(passes(*tree, 5, 3));   // a == 5 but max(a, b) == 5
  EXPECT_FALSE(passes(*tree, 5, 6));
}

TEST(ShapeGuard, OverflowFailsInsteadOfWrapping) {
  auto tree = tree_for("('gt', ('mul', ('sym', 0), ('sym', 1)), ('int', 0))", "a*b > 0");
  EXPECT_TRUE(passes(*tree, 1L << 31, 1L << 31));
  EXPECT_FALSE(passes(*tree, 1L << 62, 4));
}

TEST(ShapeGuard, PythonFallbackGetsSlotValues) {
  auto tree = tree_for("('python', lambda v: v[0] + v[1] == 10, (0, 1))", "a + b == 10 (python)");
  EXPECT_TRUE(passes(*tree, 4, 6));
  EXPECT_FALSE(passes(*tree, 4, 7));
}

TEST(ShapeGuard, NonIntValueFailsTheBinding) {
  auto tree = tree_for("('le', ('sym', 0), ('sym', 1))", "a <= b");
  IntFrame frame;
  frame.slots.push_back(py::Ref<>::newref(Py_True));  // bool is not exactly an int
  frame.slots.push_back(pyint(3));
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['a']: expected an int, got bool");
}

TEST(ShapeGuard, BadExpressionsAndUnboundSlotsAreErrors) {
  GuardSet set;
  EXPECT_THROW(set.add_shape_guard(eval("('frobnicate', ('int', 1))").get(), "bad"), PythonError);
  EXPECT_THROW(set.add_shape_guard(eval("('eq', ('int', 1))").get(), "bad"), PythonError);
  EXPECT_THROW(set.add_symbol_binding(local_source("a", 0), "volume", 0, 0), PythonError);
  set.add_shape_guard(eval("('eq', ('sym', 3), ('int', 1))").get(), "reads slot 3");
  EXPECT_THROW(set.build(), PythonError);
}

}  // namespace
}  // namespace bytegraph::guards
