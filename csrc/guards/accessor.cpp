#include "guards/accessor.h"

#include "guards/guard_manager.h"
#include "guards/tensor_meta.h"
#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::guards {

Accessor::Accessor(std::unique_ptr<GuardManager> child) : child_(std::move(child)) {}
Accessor::~Accessor() = default;

Fetched Accessor::fetch_for_child(PyObject* parent, const FrameValues& frame) const {
  Fetched value = fetch(parent, frame);
  // A getattr below this value (a property), or a leaf that can run Python code, could drop
  // the only reference the container held. Owning the value for that walk costs one incref;
  // values read from the frame or the parent itself are kept alive by them.
  if (value && borrows_from_container() && child_->may_run_python()) value.own();
  return value;
}

void Accessor::traverse(py::Visitor& visit) const {
  traverse_own(visit);
  child_->traverse(visit);
}

bool Accessor::check(PyObject* parent, const FrameValues& frame) const {
  Fetched value = fetch_for_child(parent, frame);
  return value && child_->check(value.get(), frame);
}

std::string Accessor::explain(PyObject* parent, const FrameValues& frame) const {
  Fetched value;
  try {
    value = fetch_for_child(parent, frame);
  } catch (PythonError& error) {
    if (error.is_interrupt()) throw;
    return child_->repr() + ": raised " + error.what();
  }
  if (!value) return child_->repr() + ": " + missing_reason();
  return child_->explain(value.get(), frame);
}

namespace {

// A lookup that raised LookupError (KeyError, IndexError) or AttributeError means "missing";
// anything else is a real error.
Fetched missing_or_throw(PyObject* expected_error) {
  if (PyErr_ExceptionMatches(expected_error)) {
    PyErr_Clear();
    return Fetched::missing();
  }
  throw_python_error();
}

// dict[key] for any mapping: in place for a dict (a subclass's own storage: what the trace
// read as its items, whatever __getitem__ the class defines), else through __getitem__.
Fetched mapping_item(PyObject* mapping, PyObject* key) {
  if (PyDict_Check(mapping)) {
    PyObject* value = PyDict_GetItemWithError(mapping, key);  // borrowed
    if (value == nullptr && PyErr_Occurred()) throw_python_error();
    return value ? Fetched::borrowed(value) : Fetched::missing();
  }
  PyObject* value = PyObject_GetItem(mapping, key);  // new ref
  if (value == nullptr) return missing_or_throw(PyExc_LookupError);
  return Fetched::owned(py::Ref<>::steal(value));
}

py::Ref<> interned(const std::string& name) {
  return check(PyUnicode_InternFromString(name.c_str()));
}

class LocalSlotAccessor final : public Accessor {
 public:
  LocalSlotAccessor(int slot, std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), slot_(slot) {}
  Fetched fetch(PyObject*, const FrameValues& frame) const override {
    if (slot_ >= frame.nlocals || frame.locals == nullptr) return Fetched::missing();
    PyObject* value = frame.locals[slot_];  // borrowed from the frame
    return value ? Fetched::borrowed(value) : Fetched::missing();
  }
  const char* missing_reason() const override { return "local unbound"; }
  bool borrows_from_container() const override { return false; }

 private:
  int slot_;
};

// A name in the frame's globals or builtins.
class FrameDictAccessor final : public Accessor {
 public:
  FrameDictAccessor(PyObject* FrameValues::*dict, const char* missing, const std::string& name,
                    std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), dict_(dict), missing_(missing), name_(interned(name)) {}
  Fetched fetch(PyObject*, const FrameValues& frame) const override {
    PyObject* dict = frame.*dict_;  // borrowed
    if (dict == nullptr) return Fetched::missing();
    return mapping_item(dict, name_.get());
  }
  const char* missing_reason() const override { return missing_; }
  bool borrows_from_container() const override { return true; }

 private:
  PyObject* FrameValues::*dict_;
  const char* missing_;
  py::Ref<> name_;  // interned str: its hash is cached, so the lookup hashes nothing
};

class ClosureCellAccessor final : public Accessor {
 public:
  ClosureCellAccessor(int index, std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), index_(index) {}
  Fetched fetch(PyObject*, const FrameValues& frame) const override {
    PyObject* closure = frame.closure;  // borrowed
    if (closure == nullptr || !PyTuple_Check(closure) || index_ >= PyTuple_GET_SIZE(closure)) {
      return Fetched::missing();
    }
    PyObject* cell = PyTuple_GET_ITEM(closure, index_);  // borrowed
    if (!PyCell_Check(cell)) return Fetched::missing();
    PyObject* contents = PyCell_GET(cell);  // borrowed
    return contents ? Fetched::borrowed(contents) : Fetched::missing();
  }
  const char* missing_reason() const override { return "closure cell empty"; }
  bool borrows_from_container() const override { return true; }

