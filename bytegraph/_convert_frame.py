"""The seam between the frame hook and the compiler: what runs on a cache miss.

A `FrameConverter` (one per `bytegraph.compile`/`optimize` call, its `CaptureOptions` and
resolved backend) is what they install as the thread's frame callback. The hook calls it as
`callback(frame_info)` when a frame's code has no cache entry whose guards pass, and reads
the answer:

- `None`: run the frame unmodified;
- a code object, or `(code, guard_fn)`: add a cache entry and run that code instead.

`convert` traces the frame (the C++ core), compiles its graphs with the backend, and builds
the guards and the code that replaces it.
"""

import dataclasses
import itertools
import linecache
import logging
import os
import sys
import sysconfig
import types
import typing
import weakref

import torch

from bytegraph import (_compile_metrics, _distributed, _dynamic, _graph_failure, _logging, _readable_code,
                       _stack_names, _structured_trace, _torch_function, _warm_start, backends, config, stance)
from bytegraph._shape_spec import ConstraintViolation
from bytegraph._extension import _C
from bytegraph.eval_frame import frame_hook, is_skipped_code
from bytegraph import exc
from bytegraph.exc import BytegraphError, ConstraintViolationError, GraphBreakError, InternalError

log = logging.getLogger("bytegraph")
graph_break_log = logging.getLogger("bytegraph.graph_breaks")
recompile_log = logging.getLogger("bytegraph.recompiles")
recompile_verbose_log = logging.getLogger("bytegraph.recompiles_verbose")
graph_log = logging.getLogger("bytegraph.graph")
graph_code_log = logging.getLogger("bytegraph.graph_code")
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

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_PREFIX = os.path.join(_PACKAGE_DIR, "")

# bytegraph's own machinery: frames of its files are never captured (they run between the
# user's frames: a compiled wrapper called inside another compiled region, a finalizer of a
# graph that the garbage collector runs in the middle of a user's function). Only modules
# that hold user-style example code (the demo) can be compiled. Listing the exceptions, not
# the machinery, keeps a new module internal without anyone having to remember it.
_USER_MODULES = frozenset({"demo.py", "examples.py"})

# Breaks that come from one call's arguments, not from the code: a tensor that cannot be read
# or copied as a fake. The frame runs eagerly for that call and is offered again on the next.
_ONE_CALLS_BREAKS = frozenset({"unfakeable_tensor"})


def is_internal_code(code):
    """True for code objects of bytegraph's own machinery."""
    filename = code.co_filename
    return filename.startswith(_PACKAGE_PREFIX) and os.path.basename(filename) not in _USER_MODULES


def _run_only_from_now_on(code):
    """Past its recompile limit: the hook serves this code's calls from the entries it has and
    runs a miss (and what it calls) unmodified, as torch.compile's RUN_ONLY (until a reset)."""
    _frame_module().mark_run_only(code)


def _never_offer_again(code):
    """Tell the hook to run this code's frames unmodified without asking (until a reset)."""
    frame_hook().mark_skip(code)


@dataclasses.dataclass(frozen=True)
class CaptureOptions:
    """What one `compile`/`optimize` call asks of capture, the backend aside.

    fullgraph: a graph break is an error instead of a split.
    dynamic: None (automatic), True (sizes symbolic from the start) or False (static).
    guard_export_fn / guard_fail_fn: called with the guards of a new entry / a failed guard.
    recompile_limit: entries kept per code object (None: config.cache_size_limit).
    """

    fullgraph: bool = False
    dynamic: bool | None = None
    guard_export_fn: typing.Callable | None = None
    guard_fail_fn: typing.Callable | None = None
    recompile_limit: int | None = None


