"""Generated code as Python source (depyf), with a visible fallback to disassembly."""

import sys
import time
import types

import pytest
import torch

import bytegraph
from bytegraph import _readable_code
from bytegraph.examples import foo1


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def _generated_code_of(fn, *args):
    bytegraph.compile(fn, backend="eager")(*args)
    [entry] = bytegraph._frame.cache_entries(fn.__code__)
    return entry["code"]


needs_decompiler = pytest.mark.skipif(not _readable_code.decompiler_reads_this_interpreter(),
                                      reason="generated code as source needs depyf reading this interpreter's bytecode (depyf 0.20 stops at 3.12)")


@needs_decompiler
def test_generated_code_reads_as_python():
    code = _generated_code_of(foo1, torch.ones(2), -torch.ones(2))
    text, is_source = _readable_code.python_source(code)
    first = foo1.__code__.co_firstlineno
    assert is_source
    assert text.splitlines()[0] == "def foo1(a, b):"
    assert "___graph_out = __compiled_fn_" in text
    assert f"return foo1_resumed_at_line_{first + 3}(" in text  # resume functions called by name
    assert "__co_consts" not in text and "__temp_" not in text


def test_without_a_decompiler_the_disassembly_is_shown_and_said_so(monkeypatch):
    code = _generated_code_of(foo1, torch.ones(2), -torch.ones(2))
    monkeypatch.setitem(sys.modules, "depyf.decompiler", None)  # import fails
    monkeypatch.setattr(_readable_code, "_decompiled", {})
    text, is_source = _readable_code.python_source(code)
    assert not is_source
    assert text.startswith("# (disassembly: this code could not be decompiled here)")
    assert "LOAD_FAST" in text


def test_a_decompiler_that_fails_or_hangs_falls_back(monkeypatch):
    code = _generated_code_of(foo1, torch.ones(2), -torch.ones(2))

    class Failing:
        def __init__(self, code):
            pass

        def decompile(self, **kwargs):
            raise RuntimeError("unsupported bytecode")

    class Hanging(Failing):
        def decompile(self, **kwargs):
            time.sleep(5)
            return "never"

    for decompiler in (Failing, Hanging):
        monkeypatch.setitem(sys.modules, "depyf.decompiler", types.SimpleNamespace(Decompiler=decompiler))
        monkeypatch.setattr(_readable_code, "_decompiled", {})
        monkeypatch.setattr(_readable_code, "DECOMPILE_SECONDS", 0.2)
        start = time.perf_counter()
        text, is_source = _readable_code.python_source(code)
        assert not is_source and "LOAD_FAST" in text
        assert time.perf_counter() - start < 3


def test_side_by_side_puts_the_original_next_to_the_generated_code():
    code = _generated_code_of(foo1, torch.ones(2), -torch.ones(2))
    text = _readable_code.source_and_original(code, foo1.__code__)
    rows = [line.split(" | ") for line in text.splitlines()]
    assert [cell.strip() for cell in rows[0]] == ["original: foo1", "generated: foo1"]
    assert rows[2][0].rstrip() == "def foo1(a, b):"
    assert all(len(row) == 2 for row in rows)


def test_identifiers_for_resume_function_names():
    assert _readable_code.identifier("foo2 (resumed at line 7)") == "foo2_resumed_at_line_7"
    assert _readable_code.identifier("foo2 (resumed at line 7 #2)") == "foo2_resumed_at_line_7_2"
    assert _readable_code.identifier("forward") == "forward"


def _raises_after_a_break(x):
    y = x + 1
    if y.sum() > 0:
        raise ValueError("positive")
    return y


def test_tracebacks_name_the_users_function_and_line():
    import inspect
    import traceback

    compiled = bytegraph.compile(_raises_after_a_break, backend="eager")
    with pytest.raises(ValueError, match="positive") as info:
        compiled(torch.ones(2))
    raise_line = inspect.getsourcelines(_raises_after_a_break)[1] + 3
    frames = traceback.extract_tb(info.value.__traceback__)
    # Calling ValueError breaks again in the resume function: the raise runs in a second
    # resume function at the same line ("#2").
    assert frames[-1].name in (f"_raises_after_a_break (resumed at line {raise_line})",
                               f"_raises_after_a_break (resumed at line {raise_line} #2)")
    assert frames[-1].lineno == raise_line
    assert frames[-1].line == 'raise ValueError("positive")'
    assert not any("__resume_at_" in frame.name for frame in frames)
