"""torch.nn's composite modules (those holding submodules: TransformerEncoderLayer,
TransformerEncoder, MultiheadAttention, Transformer) are inlined, not call_module leaves, so
their forwards pick the path eager would: in eval mode under no_grad the encoder layer's fused
kernel (torch._transformer_encoder_layer_fwd), in training mode the decomposed ops; switching
mode or grad mode recompiles onto the other path. torch.nn modules without submodules stay
leaves."""

import pytest
import torch
import torch.nn as nn

import bytegraph
from bytegraph import _classify
from bytegraph.testing import CompileCounterWithBackend, same

pytestmark = pytest.mark.usefixtures("fresh_cache")

FUSED_LAYER = torch._transformer_encoder_layer_fwd
ATTENTION = torch.nn.functional.multi_head_attention_forward


def setup_module():
    torch.manual_seed(0)


def encoder(layers=2):
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class Tagger(nn.Module):
    """What users write: embeddings, a torch.nn encoder, a head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.encoder = encoder()
        self.head = nn.Linear(16, 4)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)))


def call_targets(gm):
    return [node.target for node in gm.graph.nodes if node.op in ("call_function", "call_module")]


def test_torch_nn_modules_with_submodules_are_inlined_and_the_rest_are_leaves():
    assert _classify.classify(nn.Linear(2, 2)) == "leaf_module"
    assert _classify.classify(nn.LSTM(2, 2)) == "leaf_module"
    assert _classify.classify(nn.Dropout()) == "leaf_module"
    assert _classify.classify(nn.MultiheadAttention(8, 2)) == "module"
    assert _classify.classify(encoder()) == "module"
    assert _classify.classify(nn.Sequential()) == "module"  # containers, even empty, are inlined
    # An instance before torch.nn.Module.__init__ (what a trace probes before making one).
    assert _classify.classify(nn.Linear.__new__(nn.Linear)) == "leaf_module"


def test_a_leaf_module_given_a_child_is_inlined_and_still_runs_its_own_forward():
    linear = nn.Linear(4, 4)
    linear.extra = nn.ReLU()  # not used by Linear.forward
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(lambda x: linear(x) * 2, backend=counter, fullgraph=True)
    x = torch.randn(2, 4)
    assert same(compiled(x), linear(x) * 2)
    (gm,) = counter.graphs
    assert torch.nn.functional.linear in call_targets(gm)
    assert not [node for node in gm.graph.nodes if node.op == "call_module"]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_eval_encoder_under_no_grad_records_the_fused_layer_kernel(backend):
    model = Tagger().eval()
    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(model, backend=counter, fullgraph=True)
    ids = torch.randint(0, 32, (2, 6))
    with torch.no_grad():
        for _ in range(2):
            assert same(compiled(ids), model(ids))
    (gm,) = counter.graphs
    called = call_targets(gm)
    assert called.count(FUSED_LAYER) == 2
    assert ATTENTION not in called
    # Only the modules without submodules are call_module nodes.
    assert [t for t in called if isinstance(t, str)] == ["self_embed", "self_head"]
    # The fused kernel takes the layers' parameters, read as get_attr nodes under their names.
    attrs = {node.target for node in gm.graph.nodes if node.op == "get_attr"}
    assert {"self_encoder_layers_0_linear1_weight", "self_encoder_layers_1_self_attn_out_proj_bias"} <= attrs


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_switching_training_and_grad_mode_picks_the_path_eager_takes(backend):
    model = Tagger()
    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(model, backend=counter, fullgraph=True)
    ids = torch.randint(0, 32, (2, 6))

    def run(training, grad):
        model.train(training)
        with torch.set_grad_enabled(grad):
            assert same(compiled(ids), model(ids))
        return call_targets(counter.graphs[-1])

    fused = run(training=False, grad=False)
    assert fused.count(FUSED_LAYER) == 2 and ATTENTION not in fused
    decomposed = run(training=True, grad=True)
    assert counter.frame_count == 2
    assert FUSED_LAYER not in decomposed and decomposed.count(ATTENTION) == 2
    assert "self_encoder_layers_0_dropout1" in decomposed  # dropout is a leaf of the slow path
    # Eval mode with grad enabled and parameters that require grad: still the slow path.
    eval_with_grad = run(training=False, grad=True)
    assert counter.frame_count == 3
    assert FUSED_LAYER not in eval_with_grad and eval_with_grad.count(ATTENTION) == 2
    # Back to eval under no_grad: the first entry's guards pass again, no new graph.
    run(training=False, grad=False)
    run(training=True, grad=True)
    assert counter.frame_count == 3


def test_frozen_parameters_take_the_fused_path_with_grad_enabled():
    # The layer asks whether any parameter requires grad: each one's requires_grad is guarded.
    model = encoder(layers=1).eval()
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(model, backend=counter, fullgraph=True)
    x = torch.randn(2, 5, 16)
    assert same(compiled(x), model(x))
    assert FUSED_LAYER not in call_targets(counter.graphs[-1])
    model.requires_grad_(False)
    assert same(compiled(x), model(x))
    assert counter.frame_count == 2
    assert FUSED_LAYER in call_targets(counter.graphs[-1])


def test_training_an_inlined_encoder_under_aot_eager_gives_eagers_gradients():
    torch.manual_seed(0)
    model = Tagger().train()
    reference = Tagger().train()
    reference.load_state_dict(model.state_dict())
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(model, backend=counter, fullgraph=True)
    ids = torch.randint(0, 32, (2, 6))
    compiled(ids).sum().backward()
    reference(ids).sum().backward()
    for (name, ours), theirs in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, msg=name)
    assert counter.frame_count == 1


@pytest.mark.parametrize("grad", [False, True])
def test_multihead_attention_in_eval_is_the_decomposed_attention(grad):
    # Its fast path (_native_multi_head_attention) is off under make_fx tracing, which the
    # trace answers as torch.compile does: the graph holds the functional form either way.
    attention = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(lambda x: attention(x, x, x, need_weights=False)[0], backend=counter,
                                 fullgraph=True)
    x = torch.randn(2, 5, 16)
    with torch.set_grad_enabled(grad):
        assert same(compiled(x), attention(x, x, x, need_weights=False)[0])
    (gm,) = counter.graphs
    called = call_targets(gm)
    assert ATTENTION in called and torch._native_multi_head_attention not in called
    assert not [node for node in gm.graph.nodes if node.op == "call_module"]


def test_a_whole_transformer_in_eval_under_no_grad_is_one_graph():
    model = nn.Transformer(16, 4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                           dropout=0.0, batch_first=True).eval()
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(model, backend=counter, fullgraph=True)
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 3, 16)
    with torch.no_grad():
        assert same(compiled(src, tgt), model(src, tgt))
    (gm,) = counter.graphs
    called = call_targets(gm)
    # The encoder layer has a fused kernel; the decoder layer has none (two attentions).
    assert called.count(FUSED_LAYER) == 1 and called.count(ATTENTION) == 2


def _one_layer_encoder(backend):
    """(model, counter, compiled, x): a one-layer encoder in eval mode compiled whole."""
    model = encoder(layers=1).eval()
    counter = CompileCounterWithBackend(backend)
    return model, counter, bytegraph.compile(model, backend=counter, fullgraph=True), torch.randn(2, 5, 16)


def test_the_fast_path_switch_is_guarded():
    model, counter, compiled, x = _one_layer_encoder("eager")
    with torch.no_grad():
        assert same(compiled(x), model(x))
        assert FUSED_LAYER in call_targets(counter.graphs[-1])
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            assert same(compiled(x), model(x))
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    assert counter.frame_count == 2
    assert FUSED_LAYER not in call_targets(counter.graphs[-1])


def test_inductor_compiles_the_fused_encoder_layer():
    model, counter, compiled, x = _one_layer_encoder("inductor")
    with torch.no_grad():
        assert same(compiled(x), model(x), atol=1e-4, rtol=1e-3)
    assert FUSED_LAYER in call_targets(counter.graphs[-1])
