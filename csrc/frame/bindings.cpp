// `bytegraph._C.frame`: the frame hook's internal API (wrapped by bytegraph/_frame.py).
#include "bindings.h"

#include <memory>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "frame/cache_entry.h"
#include "frame/captured_call.h"
#include "frame/code_cache.h"
#include "frame/eval_hook.h"
#include "frame/python_compiler.h"
#include "frame/thread_state.h"
#include "guards/python_handles.h"
#include "python/errors.h"

namespace bytegraph {
namespace {

using frame::CodeCache;

PyCodeObject* as_code(nb::handle object) {
  if (!PyCode_Check(object.ptr())) {
    throw PythonError::make(PyExc_TypeError, std::string("bytegraph: expected a code object, got ") +
                                                 Py_TYPE(object.ptr())->tp_name);
  }
  return reinterpret_cast<PyCodeObject*>(object.ptr());
}

nb::object take(py::Ref<> ref) { return nb::steal(ref.release()); }

nb::object set_callback(nb::handle callback) {
  std::shared_ptr<frame::FrameCompiler> compiler;
  if (!callback.is_none()) {
    if (!PyCallable_Check(callback.ptr())) {
      throw PythonError::make(PyExc_TypeError, "bytegraph: the frame callback must be callable or None");
    }
    compiler = std::make_shared<frame::PythonCallbackCompiler>(py::Ref<>::newref(callback.ptr()));
  }
  return take(frame::set_thread_compiler(std::move(compiler), py::Ref<>::newref(callback.ptr())));
}

nb::object get_callback() {
  frame::ThreadHookState* state = frame::current_thread_state();
  if (state == nullptr || !state->handle) return nb::none();
  return nb::borrow(state->handle.get());
}

nb::list cache_entries(nb::handle code) {
  nb::list result;
  CodeCache* cache = CodeCache::find(as_code(code));
  if (cache == nullptr) return result;
  // A copy: building the items runs Python, during which another thread may add an entry.
  const std::vector<std::shared_ptr<frame::CacheEntry>> entries = cache->entries();
  for (const auto& entry : entries) {
    nb::dict item;
    item["code"] = nb::borrow(entry->code.get());
    item["function"] = nb::borrow(entry->function.get());
    item["keepalive"] = entry->keepalive ? nb::borrow(entry->keepalive.get()) : nb::none();
    item["has_guards"] = bool(entry->guards);
    nb::list guards;
    for (const std::string& line : entry->describe_guards()) guards.append(nb::str(line.c_str()));
    item["guards"] = guards;
    result.append(item);
  }
  return result;
}

void add_entry(nb::handle function, nb::handle code, nb::handle guard_fn, nb::handle keepalive) {
  if (!PyFunction_Check(function.ptr())) {
    throw PythonError::make(PyExc_TypeError, "bytegraph: add_entry needs a function object");
  }
  auto* original = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function.ptr()));
  std::unique_ptr<guards::GuardTree> guards = frame::guard_tree_from_python(guard_fn.ptr(), original);
  auto entry = frame::make_cache_entry(
      original, function.ptr(), py::Ref<>::newref(reinterpret_cast<PyObject*>(as_code(code))), std::move(guards),
      keepalive.is_none() ? py::Ref<>() : py::Ref<>::newref(keepalive.ptr()));
  CodeCache::ensure(original).add(std::move(entry));
}

nb::dict stats() {
  const frame::HookStats& s = frame::hook_stats();
  nb::dict result;
  result["frames_seen"] = s.frames_seen;
  result["cache_hits"] = s.cache_hits;
  result["cache_misses"] = s.cache_misses;
  result["compile_failures"] = s.compile_failures;
  return result;
}

}  // namespace

