#include "trace/break_state.h"

#include <algorithm>
#include <unordered_set>

#include "bytecode/liveness.h"
#include "trace/symbolic.h"

namespace bytegraph::trace {

namespace {

// A value that has no plan: the frame is not split.
struct NotRestorable {
  std::string why;
};

class PlanWriter {
 public:
  PlanWriter(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs, std::vector<guards::SourcePtr>& sources)
      : tracer_(tracer), frame_(frame), outputs_(outputs), sources_(sources) {
    py::Ref<> bridge = check(PyImport_ImportModule("bytegraph._bridge"));
    null_class_ = check(PyObject_GetAttrString(bridge.get(), "Null"));
    iterator_class_ = check(PyObject_GetAttrString(bridge.get(), "Iterator"));
    attr_class_ = check(PyObject_GetAttrString(bridge.get(), "Attr"));
    grad_exit_class_ = check(PyObject_GetAttrString(bridge.get(), "GradModeExit"));
    bound_method_class_ = check(PyObject_GetAttrString(bridge.get(), "BoundMethod"));
    make_function_class_ = check(PyObject_GetAttrString(bridge.get(), "MakeFunction"));
  }

  py::Ref<> plan(const ValuePtr& value) {
    const Bridge& bridge = tracer_.bridge;
    if (value->is_null()) return check(PyObject_CallNoArgs(null_class_.get()));
    // A value read from somewhere is re-read from there: rebuilding a list or a module
    // would lose its identity. (Values with a source are never mutated by a trace: that
    // is a break of its own.)
    if (value->source()) {
      sources_.push_back(value->source());
      py::Ref<> name = check(PyUnicode_FromString(value->source()->repr().c_str()));
      return check(PyObject_CallOneArg(bridge.source_class.get(), name.get()));
    }
    if (int node = graph_node_of(value); node >= 0) {  // a tensor or a symbolic number
      py::Ref<> index = check(PyLong_FromLong(output_index(node)));
      return check(PyObject_CallOneArg(bridge.graph_output_class.get(), index.get()));
    }
    if (value->is_constant()) return check(PyObject_CallOneArg(bridge.constant_class.get(), value->constant()));
    require_single_reference(value);
    if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
      py::Ref<> list = plans_of(seq->items);
      if (seq->is_list()) return list;
      if (!seq->tuple_type) return check(PyList_AsTuple(list.get()));
      py::Ref<> constructor = named_tuple_constructor(seq->tuple_type.get());
      return check(PyObject_CallFunctionObjArgs(bridge.named_tuple_class.get(), constructor.get(), list.get(), nullptr));
    }
    if (auto* dict = dynamic_cast<DictValue*>(value.get())) {
      py::Ref<> result = check(PyDict_New());
      for (size_t i = 0; i < dict->keys.size(); ++i)
        check_status(PyDict_SetItem(result.get(), dict->keys[i].get(), plan(dict->values[i]).get()));
      return result;
    }
    if (auto* iterator = dynamic_cast<IteratorValue*>(value.get())) {
      const size_t position = iterator->position();
      Args rest;
      while (ValuePtr item = iterator->next()) rest.push_back(std::move(item));
      iterator->set_position(position);  // describing must not advance the loop
      return check(PyObject_CallOneArg(iterator_class_.get(), plans_of(rest).get()));
    }
    if (auto* exit = dynamic_cast<GradModeExitValue*>(value.get())) {
      return check(PyObject_CallOneArg(grad_exit_class_.get(), exit->previous() ? Py_True : Py_False));
    }
    if (auto* function = dynamic_cast<UserFunctionValue*>(value.get())) return make_function(*function);
    if (auto* method = dynamic_cast<BoundMethodValue*>(value.get())) {
      // `obj.method` for a user method: types.MethodType(function, obj) at run time.
      py::Ref<> function_plan;
      if (method->function->source()) {
        function_plan = plan(method->function);
      } else if (PyObject* real = method->function->real_object()) {
        function_plan = check(PyObject_CallOneArg(tracer_.bridge.constant_class.get(), real));
      } else {
        throw NotRestorable{value->repr()};
      }
      py::Ref<> self_plan = plan(method->self);
      return check(PyObject_CallFunctionObjArgs(bound_method_class_.get(), function_plan.get(), self_plan.get(), nullptr));
    }
    if (auto [owner, name] = value->bound_attribute(); owner) {
      py::Ref<> owner_plan = plan(owner);
      py::Ref<> attribute = check(PyUnicode_FromString(name.c_str()));
      return check(PyObject_CallFunctionObjArgs(attr_class_.get(), owner_plan.get(), attribute.get(), nullptr));
    }
    throw NotRestorable{value->repr()};
  }