 private:
  int index_;
};

// torch.nn.Module keeps parameters, buffers and submodules in dicts of its own, reached
// through a Python __getattr__ that runs only after the ordinary lookup failed (raising and
// catching an AttributeError): a microsecond per read. Where nothing on the class can
// intervene, the same answer is read from those dicts directly.
class ModuleAttributes {
 public:
  static const ModuleAttributes& get() {
    static const ModuleAttributes* instance = new ModuleAttributes();  // for the process
    return *instance;
  }

  // A new reference, or null (no error set) when the fast path does not apply or finds nothing.
  PyObject* read(PyObject* module, PyObject* name) const {
    PyTypeObject* type = Py_TYPE(module);
    if (!PyType_IsSubtype(type, module_type_) || _PyType_Lookup(type, name) != nullptr ||
        _PyType_Lookup(type, getattribute_name_.get()) != object_getattribute_ ||
        _PyType_Lookup(type, getattr_name_.get()) != module_getattr_)
      return nullptr;
    PyObject** dict_slot = _PyObject_GetDictPtr(module);
    if (dict_slot == nullptr || *dict_slot == nullptr) return nullptr;
    PyObject* dict = *dict_slot;
    if (PyObject* value = PyDict_GetItemWithError(dict, name)) return Py_NewRef(value);
    for (const py::Ref<>& table_name : tables_) {
      if (PyErr_Occurred()) return nullptr;
      PyObject* table = PyDict_GetItemWithError(dict, table_name.get());
      if (table == nullptr || !PyDict_CheckExact(table)) continue;
      if (PyObject* value = PyDict_GetItemWithError(table, name)) return Py_NewRef(value);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    return nullptr;
  }

  // `container[index]` of a ModuleList or Sequential whose class keeps torch's __getitem__:
  // the index-th child in `_modules`, as that __getitem__ finds it, without running it. A
  // borrowed reference, or null (no error set) when this does not apply or there is none.
  PyObject* child(PyObject* container, Py_ssize_t index) const {
    PyTypeObject* type = Py_TYPE(container);
    if (!PyType_IsSubtype(type, module_type_)) return nullptr;
    PyObject* getitem = _PyType_Lookup(type, getitem_name_.get());
    if (getitem == nullptr || (getitem != list_getitem_ && getitem != sequential_getitem_)) return nullptr;
    PyObject** dict_slot = _PyObject_GetDictPtr(container);
    if (dict_slot == nullptr || *dict_slot == nullptr) return nullptr;
    PyObject* children = PyDict_GetItemWithError(*dict_slot, tables_[2].get());
    if (children == nullptr || !PyDict_CheckExact(children)) {
      PyErr_Clear();
      return nullptr;
    }
    Py_ssize_t size = PyDict_GET_SIZE(children);
    if (index < 0) index += size;
    if (index < 0 || index >= size) return nullptr;
    PyObject *key, *value;
    Py_ssize_t position = 0;
    for (Py_ssize_t i = 0; PyDict_Next(children, &position, &key, &value); ++i)
      if (i == index) return value;
    return nullptr;
  }

 private:
  ModuleAttributes() {
    py::Ref<> nn = import_module("torch.nn");
    py::Ref<> module_class = check(PyObject_GetAttrString(nn.get(), "Module"));
    module_type_ = reinterpret_cast<PyTypeObject*>(module_class.release());
    getattribute_name_ = interned("__getattribute__");
    getattr_name_ = interned("__getattr__");
    object_getattribute_ = _PyType_Lookup(&PyBaseObject_Type, getattribute_name_.get());
    module_getattr_ = _PyType_Lookup(module_type_, getattr_name_.get());
    for (const char* table : {"_parameters", "_buffers", "_modules"}) tables_.push_back(interned(table));
    getitem_name_ = interned("__getitem__");
    for (auto [name, slot] : {std::pair{"ModuleList", &list_getitem_}, std::pair{"Sequential", &sequential_getitem_}}) {
      py::Ref<> cls = check(PyObject_GetAttrString(nn.get(), name));
      *slot = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(cls.get()), getitem_name_.get());
      cls.release();  // torch.nn's classes live for the process
    }
  }

