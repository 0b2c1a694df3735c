"""torch._dynamo, loaded only when something uses it.

Fake tensors (torch._subclasses.fake_tensor) read `torch._dynamo.config` when a fake mode is
made, and importing that submodule runs the whole `torch._dynamo` package first: about 90
modules and most of a cold start's first second, none of which a compile with the eager
backend or a callable uses. So, when bytegraph is imported before anything imported
torch._dynamo, the package is registered unexecuted: its submodules (config) import on
their own, and the package itself runs its `__init__` the first time one of its
attributes is read (`torch._dynamo.reset`, `from torch._dynamo import mark_dynamic`, an AOT
backend), exactly as a normal import would have, in the same module object.
"""

import functools
import importlib.util
import sys
import threading
import types

_NAME = "torch._dynamo"


class _DeferredPackage(types.ModuleType):
    """The torch._dynamo package before its __init__ has run."""

    def __setattr__(self, name, value):
        # Patching torch._dynamo (e.g. `torch._dynamo.optimize = ...`) patches the real package:
        # its __init__ runs first, so it cannot overwrite the patch later.
        submodule = isinstance(value, types.ModuleType) and value.__name__ == f"{_NAME}.{name}"
        if not submodule and not (name.startswith("__") and name.endswith("__")):
            _load(self)
        types.ModuleType.__setattr__(self, name, value)

    def __getattr__(self, name):
        if name == "disable":
            # torch's own `_disable_dynamo` decorator (on FakeTensorMode.__torch_dispatch__ and
            # other internals) asks for torch._dynamo.disable on the first call of what it
            # decorates. Until torch._dynamo runs nothing can be compiled by it, so there is
            # nothing to disable yet: see _disable_until_loaded.
            return _disable_until_loaded
        # `from . import utils` inside its own submodules asks the package for a submodule:
        # one of the standalone ones imports alone (see _SubmoduleFinder for the others).
        if name in _STANDALONE:
            return importlib.import_module(f"{_NAME}.{name}")
        _load(self)
        return getattr(self, name)


_lock = threading.RLock()

# Submodules that import on their own without the package's __init__ (fake tensors read
# `config`, and meta tensors `source` with the few modules it imports). Importing any other
# submodule runs the package first, in the order its __init__ imports them (some depend on it).
_STANDALONE = frozenset({"config", "source", "utils", "bytecode_analysis", "bytecode_transformation",
                         "graph_utils", "metrics_context"})


class _PackageFirst:
    """The loader of a submodule asked for while the package is deferred: the package's
    __init__ runs first, then the import gets the module __init__ imported, or the submodule
    loaded by its own loader when __init__ did not import it.

    The package runs here, not in find_spec: the import system calls finders holding its
    global lock, and a whole package imported under that lock deadlocks against another
    thread's import (which needs the global lock to take its module's lock)."""

    def __init__(self, loader):
        self._loader = loader
        self._imported = None  # (module, its own __spec__ and __loader__) when __init__ made it

    def create_module(self, spec):
        _load_now()
        module = sys.modules.get(spec.name)
        if module is not None:
            self._imported = (module, module.__spec__, module.__loader__)
            return module
        spec.loader = self._loader  # the import system execs it with its own loader
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # Only for a module __init__ imported (ran already): the import system has just set
        # this spec on it; it keeps the one it was imported with.
        _, module.__spec__, module.__loader__ = self._imported


class _SubmoduleFinder:
    """First on sys.meta_path while the package is deferred."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not fullname.startswith(_NAME + ".") or loaded() or _NAME not in sys.modules:
            return None
        if fullname.split(".")[2] in _STANDALONE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not _SubmoduleFinder else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None and spec.loader is not None:
                spec.loader = _PackageFirst(spec.loader)
                return spec
        return None


def _disable_until_loaded(fn=None, *args, **kwargs):
    """What torch._dynamo.disable(fn, ...) returns before torch._dynamo has run: a function
    that calls `fn` with capture off (bytegraph's disable) while Dynamo is not loaded, and
    Dynamo's own disabled wrapper once it is. Marked as Dynamo marks its wrappers, so a trace
    reaching it calls it opaquely, as it would Dynamo's."""
    recursive = args[0] if args else kwargs.get("recursive", True)
    if fn is None or loaded() or not recursive:
        return getattr(_load_now(), "disable")(fn, *args, **kwargs)
    from bytegraph._extension import _C

    uncaptured = _C.frame.CapturedCall(fn, None, None)
    dynamo_disabled = None

    def run_uncaptured(*call_args, **call_kwargs):
        nonlocal dynamo_disabled
        if dynamo_disabled is None:
            if not loaded():
                return uncaptured(*call_args, **call_kwargs)
            dynamo_disabled = sys.modules[_NAME].disable(fn, *args, **kwargs)
        return dynamo_disabled(*call_args, **call_kwargs)

    functools.update_wrapper(run_uncaptured, fn)
    run_uncaptured._torchdynamo_disable = True
    return run_uncaptured


def _load_now():
    module = sys.modules[_NAME]
    _load(module)
    return module


def _load(module):
    with _lock:
        if type(module) is not _DeferredPackage:
            return
        module.__class__ = types.ModuleType  # from now on a plain module: attribute misses raise
        if _SubmoduleFinder in sys.meta_path:
            sys.meta_path.remove(_SubmoduleFinder)
        try:
            module.__spec__.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(_NAME, None)
            raise


def install():
    """Registers torch._dynamo unexecuted, unless it is imported already."""
    if _NAME in sys.modules:
        return
    import torch  # noqa: F401  (the parent package must be imported first)

    spec = importlib.util.find_spec(_NAME)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _DeferredPackage
    sys.modules[_NAME] = module
    sys.meta_path.insert(0, _SubmoduleFinder)
    # `torch._dynamo` as an attribute of torch stays unset until the package runs, so that
    # torch's own `hasattr(torch, "_dynamo")`-style checks see what they saw before.


def loaded() -> bool:
    """Whether torch._dynamo has been imported for real (by anyone)."""
    module = sys.modules.get(_NAME)
    return module is not None and type(module) is not _DeferredPackage
