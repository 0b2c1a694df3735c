"""Whole models: torch.nn modules without submodules become call_module nodes; user modules
and torch.nn modules with submodules are inlined."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from tests._trace_helpers import check, nodes, targets


def setup_module():
    torch.manual_seed(0)


def test_mlp_sequential_is_inlined_into_its_leaves():
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    result = check(mlp, torch.randn(2, 8))
    assert targets(result, "call_module") == ["self_0", "self_1", "self_2"]
    assert result.graph_module.self_0 is mlp[0]


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        x = x.view(x.size(0), -1)
        return self.fc(x)


def test_cnn_in_eval_with_view_of_folded_size():
    cnn = CNN().eval()
    result = check(cnn, torch.randn(2, 3, 8, 8))
    assert targets(result, "call_module") == ["self_conv", "self_bn", "self_pool", "self_fc"]
    view = [n for n in nodes(result, "call_method") if n.target == "view"][0]
    assert view.args[1:] == (2, -1)  # x.size(0) folded to a constant
    assert not [n for n in nodes(result) if n.target == "size"]


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.norm = nn.LayerNorm(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, idx):
        x = self.emb(idx)
        for layer in self.layers:
            x = x + layer(x)
        return self.drop(self.norm(x))


def test_modulelist_loop_is_unrolled():
    result = check(Blocks().eval(), torch.tensor([[1, 2, 3]]))
    assert targets(result, "call_module") == [
        "self_emb", "self_layers_0", "self_layers_1", "self_layers_2", "self_norm", "self_drop"]
    assert any("L['self'].layers[2]" in line for line in result.guards)


class WithParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("offset", torch.ones(4))
        self.inner = nn.Linear(4, 4)

    def forward(self, x):
        return self.helper(x @ self.weight) + self.offset

    def helper(self, y):
        return self.inner(y).tanh()


def test_parameters_and_buffers_read_in_a_user_forward_are_get_attr_nodes():
    module = WithParameter()
    result = check(module, torch.randn(2, 4))
    assert targets(result, "get_attr") == ["self_weight", "self_offset"]
    assert result.graph_module.self_weight is module.weight
    assert result.inputs == ["L['x']"]
    assert targets(result, "call_module") == ["self_inner"]


def test_multihead_attention_is_inlined_into_its_functional_form():
    # A torch.nn module holding submodules (out_proj) is inlined: its parameters are get_attr
    # nodes, named as attributes even where torch.nn's code reached them through _modules.
    mha = nn.MultiheadAttention(8, 2).eval()

    def attend(q):
        out, _ = mha(q, q, q)
        return out

    result = check(attend, torch.randn(3, 1, 8))
    assert targets(result, "call_module") == []
    assert F.multi_head_attention_forward in targets(result, "call_function")
    assert {"mha_in_proj_weight", "mha_out_proj_weight"} <= set(targets(result, "get_attr"))


def test_transformer_encoder_layer_eval_inlines_its_forward():
    # Traced with grad enabled and parameters that require it: the slow path, whose leaves
    # are the layer's submodules without submodules of their own.
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16).eval()
    result = check(layer, torch.randn(3, 1, 8))
    called = targets(result, "call_module")
    assert {"self_linear1", "self_linear2", "self_norm1", "self_norm2"} <= set(called)
    assert "self_self_attn" not in called
    assert F.multi_head_attention_forward in targets(result, "call_function")


def test_transformer_encoder_layer_called_from_a_user_module_is_inlined():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()

    def encode(x):
        return layer(x) * 2

    result = check(encode, torch.randn(1, 3, 8))
    assert "layer" not in targets(result, "call_module")
    assert "layer_linear1" in targets(result, "call_module")
    with torch.no_grad():
        fused = check(encode, torch.randn(1, 3, 8))
    assert torch._transformer_encoder_layer_fwd in targets(fused, "call_function")
    assert targets(fused, "call_module") == []


def test_training_mode_dropout_is_recorded_not_run():
    # In training mode dropout is random: only check the graph's structure.
    from tests._trace_helpers import trace

    result = trace(nn.Sequential(nn.Dropout(0.5)), torch.randn(4))
    assert targets(result, "call_module") == ["self_0"]
    assert any("training" in line for line in result.guards)


def test_recurrent_leaf_modules_with_nested_tuple_outputs():
    lstm = nn.LSTM(4, 6, batch_first=True).eval()

    def f(x):
        out, (h, c) = lstm(x)
        return out.sum(1) + h[0] + c[0]

    result = check(f, torch.randn(2, 3, 4))
    assert targets(result, "call_module") == ["lstm"]


class Residual(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.act = nn.GELU()

    def forward(self, x):
        return x + self.act(self.lin(x))


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Residual(4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        h = self.blocks(x)
        return {name: head(h) for name, head in self.heads.items()}


def test_nested_user_modules_in_sequential_and_moduledict_comprehension():
    result = check(MultiHead(), torch.randn(2, 4))
    assert targets(result, "call_module")[:2] == ["self_blocks_0_lin", "self_blocks_0_act"]
    assert list(result.output) == ["a", "b"]


class ScaledLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


def test_super_forward_of_a_torch_nn_subclass_is_inlined():
    module = ScaledLinear(3, 2)
    result = check(module, torch.randn(4, 3))
    # A subclass defined outside torch.nn is not a leaf: Linear.forward runs inlined.
    assert targets(result, "get_attr") == ["self_weight", "self_bias"]
    assert F.linear in targets(result, "call_function")


def test_tensor_methods_used_as_functions():
    def f(x, y):
        return torch.Tensor.add(x, y) * torch.Tensor.sum(x)

    result = check(f, torch.ones(2), torch.arange(2.0))
    assert torch.Tensor.add in targets(result, "call_function")


def test_lazy_modules_are_initialized_by_their_first_call_as_eagerly():
    import bytegraph
    from bytegraph.testing import CompileCounter

    class LazyMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.LazyLinear(10)
            self.fc2 = nn.LazyLinear(1)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    x = torch.randn(2, 5)
    for compile_root in (True, False):
        torch.manual_seed(0)
        eager_model = LazyMLP()
        torch.manual_seed(0)
        model = LazyMLP()
        counter = CompileCounter()
        # The model compiled itself (its first call's pre-hook runs before the compiled call), or
        # called from a compiled function (the hook runs where the trace calls it).
        compiled = bytegraph.compile(model if compile_root else (lambda x: model(x)), backend=counter, fullgraph=True)
        torch.manual_seed(1)
        expected = eager_model(x)
        torch.manual_seed(1)
        assert torch.allclose(compiled(x), expected)
        assert type(model.fc1) is nn.Linear and model.fc1.weight.shape == (10, 5)
        assert torch.allclose(compiled(x), eager_model(x))
        assert counter.frame_count == 1


def test_a_modules_tensor_inputs_are_marked_static_as_torch_compile_marks_them():
    import bytegraph

    class WithTensors(nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = torch.ones(2)  # a tensor attribute, not registered
            self.register_buffer("buf", torch.ones(2))

        def forward(self, x):
            return x * self.plain + self.buf

    mod = WithTensors()
    tagged = torch.ones(2)
    tagged.tag = "mine"
    seen = {}

    def backend(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                seen[node.name] = node.meta["tensor_dict"]
        return gm

    def f(x, b, t):
        return mod(x) + b * t

    out = bytegraph.compile(f, backend=backend)(torch.ones(2), mod.buf, tagged)
    torch.testing.assert_close(out, f(torch.ones(2), mod.buf, tagged))
    static = {"_dynamo_static_input_type": "unguarded"}
    # Named as torch.compile names them: the closure's module attribute as `l_mod_plain`.
    assert seen == {"l_x_": {}, "l_b_": static, "l_t_": {"tag": "mine"}, "l_mod_plain": static}
