// bytegraph._C.guards: sources, GuardSet and guard trees from Python, so each guard kind
// can be tested on real values. A frame is given as a list of local slot values (UNBOUND
// marks an empty slot), a globals dict, and optionally a builtins dict and a closure tuple.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "binding_gc.h"
#include "bindings.h"
#include "guards/accessor.h"
#include "guards/guard_set.h"
#include "guards/python_handles.h"
#include "guards/source.h"
#include "python/errors.h"

namespace bytegraph {

namespace {

using guards::FrameValues;
using guards::GuardSet;
using guards::GuardTree;
using guards::Source;
using guards::SourcePtr;


PyObject* unbound_marker = nullptr;  // borrowed: kept alive by the module attribute UNBOUND

void require_non_negative(int value, const char* what) {
  if (value < 0) throw PythonError::make(PyExc_ValueError, std::string(what) + " must be >= 0");
}

int is_dict(PyObject* obj) { return PyDict_Check(obj); }
int is_tuple(PyObject* obj) { return PyTuple_Check(obj); }

// The frame a Python caller describes, with its slot array kept alive alongside.
class PyFrame {
 public:
  PyFrame(nb::handle locals, nb::handle globals, nb::handle builtins, nb::handle closure) {
    py::Ref<> items = check(PySequence_Fast(locals.ptr(), "locals must be a sequence"));
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items.get());
    slots_.reserve(count);
    for (Py_ssize_t i = 0; i < count; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(items.get(), i);  // borrowed
      slots_.push_back(item == unbound_marker ? nullptr : item);
    }
    items_ = std::move(items);
    values_.locals = slots_.data();
    values_.nlocals = static_cast<int>(slots_.size());
    values_.globals = optional_of(globals, is_dict, "globals must be a dict");
    values_.builtins = optional_of(builtins, is_dict, "builtins must be a dict");
    values_.closure = optional_of(closure, is_tuple, "closure must be a tuple of cells");
  }
  const FrameValues& values() const { return values_; }