class FrameConverter:
    """The frame callback for one `compile`/`optimize` call: it compiles cache misses with
    `compiler_fn` (the resolved backend, `(GraphModule, example_inputs) -> callable`) as
    `options` (CaptureOptions) ask. backend_key: one object per backend and its settings
    (backends.backend_key).
    """

    def __init__(self, compiler_fn, options=CaptureOptions(), *, backend_key=None):
        self.compiler_fn = compiler_fn
        # The cache hook keys the entries this callback makes by it (backends.backend_key):
        # a function compiled again for another backend is compiled again, not served the
        # first backend's code.
        if backend_key is not None:
            self.backend_key = backend_key
        self.options = options
        self.compile_count = 0
        self._input_breaks = weakref.WeakKeyDictionary()  # code -> calls that broke on their inputs

    def __call__(self, frame_info):
        code = frame_info.f_code
        if is_internal_code(code):
            _never_offer_again(code)
            return None
        if is_skipped_code(code) or stance.current().name == "force_eager":
            return None
        try:
            return self.convert(frame_info)
        except stance.RecompileError:
            raise
        except GraphBreakError:
            raise  # fullgraph=True: the break is the user's error, whatever suppress_errors says
        except _C.Unsupported as error:
            return self._on_graph_break(code, error)  # a break outside the tracer (codegen)
        except Exception as error:
            return _on_compile_error(code, error)

    def convert(self, frame_info):
        """Capture this frame: return (code, guards, keepalive), or None to run it as is."""
        code = frame_info.f_code
        if not _capturable(code):
            _never_offer_again(code)
            return None
        owner = _module_owner(code, frame_info.f_locals)
        if not self._within_cache_limit(code, owner) or not self._recompile_allowed(code, owner):
            return None
        record = _compile_metrics.begin(code)
        outcome = "failed"
        try:
            result = self._convert(frame_info, record)
            outcome = record.outcome if result is not None else "eager"
            if result is not None and owner is not None:
                per_owner = _entries_per_owner.setdefault(code, weakref.WeakKeyDictionary())
                per_owner[owner] = per_owner.get(owner, 0) + 1
            return result
        except BaseException as error:
            record.failure = f"{type(error).__name__}: {error}"
            raise
        finally:
            _compile_metrics.finish(record, outcome)
            _structured_trace.log_compile(record)

    def _convert(self, frame_info, record):
        code = frame_info.f_code
        grad_enabled_at_entry = torch.is_grad_enabled()  # guarded; what a fallback restarts with
        misses = _report_recompile(code, self.options.guard_fail_fn)
        record.recompile_reasons = misses
        slots = argument_slots(code, frame_info.f_locals)
        record_key = self._warm_start_key(code)
        if record_key is not None:
            installed = self._from_record(record_key, frame_info, slots, record)
            if installed is _warm_start.RUNS_AS_IS:
                _never_offer_again(code)
                return None
            if installed is not None:
                return installed
        shapes = _dynamic.ShapePolicy(self.options.dynamic, _dynamic.frame_shapes(code))
        try:
            with record.phase("tracing"), _structured_trace.recording_steps(record):
                result = _C.trace.trace_frame(frame_info.function, slots,
                                              allow_graph_break=not self.options.fullgraph, log=_logging.trace_sink(),
                                              shapes=shapes)
        except _C.Unsupported as error:
            record.graph_break = _break_description(getattr(error, "kind", "unsupported"),
                                                    getattr(error, "message", str(error)),
                                                    getattr(error, "user_stack", []))
            return self._on_graph_break(code, error)
        except ConstraintViolation as error:
            raise _constraint_error(code, error) from None
        info = result.graph_break
        if info is not None:
            record.graph_break = _break_description(info["kind"], info["message"], info["user_stack"])
            self._report_break(code, info["kind"], info["message"], info["user_stack"])
        with record.phase("codegen"):
            plan = _C.codegen.plan_frame(code, result)
        if plan.eager_reason is not None:
            graph_break_log.info("%s runs eagerly: %s", code.co_qualname, plan.eager_reason)
            _never_offer_again(code)
            return None
        if info is None and result.op_count == 0 and not misses and not result.inputs and not self.options.fullgraph:
            # Nothing to capture (no tensor work): running the frame as is costs less than guards.
            # Under fullgraph the generated code runs anyway, as torch.compile's does: run as is,
            # the functions it calls would be compiled on their own, each required whole.
            _never_offer_again(code)
            if record_key is not None:
                _warm_start.save_runs_as_is(record_key, code)
            return None
        gm = result.graph_module
        compiled, graph_name = None, None
        mode_switch = _grad_mode_switch_only(gm) if result.op_count > 0 else None
        if mode_switch is not None:
            # A graph that only switches grad mode (a `with torch.no_grad():` entered before a
            # break) goes to no backend: the generated code switches the mode itself.
            compiled = mode_switch
        elif result.op_count > 0:
            self.compile_count += 1
            graph_name = f"__compiled_fn_{next(_graph_ids)}"
            backend = _distributed.backend_for_graph(self._compiler(), graph_name)
            example_inputs = list(result.example_inputs)
            if result.torch_function_inlined:
                example_inputs = _torch_function.plain_inputs(example_inputs)
            with record.phase("backend"):
                compiled = backends.call_backend(backend, gm, example_inputs, graph_name,
                                                 fake_mode=result.fake_mode)
            if result.torch_function_inlined:
                compiled = _torch_function.without_subclass_dispatch(compiled)
            record.add_graph(graph_name, gm, pieces=_distributed.piece_count(backend))
        with record.phase("guards"):
            _add_shape_guards(result, code)
        on_failure = None
        with record.phase("codegen"):
            if graph_name is not None:
                compiled, on_failure = _graph_failure.for_generated_code(gm, compiled, code, graph_name,
                                                                         grad_enabled_at_entry)
                _readable_code.name_constant(compiled, graph_name)
            new_code = plan.generate(compiled, on_failure)
        _frame_module().mark_own_code(new_code)
        guard_lines = list(result.guards)
        if graph_name is not None:
            _log_compiled(code, graph_name, gm, guard_lines)
        label = "captured whole" if info is None else f"graph break in {code.co_qualname}"
        _log_bytecode(code, new_code, label)
        for resume in plan.resume_codes:
            _log_resume_code(code, resume)
        if self.options.guard_export_fn is not None:
            _call_user_hook(self.options.guard_export_fn, guard_lines)
        with record.phase("guards"):
            guards = result.build_guards()
        outcome = "captured" if info is None else "split"
        record.captured(new_code, guard_lines, outcome, plan.resume_codes)
        if record_key is not None and (graph_name is None or backend is self._compiler()):
            _warm_start.save(record_key, frame_info, slots, result, new_code, compiled, on_failure,
                             gm if graph_name is not None else None, outcome)
        global _compiled_entries
        _compiled_entries += 1
        return new_code, guards, (compiled, gm, graph_name, plan.resume_codes)

    def _warm_start_key(self, code):
        """The warm-start record's key for `code`, or None where entries are not recorded:
        warm starts off, or a backend given as a callable (or forced by a stance), which
        another process cannot find by name."""
        if not _warm_start.enabled() or not isinstance(getattr(self, "backend_key", None), tuple):
            return None
        if stance.current().compiler_fn is not None or _distributed.active_ddp_module() is not None:
            return None
        return _warm_start.frame_key(code, self.backend_key, self.options)

    def _from_record(self, key, frame_info, slots, record):
        """An entry installed from `code`'s warm-start record without tracing, RUNS_AS_IS for
        a frame the record says had nothing to capture, or None."""
        global _compiled_entries
        code = frame_info.f_code
        with record.phase("guards"):
            found = _warm_start.load(key, code, frame_info, slots, example_values=self.backend_key[0] != "eager")
        if found is None or found is _warm_start.RUNS_AS_IS:
            return found
        tree, (gm, inputs, recorded_code, outcome, generators), guard_lines = found
        compiled = on_failure = graph_name = None
        if gm is not None:
            self.compile_count += 1
            graph_name = f"__compiled_fn_{next(_graph_ids)}"
            with record.phase("backend"):
                compiled = backends.call_backend(self._compiler(), gm, inputs, graph_name)
            record.add_graph(graph_name, gm)
            compiled, on_failure = _graph_failure.for_generated_code(gm, compiled, code, graph_name,
                                                                     torch.is_grad_enabled(), generators)
            _readable_code.name_constant(compiled, graph_name)
        new_code = _warm_start.finish(recorded_code, compiled, on_failure)
        if new_code is None:
            return None
        _frame_module().mark_own_code(new_code)
        resume_codes = [const for const in new_code.co_consts if isinstance(const, types.CodeType)]
        _log_bytecode(code, new_code, f"{outcome}, from the warm-start record")
        record.captured(new_code, guard_lines, outcome, resume_codes)
        _compiled_entries += 1
        return new_code, tree, (compiled, gm, graph_name, resume_codes)

    def _compiler(self):
        forced = stance.current().compiler_fn
        return forced if forced is not None else self.compiler_fn

    def _recompile_allowed(self, code, owner):
        """Under the eager_on_recompile and fail_on_recompile stances (or
        config.error_on_recompile), a code with entries is not compiled again (the first runs
        eagerly, the others raise). A module method's first entry for another module (the next
        of N blocks compiled one by one) is no recompile: each pins its own module, as
        torch.compile's identity-matched self does."""
        name = stance.current().name
        forbidden = name in ("eager_on_recompile", "fail_on_recompile") or config.error_on_recompile
        if not forbidden or not self._has_entries(code, owner):
            return True
        reasons = [_stack_names.readable(r, code) for r in _C.frame.current_miss_reasons() if r]
        if name != "fail_on_recompile" and name != "eager_on_recompile":
            raise stance.RecompileError(
                f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno}) would be compiled again, "
                f"which bytegraph.config.error_on_recompile forbids. No cache entry matched:\n"
                + "\n".join(f"  - {r}" for r in reasons))
        if name == "eager_on_recompile":
            recompile_log.info("%s runs eagerly instead of recompiling (stance eager_on_recompile): %s",
                               code.co_qualname, reasons[0] if reasons else "no entry matched")
            return False
        raise stance.RecompileError(
            f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno}) would be compiled again, "
            f"which set_stance('fail_on_recompile') forbids. No cache entry matched:\n"
            + "\n".join(f"  - {r}" for r in reasons)
            + "\nTo allow it, run this call under bytegraph.set_stance('default') (or "
            "'eager_on_recompile' to run it uncompiled), or keep the guarded values (shapes, "
            "dtypes, constants) the same as in the first call.")

    def _report_break(self, code, kind, message, user_stack):
        """A trace of `code` stopped at a graph break (split there, or run eagerly)."""
        graph_break_log.info(
            "Graph break in %s (%s): %s\n%s", code.co_qualname, kind, message, _logging.user_stack_text(user_stack),
        )
        # torch.compile counts its breaks by reason in torch._dynamo.utils.counters, which code
        # written for it reads (tests check how often a program breaks); counted there too
        # where that module is loaded (nobody reads it otherwise).
        dynamo_utils = sys.modules.get("torch._dynamo.utils")
        if dynamo_utils is not None and hasattr(dynamo_utils, "counters"):
            dynamo_utils.counters["graph_break"][message] += 1

    @staticmethod
    def _has_entries(code, owner):
        if owner is not None:
            return _entries_per_owner.get(code, {}).get(owner, 0) > 0
        return bool(_frame_module().cache_entries(code))

    def _within_cache_limit(self, code, owner):
        global _accumulated_limit_reported
        if _compiled_entries >= config.accumulated_cache_size_limit:
            if not _accumulated_limit_reported:
                _accumulated_limit_reported = True
                log.warning("bytegraph: %d entries have been compiled in this process, the limit "
                            "(config.accumulated_cache_size_limit); frames not compiled yet run eagerly "
                            "from now on.", _compiled_entries)
            return False
        # A method of a module counts the entries compiled for that module only: each pins its
        # module by identity, so N blocks compiled one by one (torchtitan's recipe) are N
        # entries that never compete, as torch.compile counts entries per identity-matched self.
        entries = (_entries_per_owner.get(code, {}).get(owner, 0) if owner is not None
                   else len(_frame_module().cache_entries(code)))
        limit = self.options.recompile_limit if self.options.recompile_limit is not None else config.cache_size_limit
        if entries < limit:
            return True
        reasons = [_stack_names.readable(r, code) for r in _C.frame.current_miss_reasons() if r]
        log.warning(
            "bytegraph: %s (%s:%d) has been compiled %d times, the limit (%s); it runs eagerly from now "
            "on when no compiled entry matches (and what it calls then is not compiled either)."
            "\nLast guard failure: %s\n%s",
            code.co_qualname, code.co_filename, code.co_firstlineno, entries,
            f"compile(recompile_limit={limit})" if self.options.recompile_limit is not None
            else f"config.cache_size_limit = {limit}",
            reasons[0] if reasons else "unknown", _recompile_advice(reasons[0] if reasons else ""),
        )
        _run_only_from_now_on(code)
        return False

    def _on_graph_break(self, code, error):
        kind = getattr(error, "kind", "unsupported")
        message = getattr(error, "message", str(error))
        user_stack = list(getattr(error, "user_stack", []) or [])
        if self.options.fullgraph:
            raise graph_break_error(kind, message, user_stack, code) from None
        self._report_break(code, kind, message, user_stack)
        if kind in _ONE_CALLS_BREAKS and self._retry_later(code):
            return None
        # A frame that breaks where nothing can be split runs as it is from now on (its
        # callees are still offered to the hook, and captured on their own).
        _never_offer_again(code)
        return None

    def _retry_later(self, code):
        """Whether `code`, which broke on this call's inputs alone, is offered again on later
        calls (up to the cache size limit, so that inputs that always break cost no more)."""
        tries = self._input_breaks.get(code, 0) + 1
        self._input_breaks[code] = tries
        limit = self.options.recompile_limit if self.options.recompile_limit is not None else config.cache_size_limit
        return tries < limit

    def __repr__(self):
        return (
            f"FrameConverter(backend={self.compiler_fn!r}, fullgraph={self.options.fullgraph}, "
            f"dynamic={self.options.dynamic})"
        )


