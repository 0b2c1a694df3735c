#include "bindings.h"

namespace bytegraph {

void bind_trace(nb::module_& m) { m.def_submodule("trace"); }

}  // namespace bytegraph
