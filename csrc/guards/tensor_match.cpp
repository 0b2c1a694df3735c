// TENSOR_MATCH: a tensor argument still has the metadata the graph was traced for: exact
// Python type, dtype, device, sizes, strides and requires_grad.
//
// The check and its explanation are one function (`first_mismatch`), so the reason given
// for a recompile is always the property the hot path rejected.
// Dynamic dimensions: a size of -1 is not checked; a stride of -1 is not checked either.
#include <cstdint>
#include <vector>

#include "guards/leaf_guard.h"
#include "guards/python_text.h"
#include "guards/tensor_meta.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

constexpr int64_t kUnchecked = -1;

std::vector<int64_t> int_tuple(PyObject* tuple) {
  std::vector<int64_t> values;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (value == -1 && PyErr_Occurred()) throw_python_error();
    values.push_back(value);
  }
  return values;
}

std::string int_list_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ", ";
    text += values[i] == kUnchecked ? "?" : std::to_string(values[i]);
  }
  return text + "]";
}

class TensorMatch final : public LeafGuard {
 public:
  TensorMatch(const TensorMeta& meta, PyObject* tensor, const std::vector<int>& dynamic_dims)
      : meta_(meta), type_(py::Ref<PyTypeObject>::newref(Py_TYPE(tensor))) {
    dtype_ = bytegraph::check(meta.dtype(tensor));
    device_ = bytegraph::check(meta.device(tensor));
    device_check_ = device_check_for(tensor);
    py::Ref<> grad = bytegraph::check(meta.requires_grad(tensor));
    requires_grad_ = grad.get() == Py_True;
    sizes_ = int_tuple(bytegraph::check(meta.shape(tensor)).get());
    strides_ = int_tuple(bytegraph::check(meta.stride(tensor)).get());
    const std::vector<int64_t> traced_strides = strides_;
    for (int dim : dynamic_dims) mark_dynamic(dim, traced_strides);
  }

  // Symbolic shapes: the shape guards check these sizes and strides instead.
  void leave_unchecked(const std::vector<int>& sizes, const std::vector<int>& strides) {
    for (int dim : sizes) unchecked(sizes_, dim, "size");
    for (int dim : strides) unchecked(strides_, dim, "stride");
  }

