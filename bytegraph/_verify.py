"""`config.verify_correctness`: run the original function eagerly beside the compiled one.

Each call of a compiled entry point (`bytegraph.compile(fn)`, an OptimizedModule, a function
decorated with `optimize(...)`) then runs the original on deep copies of its arguments (and of
the module it is a method of) with capture off, runs the compiled call on the real ones from
the same random-number state, and raises `CorrectnessError` if the two differ in the value
returned, the exception raised, or what they did to their arguments. A test-suite tool: the
original's effects on anything but its arguments (globals, printed output) happen twice.
"""

import copy
import logging
import math

import torch

from bytegraph.exc import CorrectnessError

log = logging.getLogger("bytegraph")

# Floating-point results may differ by kernel choice (fused ops, reassociated sums).
RTOL = 1.3e-4
ATOL = 1e-5


def call_verified(run_compiled, run_eager, fn, args, kwargs):
    """Calls `run_compiled(fn, args, kwargs)` and checks it against `run_eager(fn, args, kwargs)`
    (fn with capture off) on copies of the arguments."""
    try:
        eager_fn, eager_args, eager_kwargs = _copies(fn, args, kwargs)
    except Exception as error:  # an argument that cannot be copied: verify nothing
        log.debug("verify_correctness: %s's arguments cannot be copied (%s); not verified", _name(fn), error)
        return run_compiled(fn, args, kwargs)
    rng_state = torch.get_rng_state()
    eager_result, eager_error = _outcome(lambda: run_eager(eager_fn, eager_args, eager_kwargs))
    torch.set_rng_state(rng_state)
    result, error = _outcome(lambda: run_compiled(fn, args, kwargs))
    name = _name(fn)
    if (eager_error is None) != (error is None) or (error is not None and type(error) is not type(eager_error)):
        raise CorrectnessError(name, "the exception raised", _describe_error(eager_error), _describe_error(error)) from error
    _compare(name, "the arguments after the call", (eager_args, eager_kwargs), (args, kwargs))
    if error is not None:
        raise error
    _compare(name, "the return value", eager_result, result)
    return result


def _copies(fn, args, kwargs):
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        memo = {}
        owner_copy = copy.deepcopy(owner, memo)
        eager_fn = getattr(owner_copy, fn.__name__)
        eager_args, eager_kwargs = copy.deepcopy((args, kwargs), memo)
        return eager_fn, eager_args, eager_kwargs
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    return fn, eager_args, eager_kwargs


def _outcome(call):
    try:
        return call(), None
    except Exception as error:  # compared below; BaseExceptions propagate
        return None, error


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _describe_error(error):
    return "no exception" if error is None else f"{type(error).__name__}: {error}"


def _compare(name, what, eager, compiled, path="", seen=None):
    seen = set() if seen is None else seen
    if id(eager) in seen:
        return
    here = f"{what}{path}"
    if isinstance(eager, torch.Tensor) or isinstance(compiled, torch.Tensor):
        if not (isinstance(eager, torch.Tensor) and isinstance(compiled, torch.Tensor)) or not _tensors_match(eager, compiled):
            raise CorrectnessError(name, here, eager, compiled)
        return
    if type(eager) is not type(compiled):
        raise CorrectnessError(name, here + " (type)", type(eager), type(compiled))
    seen.add(id(eager))
    if isinstance(eager, (list, tuple)):
        if len(eager) != len(compiled):
            raise CorrectnessError(name, here + " (length)", eager, compiled)
        for i, (a, b) in enumerate(zip(eager, compiled)):
            _compare(name, what, a, b, f"{path}[{i}]", seen)
        return
    if isinstance(eager, dict):
        if list(eager) != list(compiled):
            raise CorrectnessError(name, here + " (keys)", list(eager), list(compiled))
        for key in eager:
            _compare(name, what, eager[key], compiled[key], f"{path}[{key!r}]", seen)
        if type(eager) is dict:
            return
    if isinstance(eager, float) and math.isnan(eager) and math.isnan(compiled):
        return
    if isinstance(eager, (int, float, complex, str, bytes, bool, type(None), torch.dtype, torch.device, torch.Size)):
        if eager != compiled:
            raise CorrectnessError(name, here, eager, compiled)
        return
    if isinstance(eager, torch.nn.Module):
        _compare(name, what, dict(eager.state_dict(keep_vars=True)), dict(compiled.state_dict(keep_vars=True)),
                 path + ".state_dict()", seen)
        return
    state_a, state_b = getattr(eager, "__dict__", None), getattr(compiled, "__dict__", None)
    if isinstance(state_a, dict) and isinstance(state_b, dict):
        _compare(name, what, state_a, state_b, path + ".__dict__", seen)


def _tensors_match(a, b):
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    a, b = a.detach(), b.detach()
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    return bool(torch.equal(a, b))
