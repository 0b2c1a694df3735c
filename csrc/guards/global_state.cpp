// GLOBAL_STATE leaves: process state a graph was traced under and silently depends on.
// Grad mode decides whether the graph's outputs record autograd history, so a graph traced
// with grad enabled must not serve a call made under torch.no_grad(), and vice versa.
// These leaves sit on the tree's root and ignore the (absent) root value.
#include "guards/leaf_guard.h"
#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::guards {

namespace {

// torch._C.is_grad_enabled, looked up once: the check is one C call returning a bool singleton.
PyObject* is_grad_enabled_function() {
  static PyObject* function = [] {
    py::Ref<> torch_c = import_module("torch._C");
    return check(PyObject_GetAttrString(torch_c.get(), "is_grad_enabled")).release();  // immortal here
  }();
  return function;
}

class GradModeMatch final : public LeafGuard {
 public:
  explicit GradModeMatch(bool enabled) : enabled_(enabled), function_(is_grad_enabled_function()) {}

  bool check(PyObject*) const override {
    py::Ref<> now = bytegraph::check(PyObject_CallNoArgs(function_));
    return (now.get() == Py_True) == enabled_;
  }
  std::string explain(PyObject*, const std::string&) const override {
    return std::string("grad mode: traced with grad ") + (enabled_ ? "enabled" : "disabled") + ", called with grad " +
           (enabled_ ? "disabled" : "enabled");
  }
  std::string describe(const std::string&) const override {
    return std::string("GLOBAL_STATE: torch.is_grad_enabled() == ") + (enabled_ ? "True" : "False");
  }
  std::string dedupe_key() const override { return "GRAD_MODE"; }
  int cost_rank() const override { return kCostValue; }

 private:
  bool enabled_;
  PyObject* function_;  // borrowed from the static above
};

}  // namespace

LeafPtr make_grad_mode_match(bool enabled) { return std::make_shared<GradModeMatch>(enabled); }

bool grad_mode_enabled_now() {
  py::Ref<> now = check(PyObject_CallNoArgs(is_grad_enabled_function()));
  return now.get() == Py_True;
}

}  // namespace bytegraph::guards
