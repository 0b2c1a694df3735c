"""`python -m bytegraph run script.py [args...]`: a torch.compile program, compiled by bytegraph.

Like `coverage run`, the command runs the script as `__main__` (or a module with `-m`) after
routing torch.compile's entry points in this process to bytegraph, with the same arguments:

| torch                                              | bytegraph                   |
|----------------------------------------------------|-----------------------------|
| torch.compile(...), nn.Module.compile(...)         | bytegraph.compile(...)      |
| torch._dynamo.optimize(...)                        | bytegraph.optimize(...)     |
| torch._dynamo.optimize_assert(...)                 | bytegraph.optimize(..., nopython=True) |
| torch.compiler.reset(), torch._dynamo.reset()      | also bytegraph.reset()      |
| torch.compiler.disable / torch._dynamo.disable     | bytegraph.disable           |
| torch.compiler.allow_in_graph, torch._dynamo.allow_in_graph / disallow_in_graph | bytegraph's |
| torch.compiler.is_compiling, torch._dynamo.is_compiling | bytegraph.is_compiling |
| torch._dynamo.OptimizedModule (isinstance checks; not eval_frame's, which torch's export reads) | bytegraph.OptimizedModule |
| torch.compiler.set_stance                          | bytegraph.set_stance        |
| torch._dynamo.config.recompile_limit, automatic_dynamic_shapes, assume_static_by_default, force_parameter_static_shapes, capture_scalar_outputs, automatic_dynamic_shapes_mark_as, suppress_errors, verbose, error_on_recompile, accumulated_recompile_limit | read by bytegraph.config (cache_size_limit, accumulated_cache_size_limit, the others by their names) |

TORCH_LOGS and TORCH_TRACE are honoured too, when BYTEGRAPH_LOGS / BYTEGRAPH_TRACE are not set
(the TORCH_LOGS names bytegraph does not have are ignored, with a note). Arguments of
torch.compile that bytegraph does not implement (`name`, `isolate_recompiles`, `shapes_spec`)
are accepted and ignored with a warning, so the program still runs.
"""

import functools
import logging
import os
import runpy
import sys
import warnings

log = logging.getLogger("bytegraph")

_IGNORED_COMPILE_ARGUMENTS = ("name", "isolate_recompiles", "shapes_spec")


def _warn_ignored(function, arguments):
    given = [name for name, value in arguments.items() if value not in (None, False)]
    if given:
        warnings.warn(f"bytegraph run: {function}({', '.join(f'{n}=...' for n in given)}) is accepted and "
                      "ignored: bytegraph does not implement it", stacklevel=3)


def torch_compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
                  name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch.compile's signature, compiled by bytegraph."""
    import bytegraph

    _warn_ignored("torch.compile", dict(name=name, isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec))
    return bytegraph.compile(model, backend="inductor" if backend is None else backend, fullgraph=fullgraph,
                             dynamic=dynamic, mode=mode, options=options, disable=disable,
                             recompile_limit=recompile_limit)


