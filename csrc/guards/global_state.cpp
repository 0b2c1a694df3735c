// GLOBAL_STATE: process state a graph was traced under and silently depends on. Grad mode
// decides whether outputs record autograd history; the default dtype what factory calls
// make; autocast which dtype each op computes in; deterministic algorithms which kernels run;
// inference mode what kind of tensors come out; a torch-function mode (also how
// torch.set_default_device works) what every torch call does. The trace also folds queries of
// these (`torch.is_autocast_enabled()`) into constants. One leaf on the tree's root compares a
// snapshot taken when the frame started with the state at each call. State few traces touch
// (saved-tensors hooks disabled, the scaled-dot-product-attention backends, torch.nn's hooks
// on every module) is compared only for a trace that read or switched it.
//
// The hot path calls each reader's C function directly (they are METH_NOARGS builtins of
// torch._C): no argument tuple, no vectorcall dispatch, ~10 ns a component.
#include <array>
#include <optional>

#include "guards/leaf_guard.h"
#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::guards {

namespace {

// One no-argument query of torch._C, resolved once and kept for the process.
class Query {
 public:
  Query() = default;
  Query(PyObject* module, const char* name) {
    function_ = check(PyObject_GetAttrString(module, name)).release();  // immortal here
    if (PyCFunction_Check(function_) && (PyCFunction_GET_FLAGS(function_) & METH_NOARGS)) {
      direct_ = PyCFunction_GET_FUNCTION(function_);
      self_ = PyCFunction_GET_SELF(function_);
    }
  }
  py::Ref<> operator()() const {
    if (direct_) return check(direct_(self_, nullptr));
    return check(PyObject_CallNoArgs(function_));
  }
  py::Ref<> operator()(PyObject* argument) const { return check(PyObject_CallOneArg(function_, argument)); }

 private:
  PyObject* function_ = nullptr;
  PyCFunction direct_ = nullptr;
  PyObject* self_ = nullptr;
};

// What each component is called in listings and failure reasons, and how it is read.
enum Component : int {
  kGradMode,
  kInferenceMode,
  kDefaultDtype,
  kAnyAutocast,
  kDeterministic,
  kDeterministicWarnOnly,
  kTorchFunctionEnabled,
  kTorchFunctionModes,
  kComponentCount,
};

constexpr std::array<const char*, kComponentCount> kComponentNames = {
    "grad mode (torch.is_grad_enabled())",
    "inference mode (torch.is_inference_mode_enabled())",
    "default dtype (torch.get_default_dtype())",
    "autocast (any device enabled)",
    "deterministic algorithms (torch.are_deterministic_algorithms_enabled())",
    "deterministic algorithms warn only",
    "torch function enabled",
    "torch function modes active",
};

// Autocast per device type: whether it is on and the dtype it casts to. Read only when the
// cheap "any autocast" component says autocast is on, or when the trace read these settings.
constexpr std::array<const char*, 2> kAutocastDevices = {"cpu", "cuda"};

struct Readers {
  std::array<Query, kComponentCount> components;
  Query is_autocast_enabled, get_autocast_dtype, is_autocast_cache_enabled, mode_at;
  // Per TracedState, the queries whose answers make its value (several: a tuple of them).
  std::array<std::vector<Query>, kTracedStateCount> traced;
  // torch.nn.modules.module's global hook dicts, filled in place by registering.
  std::vector<py::Ref<>> module_hooks;
  std::array<py::Ref<>, kAutocastDevices.size()> device_names;