def _grad_mode_switch_only(gm):
    """For a graph whose only nodes are torch._C._set_grad_enabled calls (no inputs, no
    outputs): a callable that leaves grad mode as the graph would (its last switch); else None."""
    last = None
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled and len(node.args) == 1:
            last = node.args[0]
        elif node.op == "output":
            if node.args not in (((),), ([],)):
                return None
        else:
            return None
    if not isinstance(last, bool):
        return None

    def switch_grad_mode(*_):
        torch._C._set_grad_enabled(last)
        return ()
    return switch_grad_mode


def _frame_module():
    return frame_hook()


def _recompile_advice(reason):
    """What to do about a function that keeps being recompiled, given its last guard failure."""
    if "size" in reason or "stride" in reason or "ndim" in reason:
        first = ("Its input shapes keep changing: compile with dynamic=True so sizes are symbolic, "
                 "or pad/bucket the inputs to a few shapes.")
    elif "dtype" in reason or "device" in reason or "requires_grad" in reason:
        first = "Its tensors' dtype, device or requires_grad keep changing: make them consistent across calls."
    else:
        first = ("A Python value it reads keeps changing (a number, a flag, an object): pass it as a tensor, "
                 "or keep it constant across calls.")
    return (f"To fix: {first} To allow more compiles, raise bytegraph.config.cache_size_limit; to see "
            "every recompile and its reason, turn on BYTEGRAPH_LOGS=recompiles.")


