#include <cstdio>

#include "guards/source.h"

#include "guards/python_text.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

// Single-quoted like Python's repr of a plain identifier, which is what names are.
std::string quoted(const std::string& name) { return "['" + name + "']"; }

SourcePtr make_root(Source::Kind kind, std::string name, int index) {
  auto source = std::make_shared<Source>();
  source->kind = kind;
  source->name = std::move(name);
  source->index = index;
  return source;
}

SourcePtr make_derived(Source::Kind kind, SourcePtr base, std::string name, py::Ref<> key) {
  BYTEGRAPH_CHECK(base != nullptr, "a derived source needs a base");
  auto source = std::make_shared<Source>();
  source->kind = kind;
  source->base = std::move(base);
  source->name = std::move(name);
  source->key = std::move(key);
  return source;
}

}  // namespace

std::string Source::repr() const {
  switch (kind) {
    case Kind::Local:
      return "L" + quoted(name);
    case Kind::Global:
      return "G" + quoted(name);
    case Kind::Builtin:
      return "builtins" + quoted(name);
    case Kind::Closure:
      return "closure" + quoted(name);
    case Kind::Attr:
      return base->repr() + "." + name;
    case Kind::ViewedDict:
      return base->repr() + ".mapping";
    case Kind::Item:
    case Kind::StoredItem:
      return base->repr() + "[" + safe_repr(key.get()) + "]";
    case Kind::Type:
      return "type(" + base->repr() + ")";
    case Kind::Held:
      return name;
    case Kind::Globals:
      return "G";
    case Kind::InstanceDict:
      return base->repr() + ".__dict__";
    case Kind::Stride:
      return base->repr() + ".stride()[" + std::to_string(index) + "]";
    case Kind::StorageOffset:
      return base->repr() + ".storage_offset()";
  }
  return "<bad source>";
}

SourcePtr local_source(std::string name, int slot) {
  BYTEGRAPH_CHECK(slot >= 0, "a local source needs a slot index");
  return make_root(Source::Kind::Local, std::move(name), slot);
}

SourcePtr global_source(std::string name) {
  return make_root(Source::Kind::Global, std::move(name), -1);
}

SourcePtr builtin_source(std::string name) {
  return make_root(Source::Kind::Builtin, std::move(name), -1);
}

SourcePtr closure_source(std::string name, int index) {
  BYTEGRAPH_CHECK(index >= 0, "a closure source needs a cell index");
  return make_root(Source::Kind::Closure, std::move(name), index);
}

SourcePtr attr_source(SourcePtr base, std::string name) {
  return make_derived(Source::Kind::Attr, std::move(base), std::move(name), nullptr);
}

SourcePtr item_source(SourcePtr base, py::Ref<> key) {
  BYTEGRAPH_CHECK(key, "an item source needs a key");
  return make_derived(Source::Kind::Item, std::move(base), {}, std::move(key));
}

SourcePtr viewed_dict_source(SourcePtr base) { return make_derived(Source::Kind::ViewedDict, std::move(base), {}, nullptr); }

namespace {

// A dict view's only referent is its dict (dictview_traverse): read through tp_traverse, which
// every version has, instead of the view's layout, which 3.13 made internal.
int first_dict(PyObject* object, void* found) {
  if (PyDict_Check(object) && *static_cast<PyObject**>(found) == nullptr) *static_cast<PyObject**>(found) = object;
  return 0;
}

}  // namespace

PyObject* viewed_dict(PyObject* view) {
  if (!PyDictKeys_Check(view) && !PyDictValues_Check(view) && !PyDictItems_Check(view)) return nullptr;
  PyObject* found = nullptr;
  traverseproc traverse = Py_TYPE(view)->tp_traverse;
  if (traverse == nullptr || traverse(view, first_dict, &found) != 0) return nullptr;
  return found;
}

SourcePtr stored_item_source(SourcePtr base, py::Ref<> key) {
  BYTEGRAPH_CHECK(key, "an item source needs a key");
  return make_derived(Source::Kind::StoredItem, std::move(base), {}, std::move(key));
}

SourcePtr held_source(py::Ref<> object, std::string name) {
  BYTEGRAPH_CHECK(object, "a held source needs its object");
  SourcePtr source = make_root(Source::Kind::Held, std::move(name), -1);
  const_cast<Source&>(*source).key = std::move(object);
  return source;
}

SourcePtr class_source(PyObject* cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<void*>(cls));
  return held_source(py::Ref<>::newref(cls), std::string("class ") + type->tp_name + "@" + address);
}

SourcePtr class_attr_source(PyObject* cls, std::string name) { return attr_source(class_source(cls), std::move(name)); }

SourcePtr globals_dict_source() { return make_root(Source::Kind::Globals, "G", -1); }

SourcePtr instance_dict_of(SourcePtr base) {
  return make_derived(Source::Kind::InstanceDict, std::move(base), {}, nullptr);
}

SourcePtr instance_dict_source(SourcePtr base, std::string name) {
  return item_source(instance_dict_of(std::move(base)), check(PyUnicode_FromString(name.c_str())));
}

SourcePtr type_source(SourcePtr base) {
  return make_derived(Source::Kind::Type, std::move(base), {}, nullptr);
}

SourcePtr stride_source(SourcePtr tensor, int dim) {
  BYTEGRAPH_CHECK(dim >= 0, "a stride source needs a dimension");
  SourcePtr source = make_derived(Source::Kind::Stride, std::move(tensor), {}, nullptr);
  const_cast<Source&>(*source).index = dim;
  return source;
}

SourcePtr storage_offset_source(SourcePtr tensor) {
  return make_derived(Source::Kind::StorageOffset, std::move(tensor), {}, nullptr);
}

void traverse_source(const SourcePtr& source, py::Visitor& visit) {
  // Each base is owned through its derived source's `base`: follow the chain while every
  // link has one owner.
  for (const SourcePtr* link = &source; py::sole_owner(*link); link = &(*link)->base) visit((*link)->key);
}

}  // namespace bytegraph::guards
