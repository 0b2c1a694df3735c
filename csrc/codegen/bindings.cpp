// bytegraph._C.codegen: generated code objects, callable from Python so the compile path
// (and tests) can drive codegen on their own.
#include "bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bytecode/decode.h"
#include "bytecode/liveness.h"
#include "codegen/break_site.h"
#include "codegen/frame_code.h"
#include "codegen/resume_cache.h"
#include "codegen/resume_function.h"
#include "guards/python_handles.h"
#include "python/errors.h"

namespace bytegraph {

nb::object plan_view(const codegen::OutputPlan& plan) {
  using Kind = codegen::OutputPlan::Kind;
  nb::module_ bridge = nb::module_::import_("bytegraph._bridge");
  switch (plan.kind) {
    case Kind::GraphOutput:
      return bridge.attr("GraphOutput")(plan.index);
    case Kind::Constant:
      return bridge.attr("Constant")(nb::borrow(plan.constant.get()));
    case Kind::Source:
      return bridge.attr("Source")(plan.source->repr());
    case Kind::Tuple:
    case Kind::List: {
      nb::list items;
      for (const auto& item : plan.items) items.append(plan_view(item));
      if (plan.kind == Kind::List) return std::move(items);
      return nb::tuple(items);
    }
    case Kind::NamedTuple: {
      nb::list items;
      for (const auto& item : plan.items) items.append(plan_view(item));
      return bridge.attr("NamedTuple")(nb::borrow(plan.constant.get()), items);
    }
    case Kind::Dict: {
      nb::dict result;
      for (size_t i = 0; i < plan.items.size(); ++i)
        result[nb::borrow(PyTuple_GET_ITEM(plan.keys.get(), i))] = plan_view(plan.items[i]);
      return std::move(result);
    }
    default: {
      static const char* names[] = {"graph_output", "constant", "source", "tuple", "list", "dict", "named_tuple",
                                    "null", "iterator", "attr", "enter_context", "bound_method", "make_function", "set", "call",
                                    "grad_mode_exit", "context_exit", "temp", "new_object"};
      static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Kind::NewObject) + 1,
                    "a name for every plan kind");
      nb::list items;
      for (const auto& item : plan.items) items.append(plan_view(item));
      return bridge.attr("PlanView")(names[static_cast<int>(plan.kind)], items);
    }
  }
}

namespace {

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

const char* slot_name(codegen::StackSlot slot) {
  switch (slot) {
    case codegen::StackSlot::Value: return "value";
    case codegen::StackSlot::Null: return "null";
    case codegen::StackSlot::Iterator: return "iter";
    case codegen::StackSlot::Context: return "context";
    case codegen::StackSlot::ListIterator: return "list_iter";
  }
  throw InternalError("a stack slot of no known kind");
}

nb::dict describe_site(const codegen::BreakSite& site) {
  static const char* kinds[] = {"call", "branch", "simple", "terminal", "method_load"};
  nb::dict result;
  result["kind"] = kinds[static_cast<int>(site.kind)];
  result["splittable"] = site.not_splittable.empty();
  result["reason"] = site.not_splittable;
  nb::list continuations;
  for (const auto& next : site.continuations) continuations.append(nb::make_tuple(next.offset, next.pops, next.pushes));
  result["continuations"] = continuations;
  return result;
}

nb::list code_list(const std::vector<py::Ref<>>& codes) {
  nb::list result;
  for (const auto& code : codes) result.append(nb::borrow(code.get()));
  return result;
}

}  // namespace

void bind_codegen(nb::module_& m) {
  nb::module_ sub = m.def_submodule("codegen", "Generated code objects");
  nb::class_<codegen::FramePlan>(sub, "FramePlan", "The code replacing one traced frame, planned before its graph is compiled.")
      .def_prop_ro("eager_reason",
                   [](const codegen::FramePlan& plan) -> nb::object {
                     if (plan.eager_reason.empty()) return nb::none();
                     return nb::str(plan.eager_reason.c_str());
                   },
                   "Why the frame runs as it is (it cannot be split exactly at its break), or None.")
      .def_prop_ro("is_split", [](const codegen::FramePlan& plan) { return plan.split.has_value(); })
      .def_prop_ro("resume_codes", [](const codegen::FramePlan& plan) { return code_list(plan.resume_codes()); })
      .def(
          "generate",
          [](const codegen::FramePlan& plan, nb::handle compiled_fn, nb::handle on_failure) {
            py::Ref<> code = codegen::generate_frame_code(plan, compiled_fn.is_none() ? nullptr : compiled_fn.ptr(),
                                                          on_failure.is_none() ? nullptr : on_failure.ptr());
            return nb::steal(code.release());
          },
          nb::arg("compiled_fn").none(), nb::arg("on_failure").none() = nb::none(),
          "The new code object: it calls compiled_fn (None when the graph has no operations) with the graph's "
          "inputs and returns the frame's result, or continues in the resume functions after a break. When the "
          "graph raises, on_failure (if not None) is called with the exception and, if it returns, the frame's "
          "original code runs from its start instead.");
  sub.def(
      "plan_frame",
      [](nb::handle code, const trace::TraceResult& result) { return codegen::plan_frame(code_of(code), result); },
      nb::arg("code"), nb::arg("result"),
      "Plans the code replacing `code`'s frame from its trace result (splitting it at the trace's break, "
      "making the resume functions), before the graph is compiled.");
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
      "continuations: [(offset, pops, pushes)]}.");
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
      "live locals as arguments (uncached; the compile path uses the resume cache).");
  sub.def("is_resume_code", [](nb::handle code) { return codegen::is_resume_code(code.ptr()); }, nb::arg("code"));
  sub.def(
      "resume_origin",
      [](nb::handle code) -> nb::object {
        const codegen::ResumeOrigin* origin = codegen::resume_origin(code.ptr());
        if (origin == nullptr) return nb::none();
        nb::dict offsets;
        for (const auto& [mine, theirs] : origin->offsets) offsets[nb::int_(mine)] = theirs;
        return nb::make_tuple(nb::borrow(origin->original.get()), offsets);
      },
      nb::arg("code"), "(original code, {offset in code: offset in original}) for a resume code, else None.");
  sub.def(
      "resume_continuation",
      [](nb::handle code) -> nb::object {
        const codegen::ResumeOrigin* origin = codegen::resume_origin(code.ptr());
        if (origin == nullptr) return nb::none();
        nb::list stack;
        for (codegen::StackSlot slot : origin->stack) stack.append(slot_name(slot));
        return nb::make_tuple(nb::borrow(origin->original.get()), origin->offset, stack);
      },
      nb::arg("code"),
      "(original code, offset it continues at, stack slot kinds bottom first) for a resume code, else None.");
  sub.def("resume_codes", [] { return code_list(codegen::resume_codes()); }, "Every cached resume code.");
  sub.def("resume_cache_size", [] { return codegen::resume_cache_size(); });
  sub.def("reset_resume_cache", [] { codegen::reset_resume_cache(); });
}

}  // namespace bytegraph
