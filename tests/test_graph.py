"""Materialisation of the C++ graph into torch.fx: names, metadata, attributes, outputs."""

import operator

import torch
import torch.nn as nn

from tests._trace_helpers import check, nodes, trace

_SCALE = torch.full((3,), 2.0)


def test_placeholders_are_named_after_sources_and_come_first():
    def f(xs, y):
        z = xs[0] + y
        return z * _SCALE + xs[1]  # a global tensor read after other ops

    result = check(f, [torch.ones(3), torch.arange(3.0)], torch.ones(3))
    names = [n.name for n in nodes(result, "placeholder")]
    assert names == ["l_xs_0_", "l_xs_1_", "l_y_", "g_scale_"]  # as torch.compile names them
    assert result.inputs == ["L['xs'][0]", "L['xs'][1]", "L['y']", "G['_SCALE']"]
    ops = [n.op for n in result.graph_module.graph.nodes]
    assert ops[:4] == ["placeholder"] * 4 and ops[-1] == "output"


def test_every_node_has_its_fake_and_the_output_is_a_tuple():
    def f(x):
        a, b = x.chunk(2)
        return a + b, a.shape

    result = check(f, torch.arange(4.0))
    for node in nodes(result):
        if node.op == "output":
            assert isinstance(node.args[0], tuple)
        elif node.target == "chunk":  # a multi-output op carries the tuple of its fakes
            assert [v.shape for v in node.meta["example_value"]] == [(2,), (2,)]
        else:
            assert type(node.meta["example_value"]).__name__ == "FakeTensor"
    getitems = [n for n in nodes(result, "call_function") if n.target is operator.getitem]
    assert [n.args[1] for n in getitems] == [0, 1]


def test_stack_trace_metadata_and_print_readable():
    def f(x):
        y = x.cos()
        return y + 1

    result = trace(f, torch.ones(2))
    cos = [n for n in nodes(result, "call_method")][0]
    line = f.__code__.co_firstlineno + 1
    assert cos.meta["stack_trace"] == f'  File "{__file__}", line {line}, in f\n    y = x.cos()\n'
    text = result.graph_module.print_readable(print_output=False)
    assert f"# File: {__file__}:{line} in f, code: y = x.cos()" in text


def test_modules_and_parameters_are_registered_on_the_root():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(3))
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x) * self.scale + self.lin(x)

    m = M()
    result = check(m, torch.ones(3))
    gm = result.graph_module
    assert gm.self_lin is m.lin and gm.self_scale is m.scale
    # One registration per object, however many times it is used.
    assert [n.target for n in nodes(result, "call_module")] == ["self_lin", "self_lin"]
    assert [n.target for n in nodes(result, "get_attr")] == ["self_scale"]
    assert dict(gm.named_parameters())["self_scale"] is m.scale


def test_graph_reruns_on_new_inputs_of_the_same_shape():
    def f(x, y):
        return torch.matmul(x, y).softmax(-1)

    result = trace(f, torch.randn(2, 3), torch.randn(3, 4))
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    torch.testing.assert_close(result.graph_module(a, b)[0], f(a, b))


def test_inputs_the_graph_does_not_use_are_not_placeholders():
    def f(xs, unused, y):
        return xs[1] * y + len(xs)

    result = check(f, [torch.ones(2), torch.arange(2.0), torch.zeros(2)], torch.ones(5), torch.ones(2))
    assert result.inputs == ["L['xs'][1]", "L['y']"]
    assert [n.name for n in nodes(result, "placeholder")] == ["l_xs_1_", "l_y_"]
    assert any(line.startswith("L['xs']") and "LENGTH" in line.upper() for line in result.guards)


def test_a_tensor_whose_metadata_was_folded_keeps_its_guard():
    # x only feeds a constant (its size): no placeholder, but the constant depends on x's shape.
    def f(x, y):
        return y * x.size(0)

    result = check(f, torch.ones(3), torch.ones(2))
    assert result.inputs == ["L['y']"]
    assert any(line.startswith("L['x']") and "TENSOR_MATCH" in line for line in result.guards)


