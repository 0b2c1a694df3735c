// TENSOR_SUBCLASS_METADATA_MATCH: a traceable wrapper subclass (one with __tensor_flatten__)
// is compiled for the metadata its flatten returns (a scale, a layout, placements): a tensor
// of the same class and sizes with other metadata must not reuse the graph. The names of its
// inner tensors and the metadata are compared with the traced ones, through the class's
// __metadata_guard__(traced, now) when it defines one (as torch.compile does), else ==.
#include "guards/leaf_guard.h"
#include "guards/python_text.h"
#include "guards/tensor_meta.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

// (inner tensor names, metadata) of `tensor`, with its __torch_function__ kept out.
py::Ref<> flatten(PyObject* tensor) {
  SubclassDispatchOff undispatched(tensor);
  py::Ref<> result = check(PyObject_CallMethod(tensor, "__tensor_flatten__", nullptr));
  if (!PyTuple_Check(result.get()) || PyTuple_GET_SIZE(result.get()) != 2)
    throw PythonError::make(PyExc_TypeError, "__tensor_flatten__ must return (inner tensor names, metadata)");
  return result;
}

class SubclassMetadataMatch final : public LeafGuard {
 public:
  SubclassMetadataMatch(PyObject* tensor, PyObject* compare) : type_(py::Ref<>::newref((PyObject*)Py_TYPE(tensor))) {
    py::Ref<> flat = flatten(tensor);
    names_ = py::Ref<>::newref(PyTuple_GET_ITEM(flat.get(), 0));
    metadata_ = py::Ref<>::newref(PyTuple_GET_ITEM(flat.get(), 1));
    if (compare != nullptr && compare != Py_None) {
      metadata_guard_ = py::Ref<>::newref(compare);
      return;
    }
    py::Ref<> custom = py::Ref<>::steal(PyObject_GetAttrString(type_.get(), "__metadata_guard__"));
    if (!custom) PyErr_Clear();
    metadata_guard_ = std::move(custom);
  }
  bool check(PyObject* value) const override { return mismatch(value).empty(); }
  std::string explain(PyObject* value, const std::string& source) const override {
    return source + " " + mismatch(value);
  }
  std::string describe(const std::string& source) const override {
    return source + ": TENSOR_SUBCLASS_METADATA_MATCH " + short_repr(metadata_.get());
  }
  std::string dedupe_key() const override { return "TENSOR_SUBCLASS_METADATA_MATCH"; }
  int cost_rank() const override { return kCostTensor; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override {
    visit(type_);
    visit(names_);
    visit(metadata_);
    visit(metadata_guard_);
  }

 private:
  // Empty when `value` matches; else what differs.
  std::string mismatch(PyObject* value) const {
    // TENSOR_MATCH on the same value checks its type first; this check may run before it.
    if ((PyObject*)Py_TYPE(value) != type_.get()) return "type differs from the traced subclass";
    py::Ref<> flat = flatten(value);
    PyObject* names = PyTuple_GET_ITEM(flat.get(), 0);  // a list of strings, compared as it is
    int same_names = PyObject_RichCompareBool(names, names_.get(), Py_EQ);
    if (same_names < 0) throw_python_error();
    if (same_names == 0) return "inner tensors: expected " + short_repr(names_.get()) + ", got " + short_repr(names);
    PyObject* metadata = PyTuple_GET_ITEM(flat.get(), 1);
    int same;
    if (metadata_guard_) {
      py::Ref<> answer = bytegraph::check(PyObject_CallFunctionObjArgs(metadata_guard_.get(), metadata_.get(), metadata, nullptr));
      same = PyObject_IsTrue(answer.get());
    } else {
      same = PyObject_RichCompareBool(metadata, metadata_.get(), Py_EQ);
    }
    if (same < 0) throw_python_error();
    if (same == 0) return "subclass metadata: expected " + short_repr(metadata_.get()) + ", got " + short_repr(metadata);
    return {};
  }

  py::Ref<> type_, names_, metadata_, metadata_guard_;
};

}  // namespace

LeafPtr make_subclass_metadata_match(PyObject* tensor, PyObject* compare) {
  return std::make_shared<SubclassMetadataMatch>(tensor, compare);
}

}  // namespace bytegraph::guards
