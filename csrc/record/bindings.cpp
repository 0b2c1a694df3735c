// bytegraph._C.record: attach a Python event listener to the calling thread's traces.
#include "bindings.h"
#include "record/python_recorder.h"

namespace bytegraph {

namespace {

// The listener attached to this thread from Python. Owned here; `detach` releases it
// (always from a `finally`, so no PyObject outlives the interpreter in a thread-local).
thread_local record::PythonRecorder* python_listener = nullptr;
thread_local record::Attach* attachment = nullptr;

void detach() {
  delete attachment;
  attachment = nullptr;
  delete python_listener;
  python_listener = nullptr;
}

}  // namespace

void bind_record(nb::module_& m) {
  nb::module_ record = m.def_submodule("record", "The interpreter's event stream");
  record.def(
      "attach",
      [](nb::object listener) {
        if (python_listener != nullptr) throw nb::value_error("a recorder is already attached to this thread");
        python_listener = new record::PythonRecorder(py::Ref<>::newref(listener.ptr()));
        attachment = new record::Attach(python_listener);
      },
      nb::arg("listener"),
      "Sends every trace this thread runs, until detach(), to listener.begin_frame/step/"
      "end_frame/end_trace.");
  record.def("detach", &detach, "Stops sending events; does nothing when none is attached.");
  record.def(
      "attached", []() -> nb::object {
        return python_listener ? nb::borrow(python_listener->target()) : nb::none();
      },
      "The listener attached to this thread, or None.");
}

}  // namespace bytegraph