  bool check(PyObject* value) const override { return !first_mismatch(value, nullptr); }
  std::string explain(PyObject* value, const std::string& source) const override {
    std::string reason;
    if (!first_mismatch(value, &reason)) return {};
    return source + " " + reason;
  }
  std::string describe(const std::string& source) const override {
    return source + ": TENSOR_MATCH " + properties();
  }
  std::string dedupe_key() const override { return "TENSOR_MATCH " + properties(); }
  int cost_rank() const override { return kCostTensor; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override {
    visit(type_);
    visit(dtype_);
    visit(device_);
  }

 private:
  // A dynamic dimension's size may change. So may every stride that lies outside it in
  // memory order (a larger stride scales with this dimension's extent); its own stride and
  // the inner ones stay checked.
  void mark_dynamic(int dim, const std::vector<int64_t>& traced_strides) {
    int ndim = static_cast<int>(sizes_.size());
    if (dim < 0) dim += ndim;
    if (dim < 0 || dim >= ndim) {
      throw PythonError::make(PyExc_IndexError, "TENSOR_MATCH: dynamic dimension " +
                                                    std::to_string(dim) + " out of range for " +
                                                    std::to_string(ndim) + " dimensions");
    }
    for (int i = 0; i < ndim; ++i) {
      if (i != dim && traced_strides[i] >= traced_strides[dim]) strides_[i] = kUnchecked;
    }
    sizes_[dim] = kUnchecked;
  }

  static void unchecked(std::vector<int64_t>& values, int dim, const char* what) {
    if (dim < 0 || dim >= static_cast<int>(values.size()))
      throw PythonError::make(PyExc_IndexError, std::string("TENSOR_MATCH: unchecked ") + what + " " +
                                                    std::to_string(dim) + " out of range");
    values[static_cast<size_t>(dim)] = kUnchecked;
  }

  // True if `value` differs; then `reason` (when given) says how.
  bool first_mismatch(PyObject* value, std::string* reason) const {
    if (Py_TYPE(value) != type_.get()) {
      if (reason) *reason = "type: expected " + type_name(type_.get()) + ", got " +
                            type_name(Py_TYPE(value));
      return true;
    }
    // From here on `value` has exactly the traced type, a TensorBase subclass, so the C
    // getters may be called on it.
    py::Ref<> dtype = bytegraph::check(meta_.dtype(value));
    if (dtype.get() != dtype_.get()) {  // dtypes are singletons
      if (reason) *reason = "dtype: expected " + safe_str(dtype_.get()) + ", got " +
                            safe_str(dtype.get());
      return true;
    }
    py::Ref<> grad = bytegraph::check(meta_.requires_grad(value));
    if ((grad.get() == Py_True) != requires_grad_) {
      if (reason) *reason = std::string("requires_grad: expected ") +
                            (requires_grad_ ? "True" : "False") + ", got " +
                            (requires_grad_ ? "False" : "True");
      return true;
    }
    py::Ref<> shape = bytegraph::check(meta_.shape(value));
    if (ints_mismatch("size", sizes_, shape.get(), reason)) return true;
    py::Ref<> strides = bytegraph::check(meta_.stride(value));
    if (ints_mismatch("stride", strides_, strides.get(), reason)) return true;
    if (!same_device(value)) {
      if (reason) {
        py::Ref<> device = bytegraph::check(meta_.device(value));
        *reason = "device: expected " + safe_str(device_.get()) + ", got " + safe_str(device.get());
      }
      return true;
    }
    return false;
  }

  enum class DeviceCheck { kIsCpu, kIsMeta, kEquals };

  DeviceCheck device_check_for(PyObject* tensor) const {
    if (bytegraph::check(meta_.is_cpu(tensor)).get() == Py_True) return DeviceCheck::kIsCpu;
    if (bytegraph::check(meta_.is_meta(tensor)).get() == Py_True) return DeviceCheck::kIsMeta;
    return DeviceCheck::kEquals;
  }

  bool same_device(PyObject* value) const {
    switch (device_check_) {
      case DeviceCheck::kIsCpu:
        return bytegraph::check(meta_.is_cpu(value)).get() == Py_True;
      case DeviceCheck::kIsMeta:
        return bytegraph::check(meta_.is_meta(value)).get() == Py_True;
      case DeviceCheck::kEquals:
        break;
    }
    // torch.device compares type and index; building it is the slow part.
    py::Ref<> device = bytegraph::check(meta_.device(value));
    int same = PyObject_RichCompareBool(device.get(), device_.get(), Py_EQ);
    if (same < 0) throw_python_error();
    return same == 1;
  }

  // `got` is a tuple of ints (torch.Size or the tuple stride() returns), read in place.
  static bool ints_mismatch(const char* what, const std::vector<int64_t>& expected, PyObject* got,
                            std::string* reason) {
    Py_ssize_t ndim = PyTuple_GET_SIZE(got);
    if (ndim != static_cast<Py_ssize_t>(expected.size())) {
      if (reason) *reason = "ndim: expected " + std::to_string(expected.size()) + ", got " +
                            std::to_string(ndim);
      return true;
    }
    for (Py_ssize_t i = 0; i < ndim; ++i) {
      if (expected[i] == kUnchecked) continue;
      long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(got, i));
      if (value == -1 && PyErr_Occurred()) throw_python_error();
      if (value != expected[i]) {
        if (reason) *reason = std::string(what) + "[" + std::to_string(i) + "]: expected " +
                              std::to_string(expected[i]) + ", got " + std::to_string(value);
        return true;
      }
    }
    return false;
  }

  std::string properties() const {
    return type_name(type_.get()) + " dtype=" + safe_str(dtype_.get()) +
           " device=" + safe_str(device_.get()) + " size=" + int_list_text(sizes_) +
           " stride=" + int_list_text(strides_) +
           " requires_grad=" + (requires_grad_ ? "True" : "False");
  }

  const TensorMeta& meta_;
  py::Ref<PyTypeObject> type_;
  py::Ref<> dtype_;
  py::Ref<> device_;
  DeviceCheck device_check_ = DeviceCheck::kEquals;
  bool requires_grad_ = false;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
};

}  // namespace

LeafPtr make_tensor_match(PyObject* tensor, const std::vector<int>& dynamic_dims) {
  const TensorMeta& meta = TensorMeta::get();
  if (tensor == nullptr || !meta.is_tensor(tensor)) {
    std::string got = tensor == nullptr ? "NULL" : type_name(Py_TYPE(tensor));
    throw PythonError::make(PyExc_TypeError, "TENSOR_MATCH needs a torch.Tensor, got " + got);
  }
  return std::make_shared<TensorMatch>(meta, tensor, dynamic_dims);
}

LeafPtr make_tensor_match_unchecked(PyObject* tensor, const std::vector<int>& unchecked_sizes,
                                    const std::vector<int>& unchecked_strides) {
  const TensorMeta& meta = TensorMeta::get();
  if (tensor == nullptr || !meta.is_tensor(tensor)) {
    std::string got = tensor == nullptr ? "NULL" : type_name(Py_TYPE(tensor));
    throw PythonError::make(PyExc_TypeError, "TENSOR_MATCH needs a torch.Tensor, got " + got);
  }
  auto match = std::make_shared<TensorMatch>(meta, tensor, std::vector<int>{});
  match->leave_unchecked(unchecked_sizes, unchecked_strides);
  return match;
}

}  // namespace bytegraph::guards
