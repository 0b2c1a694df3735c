#include "frame/python_compiler.h"

#include "python/errors.h"

namespace bytegraph::frame {
namespace {

std::string repr_of(PyObject* object) {
  py::Ref<> text = py::Ref<>::steal(PyObject_Repr(object));
  const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  return utf8;
}

[[noreturn]] void bad_result(PyObject* result) {
  throw PythonError::make(
      PyExc_TypeError,
      "bytegraph: a frame callback must return None, a code object or (code, guard_fn[, "
      "keepalive]); got " + repr_of(result));
}

GuardObjectConverter guard_object_converter = nullptr;

}  // namespace

void register_guard_object_converter(GuardObjectConverter converter) { guard_object_converter = converter; }

std::unique_ptr<guards::GuardTree> guard_tree_from_python(PyObject* guard, PyCodeObject* code) {
  if (guard == Py_None) return nullptr;
  if (guard_object_converter != nullptr) {
    if (std::unique_ptr<guards::GuardTree> tree = guard_object_converter(guard)) return tree;
  }
  if (!PyCallable_Check(guard)) {
    throw PythonError::make(PyExc_TypeError, "bytegraph: a guard must be a GuardTree, a callable or None; got " +
                                                 repr_of(guard));
  }
  return std::make_unique<PythonGuardTree>(py::Ref<>::newref(guard), code);
}

std::optional<CompiledFrame> compiled_frame_from_python(PyObject* result, PyCodeObject* code) {
  if (result == Py_None) return std::nullopt;
  CompiledFrame compiled;
  if (PyCode_Check(result)) {
    compiled.code = py::Ref<>::newref(result);
    return compiled;
  }
  if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) < 2 || PyTuple_GET_SIZE(result) > 3) {
    bad_result(result);
  }
  PyObject* new_code = PyTuple_GET_ITEM(result, 0);  // borrowed
  PyObject* guard_fn = PyTuple_GET_ITEM(result, 1);  // borrowed
  if (!PyCode_Check(new_code)) bad_result(result);
  compiled.code = py::Ref<>::newref(new_code);
  compiled.guards = guard_tree_from_python(guard_fn, code);
  if (PyTuple_GET_SIZE(result) == 3) compiled.keepalive = py::Ref<>::newref(PyTuple_GET_ITEM(result, 2));
  return compiled;
}

PythonCallbackCompiler::PythonCallbackCompiler(py::Ref<> callback) : callback_(std::move(callback)) {
  backend_key_ = py::Ref<>::steal(PyObject_GetAttrString(callback_.get(), "backend_key"));
  if (!backend_key_) PyErr_Clear();
}

std::optional<CompiledFrame> PythonCallbackCompiler::on_cache_miss(const FrameView& frame) {
  py::Ref<> info = make_frame_info(frame.code(), frame.function(), frame.globals(),
                                   frame.builtins(), frame.locals_dict());
  py::Ref<> result = check(PyObject_CallOneArg(callback_.get(), info.get()));
  return compiled_frame_from_python(result.get(), frame.code());
}

bool PythonGuardTree::check(const guards::FrameValues& frame) const {
  // The function object is not part of FrameValues; the hook's current frame has it.
  const FrameView* view = current_frame_view();
  PyObject* function =
      view != nullptr && view->code() == code_ && view->values().locals == frame.locals
          ? view->function()
          : nullptr;
  py::Ref<> info = make_frame_info(code_, function, frame.globals, frame.builtins,
                                   locals_dict_from_values(code_, frame));
  py::Ref<> result = bytegraph::check(PyObject_CallOneArg(guard_fn_.get(), info.get()));
  int truth = PyObject_IsTrue(result.get());
  if (truth < 0) throw_python_error();
  return truth != 0;
}

std::string PythonGuardTree::explain_failure(const guards::FrameValues& frame) const {
  if (check(frame)) return {};
  return "Python guard " + repr_of(guard_fn_.get()) + " returned False";
}

std::vector<std::string> PythonGuardTree::describe() const {
  return {"python guard " + repr_of(guard_fn_.get())};
}

}  // namespace bytegraph::frame
