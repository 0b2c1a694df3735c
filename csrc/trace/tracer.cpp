#include "trace/tracer.h"

#include "bytecode/decode.h"

namespace bytegraph::trace {

using guards::SourcePtr;

// ---- FrameState -------------------------------------------------------------------------

ValuePtr FrameState::pop() {
  if (stack.empty()) throw InternalError("pop from an empty symbolic stack");
  ValuePtr value = std::move(stack.back());
  stack.pop_back();
  return value;
}

ValuePtr& FrameState::top(size_t depth) {
  if (depth >= stack.size()) throw InternalError("symbolic stack underflow");
  return stack[stack.size() - 1 - depth];
}

Args FrameState::pop_n(size_t n) {
  if (n > stack.size()) throw InternalError("symbolic stack underflow");
  Args values(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.resize(stack.size() - n);
  return values;
}

void FrameState::jump_to(const bytecode::Instruction* target) {
  auto found = code->index.find(target);
  if (found == code->index.end()) throw InternalError("jump target outside the code");
  pc = found->second;
}

// ---- Tracer -----------------------------------------------------------------------------

Tracer::~Tracer() {
  for (const auto& function : wrapped_functions_) {
    function->closure.clear();
    function->defaults.clear();
    function->kwdefaults.clear();
  }
}

Tracer::Tracer(py::Ref<> function)
    : bridge(Bridge::get()), graph(py::Ref<>::newref(Bridge::get().node_ref_class.get())),
      function_(std::move(function)) {
  session_ = check(PyObject_CallNoArgs(bridge.session_class.get()));
  run_op_ = check(PyObject_GetAttrString(session_.get(), "run_op"));
  fake_input_ = check(PyObject_GetAttrString(session_.get(), "fake_input"));
}

namespace {

std::string utf8_attr(PyObject* object, const char* name) {
  py::Ref<> value = check(PyObject_GetAttrString(object, name));
  const char* text = PyUnicode_AsUTF8(value.get());
  if (text == nullptr) throw_python_error();
  return text;
}

std::vector<std::string> string_tuple(PyObject* object, const char* name) {
  py::Ref<> tuple = check(PyObject_GetAttrString(object, name));
  std::vector<std::string> out;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple.get()); ++i)
    out.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple.get(), i)));
  return out;
}

}  // namespace

CodeInfo& Tracer::code_info(PyObject* code) { return *shared_code_info(code); }

std::shared_ptr<CodeInfo> Tracer::shared_code_info(PyObject* code) {
  auto found = codes_.find(code);
  if (found != codes_.end()) return found->second;
  auto info = std::make_shared<CodeInfo>();
  info->code = py::Ref<>::newref(code);
  info->instructions = bytecode::decode(reinterpret_cast<PyCodeObject*>(code)).instructions;
  for (size_t i = 0; i < info->instructions.size(); ++i) info->index[info->instructions[i].get()] = i;
  // localsplus (3.11/3.12): the variables, then cell variables that are not arguments,
  // then free variables. Cell arguments keep their argument slot.
  auto varnames = string_tuple(code, "co_varnames");
  auto cellvars = string_tuple(code, "co_cellvars");
  auto freevars = string_tuple(code, "co_freevars");
  info->nvarnames = static_cast<int>(varnames.size());
  info->nfree = static_cast<int>(freevars.size());
  info->localsplus_names = varnames;
  info->is_cell.assign(varnames.size(), false);
  for (const auto& cell : cellvars) {
    bool found_var = false;
    for (size_t i = 0; i < varnames.size(); ++i)
      if (varnames[i] == cell) info->is_cell[i] = found_var = true;
    if (!found_var) {
      info->localsplus_names.push_back(cell);
      info->is_cell.push_back(true);
    }
  }
  for (const auto& free : freevars) {
    info->localsplus_names.push_back(free);
    info->is_cell.push_back(false);
  }
  auto* raw = reinterpret_cast<PyCodeObject*>(code);
  info->argcount = raw->co_argcount;
  info->posonlyargcount = raw->co_posonlyargcount;
  info->kwonlyargcount = raw->co_kwonlyargcount;
  info->flags = raw->co_flags;
  info->filename = utf8_attr(code, "co_filename");
  info->name = utf8_attr(code, "co_name");
  codes_.emplace(code, info);
  return info;
}

graph::UserLocation Tracer::location() {
  graph::UserLocation where;
  if (frames.empty()) return where;
  const FrameState& frame = *frames.back();
  where.filename = frame.code->filename;
  where.function = frame.code->name;
  if (frame.current != nullptr) where.lineno = frame.current->positions.lineno;
  if (where.lineno > 0) {
    std::string key = where.filename + ":" + std::to_string(where.lineno);
    auto found = source_lines_.find(key);
    if (found == source_lines_.end()) {
      py::Ref<> line = check(PyObject_CallFunction(bridge.linecache_getline.get(), "si",
                                                   where.filename.c_str(), where.lineno));
      const char* text = PyUnicode_AsUTF8(line.get());
      found = source_lines_.emplace(key, text ? text : "").first;
    }
    where.code_line = found->second;
  }
  return where;
}

std::string Tracer::describe_fake(int node) {
  PyObject* fake = fake_of(node);
  if (fake == nullptr) return "?";
  py::Ref<> text = check(PyObject_CallOneArg(bridge.describe_fake.get(), fake));
  return PyUnicode_AsUTF8(text.get());
}

void Tracer::truncate(size_t length) {
  graph.truncate(length);
  while (!inputs.empty() && static_cast<size_t>(inputs.back().node) >= length) inputs.pop_back();
  while (!module_tensors.empty() && static_cast<size_t>(module_tensors.back().node) >= length)
    module_tensors.pop_back();
}

}  // namespace bytegraph::trace