  PyTypeObject* module_type_ = nullptr;  // kept for the process
  py::Ref<> getattribute_name_, getattr_name_;
  PyObject* object_getattribute_ = nullptr;  // borrowed from the classes, which live on
  PyObject* module_getattr_ = nullptr;
  std::vector<py::Ref<>> tables_;  // searched in Module.__getattr__'s order
  py::Ref<> getitem_name_;
  PyObject* list_getitem_ = nullptr;  // borrowed from their classes
  PyObject* sequential_getitem_ = nullptr;
};

class AttrAccessor final : public Accessor {
 public:
  AttrAccessor(const std::string& name, std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), name_(interned(name)) {}
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    if (PyObject* value = ModuleAttributes::get().read(parent, name_.get())) return Fetched::owned(py::Ref<>::steal(value));
    PyObject* value = PyObject_GetAttr(parent, name_.get());  // new ref
    if (value == nullptr) return missing_or_throw(PyExc_AttributeError);
    return Fetched::owned(py::Ref<>::steal(value));
  }
  const char* missing_reason() const override { return "attribute missing"; }
  bool borrows_from_container() const override { return false; }

 private:
  py::Ref<> name_;
};

class ItemAccessor final : public Accessor {
 public:
  ItemAccessor(py::Ref<> key, std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), key_(std::move(key)) {
    if (PyLong_CheckExact(key_.get())) {
      int overflow = 0;
      long long index = PyLong_AsLongLongAndOverflow(key_.get(), &overflow);
      if (!overflow) {
        index_ = static_cast<Py_ssize_t>(index);
        has_index_ = true;
      }
    }
  }
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    // A list or tuple, a subclass's included: its own storage.
    if (PyList_Check(parent) || PyTuple_Check(parent)) {
      if (has_index_) return sequence_item(parent);
      // A builtin sequence indexed by a non-integer key (a dict replaced by a list) has no
      // such item; only slices are valid there besides integers.
      if (!PyLong_Check(key_.get()) && !PySlice_Check(key_.get())) return Fetched::missing();
    }
    // A value that cannot be subscripted at all (a function's __closure__ that is None now)
    // has no such item: the guard fails instead of raising.
    if (!PyMapping_Check(parent) && !PySequence_Check(parent)) return Fetched::missing();
    if (has_index_)
      if (PyObject* child = ModuleAttributes::get().child(parent, index_)) return Fetched::borrowed(child);
    return mapping_item(parent, key_.get());
  }
  const char* missing_reason() const override { return "item missing"; }
  bool borrows_from_container() const override { return true; }
  void traverse_own(py::Visitor& visit) const override { visit(key_); }

 private:
  Fetched sequence_item(PyObject* sequence) const {
    Py_ssize_t size = Py_SIZE(sequence);
    Py_ssize_t index = index_ < 0 ? index_ + size : index_;
    if (index < 0 || index >= size) return Fetched::missing();
    PyObject* value = PyList_Check(sequence) ? PyList_GET_ITEM(sequence, index) : PyTuple_GET_ITEM(sequence, index);
    return Fetched::borrowed(value);  // borrowed from the list or tuple
  }

  py::Ref<> key_;
  Py_ssize_t index_ = 0;
  bool has_index_ = false;
};

class HeldObjectAccessor final : public Accessor {
 public:
  HeldObjectAccessor(py::Ref<> object, std::unique_ptr<GuardManager> child)
      : Accessor(std::move(child)), object_(std::move(object)) {}
  Fetched fetch(PyObject*, const FrameValues&) const override { return Fetched::borrowed(object_.get()); }
  const char* missing_reason() const override { return "no object"; }
  bool borrows_from_container() const override { return false; }
  void traverse_own(py::Visitor& visit) const override { visit(object_); }

 private:
  py::Ref<> object_;
};

class GlobalsDictAccessor final : public Accessor {
 public:
  using Accessor::Accessor;
  Fetched fetch(PyObject*, const FrameValues& frame) const override {
    return frame.globals ? Fetched::borrowed(frame.globals) : Fetched::missing();
  }
  const char* missing_reason() const override { return "no globals"; }
  bool borrows_from_container() const override { return false; }
};

// The instance's own attribute dict (never a class's __getattr__/__getattribute__ hook).
class InstanceDictAccessor final : public Accessor {
 public:
  using Accessor::Accessor;
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    PyObject* dict = PyObject_GenericGetDict(parent, nullptr);  // new ref
    if (dict == nullptr) return missing_or_throw(PyExc_AttributeError);
    return Fetched::owned(py::Ref<>::steal(dict));
  }
  const char* missing_reason() const override { return "no instance dict"; }
  bool borrows_from_container() const override { return false; }
};