def _break_description(kind, message, user_stack):
    return {"kind": kind, "message": message, "user_stack": list(user_stack or [])}


def _on_compile_error(code, error):
    """A compile failure that is not a graph break. With config.suppress_errors the frame
    runs eagerly from now on (logged once, with the reason and the function's file:line);
    otherwise the error reaches the caller: errors meant for the user (a backend that
    failed, a comptime function or guard callback that raised) as they are, anything else
    as bytegraph.exc.InternalError."""
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    if config.suppress_errors:
        log.warning(
            "bytegraph: could not compile %s, running it eagerly from now on: %s: %s",
            where, type(error).__name__, error, exc_info=config.verbose,
        )
        _never_offer_again(code)
        return None
    if isinstance(error, BytegraphError) or getattr(error, _PROPAGATE, False):
        raised = error
    elif isinstance(error, InternalError):
        raised = error
        error.add_note(f"while compiling {where}; {_SUPPRESS_ADVICE}")
    else:
        raised = InternalError(
            f"bytegraph internal error while compiling {where}: {type(error).__name__}: {error}\n"
            f"{_SUPPRESS_ADVICE}"
        )
        raised.__cause__ = error
    setattr(raised, _PROPAGATE, True)
    raise raised


_PROPAGATE = _C.frame.PROPAGATE_ATTRIBUTE
_SUPPRESS_ADVICE = "set bytegraph.config.suppress_errors = True to run such frames eagerly instead"


