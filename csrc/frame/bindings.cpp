#include "bindings.h"

namespace bytegraph {

void bind_frame(nb::module_& m) { m.def_submodule("frame", "PEP 523 frame hook"); }

}  // namespace bytegraph
