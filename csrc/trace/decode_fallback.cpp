#include "trace/decode_fallback.h"

#include <string>
#include <unordered_map>

#include "python/errors.h"

namespace bytegraph::trace {

namespace {

int int_attr(PyObject* object, const char* name, int missing = -1) {
  py::Ref<> value = check(PyObject_GetAttrString(object, name));
  if (value.get() == Py_None) return missing;
  long result = PyLong_AsLong(value.get());
  if (result == -1 && PyErr_Occurred()) throw_python_error();
  return static_cast<int>(result);
}

PyObject* dis_module() {
  static PyObject* module = check(PyImport_ImportModule("dis")).release();  // kept for the process
  return module;
}

}  // namespace

bytecode::InstructionList decode_code(PyObject* code) {
  py::Ref<> iterator = check(PyObject_CallMethod(dis_module(), "get_instructions", "O", code));
  py::Ref<> items = check(PySequence_List(iterator.get()));
  py::Ref<> hasjrel = check(PyObject_GetAttrString(dis_module(), "hasjrel"));
  py::Ref<> hasjabs = check(PyObject_GetAttrString(dis_module(), "hasjabs"));
  bytecode::InstructionList list;
  std::unordered_map<int, bytecode::Instruction*> by_offset;
  std::vector<std::pair<bytecode::Instruction*, int>> jumps;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.get()); ++i) {
    PyObject* item = PyList_GET_ITEM(items.get(), i);  // borrowed
    auto inst = std::make_unique<bytecode::Instruction>();
    inst->opcode = int_attr(item, "opcode");
    inst->arg = int_attr(item, "arg");
    inst->offset = int_attr(item, "offset");
    inst->argval = check(PyObject_GetAttrString(item, "argval"));
    int line = int_attr(item, "starts_line");
    if (line >= 0) inst->starts_line = line;
    inst->is_jump_target = PyObject_IsTrue(check(PyObject_GetAttrString(item, "is_jump_target")).get());
    py::Ref<> positions = check(PyObject_GetAttrString(item, "positions"));
    if (positions.get() != Py_None) {
      inst->positions.lineno = int_attr(positions.get(), "lineno");
      inst->positions.end_lineno = int_attr(positions.get(), "end_lineno");
      inst->positions.col_offset = int_attr(positions.get(), "col_offset");
      inst->positions.end_col_offset = int_attr(positions.get(), "end_col_offset");
    }
    py::Ref<> opcode = check(PyLong_FromLong(inst->opcode));
    int is_jump = PySequence_Contains(hasjrel.get(), opcode.get()) || PySequence_Contains(hasjabs.get(), opcode.get());
    if (is_jump) jumps.emplace_back(inst.get(), static_cast<int>(PyLong_AsLong(inst->argval.get())));
    by_offset[inst->offset] = inst.get();
    list.push_back(std::move(inst));
  }
  for (auto& [inst, target] : jumps) {
    auto found = by_offset.find(target);
    if (found == by_offset.end()) throw InternalError("jump to an offset with no instruction");
    inst->target = found->second;
  }
  return list;
}

std::string opcode_name(int opcode) {
  py::Ref<> names = check(PyObject_GetAttrString(dis_module(), "opname"));
  if (opcode < 0 || opcode >= PyList_GET_SIZE(names.get())) return "<" + std::to_string(opcode) + ">";
  return PyUnicode_AsUTF8(PyList_GET_ITEM(names.get(), opcode));
}

int opcode_number(const char* name) {
  py::Ref<> opmap = check(PyObject_GetAttrString(dis_module(), "opmap"));
  PyObject* number = PyDict_GetItemString(opmap.get(), name);  // borrowed
  return number ? static_cast<int>(PyLong_AsLong(number)) : -1;
}

}  // namespace bytegraph::trace