def _call_user_hook(hook, argument):
    """Calls a user's guard_export_fn / guard_fail_fn: what it raises is the user's error."""
    try:
        hook(argument)
    except Exception as error:
        setattr(error, _PROPAGATE, True)
        raise


_logged_resume_codes = set()


def _log_resume_code(code, resume):
    if bytecode_log.isEnabledFor(logging.INFO) and resume not in _logged_resume_codes:
        _logged_resume_codes.add(resume)
        bytecode_log.info("RESUME FUNCTION %s\n%s", resume.co_qualname,
                          _readable_code.source_and_original(resume, _readable_code.original_code(code)))
        if bytecode_log.isEnabledFor(logging.DEBUG):
            from bytegraph.bytecode import dis

            bytecode_log.debug("RESUME FUNCTION BYTECODE %s\n%s", resume.co_qualname, dis(resume))


def _log_bytecode(code, new_code, label):
    """The generated code as Python source next to the original (INFO); the disassembly of
    both at DEBUG (`+bytecode`)."""
    if bytecode_log.isEnabledFor(logging.INFO):
        bytecode_log.info("GENERATED CODE %s (%s)\n%s", code.co_qualname, label,
                          _readable_code.source_and_original(new_code, _readable_code.original_code(code)))
    if bytecode_log.isEnabledFor(logging.DEBUG):
        from bytegraph.bytecode import dis

        bytecode_log.debug("ORIGINAL BYTECODE %s (%s)\n%s", code.co_qualname, label, dis(code))
        bytecode_log.debug("MODIFIED BYTECODE %s (%s)\n%s", code.co_qualname, label, dis(new_code))


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


