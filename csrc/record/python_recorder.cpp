#include "record/python_recorder.h"

#include "python/errors.h"

namespace bytegraph::record {

namespace {

py::Ref<> text(const std::string& value) {
  return check(PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()), "replace"));
}

py::Ref<> text_list(const std::vector<std::string>& values) {
  py::Ref<> list = check(PyList_New(static_cast<Py_ssize_t>(values.size())));
  for (size_t i = 0; i < values.size(); ++i) PyList_SET_ITEM(list.get(), i, text(values[i]).release());
  return list;
}

py::Ref<> call_method(PyObject* target, const char* name, std::initializer_list<PyObject*> args) {
  py::Ref<> method = check(PyObject_GetAttrString(target, name));
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  Py_ssize_t i = 0;
  for (PyObject* arg : args) PyTuple_SET_ITEM(tuple.get(), i++, py::Ref<>::newref(arg).release());
  return check(PyObject_Call(method.get(), tuple.get(), nullptr));
}

py::Ref<> integer(long value) { return check(PyLong_FromLong(value)); }

}  // namespace

int PythonRecorder::begin_frame(const FrameEvent& frame) {
  py::Ref<> parent = frame.parent >= 0 ? integer(frame.parent) : py::Ref<>::newref(Py_None);
  py::Ref<> id = call_method(target_.get(), "begin_frame",
                             {text(frame.name).get(), frame.code ? frame.code : Py_None, parent.get()});
  long value = PyLong_AsLong(id.get());
  if (value == -1 && PyErr_Occurred()) throw_python_error();
  return static_cast<int>(value);
}

void PythonRecorder::step(int frame, const StepEvent& step) {
  py::Ref<> locals = check(PyDict_New());
  for (const auto& [name, repr] : step.locals)
    check_status(PyDict_SetItem(locals.get(), text(name).get(), text(repr).get()));
  call_method(target_.get(), "step",
              {integer(frame).get(), integer(step.offset).get(), text(step.opname).get(), text(step.argrepr).get(),
               integer(step.line).get(), text_list(step.stack).get(), locals.get(),
               integer(static_cast<long>(step.graph_kept)).get(), text_list(step.graph_added).get(),
               text(step.note).get()});
}

void PythonRecorder::end_frame(int frame) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  try {
    call_method(target_.get(), "end_frame", {integer(frame).get()});
  } catch (PythonError& error) {
    error.restore();
    PyErr_WriteUnraisable(target_.get());
  } catch (...) {
    PyErr_Clear();
  }
  PyErr_Restore(type, value, traceback);
}

void PythonRecorder::end_trace(PyObject* graph_module, const std::vector<std::string>& guards) {
  call_method(target_.get(), "end_trace", {graph_module ? graph_module : Py_None, text_list(guards).get()});
}

}  // namespace bytegraph::record
