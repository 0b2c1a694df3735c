// The extension module `bytegraph._C`: exception translation at the binding edge, the
// graph-break kinds, then one submodule per stage.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "python/break_kinds.h"
#include "python/errors.h"

namespace nb = nanobind;

NB_MODULE(_C, m) {
  m.doc() = "bytegraph's C++ core";
  bytegraph::init_exception_types(m.ptr());
  // The one translator (python/errors.h) for the core's exception types; nanobind's own
  // (python_error, cast errors, std::invalid_argument ...) keep nanobind's translation.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const bytegraph::PythonError&) {
      bytegraph::set_python_error_from_current_exception();
    } catch (const bytegraph::UserCodeError&) {
      bytegraph::set_python_error_from_current_exception();
    } catch (const bytegraph::Unsupported&) {
      bytegraph::set_python_error_from_current_exception();
    } catch (const bytegraph::InternalError&) {
      bytegraph::set_python_error_from_current_exception();
    }
  });
  m.def("break_kinds", [] {
    nb::dict kinds;
    for (const bytegraph::BreakKind& kind : bytegraph::break_kinds())
      kinds[nb::str(kind.name.data(), kind.name.size())] = nb::str(kind.hint.data(), kind.hint.size());
    return kinds;
  }, "{kind: hint} for every graph-break kind the core can raise.");
  m.def("break_hint", [](const std::string& kind) { return std::string(bytegraph::break_hint(kind)); },
        nb::arg("kind"), "The plain-language hint for a graph-break kind.");
  m.attr("PY_VERSION_HEX") = PY_VERSION_HEX;
  bytegraph::bind_bytecode(m);
  bytegraph::bind_frame(m);
  bytegraph::bind_guards(m);
  bytegraph::bind_trace(m);
  bytegraph::bind_codegen(m);
  bytegraph::bind_record(m);
  bytegraph::bind_introspect(m);
}