class ViewedDictAccessor final : public Accessor {
 public:
  using Accessor::Accessor;
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    PyObject* dict = viewed_dict(parent);  // borrowed: the view holds it
    return dict ? Fetched::borrowed(dict) : Fetched::missing();
  }
  const char* missing_reason() const override { return "not a dict view"; }
  bool borrows_from_container() const override { return true; }
};

class TypeAccessor final : public Accessor {
 public:
  using Accessor::Accessor;
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    // borrowed: the parent holds a reference to its type
    return Fetched::borrowed(reinterpret_cast<PyObject*>(Py_TYPE(parent)));
  }
  const char* missing_reason() const override { return "no type"; }
  bool borrows_from_container() const override { return false; }
};

// A tensor's stride in one dimension, or its storage offset: the values a graph input with a
// symbolic layout carries. Anything but a tensor with that dimension has none.
class TensorLayoutAccessor final : public Accessor {
 public:
  TensorLayoutAccessor(int dim, std::unique_ptr<GuardManager> child) : Accessor(std::move(child)), dim_(dim) {}
  Fetched fetch(PyObject* parent, const FrameValues&) const override {
    const TensorMeta& meta = TensorMeta::get();
    if (!meta.is_tensor(parent)) return Fetched::missing();
    if (dim_ < 0) return Fetched::owned(bytegraph::check(meta.storage_offset(parent)));
    py::Ref<> strides = bytegraph::check(meta.stride(parent));
    if (!PyTuple_Check(strides.get()) || dim_ >= PyTuple_GET_SIZE(strides.get())) return Fetched::missing();
    return Fetched::owned(py::Ref<>::newref(PyTuple_GET_ITEM(strides.get(), dim_)));
  }
  const char* missing_reason() const override { return dim_ < 0 ? "not a tensor" : "no such dimension"; }
  bool borrows_from_container() const override { return false; }

 private:
  int dim_;  // -1: the storage offset
};

}  // namespace

std::unique_ptr<Accessor> make_accessor(const Source& source,
                                        std::unique_ptr<GuardManager> child) {
  switch (source.kind) {
    case Source::Kind::Local:
      return std::make_unique<LocalSlotAccessor>(source.index, std::move(child));
    case Source::Kind::Global:
      return std::make_unique<FrameDictAccessor>(&FrameValues::globals, "global missing",
                                                 source.name, std::move(child));
    case Source::Kind::Builtin:
      return std::make_unique<FrameDictAccessor>(&FrameValues::builtins, "builtin missing",
                                                 source.name, std::move(child));
    case Source::Kind::Closure:
      return std::make_unique<ClosureCellAccessor>(source.index, std::move(child));
    case Source::Kind::Attr:
      return std::make_unique<AttrAccessor>(source.name, std::move(child));
    case Source::Kind::Item:
    case Source::Kind::StoredItem:  // the item accessor reads a subclass's storage
      return std::make_unique<ItemAccessor>(source.key.copy(), std::move(child));
    case Source::Kind::Type:
      return std::make_unique<TypeAccessor>(std::move(child));
    case Source::Kind::Held:
      return std::make_unique<HeldObjectAccessor>(source.key.copy(), std::move(child));
    case Source::Kind::Globals:
      return std::make_unique<GlobalsDictAccessor>(std::move(child));
    case Source::Kind::InstanceDict:
      return std::make_unique<InstanceDictAccessor>(std::move(child));
    case Source::Kind::ViewedDict:
      return std::make_unique<ViewedDictAccessor>(std::move(child));
    case Source::Kind::Stride:
      return std::make_unique<TensorLayoutAccessor>(source.index, std::move(child));
    case Source::Kind::StorageOffset:
      return std::make_unique<TensorLayoutAccessor>(-1, std::move(child));
  }
  throw InternalError("make_accessor: unknown source kind");
}

py::Ref<> read_source(const SourcePtr& source, const FrameValues& frame) {
  py::Ref<> parent;
  if (source->base) {
    parent = read_source(source->base, frame);
    if (!parent) return {};
  }
  // One accessor per link, made for this read: off the hot path (warm-start records).
  std::unique_ptr<Accessor> accessor = make_accessor(*source, std::make_unique<GuardManager>(source));
  Fetched fetched = accessor->fetch(parent.get(), frame);
  return fetched ? py::Ref<>::newref(fetched.get()) : py::Ref<>();
}

}  // namespace bytegraph::guards
