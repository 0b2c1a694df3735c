// The one place the frame stage reaches CPython's frame internals: picks the version shim.
// Everything that differs between 3.11, 3.12 and 3.13 (frame layout, who pops a frame whose
// result the hook produced, the code-extra API names) is behind `py::shim`.
#pragma once

#include "python/version.h"

#if defined(BYTEGRAPH_PY311)
#include "python/py311.h"
#elif defined(BYTEGRAPH_PY312)
#include "python/py312.h"
#elif defined(BYTEGRAPH_PY313)
#include "python/py313.h"
#endif
