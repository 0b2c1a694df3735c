"""bytegraph.set_stance: how compiled functions behave right now, torch.compiler.set_stance's
names and meaning.

- "default": compile on a cache miss, run compiled code on a hit.
- "force_eager": ignore every bytegraph.compile/optimize: the functions run as written,
  compiled entries are not used and nothing is compiled.
- "eager_on_recompile": a function that already has compiled entries runs eagerly when none
  matches (no recompile); a cached entry that matches is still used.
- "fail_on_recompile": a recompile raises RecompileError (with the failed guards) instead.

`set_stance(...)` changes the stance for the process at once; used as a context manager it
restores the previous stance on exit, and as a decorator it applies only while the function
runs. force_backend=... (with "default") compiles every new graph with that backend instead
of the one compile() was given.
"""

import functools

from bytegraph import _frame
from bytegraph.exc import BytegraphError

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


class RecompileError(BytegraphError):
    """A recompile under set_stance("fail_on_recompile")."""


class _Stance:
    __slots__ = ("name", "force_backend", "compiler_fn")

    def __init__(self, name="default", force_backend=None, compiler_fn=None):
        self.name, self.force_backend, self.compiler_fn = name, force_backend, compiler_fn


_current = _Stance()


def current():
    """The stance in force: .name, .force_backend and .compiler_fn (the forced backend, resolved)."""
    return _current


def _install(stance):
    global _current
    previous, _current = _current, stance
    _frame.set_forced_eager(stance.name == "force_eager")  # what compiled functions' calls read
    return previous


# Resolves a force_backend to its compiler function, at set_stance time so that a bad name
# fails there. Installed by bytegraph.backends (the registry), which sits above the runtime
# that reads the stance: the stance never imports it.
_resolve_backend = None


class set_stance:
    """Set the stance (see the module docstring); a function, context manager and decorator."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if not isinstance(stance, str) or stance not in STANCES:
            raise ValueError(f"unknown stance {stance!r}; expected one of {', '.join(STANCES)}")
        if skip_guard_eval_unsafe:
            raise NotImplementedError(
                "set_stance(skip_guard_eval_unsafe=True) is not supported by bytegraph: every cache "
                "entry's guards are always checked")
        compiler_fn = None
        if force_backend is not None:
            if stance != "default":
                raise ValueError(f"force_backend only goes with the 'default' stance, not {stance!r}")
            if _resolve_backend is None:
                raise RuntimeError("set_stance(force_backend=...) needs bytegraph imported (import bytegraph)")
            compiler_fn = _resolve_backend(force_backend)
        self.stance = _Stance(stance, force_backend, compiler_fn)
        self.previous = _install(self.stance)

    def __enter__(self):
        _install(self.stance)
        return self

    def __exit__(self, *exc_info):
        _install(self.previous)
        return False

    def __call__(self, fn):
        # As a decorator: the stance applies while fn runs, not from the decoration on.
        _install(self.previous)
        if not callable(fn):
            raise TypeError(f"set_stance(...) decorates a function, got {type(fn).__name__}")
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            previous = _install(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _install(previous)

        return with_stance

    def __repr__(self):
        return f"set_stance({self.stance.name!r})"
