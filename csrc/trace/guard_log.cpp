#include "trace/guard_log.h"

#include "trace/value.h"

namespace bytegraph::trace {

void GuardLog::add(Kind kind, const guards::SourcePtr& source, PyObject* object, Py_ssize_t length) {
  if (!source) return;  // values made during the trace need no guard
  std::string key = std::to_string(static_cast<int>(kind)) + source->repr();
  if (kind == Kind::LacksKey || kind == Kind::LacksAttr) key += py_repr(object);  // several keys per dict
  if (!keys_.insert(key).second) return;  // idempotent, as GuardSet's add_* are
  entries_.push_back(Entry{kind, source, py::Ref<>::newref(object), length, std::move(key)});
}

void GuardLog::add_tensor(const guards::SourcePtr& source, PyObject* tensor, std::vector<int> unchecked_sizes,
                          std::vector<int> unchecked_strides) {
  size_t before = entries_.size();
  add(Kind::Tensor, source, tensor);
  if (entries_.size() == before) return;
  entries_.back().unchecked_sizes = std::move(unchecked_sizes);
  entries_.back().unchecked_strides = std::move(unchecked_strides);
}

void GuardLog::add_same_object(const guards::SourcePtr& first, const guards::SourcePtr& second) {
  if (!first || !second) return;
  std::string key = std::to_string(static_cast<int>(Kind::SameObject)) + second->repr() + " is " + first->repr();
  if (!keys_.insert(key).second) return;
  entries_.push_back(Entry{Kind::SameObject, second, nullptr, 0, std::move(key), first});
}

void GuardLog::truncate(size_t length) {
  while (entries_.size() > length) {
    keys_.erase(entries_.back().key);
    entries_.pop_back();
  }
}

void GuardLog::apply(guards::GuardSet& set) const {
  for (const auto& e : entries_) {
    switch (e.kind) {
      case Kind::Type: set.add_type_match(e.source, (PyTypeObject*)e.object.get()); break;
      case Kind::Id: set.add_id_match(e.source, e.object.get()); break;
      case Kind::Equals: set.add_equals_match(e.source, e.object.get()); break;
      case Kind::Value: set.add_value_match(e.source, e.object.get()); break;
      case Kind::Tensor:
        if (e.unchecked_sizes.empty() && e.unchecked_strides.empty()) set.add_tensor_match(e.source, e.object.get());
        else set.add_tensor_match_unchecked(e.source, e.object.get(), e.unchecked_sizes, e.unchecked_strides);
        break;
      case Kind::Length: set.add_length_match(e.source, e.length); break;
      case Kind::Size: set.add_size_match(e.source, e.length); break;
      case Kind::DictKeys: set.add_dict_keys_match(e.source, e.object.get()); break;
      case Kind::SetItems:
        set.add_set_match(e.source, PyTuple_GET_ITEM(e.object.get(), 0), PyTuple_GET_ITEM(e.object.get(), 1));
        break;
      case Kind::None: set.add_none_match(e.source, e.length != 0); break;
      case Kind::SameObject: set.add_same_object(e.other, e.source); break;
      case Kind::LacksKey: set.add_dict_lacks_key(e.source, e.object.get()); break;
      case Kind::LacksAttr: set.add_lacks_attr(e.source, e.object.get()); break;
      case Kind::SubclassMetadata:  // (tensor, compare or None)
        set.add_subclass_metadata_match(e.source, PyTuple_GET_ITEM(e.object.get(), 0), PyTuple_GET_ITEM(e.object.get(), 1));
        break;
    }
  }
}

const char* GuardLog::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Type: return "type";
    case Kind::Id: return "id";
    case Kind::Equals: return "equals";
    case Kind::Value: return "value";
    case Kind::Tensor: return "tensor";
    case Kind::Length: return "length";
    case Kind::DictKeys: return "dict_keys";
    case Kind::SetItems: return "set_items";
    case Kind::None: return "none";
    case Kind::SameObject: return "same_object";
    case Kind::LacksKey: return "lacks_key";
    case Kind::LacksAttr: return "lacks_attr";
    case Kind::Size: return "size";
    case Kind::SubclassMetadata: return "subclass_metadata";
  }
  return "?";
}

void GuardLog::traverse(py::Visitor& visit) const {
  for (const auto& e : entries_) {
    visit(e.object);
    guards::traverse_source(e.source, visit);
    if (e.other) guards::traverse_source(e.other, visit);
  }
}

std::vector<std::string> GuardLog::describe() const {
  std::vector<std::string> lines;
  for (const auto& e : entries_) {
    std::string name = e.source->repr();
    switch (e.kind) {
      case Kind::Type: lines.push_back(name + " TYPE_MATCH"); break;
      case Kind::Id: lines.push_back(name + " ID_MATCH"); break;
      case Kind::Equals: lines.push_back(name + " EQUALS_MATCH " + py_repr(e.object.get())); break;
      case Kind::Value: lines.push_back(name + " VALUE_MATCH " + py_repr(e.object.get())); break;
      case Kind::Tensor: lines.push_back(name + " TENSOR_MATCH"); break;
      case Kind::Length: lines.push_back(name + " LENGTH_MATCH " + std::to_string(e.length)); break;
      case Kind::Size: lines.push_back(name + " SIZE_MATCH " + std::to_string(e.length)); break;
      case Kind::DictKeys: lines.push_back(name + " DICT_KEYS_MATCH " + py_repr(e.object.get())); break;
      case Kind::SetItems:
        lines.push_back(name + " SET_MATCH " + reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(e.object.get(), 0))->tp_name +
                        py_repr(PyTuple_GET_ITEM(e.object.get(), 1)));
        break;
      case Kind::None: lines.push_back(name + (e.length ? " IS_NONE" : " IS_NOT_NONE")); break;
      case Kind::SameObject: lines.push_back(name + " OBJECT_ALIASING " + e.other->repr()); break;
      case Kind::LacksKey: lines.push_back(name + " DICT_LACKS_KEY " + py_repr(e.object.get())); break;
      case Kind::LacksAttr: lines.push_back(name + " LACKS_ATTR " + py_repr(e.object.get())); break;
      case Kind::SubclassMetadata: lines.push_back(name + " TENSOR_SUBCLASS_METADATA_MATCH"); break;
    }
  }
  return lines;
}

}  // namespace bytegraph::trace
