"""bytegraph.comptime: user code run while tracing, reading the live symbolic state.

Each test compiles a small function whose comptime call prints or inspects something, and
checks the printed text against facts known independently (the function's own bytecode,
its source lines, the ops it performs), plus the eager result of the function.
"""

import dis
import inspect
import io

import pytest
import torch

import bytegraph
from bytegraph import comptime
from bytegraph.comptime import ComptimeContext, ComptimeVar
from bytegraph.testing import CompileCounter


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def _inputs():
    return torch.randn(2, 3), torch.randn(2, 3)


def _compile_and_check(fn, *args, frames=1):
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    result = compiled(*args)
    torch.testing.assert_close(result, fn(*args))
    assert counter.frame_count == frames
    return result


def _line_of(fn, text):
    """The absolute line number of the first source line of fn containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def test_comptime_receives_a_context_and_does_not_change_the_graph():
    seen = []

    def f(a, b):
        x = a + b
        comptime(lambda ctx: seen.append((type(ctx), repr(ctx.get_local("x")))))
        return x * 2

    _compile_and_check(f, *_inputs())
    assert seen == [(ComptimeContext, "TensorVariable(add: f32[2, 3])")]


def test_comptime_is_a_no_op_when_run_eagerly(capsys):
    calls = []

    def f(a, b):
        comptime(lambda ctx: calls.append(ctx))
        comptime.print_graph()
        comptime.print_locals()
        comptime.print_guards()
        comptime.print_bt()
        comptime.print_disas()
        comptime.print_value_stack()
        comptime.graph_break()
        return a + comptime.print_value_stack_and_return(b)

    a, b = _inputs()
    torch.testing.assert_close(f(a, b), a + b)
    assert calls == []
    assert capsys.readouterr().out == ""


def test_print_locals_lists_bound_locals_with_their_symbolic_values(capsys):
    def f(a, b):
        n = 3
        x = a + b
        comptime.print_locals()
        unused = None  # noqa: F841  (unbound at the comptime call: not listed)
        return x * n

    _compile_and_check(f, *_inputs())
    assert capsys.readouterr().out.splitlines() == [
        "a = TensorVariable(l_a_: f32[2, 3])",
        "b = TensorVariable(l_b_: f32[2, 3])",
        "n = ConstantVariable(3)",
        "x = TensorVariable(add: f32[2, 3])",
    ]


def test_ctx_print_locals_writes_to_file():
    out = io.StringIO()

    def f(a, b):
        x = a - b
        comptime(lambda ctx: ctx.print_locals(file=out))
        return x

    _compile_and_check(f, *_inputs())
    assert "x = TensorVariable(sub: f32[2, 3])" in out.getvalue().splitlines()


def test_print_graph_shows_the_ops_recorded_so_far(capsys):
    def f(a, b):
        x = torch.sin(a) + b
        comptime.print_graph()
        return torch.cos(x)

    _compile_and_check(f, *_inputs())
    text = capsys.readouterr().out
    assert "def forward(self, L_a_" in text
    assert "torch.sin(a)" in text
    assert "torch.cos" not in text  # recorded after the comptime call


def test_graph_returns_the_fx_graph_so_far():
    graphs = []

    def f(a, b):
        x = a * b
        comptime(lambda ctx: graphs.append(ctx.graph()))
        return x.relu()

    _compile_and_check(f, *_inputs())
    (graph,) = graphs
    assert isinstance(graph, torch.fx.Graph)
    ops = [(node.op, node.target) for node in graph.nodes if node.op != "output"]
    assert ops[:2] == [("placeholder", "L_a_"), ("placeholder", "L_b_")]
    assert [op for op in ops if op[0].startswith("call")] == [("call_function", __import__("operator").mul)]


def test_print_disas_marks_the_comptime_call_of_the_caller(capsys):
    def f(a, b):
        x = a + b
        comptime.print_disas()
        return x

    _compile_and_check(f, *_inputs())
    text = capsys.readouterr().out
    marked = [line for line in text.splitlines() if "-->" in line]
    assert len(marked) == 1
    line = _line_of(f, "comptime.print_disas()")
    calls = [i for i in dis.get_instructions(f) if i.opname == "CALL" and i.positions.lineno == line]
    assert len(calls) == 1
    assert marked[0].split()[1:3] == [str(calls[0].offset), "CALL"]
    # The whole function is listed, not only the current instruction.
    assert "RETURN_VALUE" in text and "BINARY_OP" in text


def test_print_disas_at_stacklevel_walks_out_of_inlined_frames():
    out = io.StringIO()

    def helper(x):
        comptime(lambda ctx: ctx.print_disas(file=out, stacklevel=1))
        return x + 1

    def f(a, b):
        return helper(a * b)

    _compile_and_check(f, *_inputs())
    marked = [line for line in out.getvalue().splitlines() if "-->" in line]
    line = _line_of(f, "return helper(a * b)")
    calls = [i for i in dis.get_instructions(f) if i.opname == "CALL" and i.positions.lineno == line]
    assert [m.split()[1] for m in marked] == [str(calls[0].offset)]


def test_print_value_stack_and_return_shows_pending_operands(capsys):
    def f(a, b):
        x = a + b
        return x * comptime.print_value_stack_and_return(b)

    _compile_and_check(f, *_inputs())
    assert capsys.readouterr().out.splitlines() == ["- TensorVariable(add: f32[2, 3])"]


def test_print_value_stack_shows_a_method_being_called(capsys):
    def f(a, b):
        return a.sum(comptime.print_value_stack_and_return(0))

    _compile_and_check(f, *_inputs())
    lines = capsys.readouterr().out.splitlines()
    assert "- GetAttrVariable(TensorVariable(l_a_: f32[2, 3]), sum)" in lines


def test_print_value_stack_at_statement_level_is_empty(capsys):
    def f(a, b):
        comptime.print_value_stack()
        return a + b

    _compile_and_check(f, *_inputs())
    assert capsys.readouterr().out == ""


def test_print_bt_goes_through_inlined_frames(capsys):
    def inner(y):
        comptime.print_bt()
        return y.neg()

    def outer(x):
        return inner(x * 2)

    def f(a, b):
        return outer(a + b)

    _compile_and_check(f, *_inputs())
    text = capsys.readouterr().out
    expected = [
        (f"line {_line_of(f, 'return outer(a + b)')}, in f", "return outer(a + b)"),
        (f"line {_line_of(outer, 'return inner(x * 2)')}, in outer", "return inner(x * 2)"),
        (f"line {_line_of(inner, 'comptime.print_bt()')}, in inner", "comptime.print_bt()"),
    ]
    positions = []
    for where, source in expected:
        assert where in text and source in text
        positions.append(text.index(where))
    assert positions == sorted(positions)
    assert "test_comptime.py" in text


def test_print_guards_lists_guards_installed_so_far(capsys):
    def f(a, b):
        x = a + b
        comptime.print_guards()
        return x

    _compile_and_check(f, *_inputs())
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("- L['a']") and "TENSOR_MATCH" in line for line in lines)
    assert any(line.startswith("- L['b']") and "size=[2, 3]" in line for line in lines)
    assert all(line.startswith("- ") for line in lines)


def test_get_local_comptime_var_api():
    checks = {}

    def inspect_locals(ctx):
        x = ctx.get_local("x")
        n = ctx.get_local("n")
        pair = ctx.get_local("pair")
        checks["x"] = (repr(x), x.python_type(), x.is_proxy(), x.as_fake().shape, x.is_python_constant())
        checks["proxy"] = x.as_proxy()
        checks["n"] = (repr(n), n.python_type(), n.as_python_constant(), n.is_python_constant(), n.is_proxy())
        checks["pair"] = (pair.is_proxy(), pair.as_proxy(), pair.is_python_constant())
        checks["kinds"] = [v._i_will_not_complain_if_bc_breaks_SymbolicValue().kind for v in (x, n, pair)]
        with pytest.raises(TypeError, match="not a Python constant"):
            x.as_python_constant()
        with pytest.raises(TypeError, match="not in the graph"):
            n.as_proxy()
        with pytest.raises(NameError, match="no local named 'missing'"):
            ctx.get_local("missing")
        with pytest.raises(ValueError, match="stacklevel 5 is out of range"):
            ctx.get_local("x", stacklevel=5)

    def f(a, b):
        n = 3
        x = a * n
        pair = (x, b)
        comptime(inspect_locals)
        return pair[0] + pair[1]

    _compile_and_check(f, *_inputs())
    assert checks["x"] == ("TensorVariable(mul: f32[2, 3])", torch.Tensor, True, torch.Size([2, 3]), False)
    assert isinstance(checks["proxy"], torch.fx.Proxy) and checks["proxy"].node.name == "x"  # named after the local, as under torch.compile
    assert checks["n"] == ("ConstantVariable(3)", int, 3, True, False)
    assert checks["kinds"] == ["tensor", "constant", "tuple"]
    is_proxy, proxies, is_constant = checks["pair"]
    assert is_proxy and not is_constant
    assert isinstance(proxies, tuple) and [p.node.name for p in proxies] == ["x", "l_b_"]


def test_get_local_with_stacklevel_reads_the_caller():
    seen = {}

    def helper(y):
        comptime(lambda ctx: seen.update(inner=repr(ctx.get_local("y")), outer=repr(ctx.get_local("k", stacklevel=1))))
        return y

    def f(a, b):
        k = 7
        return helper(a + k)

    _compile_and_check(f, *_inputs())
    assert seen == {"inner": "TensorVariable(add: f32[2, 3])", "outer": "ConstantVariable(7)"}


def test_comptime_var_reads_closure_cells():
    seen = []

    def f(a, b):
        scale = 2

        def g(x):
            return x * scale

        comptime(lambda ctx: seen.append(ctx.get_local("scale").as_python_constant()))
        return g(a)

    _compile_and_check(f, *_inputs())
    assert seen == [2]


def test_comptime_graph_break_splits_the_function():
    counter = CompileCounter()

    def f(a, b):
        x = a + b
        comptime.graph_break()
        return x * 2

    a, b = _inputs()
    result = bytegraph.compile(f, backend=counter)(a, b)
    torch.testing.assert_close(result, (a + b) * 2)
    assert counter.frame_count == 2
    assert counter.op_count == 2


def test_ctx_graph_break_message_under_fullgraph():
    def f(a):
        comptime(lambda ctx: ctx.graph_break("stop here"))
        return a + 1

    with pytest.raises(bytegraph.exc.GraphBreakError, match="stop here") as info:
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert info.value.kind == "comptime_graph_break"
    assert info.value.lineno == _line_of(f, "stop here")


def test_context_is_invalid_after_its_call():
    kept = []

    def f(a):
        comptime(lambda ctx: kept.append(ctx))
        return a + 1

    _compile_and_check(f, torch.ones(2))
    with pytest.raises(RuntimeError, match="only valid during the comptime call"):
        kept[0].print_locals()
    kept.clear()


def test_comptime_lambda_closing_over_a_constant():
    seen = []

    def f(a):
        label = "here"
        comptime(lambda ctx: seen.append(label))
        return a + 1

    _compile_and_check(f, torch.ones(2))
    assert seen == ["here"]


def test_comptime_lambda_closing_over_a_tensor_is_refused_with_a_hint():
    def f(a):
        y = a + 1
        comptime(lambda ctx: print(y))
        return y

    with pytest.raises(bytegraph.exc.GraphBreakError, match="ctx.get_local"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2))


def test_comptime_in_a_module_forward(capsys):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 4)

        def forward(self, x):
            h = self.fc(x)
            comptime.print_locals()
            return h.relu()

    m = M()
    x = torch.randn(2, 3)
    counter = CompileCounter()
    torch.testing.assert_close(bytegraph.compile(m, backend=counter)(x), m(x))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("self = ") and "M" in lines[0]
    assert lines[1] == "x = TensorVariable(l_x_: f32[2, 3])"
    assert lines[2].startswith("h = TensorVariable(") and lines[2].endswith(": f32[2, 4])")



def test_an_exception_in_the_comptime_function_is_reported_as_itself(caplog):
    """Not a graph break: the exception reaches the caller as raised, or, with
    config.suppress_errors, is logged as a compile failure naming it (the frame then runs
    eagerly)."""

    def f(a):
        comptime(lambda ctx: 1 / 0)
        return a + 1

    counter = CompileCounter()
    with pytest.raises(ZeroDivisionError):
        bytegraph.compile(f, backend=counter)(torch.ones(2))
    with bytegraph.config.patch(suppress_errors=True), caplog.at_level("WARNING", logger="bytegraph"):
        result = bytegraph.compile(f, backend=counter)(torch.ones(2))
    torch.testing.assert_close(result, torch.ones(2) + 1)
    assert "ZeroDivisionError" in caplog.text and "could not compile" in caplog.text
    assert counter.frame_count == 0