def _add_shape_guards(result, code):
    """The ShapeEnv's guards, once the backend (which may add its own) has run."""
    try:
        result.add_shape_guards()
    except ConstraintViolation as error:
        raise _constraint_error(code, error) from None


def _constraint_error(code, error):
    return ConstraintViolationError(f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno}): {error}")


class GuardFail(typing.NamedTuple):
    """What guard_fail_fn receives, as torch._dynamo.types.GuardFail: the first failed guard of
    the most recently used entry, in the user's words, and the code it guards."""

    reason: str
    orig_code: types.CodeType


def _report_recompile(code, guard_fail_fn):
    """Logs why the existing entries did not match (a recompile); returns those reasons
    (one per entry, most recently used first, in the user's words)."""
    raw = [r for r in _C.frame.current_miss_reasons() if r]
    reasons = [_stack_names.readable(r, code) for r in raw]
    if reasons:
        where = f"{code.co_qualname} in {code.co_filename}:{code.co_firstlineno}"
        recompile_log.info("Recompiling function %s, triggered by the guard failure:\n  - %s", where, reasons[0])
        if recompile_verbose_log.isEnabledFor(logging.INFO):
            recompile_verbose_log.info(
                "Recompiling function %s; each of its %d cache entries failed a guard:\n%s", where, len(reasons),
                "\n".join(f"  - entry {i}: {r}" for i, r in enumerate(reasons)))
        if guard_fail_fn is not None:
            _call_user_hook(guard_fail_fn, GuardFail(raw[0], code))
    return reasons


def _log_compiled(code, graph_name, gm, guard_lines):
    if graph_log.isEnabledFor(logging.INFO):
        graph_log.info("TRACED GRAPH %s (%s)\n%s", graph_name, code.co_qualname, _logging.graph_table(gm))
    if graph_code_log.isEnabledFor(logging.INFO):
        graph_code_log.info("TRACED GRAPH %s (%s)\n%s", graph_name, code.co_qualname, _logging.graph_code_text(gm))
    if guard_log.isEnabledFor(logging.INFO):
        guard_log.info("GUARDS %s\n%s", code.co_qualname,
                       "\n".join(_stack_names.readable(line, code) for line in guard_lines))


def graph_break_error(kind, message, user_stack, code):
    """The fullgraph error for a break, pointing at the user's line."""
    filename, lineno = code.co_filename, code.co_firstlineno
    if user_stack:
        location = user_stack[-1].split(" in ")[0]
        file_part, _, line_part = location.rpartition(":")
        if line_part.isdigit():
            filename, lineno = file_part, int(line_part)
    source_line = linecache.getline(filename, lineno)
    return exc.raised_type(exc.GraphBreakError)(
        kind, message, user_stack, filename=filename, lineno=lineno, source_line=source_line,
        hint=_C.break_hint(kind),
    )


# Cache entries compiled in this process since the last reset (config.accumulated_cache_size_limit).
_compiled_entries = 0
# code -> {module: entries compiled while it was the frame's self} (see _within_cache_limit).
_entries_per_owner = weakref.WeakKeyDictionary()


def _module_owner(code, f_locals):
    """The torch.nn.Module a method frame runs on (its first argument), or None."""
    if code.co_argcount == 0:
        return None
    first = f_locals.get(code.co_varnames[0]) if hasattr(f_locals, "get") else None
    return first if isinstance(first, torch.nn.Module) else None
_accumulated_limit_reported = False


def reset():
    """Forget compile-time state kept by this layer (resume functions, logged names, the sizes
    each code object has seen for automatic dynamic shapes, the count of compiled entries)."""
    global _compiled_entries, _accumulated_limit_reported
    _compiled_entries, _accumulated_limit_reported = 0, False
    _entries_per_owner.clear()
    _C.codegen.reset_resume_cache()
    _logged_resume_codes.clear()
    _dynamic.reset()
    _warm_start.reset()
