// bytegraph._C.codegen: generated code objects, callable from Python so the compile path
// (and tests) can drive codegen on their own.
#include "bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bytecode/decode.h"
#include "bytecode/liveness.h"
#include "codegen/break_call.h"
#include "codegen/break_site.h"
#include "codegen/graph_call.h"
#include "codegen/resume_function.h"
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
  if (type_name == "NamedTuple") {
    plan.kind = OutputPlan::Kind::NamedTuple;
    plan.constant = py::Ref<>::newref(node.attr("constructor").ptr());
    for (nb::handle item : node.attr("items")) plan.items.push_back(plan_from_python(item, sources));
    return plan;
  }
  if (type_name == "Null") {
    plan.kind = OutputPlan::Kind::Null;
    return plan;
  }
  if (type_name == "MakeFunction") {
    constexpr int kDefaults = 0x01, kKwDefaults = 0x02, kClosure = 0x08;
    plan.kind = OutputPlan::Kind::MakeFunction;
    plan.constant = py::Ref<>::newref(node.attr("code").ptr());
    plan.index = 0;
    if (!node.attr("defaults").is_none()) {
      plan.items.push_back(plan_from_python(node.attr("defaults"), sources));
      plan.index |= kDefaults;
    }
    if (!node.attr("kwdefaults").is_none()) {
      plan.items.push_back(plan_from_python(node.attr("kwdefaults"), sources));
      plan.index |= kKwDefaults;
    }
    for (nb::handle name : node.attr("closure")) plan.names.push_back(nb::cast<std::string>(name));
    if (!plan.names.empty()) plan.index |= kClosure;
    return plan;
  }
  if (type_name == "BoundMethod") {
    plan.kind = OutputPlan::Kind::BoundMethod;
    plan.constant = py::Ref<>::newref(nb::module_::import_("types").attr("MethodType").ptr());
    plan.items.push_back(plan_from_python(node.attr("function"), sources));
    plan.items.push_back(plan_from_python(node.attr("self"), sources));
    return plan;
  }
  if (type_name == "EnterContext") {
    plan.kind = OutputPlan::Kind::EnterContext;
    plan.constant = py::Ref<>::newref(node.attr("cls").ptr());
    return plan;
  }
  if (type_name == "Attr") {
    plan.kind = OutputPlan::Kind::Attr;
    plan.items.push_back(plan_from_python(node.attr("owner"), sources));
    plan.attribute = nb::cast<std::string>(node.attr("name"));
    return plan;
  }
  if (type_name == "Iterator") {
    plan.kind = OutputPlan::Kind::Iterator;
    for (nb::handle item : node.attr("items")) plan.items.push_back(plan_from_python(item, sources));
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

PyCodeObject* code_of(nb::handle code) {
  if (!PyCode_Check(code.ptr())) throw PythonError::make(PyExc_TypeError, "code must be a code object");
  return reinterpret_cast<PyCodeObject*>(code.ptr());
}

// 'value', 'null', 'iter', or ('context', cls) for an open grad-mode block.
std::pair<codegen::StackSlot, py::Ref<>> stack_slot(nb::handle kind) {
  if (nb::isinstance<nb::tuple>(kind) && nb::len(kind) == 2 && nb::isinstance<nb::str>(kind[0]) &&
      nb::cast<std::string>(kind[0]) == "context") {
    return {codegen::StackSlot::Context, py::Ref<>::newref(kind[1].ptr())};
  }
  std::string name = nb::isinstance<nb::str>(kind) ? nb::cast<std::string>(kind) : std::string("?");
  if (name == "value") return {codegen::StackSlot::Value, py::Ref<>()};
  if (name == "null") return {codegen::StackSlot::Null, py::Ref<>()};
  if (name == "iter") return {codegen::StackSlot::Iterator, py::Ref<>()};
  throw PythonError::make(PyExc_ValueError, "a stack slot kind is 'value', 'null', 'iter' or ('context', cls)");
}

// Slots that are not passed as arguments (NULLs, and contexts the resume function enters).
std::vector<bool> unpassed_slots(nb::handle kinds) {
  std::vector<bool> mask;
  for (nb::handle kind : kinds) {
    codegen::StackSlot slot = stack_slot(kind).first;
    mask.push_back(slot == codegen::StackSlot::Null || slot == codegen::StackSlot::Context);
  }
  return mask;
}

nb::dict describe_site(const codegen::BreakSite& site) {
  static const char* kinds[] = {"call", "branch", "simple", "terminal"};
  nb::dict result;
  result["kind"] = kinds[static_cast<int>(site.kind)];
  result["splittable"] = site.not_splittable.empty();
  result["reason"] = site.not_splittable;
  nb::list continuations;
  for (const auto& next : site.continuations) continuations.append(nb::make_tuple(next.offset, next.pops, next.pushes));
  result["continuations"] = continuations;
  return result;
}

codegen::BreakCall break_call_from_python(nb::handle code, nb::sequence inputs, nb::handle compiled_fn, nb::list stack,
                                          nb::dict locals, nb::handle kw_names, int offset, nb::list resumes,
                                          nb::handle sources, nb::handle restore_grad_mode, nb::handle cells) {
  codegen::BreakCall call;
  if (!restore_grad_mode.is_none()) {
    nb::tuple parts = nb::cast<nb::tuple>(restore_grad_mode);
    call.set_grad_enabled = py::Ref<>::newref(parts[0].ptr());
    call.grad_enabled_outside = py::Ref<>::newref(parts[1].ptr());
  }
  for (nb::handle input : inputs) call.inputs.push_back(nb::cast<const PySource&>(input).source);
  if (!compiled_fn.is_none()) call.compiled_fn = py::Ref<>::newref(compiled_fn.ptr());
  for (nb::handle plan : stack) call.stack.push_back(plan_from_python(plan, sources));
  for (auto [name, plan] : locals) call.locals.emplace_back(nb::cast<std::string>(name), plan_from_python(plan, sources));
  if (!cells.is_none())
    for (auto [name, plan] : nb::borrow<nb::dict>(cells))
      call.cells.emplace_back(nb::cast<std::string>(name), plan_from_python(plan, sources));
  if (!kw_names.is_none()) call.kw_names = py::Ref<>::newref(kw_names.ptr());
  call.offset = offset;
  for (nb::handle resume : resumes) {
    nb::tuple parts = nb::cast<nb::tuple>(resume);
    codegen::ResumeCall next;
    code_of(parts[0]);
    next.code = py::Ref<>::newref(parts[0].ptr());
    next.stack_nulls = unpassed_slots(parts[1]);
    for (nb::handle name : parts[2]) next.locals.push_back(nb::cast<std::string>(name));
    call.resumes.push_back(std::move(next));
  }
  (void)code;
  return call;
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

  sub.def(
      "live_locals",
      [](nb::handle code, int offset) {
        bytecode::DecodedCode decoded = bytecode::decode(code_of(code));
        for (std::size_t i = 0; i < decoded.instructions.size(); ++i)
          if (decoded.instructions[i]->offset == offset) return bytecode::live_locals_at(decoded.instructions, i);
        throw PythonError::make(PyExc_ValueError, "no instruction at offset " + std::to_string(offset));
      },
      nb::arg("code"), nb::arg("offset"),
      "The names of the locals some path from the instruction at `offset` may read before writing.");
  sub.def(
      "break_site",
      [](nb::handle code, int offset, bool in_grad_mode_block) {
        bytecode::DecodedCode decoded = bytecode::decode(code_of(code));
        return describe_site(codegen::find_break_site(decoded.instructions, offset, in_grad_mode_block));
      },
      nb::arg("code"), nb::arg("offset"), nb::arg("in_grad_mode_block") = false,
      "How generated code can split the frame at `offset`: {kind, splittable, reason, "
      "continuations: [(offset, pops, pushes)]}. in_grad_mode_block: the handler protecting the "
      "instruction only closes grad-mode with blocks (generated code restores the mode instead).");
  sub.def(
      "make_resume_code",
      [](nb::handle original, int offset, nb::list stack, std::vector<std::string> locals, std::string name) {
        codegen::ResumeSpec spec;
        spec.offset = offset;
        for (nb::handle kind : stack) {
          auto [slot, context] = stack_slot(kind);
          spec.stack.push_back(slot);
          spec.contexts.push_back(std::move(context));
        }
        spec.locals = std::move(locals);
        spec.name = std::move(name);
        codegen::ResumeCode resume = codegen::make_resume_code(code_of(original), spec);
        nb::dict offsets;
        for (const auto& [mine, theirs] : resume.original_offsets) offsets[nb::int_(mine)] = theirs;
        return nb::make_tuple(nb::steal(resume.code.release()), offsets);
      },
      nb::arg("original"), nb::arg("offset"), nb::arg("stack"), nb::arg("locals"), nb::arg("name"),
      "(code, {offset in code: offset in original}): a resume function continuing `original` at "
      "`offset` with the given stack shape ('value', 'null', 'iter' or ('context', cls) per slot, bottom first) and "
      "live locals as arguments.");
  sub.def(
      "generate_break_call",
      [](nb::handle code, nb::sequence inputs, nb::handle compiled_fn, nb::list stack, nb::dict locals,
         nb::handle kw_names, int offset, nb::list resumes, nb::handle sources, nb::handle restore_grad_mode,
         nb::handle cells) {
        codegen::BreakCall call = break_call_from_python(code, inputs, compiled_fn, stack, locals, kw_names, offset,
                                                         resumes, sources, restore_grad_mode, cells);
        py::Ref<> result = codegen::generate_break_call(code_of(code), call);
        return nb::steal(result.release());
      },
      nb::arg("code"), nb::arg("inputs"), nb::arg("compiled_fn").none(), nb::arg("stack"), nb::arg("locals"),
      nb::arg("kw_names").none(), nb::arg("offset"), nb::arg("resumes"), nb::arg("sources").none() = nb::none(),
      nb::arg("restore_grad_mode").none() = nb::none(), nb::arg("cells").none() = nb::none(),
      "Code that calls compiled_fn(*inputs), rebuilds the stack and locals from their plans, runs the "
      "instruction at `offset` and returns resume(*locals, *stack) for each path's "
      "(resume_code, stack slot kinds, locals) in `resumes`. restore_grad_mode=(set_grad_enabled, mode): the "
      "break is inside grad-mode blocks; the mode outside them is restored before each resume call "
      "(which enters the blocks again) and when the breaking instruction raises. cells: {name: plan} "
      "written into this frame's cell variables before the instruction runs.");
}

}  // namespace bytegraph
