"""The two seed examples: a Linear+relu module and the function with a tensor branch."""

import sys
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import bytegraph._C as C
from bytegraph import _bridge
from bytegraph import examples
from bytegraph.examples import Net
from tests._trace_helpers import call_prefix, check, nodes, targets, trace


def test_net_is_one_graph_with_call_module_and_relu():
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(4, 128)
    result = check(net, x)
    gm = result.graph_module
    assert targets(result, "call_module") == ["self_fc"]
    assert targets(result, "call_function") == [F.relu]
    assert isinstance(gm.self_fc, nn.Linear) and gm.self_fc is net.fc
    assert result.inputs == ["L['x']"]
    assert result.example_inputs[0] is x
    assert result.output == _bridge.GraphOutput(0)


def test_net_graph_carries_fakes_and_user_source_lines():
    result = trace(Net(), torch.randn(2, 128))
    for node in nodes(result):
        if node.op != "output":
            fake = node.meta["example_value"]
            assert type(fake).__name__ == "FakeTensor"
    relu = nodes(result, "call_function")[0]
    assert relu.meta["example_value"].shape == (2, 10)
    text = result.graph_module.print_readable(print_output=False)
    assert "x = F.relu(x)" in text and "in forward" in text and examples.__file__ in text


def test_net_guards_module_identity_training_and_tensor():
    result = trace(Net(), torch.randn(2, 128))
    text = "\n".join(result.guards)
    assert "L['self']" in text and "L['self'].training" in text
    assert any(line.startswith("L['x']") and "TENSOR_MATCH" in line for line in result.guards)


def seed_function(a, b):
    a0 = 0
    a1 = 1
    a2 = 2
    a3 = a0 + a1 + a2
    if a.sum() > a3:
        return a + b
    return a - b


def test_seed_function_breaks_on_the_tensor_branch_with_constants_folded():
    a, b = torch.randn(5), torch.randn(5)
    with pytest.raises(C.Unsupported) as info:
        trace(seed_function, a, b)
    error = info.value
    assert error.kind == "data_dependent_branch"
    assert "test_trace_seed.py" in str(error) and "in seed_function" in str(error)
    partial = error.partial
    ops = [(n.op, n.target) for n in partial.graph_module.graph.nodes if n.op in ("call_method", "call_function")]
    assert ops == [("call_method", "sum"), ("call_function", __import__("operator").gt)]
    gt = [n for n in partial.graph_module.graph.nodes if n.op == "call_function"][0]
    assert gt.args[1] == 3  # a0 + a1 + a2 folded, no node for the additions
    assert partial.graph_break["opname"].startswith("POP_JUMP")
    # The partial graph computes what the branch needed.
    live = partial.graph_module(*partial.example_inputs)
    assert bool(live[0]) == bool(a.sum() > 3)


def test_allow_graph_break_returns_the_result():
    result = C.trace.trace(seed_function, (torch.randn(3), torch.randn(3)), {}, allow_graph_break=True)
    assert result.graph_break["kind"] == "data_dependent_branch"
    assert result.output is None


def test_trace_log_shows_instructions_and_value_reprs():
    lines = []
    C.trace.trace(seed_function, (torch.randn(2, 3), torch.randn(2, 3)), {}, allow_graph_break=True,
                  log=lines.append)
    assert lines[0] == "TRACE RESUME 0 []"
    assert "TRACE STORE_FAST a3 [ConstantVariable(3)]" in lines
    call = ", ".join(call_prefix("GetAttrVariable(TensorVariable(l_a_: f32[2, 3]), sum)"))
    assert f"TRACE CALL 0 [{call}]" in lines
    assert lines[-1].startswith("TRACE POP_JUMP") and lines[-1].endswith("[TensorVariable(gt: b8[])]")
