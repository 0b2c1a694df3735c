// The CPython versions bytegraph is built for. Each version-specific detail (frame layout,
// code-object constructor, how a frame is cleared) lives in one shim per minor version
// (python/py311.h, python/py312.h, python/py313.h), included only through
// frame/cpython_frame.h. Opcode differences are in the generated tables (bytecode/opcodes.h). A new minor version must be
// checked against CPython's sources and added deliberately: the build refuses otherwise.
#pragma once

#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000
#error "bytegraph needs CPython 3.11 or newer"
#elif PY_VERSION_HEX < 0x030C0000
#define BYTEGRAPH_PY311 1
#elif PY_VERSION_HEX < 0x030D0000
#define BYTEGRAPH_PY312 1
#elif PY_VERSION_HEX < 0x030E0000
#define BYTEGRAPH_PY313 1
#else
#error "bytegraph has not been checked against this CPython version (3.14+): see python/version.h"
#endif
