"""Settings that change how bytegraph captures and compiles, read at the moment they matter.

    import bytegraph
    bytegraph.config.cache_size_limit = 4
    with bytegraph.config.patch(suppress_errors=True):
        ...

Only the names below exist: assigning an unknown name or a value of the wrong type raises,
so a typo never silently does nothing. Each setting can also come from the environment
(`BYTEGRAPH_<NAME>`, e.g. BYTEGRAPH_VERBOSE=1) when the module is first imported.
"""

import contextlib
import os
import sys
import types

# name -> (default, help). The default's type is the setting's type.
_SETTINGS = {
    "cache_size_limit": (8, "compiled entries kept per code object before new misses run eagerly"),
    "accumulated_cache_size_limit": (256, "compiled entries kept across all code objects"),
    "suppress_errors": (False, "on a compile error, log it and run the frame eagerly instead of raising"),
    "verbose": (False, "log each compiled frame, its graphs and the reasons for graph breaks"),
    "error_on_recompile": (False, "raise instead of recompiling when a guard fails"),
    "disable": (False, "make bytegraph.compile/optimize return the function unchanged"),
    "capture_scalar_outputs": (False, "keep .item() and .tolist() in the graph (as symbols the data decides) "
                                      "instead of breaking there; always so under fullgraph"),
    "automatic_dynamic_shapes": (True, "recompile with dynamic sizes once a size changes"),
    "automatic_dynamic_shapes_mark_as": ("dynamic", "what a size seen to change becomes: \"dynamic\" (a symbol "
                                                    "whose value the guards see; sizes 0 and 1 stay static) or "
                                                    "\"unbacked\" (a symbol nothing may branch on; any size, "
                                                    "0 and 1 included, reuses the compile)"),
    "force_parameter_static_shapes": (True, "nn.Parameter inputs keep static sizes (a new shape recompiles) "
                                            "unless marked with mark_dynamic"),
    "assume_static_by_default": (True, "compile with static sizes first (False: sizes and ints are dynamic "
                                       "from the first compile, as with dynamic=True, unless dynamic=False)"),
    "verify_correctness": (False, "run each compiled call's original eagerly on copies of its arguments "
                                  "and raise CorrectnessError when results, exceptions or mutations differ"),
    "warm_start_dir": ("", "a directory where each compiled frame's entry is recorded, so that another process "
                           "running the same program installs it without tracing (\"\": off)"),
    "optimize_ddp": (True, "under DistributedDataParallel, split each graph at the gradient buckets' "
                           "boundaries (torch's DDPOptimizer) so each bucket's all-reduce overlaps the "
                           "rest of the backward"),
}

# Settings whose value is one of a few strings.
_CHOICES = {"automatic_dynamic_shapes_mark_as": ("dynamic", "unbacked")}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _parse_environment(name, default):
    raw = os.environ.get("BYTEGRAPH_" + name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"BYTEGRAPH_{name.upper()}={raw!r}: expected one of {_TRUE + _FALSE}")
    return type(default)(raw)


def _check(name, value):
    if name not in _SETTINGS:
        known = ", ".join(sorted(_SETTINGS))
        raise AttributeError(f"bytegraph.config has no setting {name!r}; known settings: {known}")
    default = _SETTINGS[name][0]
    # bool is an int subclass: keep the two apart so `cache_size_limit = True` is refused.
    expected = type(default)
    if type(value) is not expected:
        raise TypeError(f"bytegraph.config.{name} must be {expected.__name__}, got {type(value).__name__}")
    if name in _CHOICES and value not in _CHOICES[name]:
        raise ValueError(f"bytegraph.config.{name} must be one of {_CHOICES[name]}, got {value!r}")


# Settings read from (and written to) another config while linked: `bytegraph run` links the
# torch._dynamo.config settings that mean the same, so a torch.compile program's configuration
# (including torch's config.patch) applies to bytegraph. name -> (owner, attribute).
_links = {}


# Settings whose value the C++ hook keeps a copy of: name -> functions called with each value
# assigned through this module (an observed setting is never linked, see link()).
_observers = {}


def observe(name, observer):
    """Calls `observer(value)` now and on each later assignment of setting `name`."""
    if name in _links:
        raise ValueError(f"bytegraph.config.{name} is linked; its changes cannot be observed")
    _observers.setdefault(name, []).append(observer)
    observer(getattr(sys.modules[__name__], name))


def link(name, owner, attribute):
    """Read and write setting `name` as `owner.attribute` until `unlink_all()`."""
    if name not in _SETTINGS:
        raise AttributeError(f"bytegraph.config has no setting {name!r}")
    if name in _observers:
        raise ValueError(f"bytegraph.config.{name} is observed: it cannot be linked")
    _links[name] = (owner, attribute)


def unlink_all():
    _links.clear()


class _ConfigModule(types.ModuleType):
    """The module type of bytegraph.config: validates every assignment."""

    def __getattribute__(self, name):
        link = _links.get(name)
        if link is None:
            return super().__getattribute__(name)
        return getattr(link[0], link[1])

    def __setattr__(self, name, value):
        if name.startswith("_"):
            return super().__setattr__(name, value)
        _check(name, value)
        link = _links.get(name)
        if link is not None:
            setattr(link[0], link[1], value)
        super().__setattr__(name, value)
        for observer in _observers.get(name, ()):
            observer(value)

    def __delattr__(self, name):
        raise AttributeError(f"bytegraph.config settings cannot be deleted ({name!r})")


def defaults():
    """Each setting's default value (ignoring the environment)."""
    return {name: default for name, (default, _) in _SETTINGS.items()}


def describe():
    """Each setting's current value and what it does."""
    module = sys.modules[__name__]
    return {name: (getattr(module, name), text) for name, (_, text) in _SETTINGS.items()}


def save():
    """A snapshot of every setting, for `restore`."""
    module = sys.modules[__name__]
    return {name: getattr(module, name) for name in _SETTINGS}


def restore(snapshot):
    module = sys.modules[__name__]
    for name, value in snapshot.items():
        setattr(module, name, value)


class patch(contextlib.ContextDecorator):
    """Temporarily change settings: a context manager and a decorator."""

    def __init__(self, **changes):
        for name, value in changes.items():
            _check(name, value)
        self._changes = changes
        self._saved = []

    def __enter__(self):
        self._saved.append(save())
        module = sys.modules[__name__]
        for name, value in self._changes.items():
            setattr(module, name, value)
        return self

    def __exit__(self, *exc_info):
        restore(self._saved.pop())
        return False


for _name, (_default, _) in _SETTINGS.items():
    globals()[_name] = _parse_environment(_name, _default)
del _name, _default

sys.modules[__name__].__class__ = _ConfigModule
