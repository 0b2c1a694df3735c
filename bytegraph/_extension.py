"""Loads the C++ core, `bytegraph._C`.

A sanitizer build lives outside the package (see the Makefile's `asan` target); the
environment variable BYTEGRAPH_EXTENSION_DIR points at it.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys


def _load():
    directory = os.environ.get("BYTEGRAPH_EXTENSION_DIR")
    if not directory:
        return importlib.import_module("bytegraph._C")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, "_C" + suffix)
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location("bytegraph._C", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["bytegraph._C"] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"bytegraph: no _C extension in BYTEGRAPH_EXTENSION_DIR={directory!r}")


_C = _load()
