#include "frame/frame_view.h"

#include <utility>

#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::frame {
namespace {

thread_local const FrameView* t_current_view = nullptr;  // trivially destructible

}  // namespace

const FrameView* current_frame_view() { return t_current_view; }
CurrentFrameScope::CurrentFrameScope(const FrameView& view)
    : previous_(std::exchange(t_current_view, &view)) {}
CurrentFrameScope::~CurrentFrameScope() { t_current_view = previous_; }

int argument_slot_count(PyCodeObject* code) {
  int count = code->co_argcount + code->co_kwonlyargcount;
  if (code->co_flags & CO_VARARGS) count++;
  if (code->co_flags & CO_VARKEYWORDS) count++;
  return count;
}

FrameView::FrameView(PyCodeObject* code, PyObject* function, PyObject* globals,
                     PyObject* builtins, PyObject* const* localsplus)
    : code_(code),
      function_(function),
      globals_(globals),
      builtins_(builtins),
      localsplus_(localsplus),
      nargs_(argument_slot_count(code)) {}

PyObject* FrameView::closure() const {
  if (function_ == nullptr || !PyFunction_Check(function_)) return nullptr;
  return PyFunction_GET_CLOSURE(function_);
}

guards::FrameValues FrameView::values() const {
  guards::FrameValues values;
  values.locals = localsplus_;
  values.nlocals = code_->co_nlocalsplus;
  values.globals = globals_;
  values.builtins = builtins_;
  values.closure = closure();
  return values;
}

py::Ref<> FrameView::locals_dict() const { return locals_dict_from_values(code_, values()); }

py::Ref<> locals_dict_from_values(PyCodeObject* code, const guards::FrameValues& values) {
  py::Ref<> locals = check(PyDict_New());
  PyObject* names = code->co_localsplusnames;  // borrowed
  int nargs = argument_slot_count(code);
  for (int i = 0; i < nargs && i < values.nlocals; i++) {
    if (values.locals[i] == nullptr) continue;
    check_status(PyDict_SetItem(locals.get(), PyTuple_GET_ITEM(names, i), values.locals[i]));
  }
  // Free variables are the last co_nfreevars slots; at hook time they still live only in
  // the closure's cells.
  int nfree = code->co_nfreevars;
  if (values.closure != nullptr && PyTuple_Check(values.closure) &&
      PyTuple_GET_SIZE(values.closure) == nfree) {
    int first_free = code->co_nlocalsplus - nfree;
    for (int i = 0; i < nfree; i++) {
      PyObject* contents = PyCell_GET(PyTuple_GET_ITEM(values.closure, i));  // borrowed
      if (contents == nullptr) continue;  // an unbound free variable has no value to show
      check_status(PyDict_SetItem(locals.get(), PyTuple_GET_ITEM(names, first_free + i), contents));
    }
  }
  return locals;
}

py::Ref<> make_frame_info(PyCodeObject* code, PyObject* function, PyObject* globals,
                          PyObject* builtins, py::Ref<> locals) {
  py::Ref<> types = import_module("types");
  py::Ref<> namespace_type = check(PyObject_GetAttrString(types.get(), "SimpleNamespace"));
  py::Ref<> fields = check(PyDict_New());
  auto set = [&](const char* name, PyObject* value) {
    check_status(PyDict_SetItemString(fields.get(), name, value ? value : Py_None));
  };
  set("f_code", reinterpret_cast<PyObject*>(code));
  set("f_globals", globals);
  set("f_builtins", builtins);
  set("f_locals", locals.get());
  set("function", function);
  py::Ref<> no_args = check(PyTuple_New(0));
  return check(PyObject_Call(namespace_type.get(), no_args.get(), fields.get()));
}

}  // namespace bytegraph::frame