def torch_optimize(backend="inductor", *, nopython=False, error_on_graph_break=None, guard_export_fn=None,
                   guard_fail_fn=None, guard_filter_fn=None, disable=False, dynamic=None, rebuild_ctx=None,
                   package=None, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch._dynamo.optimize's signature, compiled by bytegraph."""
    import bytegraph

    _warn_ignored("torch._dynamo.optimize", dict(guard_filter_fn=guard_filter_fn, package=package,
                                                 recompile_limit=recompile_limit,
                                                 isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec))
    return bytegraph.optimize(backend, nopython=nopython or bool(error_on_graph_break),
                              guard_export_fn=guard_export_fn, guard_fail_fn=guard_fail_fn, disable=disable,
                              dynamic=dynamic)


def torch_optimize_assert(backend, *, hooks=None, export=False, export_constraints=None, dynamic=None,
                          package=None, rebuild_ctx=None):
    """torch._dynamo.optimize_assert's signature (what torch._dynamo.testing's helpers compile
    through): a graph break is an error."""
    import bytegraph

    _warn_ignored("torch._dynamo.optimize_assert", dict(export=export, export_constraints=export_constraints,
                                                        package=package))
    return bytegraph.optimize(backend, nopython=True, dynamic=dynamic,
                              guard_export_fn=getattr(hooks, "guard_export_fn", None),
                              guard_fail_fn=getattr(hooks, "guard_fail_fn", None))


def torch_disable(fn=None, recursive=True, *, reason=None, wrapping=True):
    import bytegraph

    return bytegraph.disable(fn, recursive=recursive)


def _reset_both(torch_reset):
    @functools.wraps(torch_reset)
    def reset():
        import bytegraph

        torch_reset()
        bytegraph.reset()

    return reset


class Routing:
    """torch's entry points replaced by bytegraph's; `restore()` puts torch's back."""

    def __init__(self):
        import torch
        import torch._dynamo
        import torch.compiler

        import bytegraph

        replacements = [
            (torch, "compile", torch_compile),
            (torch._dynamo, "optimize", torch_optimize),
            (torch._dynamo, "optimize_assert", torch_optimize_assert),
            (torch.compiler, "reset", _reset_both(torch.compiler.reset)),
            (torch._dynamo, "reset", _reset_both(torch._dynamo.reset)),
            (torch.compiler, "disable", torch_disable),
            (torch._dynamo, "disable", torch_disable),
            (torch.compiler, "allow_in_graph", bytegraph.allow_in_graph),
            (torch._dynamo, "allow_in_graph", bytegraph.allow_in_graph),
            (torch._dynamo, "disallow_in_graph", bytegraph.disallow_in_graph),
            (torch.compiler, "is_compiling", bytegraph.is_compiling),
            (torch._dynamo, "is_compiling", bytegraph.is_compiling),
            (torch.compiler, "set_stance", bytegraph.set_stance),
            # What `isinstance(m, torch._dynamo.OptimizedModule)` reads at call time. Not
            # torch._dynamo.eval_frame's own global: torch's export and its contexts check it.
            (torch._dynamo, "OptimizedModule", bytegraph.OptimizedModule),
        ]
        self._saved = [(owner, name, getattr(owner, name)) for owner, name, _ in replacements]
        for owner, name, replacement in replacements:
            setattr(owner, name, replacement)
        self._saved_error_types = [
            (base, bytegraph.exc.set_raised_type(base, compatible)) for base, compatible in _torch_compatible_errors()
        ]
        for setting, torch_name in _LINKED_SETTINGS.items():
            if hasattr(torch._dynamo.config, torch_name):
                bytegraph.config.link(setting, torch._dynamo.config, torch_name)

    def restore(self):
        import bytegraph

        bytegraph.config.unlink_all()
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved = []
        for base, previous in self._saved_error_types:
            bytegraph.exc.set_raised_type(base, previous)


# bytegraph.config settings that read torch._dynamo.config's of the same meaning.
_LINKED_SETTINGS = {
    "cache_size_limit": "recompile_limit",
    "accumulated_cache_size_limit": "accumulated_recompile_limit",
    "automatic_dynamic_shapes": "automatic_dynamic_shapes",
    "automatic_dynamic_shapes_mark_as": "automatic_dynamic_shapes_mark_as",
    "assume_static_by_default": "assume_static_by_default",
    "force_parameter_static_shapes": "force_parameter_static_shapes",
    "capture_scalar_outputs": "capture_scalar_outputs",
    "suppress_errors": "suppress_errors",
    "verbose": "verbose",
    "error_on_recompile": "error_on_recompile",
}


def _torch_compatible_errors():
    """(bytegraph's error class, a subclass that is also torch._dynamo.exc's of that meaning),
    for code that catches torch's."""
    import torch._dynamo.exc
    from bytegraph.exc import BackendCompilerFailed, GraphBreakError

    class TorchCompatibleGraphBreakError(GraphBreakError, torch._dynamo.exc.Unsupported):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # What torch's Unsupported.__init__ sets (its counters are torch._dynamo's, not ours).
            self.msg = str(self)
            self.real_stack = []
            self.category = None

    class TorchCompatibleBackendCompilerFailed(BackendCompilerFailed, torch._dynamo.exc.BackendCompilerFailed):
        pass  # torch's reads backend_name and inner_exception, which bytegraph's sets

    pairs = ((GraphBreakError, TorchCompatibleGraphBreakError), (BackendCompilerFailed, TorchCompatibleBackendCompilerFailed))
    for base, compatible in pairs:
        compatible.__name__ = compatible.__qualname__ = base.__name__
        compatible.__module__ = "bytegraph.exc"
    return pairs


def _environment_from_torch():
    """TORCH_LOGS / TORCH_TRACE for a program run by bytegraph, when bytegraph's own are unset."""
    from bytegraph import _logging, _structured_trace

    torch_logs = os.environ.get("TORCH_LOGS", "").strip()
    if torch_logs and not os.environ.get(_logging.ENV_VAR):
        known, unknown = [], []
        for token in torch_logs.replace(" ", ",").split(","):
            if not token:
                continue
            try:
                _logging.parse_spec(token)
                known.append(token)
            except ValueError:
                unknown.append(token)
        if known:
            _logging._apply(_logging.parse_spec(",".join(known)))
        if unknown:
            print(f"bytegraph run: TORCH_LOGS names bytegraph does not have are ignored: {', '.join(unknown)}",
                  file=sys.stderr)
    torch_trace = os.environ.get("TORCH_TRACE", "").strip()
    if torch_trace and not os.environ.get(_structured_trace.ENV_VAR):
        _structured_trace.set_trace_dir(torch_trace)


def add_arguments(parser):
    parser.add_argument("-m", dest="module", action="store_true", help="run a module (like python -m) instead of a script")
    parser.add_argument("--compile-times", action="store_true",
                        help="print bytegraph.compile_times() to stderr when the program ends")
    parser.add_argument("target", help="the script (or, with -m, the module) to run")
    parser.add_argument("arguments", nargs="...", help="its command-line arguments")


def main(args):
    import bytegraph

    _environment_from_torch()
    routing = Routing()
    try:
        if args.module:
            sys.argv = [args.target, *args.arguments]
            runpy.run_module(args.target, run_name="__main__", alter_sys=True)
        else:
            if not os.path.isfile(args.target):
                print(f"bytegraph run: no such script: {args.target}", file=sys.stderr)
                return 2
            sys.argv = [args.target, *args.arguments]
            sys.path.insert(0, os.path.dirname(os.path.abspath(args.target)))
            runpy.run_path(args.target, run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        routing.restore()
        if args.compile_times:
            print(bytegraph.compile_times(), file=sys.stderr)
    return 0
