// bytegraph._C.bytecode: the codec seen from Python. The Python objects are the classes of
// bytegraph/bytecode.py (Instruction, ExceptionTableEntry); this file converts between them
// and the C++ InstructionList, and nothing else.
#include <nanobind/stl/string.h>

#include <memory>
#include <unordered_map>

#include "bindings.h"
#include "bytecode/arguments.h"
#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytecode/dis.h"
#include "bytecode/opcodes.h"
#include "bytecode/stack_depth.h"
#include "python/errors.h"

namespace bytegraph {

namespace {

using bytecode::ExceptionTableEntry;
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

int int_or(nb::handle value, int fallback) { return value.is_none() ? fallback : nb::cast<int>(value); }

// ---- C++ -> Python ---------------------------------------------------------------------

nb::object positions_tuple(const bytecode::Positions& p) {
  return nb::make_tuple(optional_int(p.lineno), optional_int(p.end_lineno), optional_int(p.col_offset),
                        optional_int(p.end_col_offset));
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
  std::unordered_map<const ExceptionTableEntry*, nb::object> entries;
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

// ---- Python -> C++ ---------------------------------------------------------------------

[[noreturn]] void throw_value_error(const std::string& message) {
  throw PythonError::make(PyExc_ValueError, message);
}

bytecode::Positions positions_from(nb::handle positions) {
  bytecode::Positions p;
  if (positions.is_none()) return p;
  p.lineno = int_or(positions[0], -1);
  p.end_lineno = int_or(positions[1], -1);
  p.col_offset = int_or(positions[2], -1);
  p.end_col_offset = int_or(positions[3], -1);
  return p;
}

// Converts Python Instruction objects; `target`s and entries must refer to members of the list.
class FromPython {
 public:
  explicit FromPython(nb::handle sequence) {
    nb::list items = nb::list(sequence);
    for (nb::handle item : items) {
      instructions_.push_back(convert_fields(item));
      if (!by_identity_.emplace(item.ptr(), instructions_.back().get()).second) {
        throw_value_error("the same Instruction object appears twice in the list (at " +
                          std::to_string(instructions_.size() - 1) + ")");
      }
    }
    std::size_t i = 0;
    for (nb::handle item : items) link(item, *instructions_[i++]);
  }

  InstructionList take() { return std::move(instructions_); }

 private:
  static std::unique_ptr<Instruction> convert_fields(nb::handle item) {
    auto instruction = std::make_unique<Instruction>();
    instruction->opcode = nb::cast<int>(item.attr("opcode"));
    if (!bytecode::is_instruction_opcode(instruction->opcode)) {
      throw_value_error("unknown opcode " + std::to_string(instruction->opcode));
    }
    instruction->arg = int_or(item.attr("arg"), -1);
    nb::object argval = item.attr("argval");
    bytecode::ArgumentKind kind = bytecode::argument_kind(instruction->opcode);
    bool resolved_from_argval = kind == bytecode::ArgumentKind::kConst || kind == bytecode::ArgumentKind::kName ||
                                kind == bytecode::ArgumentKind::kLocal || kind == bytecode::ArgumentKind::kCompare;
    // None is a real constant (LOAD_CONST None); for names it means "use arg".
    if (resolved_from_argval && (kind == bytecode::ArgumentKind::kConst || !argval.is_none())) {
      instruction->argval = py::Ref<>::newref(argval.ptr());
    }
    instruction->offset = int_or(item.attr("offset"), -1);
    instruction->positions = positions_from(item.attr("positions"));
    nb::object starts_line = item.attr("starts_line");
    if (!starts_line.is_none()) instruction->starts_line = nb::cast<int>(starts_line);
    instruction->is_jump_target = nb::cast<bool>(item.attr("is_jump_target"));
    return instruction;
  }

  Instruction* member(nb::handle obj, const std::string& what) {
    auto it = by_identity_.find(obj.ptr());
    if (it == by_identity_.end()) throw_value_error(what + " is not an instruction of the list");
    return it->second;
  }

  void link(nb::handle item, Instruction& instruction) {
    std::string where = std::string(bytecode::opcode_info(instruction.opcode).name) +
                        (instruction.offset >= 0 ? " at offset " + std::to_string(instruction.offset) : "");
    nb::object target = item.attr("target");
    if (!target.is_none()) {
      instruction.target = member(target, "the jump target of " + where);
    } else if (bytecode::opcode_info(instruction.opcode).is_jump) {
      throw_value_error(where + " is a jump without a target");
    }
    nb::object entry = item.attr("exn_tab_entry");
    if (entry.is_none()) return;
    auto [it, inserted] = entries_.try_emplace(entry.ptr());
    if (inserted) {
      auto converted = std::make_shared<ExceptionTableEntry>();
      converted->start = member(entry.attr("start"), "the exception-table start of " + where);
      converted->end = member(entry.attr("end"), "the exception-table end of " + where);
      converted->target = member(entry.attr("target"), "the exception handler of " + where);
      converted->depth = nb::cast<int>(entry.attr("depth"));
      converted->lasti = nb::cast<bool>(entry.attr("lasti"));
      it->second = std::move(converted);
    }
    instruction.exception_entry = it->second;
  }

  InstructionList instructions_;
  std::unordered_map<PyObject*, Instruction*> by_identity_;
  std::unordered_map<PyObject*, std::shared_ptr<ExceptionTableEntry>> entries_;
};

PyCodeObject* as_code(nb::handle code, const char* what) {
  if (!PyCode_Check(code.ptr())) {
    throw PythonError::make(PyExc_TypeError, std::string(what) + " must be a code object, not " +
                                                 Py_TYPE(code.ptr())->tp_name);
  }
  return reinterpret_cast<PyCodeObject*>(code.ptr());
}

bytecode::CodeOverrides overrides_from(nb::dict fields) {
  bytecode::CodeOverrides overrides;
  for (auto [key, value] : fields) {
    std::string name = nb::cast<std::string>(key);
    auto object = [&] { return py::Ref<>::newref(value.ptr()); };
    if (name == "co_argcount") overrides.argcount = nb::cast<int>(value);
    else if (name == "co_posonlyargcount") overrides.posonlyargcount = nb::cast<int>(value);
    else if (name == "co_kwonlyargcount") overrides.kwonlyargcount = nb::cast<int>(value);
    else if (name == "co_flags") overrides.flags = nb::cast<int>(value);
    else if (name == "co_firstlineno") overrides.firstlineno = nb::cast<int>(value);
    else if (name == "co_stacksize") overrides.stacksize = nb::cast<int>(value);
    else if (name == "co_consts") overrides.consts = object();
    else if (name == "co_names") overrides.names = object();
    else if (name == "co_varnames") overrides.varnames = object();
    else if (name == "co_cellvars") overrides.cellvars = object();
    else if (name == "co_freevars") overrides.freevars = object();
    else if (name == "co_filename") overrides.filename = object();
    else if (name == "co_name") overrides.name = object();
    else if (name == "co_qualname") overrides.qualname = object();
    else throw PythonError::make(PyExc_TypeError, "assemble() cannot override " + name);
  }
  return overrides;
}

nb::object assemble(nb::handle instructions, nb::handle like, nb::dict fields) {
  InstructionList list = FromPython(instructions).take();
  py::Ref<> code = bytecode::assemble(list, as_code(like, "like"), overrides_from(fields));
  return nb::steal(code.release());
}

// Decode and re-assemble without Python objects in between (the round-trip test's fast path).
nb::object roundtrip(nb::handle code) {
  PyCodeObject* original = as_code(code, "code");
  bytecode::DecodedCode decoded = bytecode::decode(original);
  py::Ref<> result = bytecode::assemble(decoded.instructions, original);
  return nb::steal(result.release());
}

}  // namespace

void bind_bytecode(nb::module_& m) {
  nb::module_ sub = m.def_submodule("bytecode", "bytecode codec (CPython 3.11)");
  sub.def(
      "decode", [](nb::handle code) { return to_python(bytecode::decode(as_code(code, "code")).instructions); },
      nb::arg("code"), "The instructions of a code object, as bytegraph.bytecode.Instruction objects.");
  sub.def("assemble", &assemble, nb::arg("instructions"), nb::arg("like"), nb::arg("fields"),
          "A new code object from Instruction objects; `fields` overrides co_* fields of `like`.");
  sub.def(
      "stack_depth",
      [](nb::handle instructions) {
        InstructionList list = FromPython(instructions).take();
        return bytecode::compute_stack_depth(list);
      },
      nb::arg("instructions"), "The maximum stack depth (arguments must be set).");
  sub.def(
      "dis",
      [](nb::handle instructions, nb::handle current) {
        nb::list items = nb::list(instructions);
        InstructionList list = FromPython(items).take();
        const Instruction* marked = nullptr;
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (items[i].ptr() == current.ptr()) marked = list[i].get();
        }
        return bytecode::format_instructions(list, marked);
      },
      nb::arg("instructions"), nb::arg("current").none() = nb::none(), "A dis-style listing.");
  sub.def(
      "stack_effect",
      [](int opcode, int arg, bool jump) -> nb::object {
        std::optional<int> effect = bytecode::stack_effect(opcode, arg, jump);
        return effect ? nb::object(nb::int_(*effect)) : nb::none();
      },
      nb::arg("opcode"), nb::arg("arg"), nb::arg("jump"),
      "The generated tables' stack effect (None where dis.stack_effect rejects the opcode).");
  sub.def("roundtrip", &roundtrip, nb::arg("code"), "decode + assemble in C++ (for tests and benchmarks).");
}

}  // namespace bytegraph