  static const Readers& get() {
    static const Readers* readers = [] {
      auto* r = new Readers();  // lives for the process, like the torch functions it holds
      py::Ref<> c = import_module("torch._C");
      PyObject* m = c.get();
      r->components[kGradMode] = Query(m, "is_grad_enabled");
      r->components[kInferenceMode] = Query(m, "is_inference_mode_enabled");
      r->components[kDefaultDtype] = Query(m, "get_default_dtype");
      r->components[kAnyAutocast] = Query(m, "_is_any_autocast_enabled");
      r->components[kDeterministic] = Query(m, "_get_deterministic_algorithms");
      r->components[kDeterministicWarnOnly] = Query(m, "_get_deterministic_algorithms_warn_only");
      r->components[kTorchFunctionEnabled] = Query(m, "_is_torch_function_enabled");
      r->components[kTorchFunctionModes] = Query(m, "_len_torch_function_stack");
      py::Ref<> autograd = check(PyObject_GetAttrString(m, "_autograd"));
      r->traced[static_cast<int>(TracedState::SavedTensorsHooks)].emplace_back(
          autograd.get(), "_saved_tensors_hooks_get_disabled_error_message");
      for (const char* name : {"_get_flash_sdp_enabled", "_get_mem_efficient_sdp_enabled", "_get_math_sdp_enabled",
                               "_get_cudnn_sdp_enabled", "_get_overrideable_sdp_enabled", "_get_sdp_priority_order"})
        if (PyObject_HasAttrString(m, name)) r->traced[static_cast<int>(TracedState::SdpBackends)].emplace_back(m, name);
      py::Ref<> nn_module = import_module("torch.nn.modules.module");
      for (const char* name : {"_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks",
                               "_global_backward_hooks"})
        r->module_hooks.push_back(check(PyObject_GetAttrString(nn_module.get(), name)));
      r->is_autocast_enabled = Query(m, "is_autocast_enabled");
      r->get_autocast_dtype = Query(m, "get_autocast_dtype");
      r->is_autocast_cache_enabled = Query(m, "is_autocast_cache_enabled");
      r->mode_at = Query(m, "_get_function_stack_at");
      for (size_t i = 0; i < kAutocastDevices.size(); ++i)
        r->device_names[i] = check(PyUnicode_FromString(kAutocastDevices[i]));
      return r;
    }();
    return *readers;
  }
};

constexpr std::array<const char*, kTracedStateCount> kTracedStateNames = {
    "saved tensors hooks disabled (the error message, None when enabled)",
    "scaled dot product attention backends (flash, mem_efficient, math, cudnn, overrideable enabled; priority order)",
    "hooks on every module's call (torch.nn.modules.module._global_forward_pre_hooks, _global_forward_hooks, "
    "_global_backward_pre_hooks, _global_backward_hooks: how many)",
};

// How many hooks global hook dict `i` holds.
Py_ssize_t module_hook_count(const Readers& r, size_t i) {
  Py_ssize_t size = PyObject_Size(r.module_hooks[i].get());
  if (size < 0) throw_python_error();
  return size;
}

py::Ref<> read_traced_state(const Readers& r, int state) {
  if (state == static_cast<int>(TracedState::ModuleHooks)) {
    py::Ref<> sizes = check(PyTuple_New(static_cast<Py_ssize_t>(r.module_hooks.size())));
    for (size_t i = 0; i < r.module_hooks.size(); ++i)
      PyTuple_SET_ITEM(sizes.get(), i, check(PyLong_FromSsize_t(module_hook_count(r, i))).release());
    return sizes;
  }
  const std::vector<Query>& queries = r.traced[state];
  if (queries.size() == 1) return queries[0]();
  py::Ref<> values = check(PyTuple_New(static_cast<Py_ssize_t>(queries.size())));
  for (size_t i = 0; i < queries.size(); ++i) PyTuple_SET_ITEM(values.get(), i, queries[i]().release());
  return values;
}

bool same_value(PyObject* a, PyObject* b) {
  if (a == b) return true;  // bools, dtypes, None and small ints are singletons
  if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) return PyUnicode_Compare(a, b) == 0;
  const bool numbers = PyLong_CheckExact(a) && PyLong_CheckExact(b);
  const bool lists = PyList_CheckExact(a) && PyList_CheckExact(b);  // the sdp priority order
  if (!numbers && !lists) return false;
  int equal = PyObject_RichCompareBool(a, b, Py_EQ);
  if (equal < 0) PyErr_Clear();
  return equal == 1;
}

