// Units for the bytecode codec: varints, exception and location tables, the EXTENDED_ARG
// fixed point, jump flipping, stack depth, and decode/assemble on compiled code.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <unordered_map>

#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytecode/exception_table.h"
#include "bytecode/handler_kinds.h"
#include "bytecode/layout.h"
#include "bytecode/location_table.h"
#include "bytecode/opcodes.h"
#include "bytecode/stack_depth.h"
#include "bytecode/varint.h"
#include "python/errors.h"

namespace bc = bytegraph::bytecode;
using bytegraph::PythonError;
using bytegraph::py::Ref;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

bc::ByteReader reader(const std::string& data) {
  return {reinterpret_cast<const std::uint8_t*>(data.data()), data.size()};
}

bc::Instruction* add(bc::InstructionList& list, int opcode, int arg = -1) {
  auto instruction = std::make_unique<bc::Instruction>();
  instruction->opcode = opcode;
  instruction->arg = arg;
  list.push_back(std::move(instruction));
  return list.back().get();
}

// Compiles `source` and returns the code object of the function `name` defined in it.
Ref<> compiled_function_code(const char* source, const char* name) {
  Ref<> module_code = bytegraph::check(Py_CompileString(source, "<test>", Py_file_input));
  Ref<> globals = bytegraph::check(PyDict_New());
  PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
  Ref<> result = bytegraph::check(PyEval_EvalCode(module_code.get(), globals.get(), globals.get()));
  PyObject* function = PyDict_GetItemString(globals.get(), name);  // borrowed
  return bytegraph::check(PyObject_GetAttrString(function, "__code__"));
}

std::string bytes_of(PyObject* object /* borrowed */) {
  return {PyBytes_AS_STRING(object), static_cast<std::size_t>(PyBytes_GET_SIZE(object))};
}

}  // namespace

TEST(Varint, ExceptionTableVarintsAreMostSignificantChunkFirst) {
  std::string out;
  bc::write_msb_varint(out, 63);
  EXPECT_EQ(out, bytes({0x3F}));
  out.clear();
  bc::write_msb_varint(out, 64, 0x80);  // chunks 1, 0; the entry marker on the first byte only
  EXPECT_EQ(out, bytes({0x80 | 0x40 | 0x01, 0x00}));
  for (unsigned value : {0u, 1u, 63u, 64u, 4095u, 4096u, 262143u, 262144u, 1u << 29}) {
    std::string encoded;
    bc::write_msb_varint(encoded, value, 0x80);
    bc::ByteReader in = reader(encoded);
    EXPECT_EQ(bc::read_msb_varint(in), value);
    EXPECT_TRUE(in.done());
  }
}

TEST(Varint, LocationVarintsAreLeastSignificantChunkFirstAndSigned) {
  std::string out;
  bc::write_lsb_varint(out, 64);
  EXPECT_EQ(out, bytes({0x40, 0x01}));
  out.clear();
  bc::write_lsb_signed_varint(out, -1);
  EXPECT_EQ(out, bytes({0x03}));
  for (int value : {0, 1, -1, 31, -32, 100, -100, 5000, -70000}) {
    std::string encoded;
    bc::write_lsb_signed_varint(encoded, value);
    bc::ByteReader in = reader(encoded);
    EXPECT_EQ(bc::read_lsb_signed_varint(in), value);
    EXPECT_TRUE(in.done());
  }
}

TEST(Varint, TruncatedInputRaisesValueError) {
  std::string truncated = bytes({0x41});  // "more follows", then nothing
  bc::ByteReader in = reader(truncated);
  try {
    bc::read_msb_varint(in);
    FAIL() << "expected an error";
  } catch (PythonError& error) {
    EXPECT_EQ(error.type(), PyExc_ValueError);
  }
}

TEST(ExceptionTable, EncodesFourVarintsPerEntryAndParsesBack) {
  std::vector<bc::RawExceptionEntry> entries = {{2, 10, 20, 1, true}, {10, 100, 300, 0, false}};
  std::string table = bc::encode_exception_table(entries);
  EXPECT_EQ(table.substr(0, 4), bytes({0x80 | 2, 8, 20, (1 << 1) | 1}));
  EXPECT_EQ(bc::parse_exception_table(table), entries);
}

