"""Tracing arbitrary Python code never crashes: it either succeeds, stops with Unsupported,
or rejects an argument with a Python exception."""

import colorsys
import copy
import heapq
import inspect
import json
import posixpath
import re
import statistics
import string
import textwrap
import types

import pytest

import bytegraph._C as C

CASES = [
    (colorsys.rgb_to_hsv, (0.2, 0.4, 0.6)),
    (colorsys.hls_to_rgb, (0.2, 0.4, 0.6)),
    (colorsys.rgb_to_yiq, (0.1, 0.2, 0.3)),
    (posixpath.join, ("a", "b", "c")),
    # 3.13 implements normpath in C: only a Python function is a case.
    *([(posixpath.normpath, ("a/./b/../c",))] if hasattr(posixpath.normpath, "__code__") else []),
    (textwrap.dedent, ("  a\n  b",)),
    (textwrap.indent, ("a\nb", "  ")),
    (string.capwords, ("hello world",)),
    (json.dumps, ([1, 2],)),
    (heapq.nlargest, (2, [3, 1, 2])),
    (statistics.median, ([1, 2, 3],)),
    (copy.copy, ([1],)),
    (inspect.isfunction, (len,)),
    (re.escape, ("a.b",)),
    (posixpath.splitext, ("dir/name.tar.gz",)),
]
# Only functions written in Python are traced; a few become C with a later interpreter
# (posixpath.normpath is C from 3.13), where test_non_python_callables_are_rejected covers them.
CASES = [(fn, args) for fn, args in CASES if isinstance(fn, types.FunctionType)]


@pytest.mark.parametrize("fn,args", CASES, ids=[fn.__qualname__ for fn, _ in CASES])
def test_stdlib_functions_trace_or_stop_cleanly(fn, args):
    try:
        result = C.trace.trace(fn, args, {})
    except C.Unsupported as error:
        assert error.kind and " (at " in str(error)
        return
    # Pure Python on constants folds completely: the result is the real one.
    from bytegraph import _bridge

    assert _bridge.rebuild_output(result.output, ()) == fn(*args)


def test_non_python_callables_are_rejected_with_type_error():
    with pytest.raises(TypeError):
        C.trace.trace(len, ([1],), {})


def test_the_suite_runs_with_stack_effects_checked():
    from bytegraph._extension import _C

    # conftest.py turns the check on for every test (and, through the environment, their
    # subprocesses): each handler's push/pop is compared with the opcode's stack effect.
    assert _C.trace.check_stack_effects(True) is True
