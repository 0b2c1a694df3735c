"""Round trip over real code: every code object (nested ones included) compiled from the
standard library's and torch's .py files decodes and re-assembles into identical co_code,
co_exceptiontable, co_linetable and co_stacksize; and re-assembled functions behave like
the originals."""

import colorsys
import importlib.util
import json
import opcode
import os
import sys
import sysconfig
import textwrap
import time
import types
import warnings

import pytest

from bytegraph import bytecode
from bytegraph._extension import _C

COMPARED = ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize")

# (path relative to the scanned root, co_name, co_firstlineno) -> why it cannot match.
# CPython 3.11 sizes the stack before it drops the exception-table entries of handlers whose
# protected code was optimised away (constant `try` bodies with `except*`); the handler code
# is still emitted but unreachable, and its depth is not recoverable from the final code
# object. Our co_stacksize is then smaller than CPython's over-approximation, which is safe
# because that code never runs.
_DEAD_HANDLER = "unreachable except* handler code sized by CPython before its table entry was dropped"
# The same functions of each version's own standard library (their lines move between releases).
_ALLOWED_BY_VERSION = {
    (3, 11): {
        ("test/test_sys_settrace.py", "func", 1328): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1357): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1399): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1443): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1465): _DEAD_HANDLER,
        ("test/test_except_star.py", "test_except_star_ExceptionGroup_is_runtime_error_single", 22): _DEAD_HANDLER,
    },
    (3, 12): {
        ("test/test_sys_settrace.py", "func", 1356): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1385): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1427): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1471): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1493): _DEAD_HANDLER,
        ("test/test_except_star.py", "test_except_star_ExceptionGroup_is_runtime_error_single", 23): _DEAD_HANDLER,
    },
    (3, 13): {
        ("test/test_sys_settrace.py", "func", 1372): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1401): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1443): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1487): _DEAD_HANDLER,
        ("test/test_sys_settrace.py", "func", 1509): _DEAD_HANDLER,
        ("test/test_except_star.py", "test_except_star_ExceptionGroup_is_runtime_error_single", 23): _DEAD_HANDLER,
    },
}
ALLOWED = _ALLOWED_BY_VERSION.get(sys.version_info[:2], {})


def _nested_codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested_codes(const)


def _python_files(root, skip_dirs=()):
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in skip_dirs)
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def _round_trip_tree(root, skip_dirs=()):
    counts = {"files": 0, "not_compiling": 0, "codes": 0, "allowed": 0}
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in _python_files(root, skip_dirs):
            relative = os.path.relpath(path, root)
            try:
                with open(path, "rb") as source:
                    module = compile(source.read(), path, "exec")
            except (SyntaxError, ValueError, UnicodeDecodeError):
                counts["not_compiling"] += 1  # test data with deliberate syntax errors, py2 files
                continue
            counts["files"] += 1
            for code in _nested_codes(module):
                counts["codes"] += 1
                try:
                    again = _C.bytecode.roundtrip(code)
                except Exception as error:  # reported below with the code object that failed
                    failures.append((relative, code.co_name, code.co_firstlineno, repr(error)))
                    continue
                differs = [f for f in COMPARED if getattr(again, f) != getattr(code, f)]
                if not differs:
                    continue
                key = (relative, code.co_name, code.co_firstlineno)
                if key in ALLOWED and differs == ["co_stacksize"] and again.co_stacksize < code.co_stacksize:
                    counts["allowed"] += 1
                    print(f"  allowed: {key}: {ALLOWED[key]}")
                    continue
                failures.append(key + (f"differs in {differs}",))
    return counts, failures


def _check_tree(name, root, skip_dirs=()):
    start = time.perf_counter()
    counts, failures = _round_trip_tree(root, skip_dirs)
    elapsed = time.perf_counter() - start
    print(f"{name}: {counts['files']} files, {counts['codes']} code objects round-tripped, "
          f"{counts['allowed']} allowed differences, {counts['not_compiling']} files not compiling, "
          f"{len(failures)} failures ({elapsed:.1f} s)")
    assert counts["codes"] > 1000, f"{name}: suspiciously few code objects under {root}"
    assert not failures, "\n".join(map(str, failures[:20]))


def test_standard_library_round_trips():
    _check_tree("stdlib", sysconfig.get_paths()["stdlib"], skip_dirs=("site-packages",))