TEST(ExceptionTable, RealTableRoundTrips) {
  Ref<> code = compiled_function_code(
      "def f(x):\n"
      "    try:\n"
      "        return 1 / x\n"
      "    except ZeroDivisionError:\n"
      "        return 0\n"
      "    finally:\n"
      "        x = None\n",
      "f");
  std::string table = bytes_of(reinterpret_cast<PyCodeObject*>(code.get())->co_exceptiontable);
  auto entries = bc::parse_exception_table(table);
  EXPECT_GE(entries.size(), 2u);
  EXPECT_EQ(bc::encode_exception_table(entries), table);
}

TEST(LocationTable, ChoosesCPythonsFormsAndParsesBack) {
  std::vector<bc::LocationRun> runs = {
      {1, {1, 1, 4, 6}},       // short form: same line, small columns
      {2, {2, 2, 100, 120}},   // one-line form: line + 1, byte columns
      {1, {2, 2, -1, -1}},     // no columns
      {1, {40, 42, 3, 9}},     // long form: several lines
      {1, {}},                 // no location
      {10, {40, 40, 0, 1}},    // longer than 8 units: split in two entries
  };
  std::string table = bc::encode_location_table(runs, 1);
  EXPECT_EQ(static_cast<unsigned char>(table[0]), 0x80 | (0 << 3) | 0);  // short form, group 0, 1 unit
  EXPECT_EQ(static_cast<unsigned char>(table[1]), (4 << 4) | 2);
  EXPECT_EQ(static_cast<unsigned char>(table[2]), 0x80 | (11 << 3) | 1);  // one-line form, delta 1, 2 units
  auto parsed = bc::parse_location_table(table, 1);
  ASSERT_EQ(parsed.size(), runs.size() + 1);
  for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
    EXPECT_EQ(parsed[i].units, runs[i].units);
    EXPECT_EQ(parsed[i].positions.lineno, runs[i].positions.lineno);
    EXPECT_EQ(parsed[i].positions.end_lineno, runs[i].positions.end_lineno);
    EXPECT_EQ(parsed[i].positions.col_offset, runs[i].positions.col_offset);
    EXPECT_EQ(parsed[i].positions.end_col_offset, runs[i].positions.end_col_offset);
  }
  EXPECT_EQ(parsed[5].units, 8);
  EXPECT_EQ(parsed[6].units, 2);
  EXPECT_EQ(parsed[6].positions.lineno, 40);
}

TEST(Layout, ForwardJumpOverLongBodyGetsAnExtendedArg) {
  bc::InstructionList list;
  bc::Instruction* jump = add(list, bc::op::JUMP_FORWARD, 0);
  for (int i = 0; i < 300; ++i) add(list, bc::op::NOP);
  jump->target = add(list, bc::op::RETURN_VALUE);
  bc::Layout layout = bc::lay_out(list, bc::InstructionIndex(list));
  EXPECT_EQ(layout.prefixes[0], 1);
  EXPECT_EQ(jump->arg, 300);  // measured from the end of the jump, so its prefix does not count
  EXPECT_EQ(layout.start.back(), 302);
}

TEST(Layout, BackwardJumpPrefixFeedsBackIntoItsOwnDistance) {
  // NOPs then a backward jump to the first, 256 units back without a prefix (too big for one
  // byte; the jump's own CACHE units count too, one on 3.13), so a prefix is added and the
  // distance becomes 257.
  const int caches = bc::opcode_info(bc::op::JUMP_BACKWARD).cache_entries;
  bc::InstructionList list;
  bc::Instruction* first = add(list, bc::op::NOP);
  for (int i = 0; i < 254 - caches; ++i) add(list, bc::op::NOP);
  bc::Instruction* jump = add(list, bc::op::JUMP_BACKWARD, 0);
  jump->target = first;
  bc::Layout layout = bc::lay_out(list, bc::InstructionIndex(list));
  EXPECT_EQ(layout.prefixes.back(), 1);
  EXPECT_EQ(jump->arg, 257);

  // One NOP fewer fits in a byte: no prefix.
  bc::InstructionList shorter;
  first = add(shorter, bc::op::NOP);
  for (int i = 0; i < 253 - caches; ++i) add(shorter, bc::op::NOP);
  jump = add(shorter, bc::op::JUMP_BACKWARD, 0);
  jump->target = first;
  layout = bc::lay_out(shorter, bc::InstructionIndex(shorter));
  EXPECT_EQ(layout.prefixes.back(), 0);
  EXPECT_EQ(jump->arg, 255);
}

// The backward member of `family` that has a forward twin, or -1 (3.12+ conditional jumps
// go forward only).
int backward_with_twin(bc::Family family) {
  for (int opcode = 0; opcode < 256; ++opcode) {
    const bc::OpcodeInfo& info = bc::opcode_info(opcode);
    if (info.known && info.family == family && info.is_backward_jump && info.flipped >= 0) return opcode;
  }
  return -1;
}

