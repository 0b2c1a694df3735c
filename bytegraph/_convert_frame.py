"""The seam between the frame hook and the compiler: what runs on a cache miss.

`make_callback(...)` builds the callback that `bytegraph.compile`/`optimize` install as the
thread's frame callback. The hook calls it as `callback(frame_info)` when a frame's code has
no cache entry whose guards pass, and reads the answer:

- `None`: run the frame unmodified;
- a code object, or `(code, guard_fn)`: add a cache entry and run that code instead.

Until the tracer is wired in, `FrameConverter.convert` declines every frame, so compiled
functions behave exactly like the originals. The tracer plugs in at `convert`.
"""

import itertools
import linecache
import logging
import os
import sysconfig

import torch

from bytegraph import _logging, backends, config
from bytegraph._extension import _C
from bytegraph.eval_frame import frame_hook, is_skipped_code
from bytegraph.exc import GraphBreakError

log = logging.getLogger("bytegraph")
graph_break_log = logging.getLogger("bytegraph.graph_breaks")
recompile_log = logging.getLogger("bytegraph.recompiles")
graph_log = logging.getLogger("bytegraph.graph")
guard_log = logging.getLogger("bytegraph.guards")
bytecode_log = logging.getLogger("bytegraph.bytecode")

_graph_ids = itertools.count()

_VARARGS = 0x04
_VARKEYWORDS = 0x08

