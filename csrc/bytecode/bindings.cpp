// bytegraph._C.bytecode: the codec seen from Python. The Python objects are the classes of
// bytegraph/bytecode.py (Instruction, ExceptionTableEntry); this file converts between them
// and the C++ InstructionList, and nothing else.
#include <nanobind/stl/string.h>

#include <unordered_map>

#include "bindings.h"
#include "bytecode/arguments.h"
#include "bytecode/decode.h"
#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph {

namespace {

using bytecode::Instruction;
using bytecode::InstructionList;

struct PythonClasses {
  nb::object instruction, entry;
};

PythonClasses python_classes() {
  nb::module_ module = nb::module_::import_("bytegraph.bytecode");
  return {module.attr("Instruction"), module.attr("ExceptionTableEntry")};
}

nb::object optional_int(int value) { return value >= 0 ? nb::object(nb::int_(value)) : nb::none(); }

nb::object positions_tuple(const bytecode::Positions& p) {
  return nb::make_tuple(optional_int(p.lineno), optional_int(p.end_lineno), optional_int(p.col_offset),
                        optional_int(p.end_col_offset));
}

nb::object borrowed_or_none(PyObject* value /* borrowed */) {
  return value ? nb::borrow(value) : nb::none();
}

// The argval shown in Python: the resolved object, the jump target's offset, or the number.
nb::object python_argval(const Instruction& instruction) {
  if (instruction.argval) return nb::borrow(instruction.argval.get());
  if (instruction.target) return optional_int(instruction.target->offset);
  return optional_int(instruction.arg);
}

nb::list to_python(const InstructionList& instructions) {
  PythonClasses classes = python_classes();
  nb::list result;
  std::unordered_map<const Instruction*, nb::object> objects;
  for (const auto& instruction : instructions) {
    int target_offset = instruction->target ? instruction->target->offset : -1;
    nb::object obj = classes.instruction(
        instruction->opcode, optional_int(instruction->arg), python_argval(*instruction),
        bytecode::argument_repr(instruction->opcode, instruction->arg, instruction->argval.get(), target_offset),
        optional_int(instruction->offset),
        instruction->starts_line ? nb::object(nb::int_(*instruction->starts_line)) : nb::none(),
        instruction->is_jump_target, positions_tuple(instruction->positions));
    objects.emplace(instruction.get(), obj);
    result.append(obj);
  }
  std::unordered_map<const bytecode::ExceptionTableEntry*, nb::object> entries;
  for (const auto& instruction : instructions) {
    nb::object& obj = objects.at(instruction.get());
    if (instruction->target) obj.attr("target") = objects.at(instruction->target);
    if (const auto& entry = instruction->exception_entry) {
      auto [it, inserted] = entries.try_emplace(entry.get());
      if (inserted) {
        it->second = classes.entry(objects.at(entry->start), objects.at(entry->end), objects.at(entry->target),
                                   entry->depth, entry->lasti);
      }
      obj.attr("exn_tab_entry") = it->second;
    }
  }
  return result;
}

PyCodeObject* as_code(nb::handle code) {
  if (!PyCode_Check(code.ptr())) {
    throw PythonError::make(PyExc_TypeError, std::string("expected a code object, got ") +
                                                 Py_TYPE(code.ptr())->tp_name);
  }
  return reinterpret_cast<PyCodeObject*>(code.ptr());
}

}  // namespace

void bind_bytecode(nb::module_& m) {
  nb::module_ sub = m.def_submodule("bytecode", "bytecode codec");
  sub.def(
      "decode", [](nb::handle code) { return to_python(bytecode::decode(as_code(code)).instructions); },
      nb::arg("code"), "The instructions of a code object, as bytegraph.bytecode.Instruction objects.");
}

}  // namespace bytegraph