TEST(Layout, JumpsAreFlippedToTheirTargetsDirection) {
  bc::InstructionList list;
  bc::Instruction* top = add(list, bc::op::NOP);
  bc::Instruction* forward = add(list, bc::op::JUMP_BACKWARD, 0);
  bc::Instruction* back = add(list, bc::op::JUMP_FORWARD, 0);
  bc::Instruction* end = add(list, bc::op::RETURN_VALUE);
  forward->target = end;
  back->target = top;
  bc::lay_out(list, bc::InstructionIndex(list));
  const int back_units = 1 + bc::opcode_info(bc::op::JUMP_BACKWARD).cache_entries;
  EXPECT_EQ(forward->opcode, bc::op::JUMP_FORWARD);
  EXPECT_EQ(forward->arg, back_units);
  EXPECT_EQ(back->opcode, bc::op::JUMP_BACKWARD);
  EXPECT_EQ(back->arg, 2 + back_units);
}

TEST(Layout, ConditionalJumpsAreFlippedWhereTheyHaveTwoDirections) {
  const int backward = backward_with_twin(bc::Family::kPopJumpIfTrue);
  if (backward < 0) GTEST_SKIP() << "this interpreter's conditional jumps go forward only";
  bc::InstructionList list;
  add(list, bc::op::NOP);
  bc::Instruction* conditional = add(list, backward, 0);
  add(list, bc::op::NOP);
  bc::Instruction* end = add(list, bc::op::RETURN_VALUE);
  conditional->target = end;
  bc::lay_out(list, bc::InstructionIndex(list));
  EXPECT_EQ(conditional->opcode, bc::opcode_info(backward).flipped);
  EXPECT_EQ(conditional->arg, 1);
}

TEST(Layout, ForwardOnlyJumpCannotGoBackward) {
  bc::InstructionList list;
  bc::Instruction* top = add(list, bc::op::NOP);
  bc::Instruction* for_iter = add(list, bc::op::FOR_ITER, 0);
  for_iter->target = top;
  EXPECT_THROW(bc::lay_out(list, bc::InstructionIndex(list)), PythonError);
}

TEST(Layout, JumpToAnInstructionOutsideTheListIsAValueError) {
  bc::InstructionList list, other;
  bc::Instruction* jump = add(list, bc::op::JUMP_FORWARD, 0);
  jump->target = add(other, bc::op::NOP);
  try {
    bc::lay_out(list, bc::InstructionIndex(list));
    FAIL() << "expected an error";
  } catch (PythonError& error) {
    EXPECT_EQ(error.type(), PyExc_ValueError);
  }
}

TEST(StackDepth, FollowsBranchesAndHandlersAndReportsUnderflow) {
  Ref<> code = compiled_function_code(
      "def f(a, b):\n"
      "    try:\n"
      "        return [a, b, (a, b, a)] if a else None\n"
      "    except Exception as e:\n"
      "        return e\n",
      "f");
  auto* co = reinterpret_cast<PyCodeObject*>(code.get());
  bc::DecodedCode decoded = bc::decode(co);
  EXPECT_EQ(bc::compute_stack_depth(decoded.instructions), co->co_stacksize);

  bc::InstructionList underflow;
  add(underflow, bc::op::POP_TOP);
  add(underflow, bc::op::RETURN_VALUE);
  try {
    bc::compute_stack_depth(underflow);
    FAIL() << "expected an error";
  } catch (PythonError& error) {
    EXPECT_EQ(error.type(), PyExc_ValueError);
    EXPECT_NE(std::string(error.what()).find("POP_TOP"), std::string::npos);
  }
}

