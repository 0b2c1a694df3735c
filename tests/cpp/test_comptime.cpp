// comptime's view of symbolic values without a trace: which values are Python constants,
// the objects they stand for, and their run-time types.
#include <gtest/gtest.h>

#include "python/errors.h"
#include "trace/comptime.h"

namespace bytegraph::trace {
namespace {

ValuePtr constant(PyObject* object) { return ConstantValue::make(py::Ref<>::steal(object)); }

TEST(ComptimeConstant, ConstantsAndContainersOfConstants) {
  py::Ref<> three = comptime_python_constant(*constant(PyLong_FromLong(3)));
  ASSERT_TRUE(three);
  EXPECT_EQ(PyLong_AsLong(three.get()), 3);

  SequenceValue list(true, {constant(PyLong_FromLong(1)), constant(PyUnicode_FromString("a"))});
  py::Ref<> real_list = comptime_python_constant(list);
  ASSERT_TRUE(real_list && PyList_CheckExact(real_list.get()));
  EXPECT_EQ(PyList_GET_SIZE(real_list.get()), 2);
  EXPECT_EQ(PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(real_list.get(), 1), "a"), 0);

  SequenceValue tuple(false, {constant(PyLong_FromLong(1))});
  py::Ref<> real_tuple = comptime_python_constant(tuple);
  ASSERT_TRUE(real_tuple);
  EXPECT_TRUE(PyTuple_CheckExact(real_tuple.get()));

  DictValue dict;
  dict.set_item(check(PyUnicode_FromString("k")).get(), constant(PyFloat_FromDouble(0.5)));
  py::Ref<> real_dict = comptime_python_constant(dict);
  ASSERT_TRUE(real_dict && PyDict_CheckExact(real_dict.get()));
  EXPECT_EQ(PyFloat_AsDouble(PyDict_GetItemString(real_dict.get(), "k")), 0.5);
}

TEST(ComptimeConstant, AnyNonConstantItemMakesTheContainerNonConstant) {
  SequenceValue list(true, {constant(PyLong_FromLong(1)), NullValue::get()});
  EXPECT_FALSE(comptime_python_constant(list));
  EXPECT_FALSE(comptime_python_constant(*NullValue::get()));
}

TEST(ComptimeKind, NamesTheValueKind) {
  EXPECT_STREQ(comptime_value_kind(*constant(PyLong_FromLong(1))), "constant");
  EXPECT_STREQ(comptime_value_kind(SequenceValue(true, {})), "list");
  EXPECT_STREQ(comptime_value_kind(SequenceValue(false, {})), "tuple");
  EXPECT_STREQ(comptime_value_kind(DictValue()), "dict");
  EXPECT_STREQ(comptime_value_kind(*NullValue::get()), "null");
  EXPECT_STREQ(comptime_value_kind(CellValue(nullptr, true)), "cell");
}

TEST(ComptimeConstant, PythonTypeOfConstantsIsTheirType) {
  ValuePtr text = constant(PyUnicode_FromString("x"));
  EXPECT_EQ(comptime_python_type(*text), (PyObject*)&PyUnicode_Type);
  EXPECT_EQ(comptime_python_type(*NullValue::get()), nullptr);
}

}  // namespace
}  // namespace bytegraph::trace
