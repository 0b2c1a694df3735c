// Readable text for Python objects in guard listings and failure reasons. Slow path only:
// these call repr()/str() and never throw (a failing repr becomes a placeholder).
#pragma once

#include <Python.h>

#include <string>

namespace bytegraph::guards {

// repr(obj), or "<unprintable T>" if repr raised (the error is cleared).
std::string safe_repr(PyObject* obj);
// safe_repr cut to about 80 characters: long reprs (a module, a big tuple) would swamp a
// guard listing or a failure reason.
std::string short_repr(PyObject* obj);
// str(obj), with the same fallback.
std::string safe_str(PyObject* obj);
// `int`, `torch.Tensor`, `torch.nn.parameter.Parameter`: module-qualified unless builtin.
std::string type_name(PyTypeObject* type);

}  // namespace bytegraph::guards
