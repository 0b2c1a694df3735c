#include "bindings.h"

namespace bytegraph {

void bind_bytecode(nb::module_& m) { m.def_submodule("bytecode", "bytecode codec"); }

}  // namespace bytegraph
