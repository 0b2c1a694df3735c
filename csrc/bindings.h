// Each stage exposes itself to Python through one `bind_<stage>` function in its own
// `<stage>/bindings.cpp`, registered as the submodule `bytegraph._C.<stage>` so that every
// stage can be tested alone from Python.
#pragma once

#include <nanobind/nanobind.h>

namespace bytegraph {

namespace nb = nanobind;

void bind_bytecode(nb::module_& m);
void bind_frame(nb::module_& m);
void bind_guards(nb::module_& m);
void bind_trace(nb::module_& m);
void bind_codegen(nb::module_& m);
void bind_record(nb::module_& m);

}  // namespace bytegraph
