// `import a.b`, `import a.b as c`, `from a import b`, `from . import c`: folded to the module
// objects when everything they name is already in sys.modules, as the import statement then
// runs no module code (it only looks sys.modules and module attributes up). An import that
// would load a module for the first time is a break: loading runs that module's code.
#include "trace/interpreter.h"
#include "python/import.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

std::string name_of(const Instruction& inst) {
  if (!inst.argval || !PyUnicode_Check(inst.argval.get())) throw InternalError("import without a name argument");
  return PyUnicode_AsUTF8(inst.argval.get());
}

[[noreturn]] void not_loaded(const std::string& name) {
  unsupported("unsupported_import", "importing " + name + " would load it (running its module code) for the first time");
}

// sys.modules[name] (borrowed), or null when it is not loaded.
PyObject* loaded(const std::string& name) {
  PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), name.c_str());
  return module == Py_None ? nullptr : module;
}

// A module found in sys.modules: its attributes are read (and guarded) through the module
// itself, which the import statement always gives back while it stays in sys.modules.
ValuePtr module_value(Tracer& tracer, PyObject* module, const std::string& name) {
  guards::SourcePtr source = guards::held_source(py::Ref<>::newref(module), "sys.modules['" + name + "']");
  if (PyModule_Check(module)) return std::make_shared<PythonModuleValue>(py::Ref<>::newref(module), source);
  return tracer.wrap(module, source);
}

// The absolute name `from <dots><name> import ...` means in the frame's package.
std::string resolve(const FrameState& frame, const std::string& name, long level) {
  if (level == 0) return name;
  PyObject* globals = frame.globals.get();
  PyObject* package = PyDict_GetItemString(globals, "__package__");  // borrowed
  py::Ref<> package_name;
  if (package && PyUnicode_Check(package)) {
    package_name = py::Ref<>::newref(package);
  } else if (PyObject* spec = PyDict_GetItemString(globals, "__spec__"); spec && spec != Py_None) {
    package_name = check(PyObject_GetAttrString(spec, "parent"));
  } else {
    PyObject* module_name = PyDict_GetItemString(globals, "__name__");
    if (!module_name || !PyUnicode_Check(module_name)) unsupported("unsupported_import", "a relative import outside a package");
    package_name = py::Ref<>::newref(module_name);
    if (!PyDict_GetItemString(globals, "__path__")) {
      py::Ref<> parts = check(PyUnicode_RPartition(module_name, check(PyUnicode_FromString(".")).get()));
      package_name = py::Ref<>::newref(PyTuple_GET_ITEM(parts.get(), 0));
    }
  }
  py::Ref<> util = check(PyImport_ImportModule("importlib.util"));
  std::string relative = std::string(static_cast<size_t>(level), '.') + name;
  py::Ref<> absolute = check(PyObject_CallMethod(util.get(), "resolve_name", "sO", relative.c_str(), package_name.get()));
  return PyUnicode_AsUTF8(absolute.get());
}

// The import statement calls builtins.__import__: a replaced one may do anything.
void require_default_import(const FrameState& frame) {
  static PyObject* original = builtin_object("__import__");
  PyObject* builtins = frame.builtins.get();
  PyObject* current = PyDict_Check(builtins) ? PyDict_GetItemString(builtins, "__import__") : nullptr;
  py::Ref<> owned;
  if (!PyDict_Check(builtins)) {
    owned = py::Ref<>::steal(PyObject_GetAttrString(builtins, "__import__"));
    if (!owned) PyErr_Clear();
    current = owned.get();
  }
  if (current != original) unsupported("unsupported_import", "builtins.__import__ is replaced");
}

void import_name(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr fromlist = frame.pop();
  ValuePtr level = frame.pop();
  if (!fromlist->is_constant() || !level->is_constant() || !PyLong_Check(level->constant()))
    throw InternalError("IMPORT_NAME without constant arguments");
  require_default_import(frame);
  std::string name = name_of(inst);
  long depth = PyLong_AsLong(level->constant());
  std::string absolute = resolve(frame, name, depth);
  // Every package on the way is imported too.
  for (size_t dot = absolute.find('.'); dot != std::string::npos; dot = absolute.find('.', dot + 1))
    if (!loaded(absolute.substr(0, dot))) not_loaded(absolute.substr(0, dot));
  PyObject* module = loaded(absolute);
  if (!module) not_loaded(absolute);
  PyObject* names = fromlist->constant();
  bool has_fromlist = names != Py_None && PyObject_IsTrue(names) == 1;
  if (!has_fromlist) {
    // `import a.b.c` binds the top package `a`.
    if (depth != 0) unsupported("unsupported_import", "a relative import without names");
    std::string top = absolute.substr(0, absolute.find('.'));
    frame.push(module_value(tracer, loaded(top), top));
    return;
  }
  // `from package import name`: a name the package does not hold is imported as its submodule.
  if (PyModule_Check(module) && PyDict_GetItemString(PyModule_GetDict(module), "__path__")) {
    py::Ref<> items = check(PySequence_Tuple(names));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.get()); ++i) {
      PyObject* item = PyTuple_GET_ITEM(items.get(), i);
      if (!PyUnicode_Check(item) || PyUnicode_CompareWithASCIIString(item, "*") == 0)
        unsupported("unsupported_import", "import * or a non-string name");
      if (PyDict_GetItem(PyModule_GetDict(module), item)) continue;
      std::string submodule = absolute + "." + PyUnicode_AsUTF8(item);
      if (!loaded(submodule)) not_loaded(submodule);
    }
  }
  frame.push(module_value(tracer, module, absolute));
}

void import_from(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr module = frame.top();
  std::string name = name_of(inst);
  PyObject* real = module->real_object();
  if (real == nullptr || !PyModule_Check(real)) {
    frame.push(module->get_attr(tracer, name));
    return;
  }
  // Only what the module already holds, or a loaded submodule: a module's __getattr__ (lazy
  // modules) may import on demand.
  if (PyDict_GetItem(PyModule_GetDict(real), inst.argval.get())) {
    frame.push(module->get_attr(tracer, name));
    return;
  }
  py::Ref<> module_name = check(PyModule_GetNameObject(real));
  std::string submodule = std::string(PyUnicode_AsUTF8(module_name.get())) + "." + name;
  PyObject* found = loaded(submodule);
  if (!found) not_loaded(submodule);
  frame.push(module_value(tracer, found, submodule));
}

}  // namespace

void register_import_handlers(HandlerTable& table) {
  table.add(op::IMPORT_NAME, import_name);
  table.add(op::IMPORT_FROM, import_from);
}

}  // namespace bytegraph::trace
