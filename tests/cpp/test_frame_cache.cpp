// The per-code cache and entry construction, without the hook: lifetime on the code object,
// lookup order, and the positional copy of replacement code.
#include <gtest/gtest.h>

#include "frame/cache_entry.h"
#include "frame/code_cache.h"
#include "frame/frame_view.h"
#include "python/errors.h"

using namespace bytegraph;
using bytegraph::py::Ref;

namespace {

// Runs `source` in a fresh namespace and returns the function it defines as `name`.
Ref<> define(const char* source, const char* name) {
  Ref<> globals = check(PyDict_New());
  check_status(PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()));
  check(PyRun_String(source, Py_file_input, globals.get(), globals.get()));
  Ref<> function = Ref<>::newref(PyDict_GetItemString(globals.get(), name));
  // Drop the function from its globals so the function is the only owner of its code.
  check_status(PyDict_DelItemString(globals.get(), name));
  return function;
}

PyCodeObject* code_of(const Ref<>& function) {
  return reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function.get()));
}

class AlwaysFalse : public guards::GuardTree {
 public:
  bool check(const guards::FrameValues&) const override { return false; }
  std::string explain_failure(const guards::FrameValues&) const override { return "never"; }
  std::vector<std::string> describe() const override { return {"never"}; }
  size_t guard_count() const override { return 1; }
};

}  // namespace

TEST(FrameCache, ArgumentSlotsCountEveryKind) {
  frame::init_code_cache();
  Ref<> f = define("def f(a, b=1, /, c=2, *args, d, e=3, **kw):\n  x = 1\n  return x\n", "f");
  EXPECT_EQ(frame::argument_slot_count(code_of(f)), 7);
  Ref<> g = define("def g():\n  return 1\n", "g");
  EXPECT_EQ(frame::argument_slot_count(code_of(g)), 0);
}

TEST(FrameCache, PositionalCodeKeepsTheLocalsLayout) {
  Ref<> f = define("def f(a, /, b, *args, c, **kw):\n  return lambda: a\n", "f");
  Ref<> positional = frame::make_positional_code(reinterpret_cast<PyObject*>(code_of(f)));
  auto* code = reinterpret_cast<PyCodeObject*>(positional.get());
  EXPECT_EQ(code->co_argcount, 5);
  EXPECT_EQ(code->co_posonlyargcount, 0);
  EXPECT_EQ(code->co_kwonlyargcount, 0);
  EXPECT_EQ(code->co_flags & (CO_VARARGS | CO_VARKEYWORDS), 0);
  EXPECT_EQ(code->co_nlocalsplus, code_of(f)->co_nlocalsplus);
  EXPECT_EQ(PyObject_RichCompareBool(code->co_localsplusnames, code_of(f)->co_localsplusnames, Py_EQ), 1);
  EXPECT_EQ(PyObject_RichCompareBool(code->co_localspluskinds, code_of(f)->co_localspluskinds, Py_EQ), 1);
}

TEST(FrameCache, CacheDiesWithItsCodeObject) {
  Ref<> f = define("def f(x):\n  return x\n", "f");
  Ref<> replacement = define("def f(x):\n  return (x,)\n", "f");
  size_t before = frame::live_cache_count();
  PyCodeObject* code = code_of(f);
  frame::CodeCache& cache = frame::CodeCache::ensure(code);
  cache.add(frame::make_cache_entry(code, f.get(),
                                    Ref<>::newref(PyFunction_GET_CODE(replacement.get())), nullptr,
                                    Ref<>()));
  EXPECT_EQ(frame::CodeCache::find(code), &cache);
  EXPECT_GT(frame::live_cache_count(), before);
  replacement.reset();
  f.reset();  // the function was the code's only owner
  EXPECT_EQ(frame::live_cache_count(), before);
}

TEST(FrameCache, LookupSkipsFailingGuardsAndMovesTheHitToTheFront) {
  Ref<> f = define("def f(x):\n  return x\n", "f");
  PyCodeObject* code = code_of(f);
  frame::CodeCache& cache = frame::CodeCache::ensure(code);
  auto always = frame::make_cache_entry(code, f.get(), Ref<>::newref(PyFunction_GET_CODE(f.get())),
                                        nullptr, Ref<>());
  auto never = frame::make_cache_entry(code, f.get(), Ref<>::newref(PyFunction_GET_CODE(f.get())),
                                       std::make_unique<AlwaysFalse>(), Ref<>());
  cache.add(always);
  cache.add(never);  // newest first
  ASSERT_EQ(cache.entries().front(), never);
  guards::FrameValues values;
  EXPECT_EQ(cache.lookup(values), always);
  EXPECT_EQ(cache.entries().front(), always);
  cache.clear_entries();
  EXPECT_EQ(cache.lookup(values), nullptr);
}

TEST(FrameCache, EntriesRejectChangedArgumentNames) {
  Ref<> f = define("def f(x):\n  return x\n", "f");
  Ref<> other = define("def g(y):\n  return y\n", "g");
  EXPECT_THROW(frame::make_cache_entry(code_of(f), f.get(),
                                       Ref<>::newref(PyFunction_GET_CODE(other.get())), nullptr,
                                       Ref<>()),
               PythonError);
  EXPECT_FALSE(PyErr_Occurred());
}
