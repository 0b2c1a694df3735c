#include <cstdio>

#include "guards/tensor_meta.h"
#include "guards/python_text.h"

#include "python/ref.h"

namespace bytegraph::guards {

namespace {

std::string utf8_or_fallback(PyObject* text, PyObject* obj) {
  if (text != nullptr) {
    if (const char* utf8 = PyUnicode_AsUTF8(text)) return utf8;
  }
  PyErr_Clear();
  return std::string("<unprintable ") + Py_TYPE(obj)->tp_name + ">";
}

bool plain_scalar(PyObject* obj) {
  return obj == Py_None || PyBool_Check(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyUnicode_CheckExact(obj);
}

// A list of at most a few plain scalars, or a dict of such keys and values.
bool plain_and_small(PyObject* obj) {
  constexpr Py_ssize_t kFew = 8;
  if (PyList_Check(obj)) {
    if (PyList_GET_SIZE(obj) > kFew) return false;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(obj); ++i)
      if (!plain_scalar(PyList_GET_ITEM(obj, i))) return false;
    return true;
  }
  if (PyDict_Size(obj) > kFew) return false;
  PyObject *key, *value;
  Py_ssize_t position = 0;
  while (PyDict_Next(obj, &position, &key, &value))
    if (!plain_scalar(key) || !plain_scalar(value)) return false;
  return true;
}

// Whether `obj` is a torch.nn.Module: asked only once torch.nn is loaded (before, nothing is
// one), and its class looked up once. The class is held for the process, as torch.nn holds
// it (a static Ref would release it after the interpreter is gone).
bool is_torch_module(PyObject* obj) {
  static PyObject* module_class = nullptr;
  if (module_class == nullptr) {
    py::Ref<> name = py::Ref<>::steal(PyUnicode_FromString("torch.nn"));
    py::Ref<> nn = name ? py::Ref<>::steal(PyImport_GetModule(name.get())) : py::Ref<>();
    py::Ref<> found = nn ? py::Ref<>::steal(PyObject_GetAttrString(nn.get(), "Module")) : py::Ref<>();
    if (!found || !PyType_Check(found.get())) {
      PyErr_Clear();
      return false;
    }
    module_class = found.release();
  }
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(module_class));
}

std::string named_by_address(PyObject* obj, const std::string& what) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<void*>(obj));
  return "<" + what + " at " + address + ">";
}

}  // namespace

std::string safe_repr(PyObject* obj) {
  if (obj == nullptr) return "<NULL>";
  py::Ref<> text = py::Ref<>::steal(PyObject_Repr(obj));
  return utf8_or_fallback(text.get(), obj);
}

std::string short_repr(PyObject* obj) {
  // A tensor's repr prints (and so reads) its data: slow for a parameter, and a crash for
  // one whose storage was freed (FSDP's unsharded parameters between uses).
  if (obj != nullptr && TensorMeta::get().is_tensor(obj)) return named_by_address(obj, type_name(Py_TYPE(obj)));
  // A module's repr prints its submodules, recursively (a whole model for L['self']), to be
  // cut to its first line; the trace describes a guard on each module it reads.
  if (obj != nullptr && is_torch_module(obj)) return named_by_address(obj, type_name(Py_TYPE(obj)));
  // A dict's or list's repr is each item's: a module's globals would print every tensor (and
  // run a subclass's __torch_function__ for each) to name one guard. Small ones of plain
  // numbers and strings are shown.
  if (obj != nullptr && (PyDict_Check(obj) || PyList_Check(obj)) && !plain_and_small(obj)) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(obj));
    return "<" + type_name(Py_TYPE(obj)) + " of " + std::to_string(PyObject_Length(obj)) + " items at " + address + ">";
  }
  std::string text = safe_repr(obj);
  // One line per guard in listings: a module's repr spans many lines; keep its first.
  if (size_t newline = text.find('\n'); newline != std::string::npos) text = text.substr(0, newline) + " ...";
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax - 3) + "...";
  return text;
}

std::string safe_str(PyObject* obj) {
  if (obj == nullptr) return "<NULL>";
  py::Ref<> text = py::Ref<>::steal(PyObject_Str(obj));
  return utf8_or_fallback(text.get(), obj);
}

std::string type_name(PyTypeObject* type) {
  PyObject* as_object = reinterpret_cast<PyObject*>(type);
  py::Ref<> module = py::Ref<>::steal(PyObject_GetAttrString(as_object, "__module__"));
  py::Ref<> qualname = py::Ref<>::steal(PyObject_GetAttrString(as_object, "__qualname__"));
  PyErr_Clear();
  const char* qual = qualname && PyUnicode_Check(qualname.get()) ? PyUnicode_AsUTF8(qualname.get())
                                                                 : nullptr;
  const char* mod = module && PyUnicode_Check(module.get()) ? PyUnicode_AsUTF8(module.get()) : nullptr;
  PyErr_Clear();
  if (qual == nullptr) return type->tp_name;
  if (mod == nullptr || std::string(mod) == "builtins") return qual;
  return std::string(mod) + "." + qual;
}

}  // namespace bytegraph::guards
