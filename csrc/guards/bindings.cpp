#include "bindings.h"

namespace bytegraph {

void bind_guards(nb::module_& m) { m.def_submodule("guards"); }

}  // namespace bytegraph