void bind_frame(nb::module_& m) {
  frame::register_guard_object_converter([](PyObject* object) -> std::unique_ptr<guards::GuardTree> {
    PyGuardTree* handle = nullptr;
    if (!nb::try_cast(nb::handle(object), handle) || handle == nullptr) return nullptr;
    if (!handle->tree) throw std::invalid_argument("this GuardTree is already used by a cache entry");
    return std::move(handle->tree);
  });
  frame::init_code_cache();
  nb::module_ sub = m.def_submodule("frame", "PEP 523 frame hook and per-code cache");
  sub.def("set_callback", &set_callback, nb::arg("callback").none(),
          "Sets this thread's frame callback (None disables); returns the previous one.");
  sub.def("get_callback", &get_callback);
  frame::add_captured_call_type(sub.ptr());
  sub.def("set_forced_eager", &frame::set_forced_eager, nb::arg("forced"),
          "set_stance('force_eager') is in force: CapturedCall runs with no callback.");
  sub.def("new_module_generation", &frame::new_module_generation,
          "Starts a new GenerationTracker generation (what entering a capturing span does).");
  sub.def("set_verify_correctness", &frame::set_verify_correctness, nb::arg("verify"),
          "config.verify_correctness: CapturedCall goes through its verified_call.");
  sub.def("mark_skip", [](nb::handle code) { frame::mark_skip(as_code(code)); }, nb::arg("code"));
  sub.def("mark_run_only", [](nb::handle code) { frame::mark_run_only(as_code(code)); }, nb::arg("code"),
          "Past its recompile limit: its entries still serve calls, nothing more is compiled in them.");
  sub.def("is_skipped", [](nb::handle code) {
    CodeCache* cache = CodeCache::find(as_code(code));
    return cache != nullptr && cache->skipped();
  }, nb::arg("code"));
  sub.def("mark_own_code", [](nb::handle code) { frame::mark_own_code(as_code(code)); },
          nb::arg("code"));
  sub.def("is_own_code", [](nb::handle code) { return frame::is_own_code(as_code(code)); },
          nb::arg("code"));
  sub.def("cache_entries", &cache_entries, nb::arg("code"));
  sub.def("add_entry", &add_entry, nb::arg("function"), nb::arg("code"),
          nb::arg("guard_fn").none() = nb::none(), nb::arg("keepalive").none() = nb::none());
  sub.def("clear_cache", [](nb::handle code) {
    if (CodeCache* cache = CodeCache::find(as_code(code))) cache->clear_entries();
  }, nb::arg("code"));
  sub.def("miss_count", [](nb::handle code) -> unsigned long long {
    CodeCache* cache = CodeCache::find(as_code(code));
    return cache == nullptr ? 0 : cache->misses();
  }, nb::arg("code"));
  sub.def("reset", &frame::reset_all_caches, "Drops every cache entry; returns how many.");
  sub.def("live_cache_count", &frame::live_cache_count);
  sub.def("enabled_thread_count", &frame::enabled_thread_count);
  sub.def("hook_installed", &frame::hook_installed);
  sub.def("set_raise_on_compile_error", &frame::set_raise_on_compile_error, nb::arg("raise_"));
  sub.def("raise_on_compile_error", &frame::raise_on_compile_error);
  sub.def("current_miss_reasons", []() {
    // Why each existing entry of the frame being compiled rejected it (first failing guard),
    // for recompile logs and guard_fail_fn. Empty outside a compile.
    std::vector<std::string> reasons;
    const frame::FrameView* view = frame::current_frame_view();
    if (view == nullptr) return reasons;
    CodeCache* cache = CodeCache::find(view->code());
    if (cache == nullptr) return reasons;
    frame::ThreadHookState* state = frame::current_thread_state();
    PyObject* backend_key = state && state->compiler ? state->compiler->backend_key() : nullptr;
    // A copy: explaining a failure may run Python (and release the GIL between bytecodes),
    // during which another thread compiling this code may add an entry.
    const std::vector<std::shared_ptr<frame::CacheEntry>> entries = cache->entries();
    for (const auto& entry : entries) {
      if (!entry->made_for(backend_key)) reasons.push_back("compiled for another backend");
      else if (entry->guards) reasons.push_back(entry->guards->explain_failure(view->values()));
    }
    return reasons;
  }, "Why each cache entry of the frame being compiled on this thread did not match.");
  sub.def("set_propagated_error_type", [](nb::handle type) {
    bool valid = type.is_none() || PyExceptionClass_Check(type.ptr());
    if (!valid && PyTuple_Check(type.ptr())) {
      valid = true;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(type.ptr()); ++i)
        valid = valid && PyExceptionClass_Check(PyTuple_GET_ITEM(type.ptr(), i));
    }
    if (!valid) {
      throw PythonError::make(PyExc_TypeError,
                              "set_propagated_error_type needs an exception class, a tuple of them, or None");
    }
    frame::set_propagated_error_type(type.is_none() ? nullptr : type.ptr());
  }, nb::arg("type").none());
  sub.attr("PROPAGATE_ATTRIBUTE") = kPropagateAttribute;
  sub.def("stats", &stats);
  sub.def("reset_stats", &frame::reset_hook_stats);
}

}  // namespace bytegraph
