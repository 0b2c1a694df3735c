// bytegraph._C.codegen: generated code objects, callable from Python so the compile path
// (and tests) can drive codegen on their own.
#include "bindings.h"

#include "codegen/graph_call.h"
#include "guards/python_handles.h"
#include "python/errors.h"

namespace bytegraph {
namespace {

using codegen::OutputPlan;

// The plan arrives as a Python tree: GraphOutput(i) / Constant(v) objects from the torch
// bridge (anything with an integer `index` or a `value` attribute and that class name),
// guards.Source handles, and tuple / list / dict containers of those.
OutputPlan plan_from_python(nb::handle node, nb::handle sources) {
  OutputPlan plan;
  PySource* source = nullptr;
  if (nb::try_cast(node, source) && source != nullptr) {
    plan.kind = OutputPlan::Kind::Source;
    plan.source = source->source;
    return plan;
  }
  if (nb::isinstance<nb::tuple>(node) || nb::isinstance<nb::list>(node)) {
    plan.kind = nb::isinstance<nb::tuple>(node) ? OutputPlan::Kind::Tuple : OutputPlan::Kind::List;
    for (nb::handle item : node) plan.items.push_back(plan_from_python(item, sources));
    return plan;
  }
  if (nb::isinstance<nb::dict>(node)) {
    plan.kind = OutputPlan::Kind::Dict;
    nb::dict dict = nb::borrow<nb::dict>(node);
    plan.keys = check(PySequence_Tuple(dict.keys().ptr()));
    for (auto [key, value] : dict) plan.items.push_back(plan_from_python(value, sources));
    return plan;
  }
  std::string type_name = nb::cast<std::string>(nb::str(node.type().attr("__name__")));
  if (type_name == "GraphOutput") {
    plan.kind = OutputPlan::Kind::GraphOutput;
    plan.index = nb::cast<int>(node.attr("index"));
    return plan;
  }
  if (type_name == "Constant") {
    plan.kind = OutputPlan::Kind::Constant;
    plan.constant = py::Ref<>::newref(node.attr("value").ptr());
    return plan;
  }
  if (type_name == "Source") {
    // The bridge names a source; the trace result maps names to the sources themselves.
    nb::object found = sources.is_none() ? nb::object() : nb::borrow<nb::dict>(sources).get(node.attr("name"), nb::none());
    if (!found.is_valid() || found.is_none()) {
      throw PythonError::make(PyExc_KeyError, "codegen: no source named " + nb::cast<std::string>(node.attr("name")));
    }
    return plan_from_python(found, sources);
  }
  throw PythonError::make(PyExc_TypeError, "codegen: cannot rebuild an output from a " + type_name);
}

}  // namespace

void bind_codegen(nb::module_& m) {
  nb::module_ sub = m.def_submodule("codegen", "Generated code objects");
  sub.def(
      "generate_graph_call",
      [](nb::handle code, nb::sequence inputs, nb::handle compiled_fn, nb::handle plan, nb::handle sources) {
        if (!PyCode_Check(code.ptr())) throw PythonError::make(PyExc_TypeError, "code must be a code object");
        codegen::GraphCall call;
        for (nb::handle input : inputs) call.inputs.push_back(nb::cast<const PySource&>(input).source);
        if (!compiled_fn.is_none()) call.compiled_fn = py::Ref<>::newref(compiled_fn.ptr());
        call.result = plan_from_python(plan, sources);
        py::Ref<> result = codegen::generate_graph_call(reinterpret_cast<PyCodeObject*>(code.ptr()), call);
        return nb::steal(result.release());
      },
      nb::arg("code"), nb::arg("inputs"), nb::arg("compiled_fn").none(), nb::arg("plan"), nb::arg("sources").none() = nb::none(),
      "A code object that calls compiled_fn(*inputs) and rebuilds the return value from plan.");
}

}  // namespace bytegraph
