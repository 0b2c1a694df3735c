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

}  // namespace

std::string safe_repr(PyObject* obj) {
  if (obj == nullptr) return "<NULL>";
  py::Ref<> text = py::Ref<>::steal(PyObject_Repr(obj));
  return utf8_or_fallback(text.get(), obj);
}

std::string short_repr(PyObject* obj) {
  // A tensor's repr prints (and so reads) its data: slow for a parameter, and a crash for
  // one whose storage was freed (FSDP's unsharded parameters between uses).
  if (obj != nullptr && TensorMeta::get().is_tensor(obj)) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(obj));
    return "<" + type_name(Py_TYPE(obj)) + " at " + address + ">";
  }
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
