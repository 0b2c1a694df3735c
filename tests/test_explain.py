"""bytegraph.explain(fn)(*args): graphs, breaks (with user locations), ops, guards, timings."""

import inspect
import itertools
import re
import traceback

import pytest
import torch

import bytegraph
from bytegraph import _readable_code
from bytegraph.eval_frame import frame_hook
from bytegraph.examples import foo1, foo2
from bytegraph.testing import CompileCounter


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _signed(sign):
    return torch.full((4,), float(sign))


@pytest.mark.parametrize("sign_a, sign_b", list(itertools.product([1, -1], repeat=2)))
def test_explain_foo2(sign_a, sign_b):
    a, b = _signed(sign_a), _signed(sign_b)
    out = bytegraph.explain(foo2)(a, b)

    # Independently: the same call compiled with a counting backend.
    counter = CompileCounter()
    torch.testing.assert_close(bytegraph.compile(foo2, backend=counter)(a, b), foo2(a, b))
    assert out.graph_count == counter.frame_count == 3
    assert out.op_count == counter.op_count
    assert len(out.graphs) == 3 and all(isinstance(gm, torch.fx.GraphModule) for gm in out.graphs)

    assert out.graph_break_count == 2
    first, second = out.break_reasons
    for reason, text in ((first, "if b.sum() < 0:"), (second, "if a.sum() < 0:")):
        assert reason.kind == "data_dependent_branch"
        assert "branching on the value of TensorVariable" in reason.reason
        assert reason.filename.endswith("examples.py")
        assert reason.lineno == _line(foo2, text)
        assert reason.source_line == text
        assert all(isinstance(frame, traceback.FrameSummary) for frame in reason.user_stack)
    # The second break happens in a resume function; explain names the user's function.
    assert first.user_stack[-1].name == second.user_stack[-1].name == "foo2"

    assert out.ops_per_graph[0] == ["call_function operator.add", "call_method sum", "call_function operator.lt"]
    negated = ["call_function operator.mul"] if sign_b < 0 else []
    assert out.ops_per_graph[1] == negated + ["call_method sum", "call_function operator.lt"]
    assert out.ops_per_graph[2] == ["call_function operator.mul"] * (2 if sign_a < 0 else 1)

    assert any(g.startswith("L['a']") and "TENSOR_MATCH" in g for g in out.guards)
    assert any(g.startswith("L['b']") and "size=[4]" in g for g in out.guards)
    assert [name for name, _ in out.compile_times][0] == "foo2"
    assert len(out.compile_times) == 3 and all(seconds >= 0 for _, seconds in out.compile_times)


def test_explain_str_is_a_readable_summary():
    text = str(bytegraph.explain(foo2)(torch.ones(4), -torch.ones(4)))
    assert "Graph Count: 3" in text
    assert "Graph Break Count: 2" in text
    assert text.count("Break Reason ") == 2
    assert f'examples.py", line {_line(foo2, "if b.sum() < 0:")}, in foo2' in text
    assert "        if b.sum() < 0:" in text
    assert "Ops per Graph 3:" in text
    assert re.search(r"^  Guard \d+: L\['a'\]: TENSOR_MATCH", text, re.MULTILINE)
    assert "Compile Times (each frame's compile: tracing + backend + guards + codegen):" in text
    assert re.search(r"^  foo2: [\d.]+ ms = tracing [\d.]+ \+ backend [\d.]+ \+ guards [\d.]+ \+ codegen [\d.]+ ms$",
                     text, re.MULTILINE)
    # The generated code, as source next to the original, with resume functions named after foo2.
    assert "Generated Code:" in text
    resumed = f"foo2 (resumed at line {_line(foo2, 'x = x * -1')})"
    assert f"  {resumed}:" in text
    if _readable_code.decompiler_reads_this_interpreter():
        assert f"return foo2_resumed_at_line_{_line(foo2, 'x = x * -1')}(a, x)" in text
    else:  # depyf does not read this interpreter's bytecode: the disassembly, said so
        assert "# (disassembly: this code could not be decompiled here)" in text
    assert "__resume_at_" not in text


def test_explain_names_stack_values_in_the_users_words():
    def printed(x):
        print(x.shape)
        return x

    def f(x):
        return 3 + printed(x * 2)

    out = bytegraph.explain(f)(torch.ones(2))
    line = _line(f, "return 3 + printed(x * 2)")
    assert f"the value of `printed(x * 2)` on the stack at line {line}: TENSOR_MATCH" in "\n".join(out.guards)
    assert not any("___stack" in guard for guard in out.guards)


def test_explain_leaves_no_compiled_code_behind():
    explained = bytegraph.explain(foo1)(torch.ones(3), torch.ones(3))
    assert explained.graph_count == 1 and explained.graph_break_count == 1
    assert list(frame_hook().cache_entries(foo1.__code__)) == []


def test_explain_without_breaks():
    def f(x, y, *, scale):
        return (x * y).sum() * scale

    out = bytegraph.explain(f)(torch.ones(3), torch.ones(3), scale=2)
    assert (out.graph_count, out.graph_break_count, out.break_reasons) == (1, 0, [])
    assert out.ops_per_graph == [["call_function operator.mul", "call_method sum", "call_function operator.mul"]]
    assert "Graph Break Count: 0" in str(out)


def test_explain_explicit_break_in_an_inlined_helper():
    def helper(x):
        bytegraph.graph_break()
        return x + 1

    def f(x):
        return helper(x * 2) - 1

    helper_break = _line(helper, "bytegraph.graph_break()")
    out = bytegraph.explain(f)(torch.ones(3))
    assert out.graph_break_count >= 1
    reason = out.break_reasons[0]
    assert [(frame.name, frame.lineno) for frame in reason.user_stack] == [
        ("f", _line(f, "return helper(x * 2) - 1")), ("helper", helper_break)]
    assert reason.source_line == "bytegraph.graph_break()"


def test_explain_a_module():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    out = bytegraph.explain(model)(torch.randn(2, 4))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert any("call_module" in op for op in out.ops_per_graph[0])


def test_explain_rejects_non_callables():
    with pytest.raises(TypeError, match="function or nn.Module"):
        bytegraph.explain(3)