TEST(Codec, DecodeThenAssembleReproducesCompiledCode) {
  Ref<> code = compiled_function_code(
      "def f(xs, *, scale=2):\n"
      "    out = []\n"
      "    for x in xs:\n"
      "        with open(x) as fh:\n"
      "            out.append(len(fh.read()) * scale)\n"
      "    return {k: v for k, v in enumerate(out)}\n",
      "f");
  auto* co = reinterpret_cast<PyCodeObject*>(code.get());
  bc::DecodedCode decoded = bc::decode(co);
  EXPECT_FALSE(decoded.exception_table.empty());
  for (const auto& instruction : decoded.instructions) EXPECT_NE(instruction->opcode, bc::op::EXTENDED_ARG);
  Ref<> again = bc::assemble(decoded.instructions, co);
  auto* re = reinterpret_cast<PyCodeObject*>(again.get());
  Ref<> original_bytes = bytegraph::check(PyCode_GetCode(co));
  Ref<> new_bytes = bytegraph::check(PyCode_GetCode(re));
  EXPECT_EQ(bytes_of(new_bytes.get()), bytes_of(original_bytes.get()));
  EXPECT_EQ(bytes_of(re->co_linetable), bytes_of(co->co_linetable));
  EXPECT_EQ(bytes_of(re->co_exceptiontable), bytes_of(co->co_exceptiontable));
  EXPECT_EQ(re->co_stacksize, co->co_stacksize);
}

TEST(Opcodes, GeneratedStackEffectsMatchDis) {
  // Spot checks against dis.stack_effect through the interpreter, for each form kind.
  Ref<> dis = bytegraph::check(PyImport_ImportModule("dis"));
  struct Case { int opcode, arg; bool jump; };
  for (Case c : {Case{bc::op::BUILD_TUPLE, 7, false}, Case{bc::op::UNPACK_EX, 0x0302, false},
                 Case{bc::op::MAKE_FUNCTION, 0x0B, false}, Case{bc::op::BUILD_SLICE, 3, false},
                 Case{bc::op::FOR_ITER, 5, true}, Case{bc::op::FOR_ITER, 5, false},
                 Case{bc::op::LOAD_GLOBAL, 7, false}, Case{bc::op::COMPARE_OP, 0x5A, false}}) {
    if (!bc::opcode_info(c.opcode).has_arg) continue;  // 3.13's MAKE_FUNCTION takes no flags
    Ref<> kwargs = bytegraph::check(Py_BuildValue("{s:O}", "jump", c.jump ? Py_True : Py_False));
    Ref<> args = bytegraph::check(Py_BuildValue("(ii)", c.opcode, c.arg));
    Ref<> function = bytegraph::check(PyObject_GetAttrString(dis.get(), "stack_effect"));
    Ref<> expected = bytegraph::check(PyObject_Call(function.get(), args.get(), kwargs.get()));
    EXPECT_EQ(bc::stack_effect(c.opcode, c.arg, c.jump).value(), PyLong_AsLong(expected.get()))
        << bc::opcode_info(c.opcode).name;
  }
}

// Each call to w() is marked by its argument: whether an exception there reaches an except
// clause or a finally block of the function, and not just a with block's exit or a cleanup.
TEST(HandlerKinds, ExceptAndFinallyHandleWithExitsAndCleanupsPassOn) {
  const char* source =
      "def f(w, cm, xs):\n"
      "    w(0)\n"
      "    with cm:\n"
      "        w(1)\n"
      "    try:\n"
      "        w(2)\n"
      "        with cm:\n"
      "            w(3)\n"
      "    except ValueError:\n"
      "        pass\n"
      "    try:\n"
      "        w(4)\n"
      "    finally:\n"
      "        w(5)\n"
      "    try:\n"
      "        w(6)\n"
      "    finally:\n"
      "        pass\n"
      "    return [w(7) for x in xs]\n";
  Ref<> code = compiled_function_code(source, "f");
  bc::DecodedCode decoded = bc::decode(reinterpret_cast<PyCodeObject*>(code.get()));
  std::unordered_map<const bc::Instruction*, std::size_t> index;
  for (std::size_t i = 0; i < decoded.instructions.size(); ++i) index[decoded.instructions[i].get()] = i;
  std::map<long, bool> handled;
  const bc::Instruction* marker = nullptr;
  for (const auto& instruction : decoded.instructions) {
    if (instruction->opcode == bc::op::LOAD_CONST && instruction->argval && PyLong_Check(instruction->argval.get()))
      marker = instruction.get();
    if (instruction->opcode == bc::op::CALL && marker != nullptr) {
      handled[PyLong_AsLong(marker->argval.get())] = bc::handled_in_frame(decoded.instructions, index, *instruction);
      marker = nullptr;
    }
  }
  // The comprehension is inlined from 3.12 on, its variable restored by a cleanup handler.
  if (auto inlined = handled.find(7); inlined != handled.end()) {
    EXPECT_FALSE(inlined->second);
    handled.erase(inlined);
  }
  const std::map<long, bool> expected = {{0, false}, {1, false}, {2, true}, {3, true},
                                         {4, true},  {5, false}, {6, false}};
  EXPECT_EQ(handled, expected);
}
