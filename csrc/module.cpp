// The extension module `bytegraph._C`: exception translation at the binding edge, then one
// submodule per stage.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "python/errors.h"

namespace nb = nanobind;

NB_MODULE(_C, m) {
  m.doc() = "bytegraph's C++ core";
  static nb::exception<bytegraph::Unsupported> unsupported(m, "Unsupported", PyExc_RuntimeError);
  static nb::exception<bytegraph::InternalError> internal(m, "InternalError", PyExc_SystemError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (bytegraph::PythonError& error) {
      error.restore();
    }
  });
  m.attr("PY_VERSION_HEX") = PY_VERSION_HEX;
  bytegraph::bind_bytecode(m);
  bytegraph::bind_frame(m);
  bytegraph::bind_guards(m);
  bytegraph::bind_trace(m);
  bytegraph::bind_codegen(m);
  bytegraph::bind_record(m);
}
