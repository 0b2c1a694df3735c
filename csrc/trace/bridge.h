// The C++ side of bytegraph/_bridge.py: its function objects, looked up once per process
// (tracing calls them per op, so no attribute lookups on the hot path).
#pragma once

#include <Python.h>

#include <string>

#include "python/ref.h"

namespace bytegraph::trace {

struct Bridge {
  py::Ref<> session_class;
  py::Ref<> node_ref_class;
  py::Ref<> data_dependent_error;
  py::Ref<> classify;
  py::Ref<> folded_result;  // the traced value of a "folded" callable's call
  py::Ref<> tensor_attribute_kind;
  py::Ref<> tensor_constant_methods;  // frozenset of names
  py::Ref<> compared_by_value;        // _classify.compared_by_value
  py::Ref<> is_opaque_object;         // _classify.is_opaque_object
  py::Ref<> subclass_metadata_guard;  // _classify.subclass_metadata_guard
  py::Ref<> build_graph_module;
  py::Ref<> describe_fake;
  py::Ref<> tensor_type;     // torch.Tensor
  py::Ref<> module_type;     // torch.nn.Module
  py::Ref<> module_call;     // torch.nn.Module.__call__
  py::Ref<> lazy_mixin;       // torch.nn.modules.lazy.LazyModuleMixin
  py::Ref<> lazy_infer_code;  // the code of LazyModuleMixin._infer_parameters
  py::Ref<> getitem;         // operator.getitem
  py::Ref<> getattr;         // builtins.getattr
  py::Ref<> linecache_getline;
  py::Ref<> no_grad;            // torch.no_grad
  py::Ref<> enable_grad;        // torch.enable_grad
  py::Ref<> is_grad_enabled;    // torch.is_grad_enabled
  py::Ref<> set_grad_enabled;   // torch._C._set_grad_enabled (what graphs call)
  py::Ref<> set_grad_enabled_class;  // torch.set_grad_enabled
  py::Ref<> autocast_class;     // torch.autocast
  py::Ref<> enter_autocast;     // torch.amp.autocast_mode._enter_autocast (what graphs call)
  py::Ref<> exit_autocast;      // torch.amp.autocast_mode._exit_autocast
  py::Ref<> inspect_signature;  // inspect.signature: folded on known functions
  py::Ref<> signature_of;       // _bridge.signature_of
  py::Ref<> autograd_apply_target;  // _bridge.autograd_apply_target
  py::Ref<> written_tensors;        // _bridge.written_tensors
  py::Ref<> aliases_any;            // _bridge.aliases_any
  py::Ref<> tensor_read_error;      // _bridge.tensor_read_error
  py::Ref<> list_iterator_at;       // _bridge.list_iterator_at (generated code calls it)
  py::Ref<> unfakeable_tensor;      // _bridge.UnfakeableTensor
  py::Ref<> op_leaves_a_trace;      // _graph_failure.op_leaves_a_trace
  py::Ref<> module_leaves_a_trace;  // _graph_failure.module_leaves_a_trace

  // The process-wide instance (imports the bridge on first use; kept for the process life).
  static const Bridge& get();
};

// The kinds classify() returns, as an enum.
enum class ObjectKind {
  Constant, Tensor, DistributedTensor, Module, LeafModule, Tuple, List, Dict, Set, PythonModule, UserFunction,
  UserMethod, TorchFunction, Builtin, PureFunction, Class, UserClass, Object, GraphBreak, Disabled, Folded, GradMode, Autocast, NullContext, HandledException, Comptime, DefaultTorchFunction, SubclassDispatchSwitch, DefaultDtypeSwitch, SavedTensorsHooks, SdpBackends,
  NumpyFunction, DictView, Unknown,
};
ObjectKind classify(PyObject* object);

// Call with a Python error set by making a fake of `what` (an input, a module's tensor): a
// tensor fake tensors cannot copy becomes a graph break (the frame then runs eagerly), any
// other error is rethrown.
[[noreturn]] void fake_failed(const std::string& what);

}  // namespace bytegraph::trace