 private:
  // Each plan builds a new object: a list, dict, iterator or function made in the frame and reachable
  // twice (two locals, a local and the loop) would become two objects, so it is not rebuilt.
  void require_single_reference(const ValuePtr& value) {
    const bool is_mutable = dynamic_cast<DictValue*>(value.get()) != nullptr ||
                            dynamic_cast<UserFunctionValue*>(value.get()) != nullptr ||
                            dynamic_cast<IteratorValue*>(value.get()) != nullptr ||
                            (dynamic_cast<SequenceValue*>(value.get()) != nullptr &&
                             static_cast<SequenceValue&>(*value).is_list());
    if (is_mutable && !made_here_.insert(value.get()).second)
      throw NotRestorable{value->repr() + ", which is referenced from two places"};
  }

  // A function made in this frame: MAKE_FUNCTION again, with this frame's globals and with
  // its closure read from this frame's cells (LOAD_CLOSURE by name).
  py::Ref<> make_function(const UserFunctionValue& function) {
    if (function.function || function.globals.get() != frame_.globals.get())
      throw NotRestorable{function.repr() + " (not made in this frame)"};
    py::Ref<> names = check(PyTuple_New(static_cast<Py_ssize_t>(function.closure.size())));
    for (size_t i = 0; i < function.closure.size(); ++i) {
      std::string name = cell_name(function.closure[i]);
      if (name.empty()) throw NotRestorable{function.repr() + ", whose closure is not this frame's"};
      PyTuple_SET_ITEM(names.get(), i, check(PyUnicode_FromString(name.c_str())).release());
    }
    py::Ref<> defaults = function.defaults.empty() ? py::Ref<>::newref(Py_None) : check(PyList_AsTuple(plans_of(function.defaults).get()));
    py::Ref<> kwdefaults = py::Ref<>::newref(Py_None);
    if (!function.kwdefaults.empty()) {
      kwdefaults = check(PyDict_New());
      for (const auto& [name, value] : function.kwdefaults)
        check_status(PyDict_SetItemString(kwdefaults.get(), name.c_str(), plan(value).get()));
    }
    return check(PyObject_CallFunctionObjArgs(make_function_class_.get(), function.code.get(), names.get(), defaults.get(),
                                              kwdefaults.get(), nullptr));
  }

  // The name of this frame's cell or free variable that is `cell`, or "" if none is.
  std::string cell_name(const ValuePtr& cell) const {
    const auto& names = frame_.code->localsplus_names;
    for (size_t slot = 0; slot < frame_.locals.size() && slot < names.size(); ++slot)
      if (frame_.locals[slot] == cell) return names[slot];
    const size_t first_free = names.size() - std::min(names.size(), frame_.closure.size());
    for (size_t i = 0; i < frame_.closure.size(); ++i)
      if (frame_.closure[i] == cell && first_free + i < names.size()) return names[first_free + i];
    return "";
  }

  py::Ref<> plans_of(const Args& items) {
    py::Ref<> list = check(PyList_New(static_cast<Py_ssize_t>(items.size())));
    for (size_t i = 0; i < items.size(); ++i) PyList_SET_ITEM(list.get(), i, plan(items[i]).release());
    return list;
  }

  int output_index(int node) {
    auto found = std::find(outputs_.begin(), outputs_.end(), node);
    if (found != outputs_.end()) return static_cast<int>(found - outputs_.begin());
    outputs_.push_back(node);
    return static_cast<int>(outputs_.size()) - 1;
  }