// Whether traced state `state` is `then` now, read without building its value: the check
// runs on every call of a frame that called a module.
bool traced_state_matches(const Readers& r, int state, PyObject* then) {
  if (state == static_cast<int>(TracedState::ModuleHooks)) {
    for (size_t i = 0; i < r.module_hooks.size(); ++i)
      if (module_hook_count(r, i) != PyLong_AsSsize_t(PyTuple_GET_ITEM(then, i))) return false;
    return true;
  }
  const std::vector<Query>& queries = r.traced[state];
  if (queries.size() == 1) return same_value(queries[0]().get(), then);
  for (size_t i = 0; i < queries.size(); ++i)
    if (!same_value(queries[i]().get(), PyTuple_GET_ITEM(then, i))) return false;
  return true;
}

bool handling_an_exception() {
  auto handled = py::Ref<>::steal(PyErr_GetHandledException());
  return handled && handled.get() != Py_None;
}

std::string text_of(PyObject* value) {
  py::Ref<> text = py::Ref<>::steal(PyObject_Repr(value));
  if (!text) {
    PyErr_Clear();
    return "?";
  }
  return PyUnicode_AsUTF8(text.get());
}

}  // namespace

// The detailed state, compared only when autocast or a mode is involved: each autocast
// device's switch and dtype (and the cast cache), and each torch-function mode by identity.
struct GlobalStateDetails {
  struct Entry {
    std::string name;
    py::Ref<> value;
    bool autocast;  // compared only when the snapshot compares autocast settings
  };
  std::vector<Entry> values;

  // Entry `i`'s value now, read without building its name: the check runs on every call.
  // Layout: each autocast device's switch and dtype, the cast cache, then the modes.
  static py::Ref<> current(const Readers& r, size_t i) {
    constexpr size_t kDeviceEntries = 2 * kAutocastDevices.size();
    if (i < kDeviceEntries) {
      PyObject* device = r.device_names[i / 2].get();
      return i % 2 == 0 ? r.is_autocast_enabled(device) : r.get_autocast_dtype(device);
    }
    if (i == kDeviceEntries) return r.is_autocast_cache_enabled();
    py::Ref<> index = check(PyLong_FromSsize_t(static_cast<Py_ssize_t>(i - kDeviceEntries - 1)));
    return r.mode_at(index.get());
  }

  static GlobalStateDetails read(const Readers& r, Py_ssize_t modes) {
    GlobalStateDetails d;
    for (const char* device : kAutocastDevices) {
      d.values.push_back({std::string("torch.is_autocast_enabled('") + device + "')", nullptr, true});
      d.values.push_back({std::string("torch.get_autocast_dtype('") + device + "')", nullptr, true});
    }
    d.values.push_back({"torch.is_autocast_cache_enabled()", nullptr, true});
    for (Py_ssize_t i = 0; i < modes; ++i) d.values.push_back({"torch function mode " + std::to_string(i), nullptr, false});
    for (size_t i = 0; i < d.values.size(); ++i) d.values[i].value = current(r, i);
    return d;
  }
};

namespace {

class GlobalStateMatch final : public LeafGuard {
 public:
  explicit GlobalStateMatch(GlobalStateSnapshot snapshot) : snapshot_(std::move(snapshot)) {}