 private:
  static PyObject* optional_of(nb::handle value, int (*is_valid)(PyObject*), const char* error) {
    if (!value.is_valid() || value.is_none()) return nullptr;
    if (!is_valid(value.ptr())) throw PythonError::make(PyExc_TypeError, error);
    return value.ptr();  // borrowed from the caller for the duration of the call
  }
  py::Ref<> items_;              // keeps the slot values alive
  std::vector<PyObject*> slots_;  // borrowed from items_
  FrameValues values_;
};

void bind_sources(nb::module_& m) {
  nb::class_<PySource>(m, "Source", "Where a guarded value comes from (immutable).")
      .def("__repr__", [](const PySource& s) { return s.source->repr(); })
      .def("__str__", [](const PySource& s) { return s.source->repr(); })
      .def_prop_ro("kind", [](const PySource& s) { return guards::source_kind_name(s.source->kind); })
      .def_prop_ro("name", [](const PySource& s) { return s.source->name; })
      .def_prop_ro("index", [](const PySource& s) { return s.source->index; })
      .def_prop_ro("base",
                   [](const PySource& s) -> nb::object {
                     if (!s.source->base) return nb::none();
                     return nb::cast(PySource{s.source->base});
                   })
      .def("attr", [](const PySource& s, std::string name) {
        return PySource{guards::attr_source(s.source, std::move(name))};
      })
      .def("item", [](const PySource& s, nb::handle key) {
        if (PyObject_Hash(key.ptr()) == -1) throw_python_error();
        return PySource{guards::item_source(s.source, py::Ref<>::newref(key.ptr()))};
      }, nb::arg("key").none())
      .def("type", [](const PySource& s) { return PySource{guards::type_source(s.source)}; })
      .def("spec", [](const PySource& s) { return nb::steal(guards::source_spec(s.source).release()); },
           "The source as a plain tuple (kind, name, index, key, base spec or None).");
  m.def("source_from_spec", [](nb::handle spec) { return PySource{guards::source_from_spec(spec.ptr())}; },
        nb::arg("spec"), "The source a spec() tuple describes.");

  m.def("local", [](std::string name, int slot) {
    require_non_negative(slot, "slot");
    return PySource{guards::local_source(std::move(name), slot)};
  }, nb::arg("name"), nb::arg("slot"));
  m.def("global_", [](std::string name) {
    return PySource{guards::global_source(std::move(name))};
  }, nb::arg("name"));
  m.def("builtin", [](std::string name) {
    return PySource{guards::builtin_source(std::move(name))};
  }, nb::arg("name"));
  m.def("closure", [](std::string name, int index) {
    require_non_negative(index, "index");
    return PySource{guards::closure_source(std::move(name), index)};
  }, nb::arg("name"), nb::arg("index"));
}

void bind_source_reader(nb::module_& m) {
  m.def(
      "read_source",
      [](const PySource& s, nb::handle locals, nb::handle globals, nb::handle builtins,
         nb::handle closure) -> nb::object {
        PyFrame frame(locals, globals, builtins, closure);
        py::Ref<> value = guards::read_source(s.source, frame.values());
        return value ? nb::steal(value.release()) : nb::borrow(unbound_marker);
      },
      nb::arg("source"), nb::arg("locals"), nb::arg("globals") = nb::none(), nb::arg("builtins") = nb::none(),
      nb::arg("closure") = nb::none(),
      "The value at `source` in the frame described as for GuardTree.check_locals, read as the "
      "guards read it; UNBOUND where it is missing.");
}

void traverse_guard_set(const GuardSet& set, py::Visitor& visit) { set.traverse(visit); }
void clear_guard_set(GuardSet& set) { set.clear(); }
void traverse_guard_tree(const PyGuardTree& handle, py::Visitor& visit) {
  if (handle.tree) handle.tree->traverse(visit);
}
void clear_guard_tree(PyGuardTree& handle) { handle.tree.reset(); }

void bind_guard_set(nb::module_& m) {
  nb::class_<GuardSet>(m, "GuardSet", "Guards collected per source; build() makes a tree.",
                       nb::type_slots(GcSlots<GuardSet, traverse_guard_set, clear_guard_set>::slots))
      .def(nb::init<>())
      .def("add_type_match", [](GuardSet& g, const PySource& s, nb::handle type) {
        if (!PyType_Check(type.ptr())) throw PythonError::make(PyExc_TypeError, "expected a type");
        g.add_type_match(s.source, reinterpret_cast<PyTypeObject*>(type.ptr()));
      })
      .def("add_id_match",
           [](GuardSet& g, const PySource& s, nb::handle obj) { g.add_id_match(s.source, obj.ptr()); },
           nb::arg("source"), nb::arg("object").none())
      .def("add_equals_match",
           [](GuardSet& g, const PySource& s, nb::handle value) {
             g.add_equals_match(s.source, value.ptr());
           },
           nb::arg("source"), nb::arg("value").none())
      .def("add_value_match",
           [](GuardSet& g, const PySource& s, nb::handle value) { g.add_value_match(s.source, value.ptr()); },
           nb::arg("source"), nb::arg("value"))
      .def("add_tensor_match",
           [](GuardSet& g, const PySource& s, nb::handle tensor, std::vector<int> dynamic_dims) {
             g.add_tensor_match(s.source, tensor.ptr(), dynamic_dims);
           },
           nb::arg("source"), nb::arg("tensor").none(), nb::arg("dynamic_dims") = std::vector<int>{})
      .def("add_length_match", [](GuardSet& g, const PySource& s, Py_ssize_t length) {
        g.add_length_match(s.source, length);
      })
      .def("add_dict_keys_match", [](GuardSet& g, const PySource& s, nb::handle keys) {
        py::Ref<> tuple = check(PySequence_Tuple(keys.ptr()));
        g.add_dict_keys_match(s.source, tuple.get());
      })
      .def("add_none_match", [](GuardSet& g, const PySource& s, bool is_none) {
        g.add_none_match(s.source, is_none);
      })
      .def("add_tensor_match_unchecked",
           [](GuardSet& g, const PySource& s, nb::handle tensor, std::vector<int> sizes, std::vector<int> strides) {
             g.add_tensor_match_unchecked(s.source, tensor.ptr(), sizes, strides);
           },
           nb::arg("source"), nb::arg("tensor").none(), nb::arg("unchecked_sizes"), nb::arg("unchecked_strides"))
      .def("add_symbol_binding",
           [](GuardSet& g, const PySource& s, std::string kind, int dim, int slot) {
             g.add_symbol_binding(s.source, kind, dim, slot);
           },
           nb::arg("source"), nb::arg("kind"), nb::arg("dim"), nb::arg("slot"),
           "Shape guards: read the value at `source` (its size/stride `dim`, or the int) into `slot`.")
      .def("add_shape_guard",
           [](GuardSet& g, nb::handle guard, std::string text) { g.add_shape_guard(guard.ptr(), text); },
           nb::arg("guard"), nb::arg("text"),
           "A shape guard: an expression tuple over slots (see csrc/guards/shape_guard.h).")
      .def("add_size_match", [](GuardSet& g, const PySource& s, Py_ssize_t length) { g.add_size_match(s.source, length); })
      .def("add_set_match",
           [](GuardSet& g, const PySource& s, nb::handle type, nb::handle members) {
             if (!PyType_Check(type.ptr())) throw PythonError::make(PyExc_TypeError, "expected a type");
             py::Ref<> tuple = check(PySequence_Tuple(members.ptr()));
             g.add_set_match(s.source, type.ptr(), tuple.get());
           })
      .def("add_dict_lacks_key",
           [](GuardSet& g, const PySource& s, nb::handle key) { g.add_dict_lacks_key(s.source, key.ptr()); })
      .def("add_lacks_attr", [](GuardSet& g, const PySource& s, nb::handle name) {
        if (!PyUnicode_Check(name.ptr())) throw PythonError::make(PyExc_TypeError, "an attribute name is a str");
        g.add_lacks_attr(s.source, name.ptr());
      })
      .def("add_same_object",
           [](GuardSet& g, const PySource& first, const PySource& second) { g.add_same_object(first.source, second.source); },
           nb::arg("first"), nb::arg("second"), "`second` is the same object as `first`.")
      .def("add_distinct_objects",
           [](GuardSet& g, const std::vector<PySource>& sources) {
             std::vector<SourcePtr> list;
             for (const auto& s : sources) list.push_back(s.source);
             g.add_distinct_objects(list);
           },
           nb::arg("sources"))
      .def("add_global_state_now",
           [](GuardSet& g, bool autocast_details, bool no_handled_exception, unsigned traced_states) {
             guards::GlobalStateSnapshot snapshot = guards::GlobalStateSnapshot::now();
             if (autocast_details) snapshot.compare_autocast_settings();
             snapshot.no_handled_exception = no_handled_exception;
             snapshot.compared_traced_states = traced_states;
             g.add_global_state_match(std::move(snapshot));
           },
           nb::arg("autocast_details"), nb::arg("no_handled_exception"), nb::arg("traced_states"),
           "GLOBAL_STATE as it is now, comparing what a trace compared (TraceResult.global_state_flags).")
      .def("describe", &GuardSet::describe)
      .def("__len__", &GuardSet::size)
      .def("build", [](const GuardSet& g) { return PyGuardTree{g.build()}; });
}

void bind_guard_tree(nb::module_& m) {
  nb::class_<PyGuardTree>(m, "GuardTree", "A built guard tree.",
                          nb::type_slots(GcSlots<PyGuardTree, traverse_guard_tree, clear_guard_tree>::slots))
      .def("check_locals",
           [](const PyGuardTree& t, nb::handle locals, nb::handle globals, nb::handle builtins,
              nb::handle closure) {
             PyFrame frame(locals, globals, builtins, closure);
             return t.get().check(frame.values());
           },
           nb::arg("locals"), nb::arg("globals") = nb::none(), nb::arg("builtins") = nb::none(),
           nb::arg("closure") = nb::none())
      .def("explain_locals",
           [](const PyGuardTree& t, nb::handle locals, nb::handle globals, nb::handle builtins,
              nb::handle closure) {
             PyFrame frame(locals, globals, builtins, closure);
             return t.get().explain_failure(frame.values());
           },
           nb::arg("locals"), nb::arg("globals") = nb::none(), nb::arg("builtins") = nb::none(),
           nb::arg("closure") = nb::none())
      // Benchmark helper: runs check() `iterations` times in C++ and returns ns per check,
      // so the binding's own overhead is not measured.
      .def("time_check",
           [](const PyGuardTree& t, nb::handle locals, nb::handle globals, nb::handle builtins,
              nb::handle closure, long iterations) {
             PyFrame frame(locals, globals, builtins, closure);
             bool all_passed = true;
             auto start = std::chrono::steady_clock::now();
             for (long i = 0; i < iterations; ++i) all_passed &= t.get().check(frame.values());
             auto elapsed = std::chrono::steady_clock::now() - start;
             double ns = std::chrono::duration<double, std::nano>(elapsed).count();
             return std::make_pair(ns / static_cast<double>(std::max(iterations, 1L)), all_passed);
           },
           nb::arg("locals"), nb::arg("globals") = nb::none(), nb::arg("builtins") = nb::none(),
           nb::arg("closure") = nb::none(), nb::arg("iterations") = 100000)
      .def("describe", [](const PyGuardTree& t) { return t.get().describe(); })
      .def("__len__", [](const PyGuardTree& t) { return t.get().guard_count(); });
}

}  // namespace

void bind_guards(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("guards", "guard sources, guard sets and guard trees");
  nb::object marker = nb::steal(PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type)));
  m.attr("UNBOUND") = marker;
  unbound_marker = marker.ptr();
  bind_sources(m);
  bind_source_reader(m);
  bind_guard_set(m);
  bind_guard_tree(m);
}

}  // namespace bytegraph
