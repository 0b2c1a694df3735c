#include "codegen/source_loader.h"

#include "bytecode/opcodes.h"
#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::codegen {

namespace {

bool tuple_contains_name(PyObject* names /* borrowed tuple */, const std::string& name) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, i), name.c_str()) == 0) return true;
  }
  return false;
}

// stored_item(container, key) -> the item as the container's dict, list or tuple base stores
// it (a subclass's __getitem__ not run: the trace already ran whatever it overrides).
PyObject* stored_item(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "stored_item(container, key)");
    return nullptr;
  }
  PyObject* container = args[0];
  if (PyDict_Check(container)) {
    PyObject* value = PyDict_GetItemWithError(container, args[1]);  // borrowed
    if (value == nullptr && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, args[1]);
    return value ? Py_NewRef(value) : nullptr;
  }
  if ((PyList_Check(container) || PyTuple_Check(container)) && PyLong_Check(args[1])) {
    Py_ssize_t index = PyLong_AsSsize_t(args[1]);
    if (index == -1 && PyErr_Occurred()) return nullptr;
    PyObject* value = PyList_Check(container) ? PyList_GetItem(container, index) : PyTuple_GetItem(container, index);
    return value ? Py_NewRef(value) : nullptr;
  }
  return PyObject_GetItem(container, args[1]);
}

// viewed_dict(view) -> the dict a dict view shows.
PyObject* viewed_dict_of(PyObject*, PyObject* view) {
  PyObject* dict = guards::viewed_dict(view);
  if (dict == nullptr) {
    PyErr_SetString(PyExc_TypeError, "viewed_dict: not a dict view");
    return nullptr;
  }
  return Py_NewRef(dict);
}

PyObject* viewed_dict_function() {
  static PyMethodDef definition = {"viewed_dict", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(viewed_dict_of)),
                                   METH_O, "The dict a dict view shows."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

PyObject* stored_item_function() {
  static PyMethodDef definition = {"stored_item", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(stored_item)),
                                   METH_FASTCALL, "An item as a dict, list or tuple base class stores it."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

}  // namespace

void emit_load_source(CodeBuilder& builder, const guards::Source& source, PyCodeObject* code) {
  using Kind = guards::Source::Kind;
  switch (source.kind) {
    case Kind::Local: {
      // An argument that is also a cell variable holds its cell once MAKE_CELL has run.
      py::Ref<> cellvars = check(PyCode_GetCellvars(code));
      if (tuple_contains_name(cellvars.get(), source.name)) {
        builder.load_deref(source.name);
      } else {
        builder.load_fast(source.name);
      }
      return;
    }
    case Kind::Closure:
      builder.load_deref(source.name);
      return;
    case Kind::Global:
    case Kind::Builtin:
      builder.load_global(source.name, false);
      return;
    case Kind::Attr:
      emit_load_source(builder, *source.base, code);
      builder.load_attr(source.name);
      return;
    case Kind::Item:
      emit_load_source(builder, *source.base, code);
      builder.subscript_const(source.key.get());
      return;
    case Kind::ViewedDict:
      builder.before_callable();
      builder.load_const(viewed_dict_function());
      builder.after_callable();
      emit_load_source(builder, *source.base, code);
      builder.call(1);
      return;
    case Kind::StoredItem:
      builder.before_callable();
      builder.load_const(stored_item_function());
      builder.after_callable();
      emit_load_source(builder, *source.base, code);
      builder.load_const(source.key.get());
      builder.call(2);
      return;
    case Kind::InstanceDict:
      emit_load_source(builder, *source.base, code);
      builder.load_attr("__dict__");
      return;
    case Kind::Globals: {
      // builtins.globals() called from the generated code is its frame's globals.
      builder.before_callable();
      builder.load_const(builtin_object("globals"));
      builder.after_callable();
      builder.call(0);
      return;
    }
    case Kind::Held:
      builder.load_const(source.key.get());
      return;
    case Kind::Stride:
    case Kind::StorageOffset: {
      // base.stride()[dim] or base.storage_offset(): a method called with no arguments.
      builder.before_callable();
      emit_load_source(builder, *source.base, code);
      builder.load_attr(source.kind == Kind::Stride ? "stride" : "storage_offset");
      builder.after_callable();
      builder.call(0);
      if (source.kind == Kind::Stride) builder.subscript_const(check(PyLong_FromLong(source.index)).get());
      return;
    }
    case Kind::Type:
      builder.before_callable();
      builder.load_const(reinterpret_cast<PyObject*>(&PyType_Type));
      builder.after_callable();
      emit_load_source(builder, *source.base, code);
      builder.call(1);
      return;
  }
  throw InternalError("emit_load_source: unknown source kind");
}

}  // namespace bytegraph::codegen
