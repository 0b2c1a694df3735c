// Each stage exposes itself to Python through one `bind_<stage>` function in its own
// `<stage>/bindings.cpp`, registered as the submodule `bytegraph._C.<stage>` so that every
// stage can be tested alone from Python.
#pragma once

#include <nanobind/nanobind.h>

namespace bytegraph {

namespace nb = nanobind;

namespace codegen {
struct OutputPlan;
}
// A read-only Python rendering of a plan (bytegraph._bridge view classes), for tests and tools.
nb::object plan_view(const codegen::OutputPlan& plan);

void bind_bytecode(nb::module_& m);
void bind_frame(nb::module_& m);
void bind_guards(nb::module_& m);
void bind_trace(nb::module_& m);
void bind_codegen(nb::module_& m);
void bind_record(nb::module_& m);
void bind_introspect(nb::module_& m);

}  // namespace bytegraph