def test_torch_round_trips():
    spec = importlib.util.find_spec("torch")  # the sources only: no need to import torch
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed: no torch sources to round-trip")
    _check_tree("torch", list(spec.submodule_search_locations)[0])


def test_python_api_round_trips_a_sample():
    # The Python objects (decode -> Instruction list -> assemble) give the same bytes as the
    # C++ fast path used above.
    for module in (textwrap, colorsys, json.encoder, json.decoder):
        with open(module.__file__, "rb") as source:
            top = compile(source.read(), module.__file__, "exec")
        for code in _nested_codes(top):
            again = bytecode.assemble(bytecode.decode(code), like=code)
            for field in COMPARED + ("co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
                                     "co_flags", "co_argcount", "co_qualname", "co_firstlineno"):
                assert getattr(again, field) == getattr(code, field), (code, field)


def _rebuilt(fn):
    code = bytecode.assemble(bytecode.decode(fn.__code__), like=fn.__code__)
    clone = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone


def _loops_and_exceptions(n):
    total = 0
    for i in range(n):
        try:
            if i % 3 == 0:
                raise ValueError(i)
            total += i
        except ValueError as error:
            total -= error.args[0]
        finally:
            total += 1
    while total > 100:
        total //= 2
    return total


def _closures_and_comprehensions(xs):
    scale = len(xs)

    def times(v):
        return v * scale

    squares = {x: x * x for x in xs if x % 2}
    return [times(v) for v in squares.values()], sorted({x % 4 for x in xs}), list(y for y in xs if y > 2)


class _Resource:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", exc[0].__name__ if exc[0] else None))
        return exc[0] is KeyError


def _with_blocks(key):
    log = []
    with _Resource(log):
        log.append("body")
        if key:
            raise KeyError(key)
    return log


def _generator(n):
    for i in range(n):
        received = yield i
        if received:
            yield from range(received)


def _big_function_source(constants=300, branches=40):
    # > 256 constants (EXTENDED_ARG on LOAD_CONST) and a loop body longer than 256 code units
    # (EXTENDED_ARG on the backward jump).
    lines = ["def big(n):", "    total = 0", "    for i in range(n):"]
    lines += [f"        if i == {k}: total += {k * 1.5!r}" for k in range(branches)]
    lines += [f"    total += {k}.25" for k in range(constants)]
    lines += ["    return total"]
    namespace = {}
    exec("\n".join(lines), namespace)
    return namespace["big"]


CASES = [
    (textwrap.dedent, ("    a\n      b\n",)),
    (textwrap.wrap, ("The quick brown fox jumps over the lazy dog " * 3, 17)),
    (textwrap.fill, ("hello world " * 10,)),
    (colorsys.rgb_to_hls, (0.2, 0.4, 0.6)),
    (colorsys.hls_to_rgb, (0.5, 0.3, 0.9)),
    (colorsys.rgb_to_hsv, (0.9, 0.1, 0.3)),
    (json.encoder.py_encode_basestring_ascii, ("h\u00e9llo \"w\"\n",)),
    (json.decoder.py_scanstring, ('"abc\\n\\u00e9" tail', 1)),
    (_loops_and_exceptions, (20,)),
    (_closures_and_comprehensions, ([1, 2, 3, 4, 5, 6, 7],)),
    (_with_blocks, ("",)),
    (_with_blocks, ("k",)),
    (_big_function_source(), (50,)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__module__}.{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_reassembled_functions_behave_like_the_originals(fn, args):
    assert _rebuilt(fn)(*args) == fn(*args)


def test_reassembled_generator_behaves_like_the_original():
    def drive(make):
        gen = make(4)
        out = [next(gen), gen.send(2), next(gen), next(gen)]
        return out + list(gen)
    assert drive(_rebuilt(_generator)) == drive(_generator)


def test_big_function_needs_extended_args_and_round_trips():
    big = _big_function_source()
    names = [inst.opname for inst in bytecode.decode(big.__code__)]
    assert "EXTENDED_ARG" not in names  # folded
    assert bytes([opcode.opmap["EXTENDED_ARG"]]) in big.__code__.co_code[::2]  # the original really has EXTENDED_ARG
    assert _C.bytecode.roundtrip(big.__code__).co_code == big.__code__.co_code
