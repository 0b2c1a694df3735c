#include "python/import.h"

#include "python/errors.h"

namespace bytegraph {

py::Ref<> import_module(const char* name) {
  py::Ref<> text = check(PyUnicode_FromString(name));
  if (PyObject* loaded = PyImport_GetModule(text.get())) return py::Ref<>::steal(loaded);
  if (PyErr_Occurred()) throw_python_error();
  // The import machinery itself (not builtins.__import__); it returns the top-level
  // package for a dotted name, so the module is read back from sys.modules.
  check(PyImport_ImportModuleLevelObject(text.get(), nullptr, nullptr, nullptr, 0));
  return check(PyImport_GetModule(text.get()));
}

}  // namespace bytegraph
