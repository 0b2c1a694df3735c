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