  Tracer& tracer_;
  const FrameState& frame_;
  std::vector<int>& outputs_;
  std::vector<guards::SourcePtr>& sources_;
  std::unordered_set<const Value*> made_here_;
  py::Ref<> null_class_, iterator_class_, attr_class_, grad_exit_class_, bound_method_class_, make_function_class_;
};

}  // namespace

BreakState describe_break_state(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs,
                                std::vector<guards::SourcePtr>& sources) {
  BreakState state;
  state.kw_names = frame.kw_names ? frame.kw_names.copy() : py::Ref<>::newref(Py_None);
  state.stack = check(PyList_New(0));
  state.locals = check(PyDict_New());
  state.cells = check(PyDict_New());
  py::Ref<> enabled = check(PyObject_CallNoArgs(tracer.bridge.is_grad_enabled.get()));
  state.grad_enabled = enabled.get() == Py_True;
  // Restored when some value has no plan, so the graph's outputs stay those of the stop.
  std::vector<int> kept_outputs = outputs;
  std::vector<guards::SourcePtr> kept_sources = sources;
  try {
    PlanWriter writer(tracer, frame, outputs, sources);
    std::vector<std::string> live = bytecode::live_locals_at(frame.code->instructions, frame.pc);
    std::unordered_set<std::string> live_set(live.begin(), live.end());
    const auto& names = frame.code->localsplus_names;
    // Zero-argument super() reads the first argument (and the __class__ cell) without naming
    // it: code that has __class__ keeps its first argument live.
    const size_t nfree = std::min(names.size(), static_cast<size_t>(frame.code->nfree));
    if (frame.code->argcount > 0 && std::find(names.end() - nfree, names.end(), "__class__") != names.end())
      live_set.insert(names[0]);
    // Cell and free variables are not passed on: the resume function gets the cells themselves
    // in its closure. What the trace stored in this frame's cells is written back.
    const size_t fast_locals = std::min(names.size(), static_cast<size_t>(frame.code->nvarnames));
    const size_t first_free = frame.locals.size() - std::min(frame.locals.size(), static_cast<size_t>(frame.code->nfree));
    for (size_t slot = 0; slot < first_free && slot < names.size(); ++slot) {
      if (slot >= frame.code->is_cell.size() || !frame.code->is_cell[slot]) continue;
      auto* cell = dynamic_cast<CellValue*>(frame.locals[slot].get());
      if (cell == nullptr || !cell->contents) continue;  // not made yet, or empty
      py::Ref<> plan;
      try {
        plan = writer.plan(cell->contents);
      } catch (const NotRestorable& error) {
        throw NotRestorable{"cell variable '" + names[slot] + "' holds " + error.why};
      }
      check_status(PyDict_SetItemString(state.cells.get(), names[slot].c_str(), plan.get()));
    }
    for (size_t slot = 0; slot < frame.locals.size() && slot < fast_locals; ++slot) {
      const ValuePtr& value = frame.locals[slot];
      if (!value || !live_set.count(names[slot])) continue;
      if (slot < frame.code->is_cell.size() && frame.code->is_cell[slot]) continue;
      py::Ref<> plan;
      try {
        plan = writer.plan(value);
      } catch (const NotRestorable& error) {
        throw NotRestorable{"local '" + names[slot] + "' holds " + error.why};
      }
      check_status(PyDict_SetItemString(state.locals.get(), names[slot].c_str(), plan.get()));
    }
    for (size_t i = 0; i < frame.stack.size(); ++i) {
      try {
        check_status(PyList_Append(state.stack.get(), writer.plan(frame.stack[i]).get()));
      } catch (const NotRestorable& error) {
        throw NotRestorable{"stack item " + std::to_string(i) + " is " + error.why};
      }
    }
  } catch (const NotRestorable& error) {
    state.not_restorable = "cannot rebuild " + error.why;
    outputs = std::move(kept_outputs);
    sources = std::move(kept_sources);
  }
  return state;
}

}  // namespace bytegraph::trace
