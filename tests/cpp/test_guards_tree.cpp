// The guard tree on plain Python values: fail-fast checks, explanations, listings, missing
// values, errors raised by checks, and reference counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "guards/guard_set.h"
#include "guards/source.h"
#include "python/errors.h"

namespace bytegraph::guards {
namespace {

// Evaluates Python source in a scratch namespace and returns the value of `result`.
py::Ref<> run_python(const char* code) {
  py::Ref<> globals = check(PyDict_New());
  check_status(PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()));
  check(PyRun_String(code, Py_file_input, globals.get(), globals.get()));
  PyObject* result = PyDict_GetItemString(globals.get(), "result");  // borrowed
  EXPECT_NE(result, nullptr);
  return py::Ref<>::newref(result);
}

py::Ref<> pyint(long value) { return py::Ref<>::steal(PyLong_FromLong(value)); }

// A frame of local slots (owned here) and a globals dict.
struct TestFrame {
  std::vector<py::Ref<>> slots;
  std::vector<PyObject*> raw;
  py::Ref<> globals = check(PyDict_New());
  py::Ref<> closure;

  FrameValues values() {
    raw.clear();
    for (auto& slot : slots) raw.push_back(slot.get());
    FrameValues frame;
    frame.locals = raw.data();
    frame.nlocals = static_cast<int>(raw.size());
    frame.globals = globals.get();
    frame.builtins = PyEval_GetBuiltins();
    frame.closure = closure.get();
    return frame;
  }
};

TEST(GuardTree, EqualsMatchPassesAndExplainsFailure) {
  GuardSet set;
  set.add_equals_match(local_source("n", 0), pyint(3).get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(pyint(3));
  EXPECT_TRUE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "");
  frame.slots[0] = pyint(4);
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['n'] == 3: got 4");
  frame.slots[0] = py::Ref<>::newref(Py_True);
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['n'] == 3: got True");
}

TEST(GuardTree, SetMatchComparesTypeMembersAndOrder) {
  // {1, "a", len}: constants by value, a builtin function by identity, in CPython's order.
  py::Ref<> traced = run_python("result = {1, 'a', len}");
  py::Ref<> members = check(PySequence_Tuple(traced.get()));
  GuardSet set;
  set.add_set_match(local_source("s", 0), reinterpret_cast<PyObject*>(&PySet_Type), members.get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(traced.copy());
  EXPECT_TRUE(tree->check(frame.values()));
  frame.slots[0] = run_python("result = {1, 'a', abs}");  // another function: identity differs
  EXPECT_FALSE(tree->check(frame.values()));
  frame.slots[0] = run_python("result = {True, 'a', len}");  // True == 1, but another constant
  EXPECT_FALSE(tree->check(frame.values()));
  frame.slots[0] = run_python("result = {1, 'a'}");
  EXPECT_FALSE(tree->check(frame.values()));
  frame.slots[0] = run_python("result = frozenset({1, 'a', len})");  // another type
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_NE(tree->explain_failure(frame.values()).find("expected a set, got a frozenset"), std::string::npos);
}

TEST(GuardTree, DuplicatesAreDroppedAndListingIsSorted) {
  GuardSet set;
  for (int i = 0; i < 3; ++i) {
    set.add_type_match(local_source("n", 1), &PyLong_Type);
    set.add_id_match(global_source("flag"), Py_True);
  }
  set.add_none_match(local_source("a", 0), true);
  EXPECT_EQ(set.size(), 3u);
  auto tree = set.build();
  EXPECT_EQ(tree->guard_count(), 3u);
  std::vector<std::string> expected = {"G['flag']: ID_MATCH True", "L['a']: NONE_MATCH",
                                       "L['n']: TYPE_MATCH int"};
  EXPECT_EQ(set.describe(), expected);
  EXPECT_EQ(tree->describe(), expected);
}

TEST(GuardTree, NestedAttributesItemsAndTypes) {
  py::Ref<> self = run_python(
      "import types\n"
      "result = types.SimpleNamespace(training=True, layers=[10, {'k': 'v'}])\n");
  SourcePtr self_source = local_source("self", 0);
  SourcePtr layers = attr_source(self_source, "layers");
  GuardSet set;
  set.add_equals_match(attr_source(self_source, "training"), Py_True);
  set.add_length_match(layers, 2);
  set.add_equals_match(item_source(layers, pyint(0)), pyint(10).get());
  py::Ref<> key = py::Ref<>::steal(PyUnicode_FromString("k"));
  py::Ref<> value = py::Ref<>::steal(PyUnicode_FromString("v"));
  set.add_equals_match(item_source(item_source(layers, pyint(1)), key.copy()), value.get());
  set.add_id_match(type_source(self_source), reinterpret_cast<PyObject*>(Py_TYPE(self.get())));
  auto tree = set.build();

  TestFrame frame;
  frame.slots.push_back(self.copy());
  EXPECT_TRUE(tree->check(frame.values()));

  check_status(PyObject_SetAttrString(self.get(), "training", Py_False));
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['self'].training == True: got False");
  check_status(PyObject_SetAttrString(self.get(), "training", Py_True));

  PyObject* layer_list = PyObject_GetAttrString(self.get(), "layers");  // new ref
  py::Ref<> layer_list_ref = py::Ref<>::steal(layer_list);
  check_status(PyList_SetItem(layer_list, 0, pyint(11).release()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['self'].layers[0] == 10: got 11");
  check_status(PyList_Append(layer_list, Py_None));
  EXPECT_EQ(tree->explain_failure(frame.values()), "len(L['self'].layers) == 2: got 3");
}

TEST(GuardTree, MissingValuesFailWithoutAnError) {
  GuardSet set;
  set.add_none_match(attr_source(local_source("obj", 0), "missing"), false);
  set.add_none_match(global_source("g"), false);
  auto tree = set.build();
  TestFrame frame;
  EXPECT_EQ(tree->explain_failure(frame.values()), "G['g']: global missing");
  check_status(PyDict_SetItemString(frame.globals.get(), "g", Py_True));
  frame.slots.push_back(pyint(1));
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['obj'].missing: attribute missing");

  frame.slots.clear();  // slot 0 no longer exists
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['obj']: local unbound");
  frame.slots.push_back(nullptr);  // an unbound slot
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['obj']: local unbound");
}

TEST(GuardTree, ClosureCellsAndBuiltins) {
  GuardSet set;
  set.add_equals_match(closure_source("y", 0), pyint(5).get());
  py::Ref<> len = check(PyObject_GetAttrString(PyImport_AddModule("builtins"), "len"));
  set.add_id_match(builtin_source("len"), len.get());
  auto tree = set.build();
  TestFrame frame;
  py::Ref<> cell = check(PyCell_New(pyint(5).get()));
  frame.closure = check(PyTuple_Pack(1, cell.get()));
  EXPECT_TRUE(tree->check(frame.values()));
  check_status(PyCell_Set(cell.get(), nullptr));
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "closure['y']: closure cell empty");
}

TEST(GuardTree, RaisingCheckThrowsPythonErrorAndExplainSaysSo) {
  py::Ref<> bad = run_python(
      "class Bad:\n"
      "    @property\n"
      "    def value(self):\n"
      "        raise ValueError('boom')\n"
      "result = Bad()\n");
  GuardSet set;
  set.add_equals_match(attr_source(local_source("o", 0), "value"), pyint(1).get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(bad.copy());
  try {
    tree->check(frame.values());
    FAIL() << "expected a PythonError";
  } catch (PythonError& error) {
    EXPECT_STREQ(error.what(), "ValueError: boom");
  }
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['o'].value: raised ValueError: boom");
}

TEST(GuardTree, ChecksDoNotChangeReferenceCounts) {
  py::Ref<> ns = run_python(
      "import types\n"
      "result = types.SimpleNamespace(inner=types.SimpleNamespace(n=7), d={'a': 1})\n");
  py::Ref<> inner = check(PyObject_GetAttrString(ns.get(), "inner"));
  py::Ref<> dict = check(PyObject_GetAttrString(ns.get(), "d"));
  SourcePtr root = local_source("ns", 0);
  GuardSet set;
  set.add_equals_match(attr_source(attr_source(root, "inner"), "n"), pyint(7).get());
  py::Ref<> keys = check(Py_BuildValue("(s)", "a"));
  set.add_dict_keys_match(attr_source(root, "d"), keys.get());
  set.add_equals_match(global_source("g"), pyint(2).get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(ns.copy());
  check_status(PyDict_SetItemString(frame.globals.get(), "g", pyint(2).get()));
  FrameValues values = frame.values();
  Py_ssize_t before[3] = {Py_REFCNT(ns.get()), Py_REFCNT(inner.get()), Py_REFCNT(dict.get())};
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(tree->check(values));
  EXPECT_EQ(Py_REFCNT(ns.get()), before[0]);
  EXPECT_EQ(Py_REFCNT(inner.get()), before[1]);
  EXPECT_EQ(Py_REFCNT(dict.get()), before[2]);
}

TEST(GuardTree, TensorMatchWhenTorchIsAvailable) {
  py::Ref<> module = py::Ref<>::steal(PyImport_ImportModule("torch"));
  if (!module) {
    PyErr_Clear();
    GTEST_SKIP() << "torch is not importable from the embedded interpreter";
  }
  py::Ref<> x = run_python("import torch\nresult = torch.zeros(2, 3)\n");
  py::Ref<> y = run_python("import torch\nresult = torch.zeros(3, 3)\n");
  GuardSet set;
  set.add_tensor_match(local_source("x", 0), x.get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(x.copy());
  EXPECT_TRUE(tree->check(frame.values()));
  frame.slots[0] = y.copy();
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['x'] size[0]: expected 2, got 3");
}

TEST(GuardSet, RejectsValuesItCannotGuard) {
  GuardSet set;
  py::Ref<> list = check(PyList_New(0));
  EXPECT_THROW(set.add_equals_match(local_source("x", 0), list.get()), PythonError);
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_EQ(set.size(), 0u);
}

TEST(GuardTree, SameObjectAndDistinctObjects) {
  GuardSet set;
  set.add_type_match(local_source("a", 0), &PyList_Type);
  set.add_same_object(local_source("a", 0), local_source("b", 1));
  set.add_distinct_objects({local_source("a", 0), local_source("c", 2)});
  auto tree = set.build();
  py::Ref<> one = check(PyList_New(0));
  py::Ref<> two = check(PyList_New(0));
  TestFrame frame;
  frame.slots.push_back(one.copy());
  frame.slots.push_back(one.copy());
  frame.slots.push_back(two.copy());
  Py_ssize_t before = Py_REFCNT(one.get());
  EXPECT_TRUE(tree->check(frame.values()));
  EXPECT_EQ(Py_REFCNT(one.get()), before);  // captured references are released
  frame.slots[1] = two.copy();
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "L['b'] is L['a']: expected the same object, got two different ones");
  frame.slots[1] = one.copy();
  frame.slots[2] = one.copy();
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_NE(tree->explain_failure(frame.values()).find("expected distinct objects"), std::string::npos);
  auto lines = tree->describe();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "L['b']: OBJECT_ALIASING L['a']"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "NO_ALIASING L['a'], L['c']"), lines.end());
}

TEST(GuardTree, DictLacksKeyOnTheGlobals) {
  GuardSet set;
  py::Ref<> name = check(PyUnicode_FromString("len"));
  set.add_dict_lacks_key(globals_dict_source(), name.get());
  auto tree = set.build();
  TestFrame frame;
  EXPECT_TRUE(tree->check(frame.values()));
  check_status(PyDict_SetItem(frame.globals.get(), name.get(), Py_None));
  EXPECT_FALSE(tree->check(frame.values()));
  EXPECT_EQ(tree->explain_failure(frame.values()), "G has 'len': expected it absent");
}

// Strings, numbers and tuples are keys by value; any other key (an instance here, a tensor in
// an optimizer's state) only as the very object the trace read.
TEST(GuardTree, DictKeysMatchComparesObjectKeysByIdentity) {
  py::Ref<> ns = run_python(
      "class Key:\n"
      "    def __eq__(self, other): raise AssertionError('compared')\n"
      "    def __hash__(self): return 1\n"
      "first, second = Key(), Key()\n"
      "import types\n"
      "result = types.SimpleNamespace(d={first: 1, 'a': 2, (1, 2): 3}, first=first, second=second)\n");
  py::Ref<> dict = check(PyObject_GetAttrString(ns.get(), "d"));
  py::Ref<> first = check(PyObject_GetAttrString(ns.get(), "first"));
  py::Ref<> second = check(PyObject_GetAttrString(ns.get(), "second"));
  py::Ref<> keys = check(Py_BuildValue("(Os(ii))", first.get(), "a", 1, 2));
  GuardSet set;
  set.add_dict_keys_match(local_source("d", 0), keys.get());
  auto tree = set.build();
  TestFrame frame;
  frame.slots.push_back(dict.copy());
  EXPECT_TRUE(tree->check(frame.values()));  // 'a' and (1, 2) equal by value, `first` the same object
  py::Ref<> other = check(Py_BuildValue("{O:i,s:i,(ii):i}", second.get(), 1, "a", 2, 1, 2, 3));
  frame.slots[0] = other.copy();
  EXPECT_FALSE(tree->check(frame.values()));  // another Key: never compared with ==
  EXPECT_FALSE(PyErr_Occurred());
}

}  // namespace
}  // namespace bytegraph::guards
