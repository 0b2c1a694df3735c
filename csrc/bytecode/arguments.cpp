#include "bytecode/arguments.h"

#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

ArgumentKind argument_kind(int opcode) {
  const OpcodeInfo& info = opcode_info(opcode);
  if (!info.has_arg) return ArgumentKind::kNone;
  if (info.is_jump) return ArgumentKind::kJump;
  if (info.has_const) return ArgumentKind::kConst;
  if (info.has_name) return ArgumentKind::kName;
  if (info.has_local || info.has_free) return ArgumentKind::kLocal;
  if (info.has_compare) return ArgumentKind::kCompare;
  return ArgumentKind::kNumber;
}

int table_index(int opcode, int arg) { return arg >> opcode_info(opcode).arg_shift; }

int argument_flags(int opcode, int arg) {
  return arg > 0 ? arg & ((1 << opcode_info(opcode).arg_shift) - 1) : 0;
}

int argument_for_index(int opcode, int index, int old_arg) {
  int shift = opcode_info(opcode).arg_shift;
  if (old_arg < 0 && argument_kind(opcode) == ArgumentKind::kCompare && index >= 0 &&
      index < static_cast<int>(kCompareOpArgs.size()))
    return kCompareOpArgs[index];
  return (index << shift) | argument_flags(opcode, old_arg);
}

namespace {

py::Ref<> tuple_item(PyObject* tuple, int index, int opcode, const char* what) {
  if (index < 0 || index >= PyTuple_GET_SIZE(tuple)) {
    throw PythonError::make(PyExc_ValueError, std::string(opcode_info(opcode).name) + " argument " +
                                                  std::to_string(index) + " is out of range of " + what);
  }
  return py::Ref<>::newref(PyTuple_GET_ITEM(tuple, index));
}

std::string repr_of(PyObject* value) {
  py::Ref<> text = check(PyObject_Repr(value));
  const char* utf8 = PyUnicode_AsUTF8(text.get());
  if (utf8 == nullptr) throw_python_error();
  return utf8;
}

std::string str_of(PyObject* value) {
  py::Ref<> text = check(PyObject_Str(value));
  const char* utf8 = PyUnicode_AsUTF8(text.get());
  if (utf8 == nullptr) throw_python_error();
  return utf8;
}

// FORMAT_VALUE's and MAKE_FUNCTION's flag words, as dis spells them.
std::string format_value_repr(int arg) {
  static const char* const kConversions[] = {"", "str", "repr", "ascii"};
  std::string text = kConversions[arg & 3];
  if (arg & 4) text += text.empty() ? "with format" : ", with format";
  return text;
}

std::string make_function_repr(int arg) {
  static const char* const kFlags[] = {"defaults", "kwdefaults", "annotations", "closure"};
  std::string text;
  for (int bit = 0; bit < 4; ++bit) {
    if (!(arg & (1 << bit))) continue;
    if (!text.empty()) text += ", ";
    text += kFlags[bit];
  }
  return text;
}

}  // namespace

py::Ref<> resolve_argval(const ArgumentTables& tables, int opcode, int arg) {
  switch (argument_kind(opcode)) {
    case ArgumentKind::kConst:
      return tuple_item(tables.consts, arg, opcode, "co_consts");
    case ArgumentKind::kName:
      return tuple_item(tables.names, table_index(opcode, arg), opcode, "co_names");
    case ArgumentKind::kLocal:
      if (opcode_info(opcode).packed_locals) {
        py::Ref<> first = tuple_item(tables.localsplusnames, arg >> 4, opcode, "the local, cell and free variables");
        py::Ref<> second = tuple_item(tables.localsplusnames, arg & 15, opcode, "the local, cell and free variables");
        return check(PyTuple_Pack(2, first.get(), second.get()));
      }
      return tuple_item(tables.localsplusnames, arg, opcode, "the local, cell and free variables");
    case ArgumentKind::kCompare: {
      int index = table_index(opcode, arg);
      if (index < 0 || index >= static_cast<int>(kCompareOpNames.size())) {
        throw PythonError::make(PyExc_ValueError, "COMPARE_OP argument " + std::to_string(arg) + " is out of range");
      }
      return check(PyUnicode_FromString(kCompareOpNames[index]));
    }
    default:
      return nullptr;
  }
}

std::string argument_repr(int opcode, int arg, PyObject* argval, int jump_target_offset) {
  switch (argument_kind(opcode)) {
    case ArgumentKind::kNone:
      return {};
    case ArgumentKind::kJump:
      return jump_target_offset >= 0 ? "to " + std::to_string(jump_target_offset) : "to ?";
    case ArgumentKind::kConst:
      return argval ? repr_of(argval) : std::string();
    case ArgumentKind::kName:
    case ArgumentKind::kLocal:
    case ArgumentKind::kCompare: {
      if (argval && PyTuple_Check(argval) && PyTuple_GET_SIZE(argval) == 2)
        return str_of(PyTuple_GET_ITEM(argval, 0)) + ", " + str_of(PyTuple_GET_ITEM(argval, 1));
      std::string name = argval ? str_of(argval) : std::string();
      const int flags = argument_flags(opcode, arg);
      for (const ArgreprAffix& affix : kArgreprAffixes)
        if (affix.opcode == opcode && affix.flags == flags) return affix.prefix + name + affix.suffix;
      return name;
    }
    case ArgumentKind::kNumber:
      if (opcode == op::BINARY_OP && arg >= 0 && arg < static_cast<int>(kBinaryOpNames.size())) {
        return kBinaryOpNames[arg];
      }
      if (in_family(opcode, Family::kFormatValue)) return format_value_repr(arg);
      if (in_family(opcode, Family::kCallIntrinsic1) && arg >= 0 && arg < static_cast<int>(kIntrinsic1Names.size()))
        return kIntrinsic1Names[arg];
      if (in_family(opcode, Family::kCallIntrinsic2) && arg >= 0 && arg < static_cast<int>(kIntrinsic2Names.size()))
        return kIntrinsic2Names[arg];
      if (opcode == op::MAKE_FUNCTION || in_family(opcode, Family::kSetFunctionAttribute)) return make_function_repr(arg);
      return {};
  }
  return {};
}

}  // namespace bytegraph::bytecode
