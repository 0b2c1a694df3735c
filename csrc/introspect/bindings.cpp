// bytegraph._C.introspect: the live trace state that comptime functions read
// (csrc/trace/comptime.h), as Python objects. bytegraph/comptime.py builds the public
// ComptimeContext / ComptimeVar API on top of these.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "python/errors.h"
#include "trace/comptime.h"

namespace bytegraph {

namespace {

using trace::ComptimeContext;
using trace::ValuePtr;

struct ComptimeState {
  std::shared_ptr<ComptimeContext> context;
};

// A symbolic value seen through a comptime context. Its repr, type and constant stay
// readable after the context ends (the value owns what they need); graph queries do not.
struct SymbolicValue {
  std::shared_ptr<ComptimeContext> context;
  ValuePtr value;
};

nb::object wrap_value(const std::shared_ptr<ComptimeContext>& context, ValuePtr value) {
  if (!value) return nb::none();
  return nb::cast(SymbolicValue{context, std::move(value)});
}

nb::object as_object(py::Ref<> ref) { return ref ? nb::steal(ref.release()) : nb::none(); }

py::Ref<> make_python_context(std::shared_ptr<ComptimeContext> context) {
  try {
    nb::object native = nb::cast(ComptimeState{std::move(context)});
    nb::object wrapper = nb::module_::import_("bytegraph.comptime").attr("ComptimeContext")(native);
    return py::Ref<>::steal(wrapper.release().ptr());
  } catch (nb::python_error& error) {
    error.restore();
    throw_python_error();
  }
}

void bind_symbolic_value(nb::module_& m) {
  nb::class_<SymbolicValue>(m, "SymbolicValue", "A value of the symbolic interpreter, as comptime sees it.")
      .def("__repr__", [](const SymbolicValue& v) { return v.value->repr(); })
      .def_prop_ro("kind", [](const SymbolicValue& v) { return trace::comptime_value_kind(*v.value); },
                   "the value's kind: tensor, constant, list, tuple, dict, user_function, module, ...")
      .def("python_type", [](const SymbolicValue& v) -> nb::object {
        PyObject* type = trace::comptime_python_type(*v.value);  // borrowed
        return type ? nb::borrow(type) : nb::none();
      }, "type(v) at run time, or None if the tracer does not know it")
      .def("is_constant", [](const SymbolicValue& v) { return bool(trace::comptime_python_constant(*v.value)); })
      .def("as_constant", [](const SymbolicValue& v) -> nb::object {
        py::Ref<> constant = trace::comptime_python_constant(*v.value);
        if (!constant) throw PythonError::make(PyExc_TypeError, v.value->repr() + " is not a Python constant at compile time");
        return as_object(std::move(constant));
      }, "the Python value, if fully known at compile time; TypeError otherwise")
      .def("is_tensor", [](const SymbolicValue& v) { return v.value->is_tensor(); })
      .def_prop_ro("fake", [](const SymbolicValue& v) -> nb::object {
        auto* tensor = dynamic_cast<trace::TensorValue*>(v.value.get());
        return tensor && tensor->fake() ? nb::borrow(tensor->fake()) : nb::none();
      }, "the fake tensor of a tensor value, else None")
      .def_prop_ro("items", [](const SymbolicValue& v) -> nb::object {
        auto* seq = dynamic_cast<trace::SequenceValue*>(v.value.get());
        if (seq == nullptr) return nb::none();
        nb::list items;
        for (const auto& item : seq->items) items.append(wrap_value(v.context, item));
        return seq->is_list() ? nb::object(items) : nb::object(nb::tuple(items));
      }, "the items of a list or tuple value (as SymbolicValues), else None")
      .def_prop_ro("source", [](const SymbolicValue& v) -> nb::object {
        return v.value->source() ? nb::cast(v.value->source()->repr()) : nb::none();
      }, "where the real value was read from (L['x'], G['w'], ...), or None")
      .def("graph_position", [](const SymbolicValue& v) {
        if (!v.context->alive()) throw PythonError::make(PyExc_RuntimeError, "the comptime call of this value has ended");
        return v.context->graph_position(*v.value);
      }, "index of the value's node in ComptimeState.graph_module()'s node list, or -1");
}

void bind_comptime_state(nb::module_& m) {
  nb::class_<ComptimeState>(m, "ComptimeState", "The live trace, valid during one comptime call.")
      .def_prop_ro("alive", [](const ComptimeState& s) { return s.context->alive(); })
      .def("frame_count", [](const ComptimeState& s) { return s.context->frame_count(); })
      .def("code", [](const ComptimeState& s, int level) { return nb::borrow(s.context->code(level)); },
           nb::arg("stacklevel") = 0)
      .def("offset", [](const ComptimeState& s, int level) { return s.context->offset(level); },
           nb::arg("stacklevel") = 0, "offset of the instruction being executed in that frame")
      .def("local", [](const ComptimeState& s, const std::string& name, int level) {
        return wrap_value(s.context, s.context->local(name, level));
      }, nb::arg("name"), nb::arg("stacklevel") = 0)
      .def("locals", [](const ComptimeState& s, int level) {
        nb::list result;
        for (auto& [name, value] : s.context->locals(level))
          result.append(nb::make_tuple(name, wrap_value(s.context, value)));
        return result;
      }, nb::arg("stacklevel") = 0, "[(name, value)] of the bound locals, in slot order")
      .def("stack", [](const ComptimeState& s, int level) {
        nb::list result;
        for (const auto& value : s.context->stack(level)) result.append(wrap_value(s.context, value));
        return result;
      }, nb::arg("stacklevel") = 0, "the value stack, bottom first")
      .def("backtrace", [](const ComptimeState& s, int level) {
        nb::list result;
        for (const auto& f : s.context->backtrace(level))
          result.append(nb::make_tuple(f.filename, f.lineno, f.name, f.offset));
        return result;
      }, nb::arg("stacklevel") = 0, "[(filename, lineno, function, offset)], outermost first")
      .def("graph_module", [](const ComptimeState& s) { return as_object(s.context->graph_module()); },
           "a GraphModule of the nodes recorded so far (the trace's graph is unchanged)")
      .def("guards", [](const ComptimeState& s) { return s.context->guards(); })
      .def("graph_break", [](const ComptimeState& s, const std::string& message) {
        if (!s.context->alive()) throw PythonError::make(PyExc_RuntimeError, "the comptime call has ended");
        s.context->request_graph_break(message);
        throw Unsupported("comptime_graph_break", message);
      }, nb::arg("message"), "ends the graph before the comptime call (raises to unwind the function)");
}

}  // namespace

void bind_introspect(nb::module_& m) {
  nb::module_ introspect = m.def_submodule("introspect", "The live trace state for comptime");
  bind_symbolic_value(introspect);
  bind_comptime_state(introspect);
  trace::set_comptime_context_factory(make_python_context);
}

}  // namespace bytegraph
