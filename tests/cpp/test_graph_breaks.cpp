// Units for splitting frames at graph breaks: liveness, break sites and resume functions,
// checked on compiled code and by running the generated code objects.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bytecode/decode.h"
#include "bytecode/liveness.h"
#include "bytecode/opcodes.h"
#include "codegen/break_site.h"
#include "codegen/resume_function.h"
#include "python/errors.h"

namespace bc = bytegraph::bytecode;
namespace cg = bytegraph::codegen;
using bytegraph::PythonError;
using bytegraph::py::Ref;

namespace {

// Runs `source` and returns the function `name` defined in it.
Ref<> compiled_function(const char* source, const char* name) {
  Ref<> module_code = bytegraph::check(Py_CompileString(source, "<test>", Py_file_input));
  Ref<> globals = bytegraph::check(PyDict_New());
  PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
  Ref<> result = bytegraph::check(PyEval_EvalCode(module_code.get(), globals.get(), globals.get()));
  return Ref<>::newref(PyDict_GetItemString(globals.get(), name));
}

PyCodeObject* code_of(const Ref<>& function) {
  return reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function.get()));
}

bool names(PyObject* argval, const char* name) {
  if (argval && PyTuple_Check(argval) && PyTuple_GET_SIZE(argval) > 0) argval = PyTuple_GET_ITEM(argval, 0);
  return argval && PyUnicode_Check(argval) && PyUnicode_CompareWithASCIIString(argval, name) == 0;
}

// The index of the first instruction with `opcode` (and `name` as argval, when given). A
// LOAD_FAST may be the first half of a paired load (3.13's LOAD_FAST_LOAD_FAST).
std::size_t find(const bc::InstructionList& list, int opcode, const char* name = nullptr) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const bool paired = opcode == bc::op::LOAD_FAST && bc::in_family(list[i]->opcode, bc::Family::kLoadFastLoadFast);
    if (list[i]->opcode != opcode && !paired) continue;
    if (name == nullptr || names(list[i]->argval.get(), name)) return i;
  }
  ADD_FAILURE() << "no such instruction";
  return 0;
}

// The first conditional jump that pops a false condition, whatever its direction in its name.
std::size_t find(const bc::InstructionList& list, bc::Family family) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (bc::in_family(list[i]->opcode, family)) return i;
  ADD_FAILURE() << "no such instruction";
  return 0;
}

const char* kBranches =
    "def f(a, b):\n"
    "    x = a + b\n"
    "    if x:\n"
    "        x = x * 2\n"
    "    y = b\n"
    "    return x + y\n";

}  // namespace

