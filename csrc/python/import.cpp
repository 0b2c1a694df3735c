#include "python/import.h"

#include <string>
#include <unordered_map>

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

PyObject* builtin_object(const char* name) {
  static PyObject* module = import_module("builtins").release();  // kept for the process
  static std::unordered_map<std::string, PyObject*> cache;
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  PyObject* object = check(PyObject_GetAttrString(module, name)).release();  // kept for the process
  cache.emplace(name, object);
  return object;
}

}  // namespace bytegraph
