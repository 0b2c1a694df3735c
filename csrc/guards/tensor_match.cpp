// TENSOR_MATCH: a tensor argument still has the metadata the graph was traced for: exact
// Python type, dtype, device, sizes, strides and requires_grad.
//
// The hot path is torch's own tensor check (torch._C._dynamo.guards.TensorGuards: C++ over
// the TensorImpl, dispatch key set included, one call), which reads what our getters read
// in a fraction of the time. The explanation is `first_mismatch`, over the same properties
// read through the getters, plus the dispatch keys as flags; where torch's check is missing
// from a build, `first_mismatch` is the check as well.
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

// A size or stride that is no int is a jagged tensor's nested int (its ragged dimension): the
// offsets it stands for are the inner tensors' to guard, so it is left unchecked.
std::vector<int64_t> int_tuple(PyObject* tuple) {
  std::vector<int64_t> values;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    if (!PyLong_Check(item)) {
      values.push_back(kUnchecked);
      continue;
    }
    long long value = PyLong_AsLongLong(item);
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
    SubclassDispatchOff undispatched(tensor);
    dtype_ = bytegraph::check(meta.dtype(tensor));
    device_ = bytegraph::check(meta.device(tensor));
    device_check_ = device_check_for(tensor);
    py::Ref<> grad = bytegraph::check(meta.requires_grad(tensor));
    requires_grad_ = grad.get() == Py_True;
    dispatch_flags_ = meta.dispatch_flags(tensor);
    if (dispatch_flags_ < 0) throw_python_error();
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

  // torch's check for this tensor's metadata, with the unchecked sizes and strides as None.
  void build_torch_check(PyObject* tensor) {
    static PyObject* tensor_guards_class = [] {
      py::Ref<> module = py::Ref<>::steal(PyImport_ImportModule("torch._C._dynamo.guards"));
      PyObject* found = module ? PyObject_GetAttrString(module.get(), "TensorGuards") : nullptr;
      if (found == nullptr) PyErr_Clear();
      return found;  // kept for the process, or null: the getters check instead
    }();
    if (tensor_guards_class == nullptr) return;
    py::Ref<> args = bytegraph::check(PyTuple_Pack(1, tensor));
    py::Ref<> kwargs = bytegraph::check(Py_BuildValue("{s:[N],s:[N]}", "dynamic_dims_sizes", optional_ints(sizes_),
                                                      "dynamic_dims_strides", optional_ints(strides_)));
    py::Ref<> guards = bytegraph::check(PyObject_Call(tensor_guards_class, args.get(), kwargs.get()));
    torch_check_ = bytegraph::check(PyObject_GetAttrString(guards.get(), "check"));
  }

  bool check(PyObject* value) const override {
    if (!torch_check_) return !first_mismatch(value, nullptr);
    py::Ref<> passed = bytegraph::check(PyObject_Vectorcall(torch_check_.get(), &value, 1, nullptr));
    return passed.get() == Py_True;
  }
  std::string explain(PyObject* value, const std::string& source) const override {
    std::string reason;
    if (first_mismatch(value, &reason)) return source + " " + reason;
    return check(value) ? std::string() : source + " dispatch keys differ";
  }
  std::string describe(const std::string& source) const override {
    return source + ": TENSOR_MATCH " + properties();
  }
  std::string dedupe_key() const override { return "TENSOR_MATCH " + properties(); }
  int cost_rank() const override { return kCostTensor; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override {
    visit(torch_check_);
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

  // A list of ints with None where unchecked: a new reference.
  static PyObject* optional_ints(const std::vector<int64_t>& values) {
    py::Ref<> list = bytegraph::check(PyList_New(static_cast<Py_ssize_t>(values.size())));
    for (size_t i = 0; i < values.size(); ++i) {
      PyObject* item = values[i] == kUnchecked ? Py_NewRef(Py_None) : bytegraph::check(PyLong_FromLongLong(values[i])).release();
      PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), item);
    }
    return list.release();
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
    SubclassDispatchOff undispatched(value);
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
    int flags = meta_.dispatch_flags(value);
    if (flags < 0) throw_python_error();
    if (flags != dispatch_flags_) {
      if (reason) *reason = "dispatch keys: expected " + flags_text(dispatch_flags_) + ", got " + flags_text(flags);
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

  static std::string flags_text(int flags) {
    std::string text;
    if (flags & TensorMeta::kInference) text += "inference ";
    if (flags & TensorMeta::kConjugate) text += "conjugate ";
    if (flags & TensorMeta::kNegative) text += "negative ";
    return text.empty() ? "a plain tensor" : "a tensor marked " + text.substr(0, text.size() - 1);
  }

  std::string properties() const {
    return type_name(type_.get()) + (dispatch_flags_ ? " (" + flags_text(dispatch_flags_) + ")" : std::string()) +
           " dtype=" + safe_str(dtype_.get()) +
           " device=" + safe_str(device_.get()) + " size=" + int_list_text(sizes_) +
           " stride=" + int_list_text(strides_) +
           " requires_grad=" + (requires_grad_ ? "True" : "False");
  }

  const TensorMeta& meta_;
  py::Ref<> torch_check_;  // the bound TensorGuards.check, or null
  py::Ref<PyTypeObject> type_;
  py::Ref<> dtype_;
  py::Ref<> device_;
  DeviceCheck device_check_ = DeviceCheck::kEquals;
  bool requires_grad_ = false;
  int dispatch_flags_ = 0;  // TensorMeta::DispatchFlag bits
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
  auto match = std::make_shared<TensorMatch>(meta, tensor, dynamic_dims);
  match->build_torch_check(tensor);
  return match;
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
  match->build_torch_check(tensor);
  return match;
}

}  // namespace bytegraph::guards