TEST(Liveness, LocalsReadLaterAreLiveAndOverwrittenOnesAreNot) {
  Ref<> f = compiled_function(kBranches, "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  const auto& list = decoded.instructions;
  // Before `x = a + b`: a and b are read, x is written first.
  EXPECT_EQ(bc::live_locals_at(list, find(list, bc::op::LOAD_FAST, "a")), (std::vector<std::string>{"a", "b"}));
  // At the branch: a is dead, x and b are read on both paths.
  std::vector<std::string> at_branch = bc::live_locals_at(list, find(list, bc::Family::kPopJumpIfFalse));
  std::sort(at_branch.begin(), at_branch.end());
  EXPECT_EQ(at_branch, (std::vector<std::string>{"b", "x"}));
}

TEST(Liveness, ALocalReadInAHandlerIsLiveThroughoutTheTryBlock) {
  Ref<> f = compiled_function(
      "def f(a):\n"
      "    keep = a\n"
      "    try:\n"
      "        a = a + 1\n"
      "    except Exception:\n"
      "        return keep\n"
      "    return a\n",
      "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  std::vector<std::string> live = bc::live_locals_at(decoded.instructions, find(decoded.instructions, bc::op::BINARY_OP));
  EXPECT_NE(std::find(live.begin(), live.end(), "keep"), live.end());
}

TEST(BreakSite, CallsBranchesAndProtectedInstructions) {
  Ref<> f = compiled_function(
      "def f(x):\n"
      "    print(x, sep='')\n"
      "    if x:\n"
      "        return 1\n"
      "    try:\n"
      "        print(x)\n"
      "    finally:\n"
      "        pass\n",
      "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  const auto& list = decoded.instructions;
  // The first call: CALL after KW_NAMES, or 3.13's CALL_KW with the names on the stack.
  std::size_t call = 0;
  while (call < list.size() && list[call]->opcode != bc::op::CALL && !bc::in_family(list[call]->opcode, bc::Family::kCallKw))
    ++call;
  ASSERT_LT(call, list.size());
  const int names_on_stack = bc::in_family(list[call]->opcode, bc::Family::kCallKw) ? 1 : 0;
  cg::BreakSite site = cg::find_break_site(list, list[call]->offset);
  EXPECT_TRUE(site.not_splittable.empty());
  EXPECT_EQ(site.kind, cg::BreakSite::Kind::Call);
  ASSERT_EQ(site.continuations.size(), 1u);
  EXPECT_EQ(site.continuations[0].offset, list[call + 1]->offset);
  EXPECT_EQ(site.continuations[0].pops, list[call]->arg + 2 + names_on_stack);
  EXPECT_EQ(site.continuations[0].pushes, 1);

  const std::size_t jump = find(list, bc::Family::kPopJumpIfFalse);
  site = cg::find_break_site(list, list[jump]->offset);
  EXPECT_EQ(site.kind, cg::BreakSite::Kind::Branch);
  ASSERT_EQ(site.continuations.size(), 2u);
  EXPECT_EQ(site.continuations[1].offset, list[jump]->target->offset);

  std::size_t protected_call = 0;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i]->opcode == bc::op::CALL && list[i]->exception_entry) protected_call = i;
  ASSERT_NE(protected_call, 0u);
  // A break inside a try block is split too: the handler is re-entered by a resume function.
  site = cg::find_break_site(list, list[protected_call]->offset);
  EXPECT_TRUE(site.not_splittable.empty());
  EXPECT_TRUE(site.handler.has_value());
  EXPECT_FALSE(cg::find_break_site(list, 99999).not_splittable.empty());
}

TEST(ResumeFunction, ContinuesTheOriginalCodeWithTheStackAndLocalsAsArguments) {
  Ref<> f = compiled_function(kBranches, "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  const std::size_t jump = find(decoded.instructions, bc::Family::kPopJumpIfFalse);
  cg::ResumeSpec spec;
  spec.offset = decoded.instructions[jump + 1]->offset;  // the branch taken when x is true
  spec.locals = {"b", "x"};
  spec.name = "__resume_at_test";
  cg::ResumeCode resume = cg::make_resume_code(code_of(f), spec);
  auto* code = reinterpret_cast<PyCodeObject*>(resume.code.get());
  EXPECT_EQ(code->co_argcount, 2);
  EXPECT_FALSE(resume.original_offsets.empty());
  // Calling it with b=10, x=3 runs `x = x * 2; y = b; return x + y`.
  Ref<> globals = bytegraph::check(PyDict_New());
  Ref<> function = bytegraph::check(PyFunction_New(resume.code.get(), globals.get()));
  Ref<> result = bytegraph::check(PyObject_CallFunction(function.get(), "ii", 10, 3));
  EXPECT_EQ(PyLong_AsLong(result.get()), 16);
}

TEST(ResumeFunction, RebuildsNullsOnTheStack) {
  Ref<> f = compiled_function(
      "def f(x):\n"
      "    return len(x)\n",
      "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  const std::size_t load = find(decoded.instructions, bc::op::LOAD_FAST, "x");
  cg::ResumeSpec spec;
  // [NULL, len] on the stack ([len, NULL] from 3.13), x still to load.
  spec.offset = decoded.instructions[load]->offset;
  spec.stack = bc::kCallNullAfterCallable ? std::vector{cg::StackSlot::Value, cg::StackSlot::Null}
                                          : std::vector{cg::StackSlot::Null, cg::StackSlot::Value};
  spec.contexts.resize(2);
  spec.locals = {"x"};
  spec.name = "__resume_at_null";
  cg::ResumeCode resume = cg::make_resume_code(code_of(f), spec);
  Ref<> globals = bytegraph::check(PyDict_New());
  Ref<> function = bytegraph::check(PyFunction_New(resume.code.get(), globals.get()));
  Ref<> builtins = bytegraph::check(PyImport_ImportModule("builtins"));
  Ref<> builtins_len = bytegraph::check(PyObject_GetAttrString(builtins.get(), "len"));
  Ref<> items = bytegraph::check(Py_BuildValue("[iii]", 1, 2, 3));
  // Resume functions take the live locals first, then the stack values.
  Ref<> result = bytegraph::check(PyObject_CallFunctionObjArgs(function.get(), items.get(), builtins_len.get(), nullptr));
  EXPECT_EQ(PyLong_AsLong(result.get()), 3);
}

TEST(ResumeFunction, CellVariablesBecomeFreeVariablesSharedWithTheCaller) {
  const char* source =
      "def f(x):\n"
      "    g = lambda: x\n"
      "    x = x + 1\n"
      "    return g()\n"
      "def make(v):\n"
      "    return lambda: v\n";
  Ref<> f = compiled_function(source, "f");
  bc::DecodedCode decoded = bc::decode(code_of(f));
  const std::size_t load = find(decoded.instructions, bc::op::LOAD_DEREF, "x");
  cg::ResumeSpec spec;
  spec.offset = decoded.instructions[load]->offset;  // `x = x + 1`, with g live
  spec.locals = {"g"};
  spec.name = "__resume_at_cells";
  cg::ResumeCode resume = cg::make_resume_code(code_of(f), spec);
  auto* code = reinterpret_cast<PyCodeObject*>(resume.code.get());
  Ref<> cellvars = bytegraph::check(PyCode_GetCellvars(code));
  Ref<> freevars = bytegraph::check(PyCode_GetFreevars(code));
  EXPECT_EQ(PyTuple_GET_SIZE(cellvars.get()), 0);
  ASSERT_EQ(PyTuple_GET_SIZE(freevars.get()), 1);
  // g reads a cell holding 41; the resume function gets that cell as its closure, writes
  // x + 1 into it, and g() sees 42.
  Ref<> make = compiled_function(source, "make");
  Ref<> value = bytegraph::check(PyLong_FromLong(41));
  Ref<> g = bytegraph::check(PyObject_CallOneArg(make.get(), value.get()));
  Ref<> globals = bytegraph::check(PyDict_New());
  Ref<> function = bytegraph::check(PyFunction_New(resume.code.get(), globals.get()));
  ASSERT_EQ(PyFunction_SetClosure(function.get(), PyFunction_GET_CLOSURE(g.get())), 0);
  Ref<> result = bytegraph::check(PyObject_CallOneArg(function.get(), g.get()));
  EXPECT_EQ(PyLong_AsLong(result.get()), 42);
}
