#include "trace/bridge.h"

#include <cstring>

#include "python/errors.h"
#include "python/import.h"
#include "trace/value.h"

namespace bytegraph::trace {

namespace {

py::Ref<> attr(PyObject* module, const char* name) {
  return check(PyObject_GetAttrString(module, name));
}

}  // namespace

const Bridge& Bridge::get() {
  // Leaked on purpose: the objects live as long as the interpreter, and tearing them down
  // during finalisation would touch torch after it is gone.
  static Bridge* bridge = [] {
    auto* b = new Bridge();
    py::Ref<> module = check(PyImport_ImportModule("bytegraph._bridge"));
    b->session_class = attr(module.get(), "Session");
    b->node_ref_class = attr(module.get(), "NodeRef");
    b->data_dependent_error = attr(module.get(), "DataDependentOp");
    b->classify = attr(module.get(), "classify");
    b->folded_result = attr(module.get(), "folded_result");
    b->tensor_attribute_kind = attr(module.get(), "tensor_attribute_kind");
    b->tensor_constant_methods = attr(module.get(), "TENSOR_CONSTANT_METHODS");
    b->compared_by_value = attr(module.get(), "compared_by_value");
    b->is_opaque_object = attr(module.get(), "is_opaque_object");
    b->subclass_metadata_guard = attr(module.get(), "subclass_metadata_guard");
    b->build_graph_module = attr(module.get(), "build_graph_module");
    b->describe_fake = attr(module.get(), "describe_fake");
    b->signature_of = attr(module.get(), "signature_of");
    b->autograd_apply_target = attr(module.get(), "autograd_apply_target");
    b->written_tensors = attr(module.get(), "written_tensors");
    b->aliases_any = attr(module.get(), "aliases_any");
    b->tensor_read_error = attr(module.get(), "tensor_read_error");
    b->list_iterator_at = attr(module.get(), "list_iterator_at");
    b->unfakeable_tensor = attr(module.get(), "UnfakeableTensor");
    py::Ref<> graph_failure = check(PyImport_ImportModule("bytegraph._graph_failure"));
    b->op_leaves_a_trace = attr(graph_failure.get(), "op_leaves_a_trace");
    b->module_leaves_a_trace = attr(graph_failure.get(), "module_leaves_a_trace");
    py::Ref<> inspect = check(PyImport_ImportModule("inspect"));
    b->inspect_signature = attr(inspect.get(), "signature");
    py::Ref<> torch = check(PyImport_ImportModule("torch"));
    b->tensor_type = attr(torch.get(), "Tensor");
    py::Ref<> nn = attr(torch.get(), "nn");
    b->module_type = attr(nn.get(), "Module");
    b->module_call = attr(b->module_type.get(), "__call__");
    py::Ref<> lazy = check(PyImport_ImportModule("torch.nn.modules.lazy"));
    b->lazy_mixin = attr(lazy.get(), "LazyModuleMixin");
    py::Ref<> infer = attr(b->lazy_mixin.get(), "_infer_parameters");
    b->lazy_infer_code = attr(infer.get(), "__code__");
    b->no_grad = attr(torch.get(), "no_grad");
    b->enable_grad = attr(torch.get(), "enable_grad");
    b->is_grad_enabled = attr(torch.get(), "is_grad_enabled");
    py::Ref<> torch_c = attr(torch.get(), "_C");
    b->set_grad_enabled = attr(torch_c.get(), "_set_grad_enabled");
    b->set_grad_enabled_class = attr(torch.get(), "set_grad_enabled");
    py::Ref<> autocast_mode = check(PyImport_ImportModule("torch.amp.autocast_mode"));
    b->autocast_class = attr(autocast_mode.get(), "autocast");
    b->enter_autocast = attr(autocast_mode.get(), "_enter_autocast");
    b->exit_autocast = attr(autocast_mode.get(), "_exit_autocast");
    py::Ref<> op = check(PyImport_ImportModule("operator"));
    b->getitem = attr(op.get(), "getitem");
    b->getattr = py::Ref<>::newref(builtin_object("getattr"));
    py::Ref<> linecache = check(PyImport_ImportModule("linecache"));
    b->linecache_getline = attr(linecache.get(), "getline");
    return b;
  }();
  return *bridge;
}

void fake_failed(const std::string& what) {
  if (PyErr_ExceptionMatches(Bridge::get().unfakeable_tensor.get())) {
    PythonError error = PythonError::fetch();
    unsupported("unfakeable_tensor", what + " cannot be copied as a fake tensor: " + error.what());
  }
  throw_python_error();
}

ObjectKind classify(PyObject* object) {
  py::Ref<> kind = check(PyObject_CallOneArg(Bridge::get().classify.get(), object));
  const char* name = PyUnicode_AsUTF8(kind.get());
  if (name == nullptr) throw_python_error();
  static const std::pair<const char*, ObjectKind> table[] = {
      {"constant", ObjectKind::Constant},         {"tensor", ObjectKind::Tensor},
      {"module", ObjectKind::Module},             {"leaf_module", ObjectKind::LeafModule},
      {"tuple", ObjectKind::Tuple},               {"list", ObjectKind::List},
      {"dict", ObjectKind::Dict},                 {"set", ObjectKind::Set},
      {"distributed_tensor", ObjectKind::DistributedTensor},
      {"python_module", ObjectKind::PythonModule},
      {"user_function", ObjectKind::UserFunction}, {"user_method", ObjectKind::UserMethod},
      {"torch_function", ObjectKind::TorchFunction}, {"builtin", ObjectKind::Builtin},
      {"pure_function", ObjectKind::PureFunction}, {"class", ObjectKind::Class},
      {"graph_break", ObjectKind::GraphBreak},     {"grad_mode", ObjectKind::GradMode},
      {"autocast", ObjectKind::Autocast},         {"null_context", ObjectKind::NullContext},
      {"handled_exception", ObjectKind::HandledException},
      {"default_torch_function", ObjectKind::DefaultTorchFunction},
      {"subclass_dispatch_switch", ObjectKind::SubclassDispatchSwitch},
      {"default_dtype_switch", ObjectKind::DefaultDtypeSwitch},
      {"saved_tensors_hooks", ObjectKind::SavedTensorsHooks},
      {"sdp_backends", ObjectKind::SdpBackends},
      {"disabled", ObjectKind::Disabled},          {"folded", ObjectKind::Folded},
      {"user_class", ObjectKind::UserClass},       {"object", ObjectKind::Object},
      {"comptime", ObjectKind::Comptime},         {"numpy_function", ObjectKind::NumpyFunction},
      {"dict_view", ObjectKind::DictView},
  };
  for (const auto& [text, value] : table)
    if (std::strcmp(text, name) == 0) return value;
  return ObjectKind::Unknown;
}

}  // namespace bytegraph::trace