def test_a_graphs_generated_source_goes_with_the_graph():
    import gc
    import linecache

    import torch.fx.graph_module as fx_graph_module

    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(lambda x: x * 2 + 1, backend=counter)
    compiled(torch.ones(3))
    assert counter.frame_count == 1
    key = type(counter.graphs[0]).forward.__code__.co_filename
    assert key in fx_graph_module._loader.eval_cache
    counter.graphs.clear()
    bytegraph.reset()
    del compiled
    gc.collect()
    assert key not in fx_graph_module._loader.eval_cache
    assert key not in linecache.cache


def _source_generated(gm):
    from torch.fx._lazy_graph_module import _LazyGraphModule

    return isinstance(gm, _LazyGraphModule) and not type(gm)._needs_recompile()


def test_a_traced_graph_generates_its_source_on_first_use_and_forgets_it_when_collected():
    import gc

    import torch.fx.graph_module as fx_graph_module

    result = trace(lambda x: x * 2 + 1, torch.ones(3))
    gm = result.graph_module
    assert not _source_generated(gm)  # a trace does not pay for torch.fx's code generation
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "call_function", "output"]
    assert "def forward" in gm.code
    assert _source_generated(gm)
    key = type(gm).forward.__code__.co_filename
    assert key in fx_graph_module._loader.eval_cache
    torch.testing.assert_close(gm(torch.ones(3)), (torch.full((3,), 3.0),))
    del result, gm
    gc.collect()
    assert key not in fx_graph_module._loader.eval_cache


def test_backends_that_retrace_the_graph_never_generate_its_source():
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend, same

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(lambda x: torch.relu(x * 2 + 1), backend=counter)
    for _ in range(2):
        x = torch.randn(4)
        assert same(compiled(x), torch.relu(x * 2 + 1))
    assert counter.frame_count == 1
    assert not _source_generated(counter.graphs[0])
    bytegraph.reset()


def test_a_backend_returning_the_graphs_forward_runs_the_generated_code_directly(monkeypatch):
    import bytegraph
    from torch.fx._lazy_graph_module import _LazyGraphModule

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward  # still the lazy forward here

    compiled = bytegraph.compile(lambda x: x.sin() + 1, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x.sin() + 1)
    assert _source_generated(graphs[0])
    checks = []
    real_recompile = _LazyGraphModule.real_recompile
    monkeypatch.setattr(_LazyGraphModule, "real_recompile", lambda self: checks.append(self) or real_recompile(self))
    for _ in range(3):
        torch.testing.assert_close(compiled(x), x.sin() + 1)
    assert checks == []  # no call goes through the lazy forward's check
    bytegraph.reset()


def test_a_backend_that_reads_rewrites_and_recompiles_the_graph_has_each_source_forgotten():
    import gc

    import torch.fx.graph_module as fx_graph_module

    import bytegraph

    keys, printed = [], []

    def backend(gm, example_inputs):
        printed.append(gm.print_readable(print_output=False))
        assert "torch.sin" in gm.code
        keys.append(type(gm).forward.__code__.co_filename)
        for node in gm.graph.nodes:
            if node.target is torch.sin:
                node.target = torch.cos
        gm.recompile()
        assert "torch.cos" in str(gm)
        keys.append(type(gm).forward.__code__.co_filename)
        return gm

    compiled = bytegraph.compile(lambda x: torch.sin(x) * 2, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), torch.cos(x) * 2)
    assert "torch.sin" in printed[0]
    assert len(set(keys)) == 2 and all(key in fx_graph_module._loader.eval_cache for key in keys)
    bytegraph.reset()
    del compiled
    gc.collect()
    assert not [key for key in keys if key in fx_graph_module._loader.eval_cache]