  bool check(PyObject*) const override { return first_difference().empty(); }
  std::string explain(PyObject*, const std::string&) const override {
    std::string difference = first_difference();
    return difference.empty() ? "global state" : "global state: " + difference;
  }
  std::string describe(const std::string&) const override {
    std::string text = "GLOBAL_STATE:";
    const char* separator = " ";
    for (int i = 0; i < kComponentCount; ++i) {
      text += separator + std::string(kComponentNames[i]) + " == " + text_of(snapshot_.components[i].get());
      separator = ", ";
    }
    for (const auto& entry : details(snapshot_).values)
      if (snapshot_.autocast_details || !entry.autocast) text += ", " + entry.name + " == " + text_of(entry.value.get());
    if (snapshot_.no_handled_exception) text += ", sys.exception() is None";
    for (int state = 0; state < kTracedStateCount; ++state)
      if (snapshot_.compares(static_cast<TracedState>(state)))
        text += std::string(", ") + kTracedStateNames[state] + " == " + text_of(snapshot_.traced_states[state].get());
    return text;
  }
  std::string dedupe_key() const override { return "GLOBAL_STATE"; }
  int cost_rank() const override { return kCostValue; }
  void traverse(py::Visitor& visit) const override {
    if (!py::sole_owner(snapshot_.details)) return;
    for (const auto& entry : snapshot_.details->values) visit(entry.value);
  }

 private:
  static const GlobalStateDetails& details(const GlobalStateSnapshot& snapshot) { return *snapshot.details; }

  // "" when every component matches; otherwise the first that does not, in words.
  std::string first_difference() const {
    const Readers& r = Readers::get();
    for (int i = 0; i < kComponentCount; ++i) {
      py::Ref<> now = r.components[i]();
      if (!same_value(now.get(), snapshot_.components[i].get()))
        return std::string(kComponentNames[i]) + ": traced with " + text_of(snapshot_.components[i].get()) +
               ", called with " + text_of(now.get());
    }
    for (int state = 0; state < kTracedStateCount; ++state) {
      if (!snapshot_.compares(static_cast<TracedState>(state))) continue;
      PyObject* then = snapshot_.traced_states[state].get();
      if (!traced_state_matches(r, state, then))
        return std::string(kTracedStateNames[state]) + ": traced with " + text_of(then) + ", called with " +
               text_of(read_traced_state(r, state).get());
    }
    if (snapshot_.no_handled_exception && handling_an_exception())
      return "sys.exception(): traced with None, called while the caller handles an exception";
    if (!snapshot_.compare_details) return "";
    // The mode count matched above, so the snapshot's entries are the ones to read now.
    const auto& then = details(snapshot_).values;
    for (size_t i = 0; i < then.size(); ++i) {
      if (then[i].autocast && !snapshot_.autocast_details) continue;
      py::Ref<> now = GlobalStateDetails::current(r, i);
      if (!same_value(now.get(), then[i].value.get()))
        return then[i].name + ": traced with " + text_of(then[i].value.get()) + ", called with " + text_of(now.get());
    }
    return "";
  }

  GlobalStateSnapshot snapshot_;
};

}  // namespace

GlobalStateSnapshot GlobalStateSnapshot::now() {
  const Readers& r = Readers::get();
  GlobalStateSnapshot snapshot;
  for (int i = 0; i < kComponentCount; ++i) snapshot.components.push_back(r.components[i]());
  Py_ssize_t modes = PyLong_AsSsize_t(snapshot.components[kTorchFunctionModes].get());
  snapshot.details = std::make_shared<const GlobalStateDetails>(GlobalStateDetails::read(r, modes));
  snapshot.compare_details = modes > 0;
  if (snapshot.components[kAnyAutocast].get() == Py_True) snapshot.compare_autocast_settings();
  for (int state = 0; state < kTracedStateCount; ++state) snapshot.traced_states[state] = read_traced_state(r, state);
  return snapshot;
}

void GlobalStateSnapshot::compare_autocast_settings() {
  autocast_details = true;
  compare_details = true;
}

LeafPtr make_global_state_match(GlobalStateSnapshot snapshot) {
  return std::make_shared<GlobalStateMatch>(std::move(snapshot));
}

bool grad_mode_enabled_now() { return Readers::get().components[kGradMode]().get() == Py_True; }

}  // namespace bytegraph::guards