# Code that is never captured: the standard library and torch's own Python (they run as
# they are, as under torch.compile), except forward() of torch.nn modules, so that
# compiling a torch.nn module itself captures its computation.
_STDLIB_DIRS = tuple(
    os.path.join(os.path.realpath(p), "") for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_TORCH_DIR = os.path.join(os.path.dirname(os.path.realpath(torch.__file__)), "")
_TORCH_NN_MODULES_DIR = os.path.join(_TORCH_DIR, "nn", "modules", "")

_GRAPH_BREAK_HINTS = {
    "data_dependent_branch": "the branch depends on a tensor's value; compute both sides with "
    "torch.where, or move the branch out of the compiled region",
    "explicit_graph_break": "remove bytegraph.graph_break() to capture one graph",
    "unsupported_opcode": "this bytecode instruction is not captured yet; move the construct out "
    "of the compiled function",
    "side_effect": "the function mutates state that outlives the call; return the new value instead",
    "data_dependent_op": "the operation's output depends on tensor values (e.g. .item(), nonzero); "
    "keep it out of the compiled function",
}

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# bytegraph's own machinery: frames of these files are never captured (they run between the
# user's frames, e.g. a compiled wrapper called inside another compiled region). Modules
# that hold user-style example code (the demo) are not listed, so they can be compiled.
_INTERNAL_MODULES = (
    "__init__",
    "_convert_frame",
    "_extension",
    "_frame",
    "_logging",
    "api",
    "backends",
    "comptime",
    "config",
    "eval_frame",
    "explain",
    "exc",
    "optimized_module",
    "testing",
)
_INTERNAL_FILES = frozenset(os.path.join(_PACKAGE_DIR, name + ".py") for name in _INTERNAL_MODULES)


def is_internal_code(code):
    """True for code objects of bytegraph's own machinery."""
    return code.co_filename in _INTERNAL_FILES


def _never_offer_again(code):
    """Tell the hook to run this code's frames unmodified without asking (until a reset)."""
    hook = frame_hook()
    if hook is not None and hasattr(hook, "mark_skip"):
        hook.mark_skip(code)


class FrameConverter:
    """The frame callback for one `compile`/`optimize` call: what to capture and with what.

    compiler_fn: the resolved backend `(GraphModule, example_inputs) -> callable`.
    fullgraph: a graph break is an error instead of a split.
    dynamic: None (automatic), True (sizes symbolic from the start) or False (static).
    guard_export_fn / guard_fail_fn: called with the guards of a new entry / a failed guard.
    """

    def __init__(
        self, compiler_fn, *, fullgraph=False, dynamic=None, guard_export_fn=None, guard_fail_fn=None
    ):
        self.compiler_fn = compiler_fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.guard_export_fn = guard_export_fn
        self.guard_fail_fn = guard_fail_fn
        self.compile_count = 0

    def __call__(self, frame_info):
        code = frame_info.f_code
        if is_internal_code(code):
            _never_offer_again(code)
            return None
        if is_skipped_code(code):
            return None
        try:
            return self.convert(frame_info)
        except Exception:
            if not config.suppress_errors:
                raise
            log.warning("bytegraph: compiling %s failed; running it eagerly", code.co_name, exc_info=True)
            return None

    def convert(self, frame_info):
        """Capture this frame: return (code, guards, keepalive), or None to run it as is."""
        code = frame_info.f_code
        if not _capturable(code):
            _never_offer_again(code)
            return None
        if not self._within_cache_limit(code):
            return None
        misses = _report_recompile(code, self.guard_fail_fn)
        try:
            result = _C.trace.trace_frame(frame_info.function, argument_slots(code, frame_info.f_locals),
                                          allow_graph_break=not self.fullgraph, log=_logging.trace_sink())
        except _C.Unsupported as error:
            return self._on_graph_break(code, error)
        info = result.graph_break
        if info is not None:
            self._report_break(code, info["kind"], info["message"], info["user_stack"])
        plan = _C.codegen.plan_frame(code, result)
        if plan.eager_reason is not None:
            graph_break_log.info("%s runs eagerly: %s", code.co_qualname, plan.eager_reason)
            _never_offer_again(code)
            return None
        if info is None and result.op_count == 0 and not misses and not result.inputs:
            # Nothing to capture (no tensor work): running the frame as is costs less than guards.
            _never_offer_again(code)
            return None
        gm = result.graph_module
        compiled, graph_name = None, None
        if result.op_count > 0:
            self.compile_count += 1
            graph_name = f"__compiled_fn_{next(_graph_ids)}"
            compiled = backends.call_backend(self.compiler_fn, gm, list(result.example_inputs), graph_name)
        new_code = plan.generate(compiled)
        _frame_module().mark_own_code(new_code)
        guard_lines = list(result.guards)
        if graph_name is not None:
            _log_compiled(code, graph_name, gm, guard_lines)
        label = "captured whole" if info is None else f"graph break in {code.co_qualname}"
        _log_bytecode(code, new_code, label)
        for resume in plan.resume_codes:
            _log_resume_code(code, resume)
        if self.guard_export_fn is not None:
            self.guard_export_fn(guard_lines)
        return new_code, result.build_guards(), (compiled, gm, graph_name, plan.resume_codes)

    def _report_break(self, code, kind, message, user_stack):
        """A trace of `code` stopped at a graph break (split there, or run eagerly)."""
        graph_break_log.info(
            "Graph break in %s (%s): %s\n%s", code.co_qualname, kind, message, _logging.user_stack_text(user_stack),
        )

    def _within_cache_limit(self, code):
        entries = len(_frame_module().cache_entries(code))
        if entries < config.cache_size_limit:
            return True
        log.warning(
            "bytegraph: %s (%s:%d) reached config.cache_size_limit (%d) recompilations; "
            "it runs eagerly from now on. Last reason: %s",
            code.co_qualname, code.co_filename, code.co_firstlineno, config.cache_size_limit,
            "; ".join(r for r in _C.frame.current_miss_reasons() if r) or "unknown",
        )
        _never_offer_again(code)
        return False

    def _on_graph_break(self, code, error):
        kind = getattr(error, "kind", "unsupported")
        message = getattr(error, "message", str(error))
        user_stack = list(getattr(error, "user_stack", []) or [])
        if self.fullgraph:
            raise graph_break_error(kind, message, user_stack, code) from None
        self._report_break(code, kind, message, user_stack)
        # Until frames are split at breaks, a frame that breaks runs as it is (its callees
        # are still offered to the hook, and captured on their own).
        _never_offer_again(code)
        return None

    def __repr__(self):
        return (
            f"FrameConverter(backend={self.compiler_fn!r}, fullgraph={self.fullgraph}, "
            f"dynamic={self.dynamic})"
        )


def _frame_module():
    return frame_hook()


_logged_resume_codes = set()


def _log_resume_code(code, resume):
    if bytecode_log.isEnabledFor(logging.INFO) and resume not in _logged_resume_codes:
        from bytegraph.bytecode import dis

        _logged_resume_codes.add(resume)
        bytecode_log.info("RESUME FUNCTION %s (%s)\n%s", resume.co_name, code.co_qualname, dis(resume))


def _log_bytecode(code, new_code, label):
    if bytecode_log.isEnabledFor(logging.INFO):
        from bytegraph.bytecode import dis

        bytecode_log.info("ORIGINAL BYTECODE %s (%s)\n%s", code.co_qualname, label, dis(code))
        bytecode_log.info("MODIFIED BYTECODE %s (%s)\n%s", code.co_qualname, label, dis(new_code))


def _capturable(code):
    # Frozen modules (importlib, abc, codecs...) are the standard library too.
    if code.co_filename.startswith("<frozen "):
        return False
    path = os.path.realpath(code.co_filename)
    if path.startswith(_STDLIB_DIRS) and "site-packages" not in path:
        return False
    if path.startswith(_TORCH_DIR):
        return path.startswith(_TORCH_NN_MODULES_DIR) and code.co_name == "forward"
    return True


def argument_slots(code, f_locals):
    """The frame's argument slots in localsplus order (positional, keyword-only, the *args
    tuple, the **kwargs dict): traced as they are, with no re-binding of a call."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & _VARARGS) + bool(code.co_flags & _VARKEYWORDS)
    return tuple(f_locals[name] for name in code.co_varnames[:count])


def _report_recompile(code, guard_fail_fn):
    """Logs why the existing entries did not match (a recompile); returns those reasons."""
    reasons = [r for r in _C.frame.current_miss_reasons() if r]
    if reasons:
        recompile_log.info(
            "Recompiling function %s in %s:%d, triggered by the guard failure(s):\n%s",
            code.co_qualname, code.co_filename, code.co_firstlineno,
            "\n".join(f"  - {r}" for r in reasons),
        )
        if guard_fail_fn is not None:
            guard_fail_fn(reasons[0])
    return reasons


def _log_compiled(code, graph_name, gm, guard_lines):
    if graph_log.isEnabledFor(logging.INFO):
        graph_log.info("TRACED GRAPH %s (%s)\n%s", graph_name, code.co_qualname, _logging.traced_graph_text(gm))
    if guard_log.isEnabledFor(logging.INFO):
        guard_log.info("GUARDS %s\n%s", code.co_qualname, "\n".join(guard_lines))


def graph_break_error(kind, message, user_stack, code):
    """The fullgraph error for a break, pointing at the user's line."""
    filename, lineno = code.co_filename, code.co_firstlineno
    if user_stack:
        location = user_stack[-1].split(" in ")[0]
        file_part, _, line_part = location.rpartition(":")
        if line_part.isdigit():
            filename, lineno = file_part, int(line_part)
    source_line = linecache.getline(filename, lineno)
    return GraphBreakError(
        kind, message, user_stack, filename=filename, lineno=lineno, source_line=source_line,
        hint=_GRAPH_BREAK_HINTS.get(kind, "move the unsupported code out of the compiled function"),
    )


def make_callback(compiler_fn, *, fullgraph=False, dynamic=None, guard_export_fn=None, guard_fail_fn=None):
    """The frame callback that compiles cache misses with `compiler_fn`."""
    return FrameConverter(
        compiler_fn,
        fullgraph=fullgraph,
        dynamic=dynamic,
        guard_export_fn=guard_export_fn,
        guard_fail_fn=guard_fail_fn,
    )


def reset():
    """Forget compile-time state kept by this layer (resume functions, logged names)."""
    _C.codegen.reset_resume_cache()
    _logged_resume_codes.clear()
