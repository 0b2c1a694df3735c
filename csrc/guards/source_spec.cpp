// Sources as plain Python tuples, so that the guards of a compiled frame can be written to a
// warm-start record and rebuilt in another process. A spec is
// (kind, name, index, key, base spec or None); the key of a held source is the held object
// itself, which the writer replaces by a portable reference and the reader resolves again.
#include <cstring>

#include "guards/source.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

struct KindName {
  Source::Kind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {
    {Source::Kind::Local, "local"},
    {Source::Kind::Global, "global"},
    {Source::Kind::Builtin, "builtin"},
    {Source::Kind::Closure, "closure"},
    {Source::Kind::Attr, "attr"},
    {Source::Kind::Item, "item"},
    {Source::Kind::StoredItem, "stored_item"},
    {Source::Kind::ViewedDict, "viewed_dict"},
    {Source::Kind::Type, "type"},
    {Source::Kind::Held, "held"},
    {Source::Kind::Globals, "globals"},
    {Source::Kind::InstanceDict, "instance_dict"},
    {Source::Kind::Stride, "stride"},
    {Source::Kind::StorageOffset, "storage_offset"},
};

Source::Kind kind_named(const char* name) {
  for (const auto& entry : kKindNames)
    if (std::strcmp(entry.name, name) == 0) return entry.kind;
  throw PythonError::make(PyExc_ValueError, std::string("unknown source kind ") + name);
}

PyObject* item_of(PyObject* spec, Py_ssize_t index) { return PyTuple_GET_ITEM(spec, index); }  // borrowed

}  // namespace

const char* source_kind_name(Source::Kind kind) {
  for (const auto& entry : kKindNames)
    if (entry.kind == kind) return entry.name;
  return "?";
}

py::Ref<> source_spec(const SourcePtr& source) {
  py::Ref<> base = source->base ? source_spec(source->base) : py::Ref<>::newref(Py_None);
  PyObject* key = source->key ? source->key.get() : Py_None;
  return check(Py_BuildValue("(ssiOO)", source_kind_name(source->kind), source->name.c_str(), source->index, key,
                             base.get()));
}

SourcePtr source_from_spec(PyObject* spec) {
  if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5 || !PyUnicode_Check(item_of(spec, 0)) ||
      !PyUnicode_Check(item_of(spec, 1)) || !PyLong_Check(item_of(spec, 2)))
    throw PythonError::make(PyExc_ValueError, "a source spec is (kind, name, index, key, base)");
  Source::Kind kind = kind_named(PyUnicode_AsUTF8(item_of(spec, 0)));
  std::string name = PyUnicode_AsUTF8(item_of(spec, 1));
  int index = static_cast<int>(PyLong_AsLong(item_of(spec, 2)));
  PyObject* key = item_of(spec, 3);
  PyObject* base_spec = item_of(spec, 4);
  SourcePtr base = base_spec == Py_None ? nullptr : source_from_spec(base_spec);
  auto needs_base = [&] {
    if (!base) throw PythonError::make(PyExc_ValueError, "a derived source spec needs a base");
  };
  auto needs_index = [&] {
    if (index < 0) throw PythonError::make(PyExc_ValueError, "a source spec needs an index >= 0");
  };
  switch (kind) {
    case Source::Kind::Local: needs_index(); return local_source(std::move(name), index);
    case Source::Kind::Global: return global_source(std::move(name));
    case Source::Kind::Builtin: return builtin_source(std::move(name));
    case Source::Kind::Closure: needs_index(); return closure_source(std::move(name), index);
    case Source::Kind::Globals: return globals_dict_source();
    case Source::Kind::Held:
      // A class is named with its address, which is this process's.
      if (PyType_Check(key) && name.rfind("class ", 0) == 0) return class_source(key);
      return held_source(py::Ref<>::newref(key), std::move(name));
    case Source::Kind::Attr: needs_base(); return attr_source(std::move(base), std::move(name));
    case Source::Kind::Item:
    case Source::Kind::StoredItem: {
      needs_base();
      if (PyObject_Hash(key) == -1) throw_python_error();
      py::Ref<> held = py::Ref<>::newref(key);
      return kind == Source::Kind::Item ? item_source(std::move(base), std::move(held))
                                        : stored_item_source(std::move(base), std::move(held));
    }
    case Source::Kind::ViewedDict: needs_base(); return viewed_dict_source(std::move(base));
    case Source::Kind::Type: needs_base(); return type_source(std::move(base));
    case Source::Kind::InstanceDict: needs_base(); return instance_dict_of(std::move(base));
    case Source::Kind::Stride: needs_base(); needs_index(); return stride_source(std::move(base), index);
    case Source::Kind::StorageOffset: needs_base(); return storage_offset_source(std::move(base));
  }
  throw PythonError::make(PyExc_ValueError, "unknown source kind");
}

}  // namespace bytegraph::guards
