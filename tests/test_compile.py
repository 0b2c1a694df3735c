"""End to end: bytegraph.compile captures each case into exactly one graph whose results
equal eager's; guards, recompiles, the cache limit, backends and autograd."""

import copy
import logging

import pytest
import torch
import torch.nn as nn

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend, same

from capture_cases import ALL_CASES, Net


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name,make", ALL_CASES, ids=[name for name, _ in ALL_CASES])
def test_case_is_captured_whole_and_matches_eager(name, make):
    torch.manual_seed(0)
    fn, args = make()
    expected = fn(*_clone(args))
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    actual = compiled(*_clone(args))
    assert same(expected, actual), f"{name}: compiled result differs from eager"
    assert counter.frame_count == 1, f"{name}: expected one graph, got {counter.frame_count}"
    assert counter.op_count >= 1
    again = compiled(*_clone(args))
    assert same(expected, again)
    assert counter.frame_count == 1, f"{name}: the second call recompiled"


def test_seed_net_graph_has_call_module_and_relu():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    model = Net()
    x = torch.randn(2, 128)
    out = bytegraph.compile(model, backend=backend)(x)
    assert torch.allclose(out, model(x))
    assert len(graphs) == 1
    ops = [(n.op, str(n.target)) for n in graphs[0].graph.nodes]
    assert ops[0][0] == "placeholder"
    assert ("call_module", "self_fc") in ops
    assert any(op == "call_function" and "relu" in target for op, target in ops)
    assert [(n.name, n.target) for n in graphs[0].graph.nodes if n.op == "placeholder"] == [("l_x_", "L_x_")]
    readable = graphs[0].print_readable(print_output=False)
    assert "code: x = self.fc(x)" in readable


def test_seed_net_runs_under_inductor():
    model = Net()
    x = torch.randn(2, 128)
    counter = CompileCounterWithBackend("inductor")
    out = bytegraph.compile(model, backend=counter)(x)
    assert torch.allclose(out, model(x), atol=1e-5)
    assert counter.frame_count == 1


def test_constants_are_folded_into_the_graph():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b):
        a0 = 0
        a1 = 1
        a2 = 2
        a3 = a0 + a1 + a2
        return (a + b) * a3

    a, b = torch.randn(3), torch.randn(3)
    assert torch.allclose(bytegraph.compile(f, backend=backend)(a, b), f(a, b))
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert len(targets) == 2  # add, mul: the sum of constants left no node
    mul = [n for n in graphs[0].graph.nodes if "mul" in str(n.target)][0]
    assert 3 in mul.args


# ---- guards and recompiles ---------------------------------------------------------------


def _recompile_reasons(fn, calls):
    reasons = []
    counter = CompileCounter()
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: reasons.append(failure.reason))(fn)
    for args in calls:  # not cloned: a clone would lose the strides under test
        assert same(fn(*args), compiled(*args))
    return counter.frame_count, reasons


def f_scale(x, n):
    return x * n


def test_same_metadata_twice_compiles_once():
    frames, reasons = _recompile_reasons(f_scale, [(torch.ones(3), 2), (torch.zeros(3), 2)])
    assert frames == 1 and reasons == []


@pytest.mark.parametrize(
    "second,reason",
    [
        ((torch.ones(3, dtype=torch.float64), 2), "dtype"),
        ((torch.ones(4), 2), "size[0]: expected 3, got 4"),
        ((torch.ones(3, requires_grad=True), 2), "requires_grad"),
        ((torch.ones(3), 5), "L['n'] == 2: got 5"),
        ((torch.ones(6)[::2], 2), "stride"),
    ],
    ids=["dtype", "shape", "requires_grad", "python_int", "stride"],
)
def test_a_changed_property_recompiles_once_with_its_reason(second, reason):
    frames, reasons = _recompile_reasons(f_scale, [(torch.ones(3), 2), second, second])
    assert frames == 2
    assert len(reasons) == 1 and reason in reasons[0], reasons


def test_module_training_flag_recompiles():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    reasons = []
    counter = CompileCounter()
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: reasons.append(failure.reason))(lambda x: model(x))
    x = torch.randn(2, 4)
    compiled(x)
    model.eval()
    assert torch.allclose(compiled(x), model(x))
    assert counter.frame_count == 2
    assert any("training" in r for r in reasons), reasons


GLOBAL_FACTOR = 2


def f_global(x):
    return x * GLOBAL_FACTOR


def test_global_change_recompiles():
    global GLOBAL_FACTOR
    reasons = []
    counter = CompileCounter()
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: reasons.append(failure.reason))(f_global)
    x = torch.ones(2)
    try:
        assert torch.equal(compiled(x), x * 2)
        GLOBAL_FACTOR = 7
        assert torch.equal(compiled(x), x * 7)
    finally:
        GLOBAL_FACTOR = 2
    assert counter.frame_count == 2
    assert any("G['GLOBAL_FACTOR']" in r for r in reasons), reasons


def test_recompile_reason_is_logged(caplog):
    compiled = bytegraph.compile(f_scale, backend=CompileCounter())
    with caplog.at_level(logging.INFO, logger="bytegraph.recompiles"):
        compiled(torch.ones(3), 1)
        compiled(torch.ones(3), 2)
    messages = [r.getMessage() for r in caplog.records if r.name == "bytegraph.recompiles"]
    assert len(messages) == 1
    assert "f_scale" in messages[0] and "L['n'] == 1: got 2" in messages[0]


def test_cache_limit_runs_eagerly_with_one_warning(caplog):
    counter = CompileCounter()
    # Static ints: each new value is a new entry (automatic dynamic would make n symbolic).
    compiled = bytegraph.compile(f_scale, backend=counter, dynamic=False)
    with bytegraph.config.patch(cache_size_limit=3), caplog.at_level(logging.WARNING, logger="bytegraph"):
        results = [compiled(torch.ones(2), n) for n in range(6)]
    assert all(torch.equal(r, torch.ones(2) * n) for n, r in enumerate(results))
    assert counter.frame_count == 3
    warnings = [r for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert len(warnings) == 1


def test_guard_export_fn_receives_the_guards():
    exported = []
    bytegraph.optimize(CompileCounter(), guard_export_fn=exported.append)(f_scale)(torch.ones(3), 2)
    assert len(exported) == 1
    text = "\n".join(exported[0])
    assert "L['x']" in text and "TENSOR_MATCH" in text and "L['n']" in text


def test_reset_drops_compiled_entries():
    counter = CompileCounter()
    compiled = bytegraph.compile(f_scale, backend=counter)
    compiled(torch.ones(3), 2)
    bytegraph.reset()
    compiled(torch.ones(3), 2)
    assert counter.frame_count == 2


# ---- backends ----------------------------------------------------------------------------

BACKEND_MODELS = [
    ("MLP", lambda: (nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), (torch.randn(3, 8),))),
    ("fn", lambda: (lambda a, b: torch.sigmoid(a @ b) * 2, (torch.randn(3, 4), torch.randn(4, 5)))),
]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "user_callable"])
@pytest.mark.parametrize("name,make", BACKEND_MODELS, ids=[n for n, _ in BACKEND_MODELS])
def test_backends_match_eager(backend, name, make):
    fn, args = make()
    calls = []

    def user_backend(gm, example_inputs):
        calls.append([type(t) for t in example_inputs])
        return gm.forward

    chosen = user_backend if backend == "user_callable" else backend
    counter = CompileCounterWithBackend(chosen)
    assert same(fn(*args), bytegraph.compile(fn, backend=counter)(*args))
    assert counter.frame_count == 1 and counter.op_count == 3
    if backend == "user_callable":
        assert calls and all(t is torch.Tensor for t in calls[0]), "backends receive real tensors"


def test_unknown_backend_lists_valid_names():
    with pytest.raises(ValueError, match="eager"):
        bytegraph.compile(f_scale, backend="no_such_backend")


def test_backend_that_raises_is_reported_with_its_name():
    def broken(gm, example_inputs):
        raise RuntimeError("kaboom")

    with pytest.raises(bytegraph.exc.BackendCompilerFailed, match="broken.*kaboom"):
        bytegraph.compile(f_scale, backend=broken)(torch.ones(2), 3)


# ---- autograd ----------------------------------------------------------------------------


def test_gradients_match_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 1))
    reference = copy.deepcopy(model)
    x = torch.randn(4, 6)
    counter = CompileCounter()
    bytegraph.compile(model, backend=counter)(x).sum().backward()
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p.grad, q.grad)
    assert counter.frame_count == 1 and counter.op_count == 3


def test_input_gradients_match_eager_under_aot_eager():
    def f(a, b):
        return (a * b).sin().sum()

    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    counter = CompileCounterWithBackend("aot_eager")
    bytegraph.compile(f, backend=counter)(a, b).backward()
    assert counter.frame_count == 1 and counter.op_count == 3
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    f(a, b).backward()
    assert torch.allclose(ga, a.grad) and torch.allclose(gb, b.grad)


# ---- frames that cannot be captured run as they are -------------------------------------


def test_a_tensor_branch_gives_eager_results_on_both_sides():
    def foo1(a, b):
        x = a + b
        if b.sum() < 0:
            x = x * -1
        return x

    counter = CompileCounter()
    compiled = bytegraph.compile(foo1, backend=counter)
    a = torch.ones(2, 3)
    for b in (torch.ones(2, 3), -torch.ones(2, 3)):
        assert torch.equal(compiled(a, b), foo1(a, b))
    # The frame up to the branch (add, sum, lt), then the taken side's x * -1; the other
    # side returns x unchanged and needs no graph.
    assert counter.frame_count == 2 and counter.op_count == 4


def test_fullgraph_break_is_an_error_with_the_users_line():
    def foo1(a, b):
        x = a + b
        if b.sum() < 0:
            x = x * -1
        return x

    with pytest.raises(bytegraph.exc.GraphBreakError) as info:
        bytegraph.compile(foo1, backend="eager", fullgraph=True)(torch.ones(2), torch.ones(2))
    message = str(info.value)
    assert "data_dependent_branch" in message
    assert __file__ in message and "if b.sum() < 0:" in message
    assert "Hint:" in message
    assert info.value.lineno == foo1.__code__.co_firstlineno + 2


def test_grad_mode_is_guarded():
    def f(x, w):
        return (x * w).sum()

    counter = CompileCounter()
    reasons = []
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: reasons.append(failure.reason))(f)
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    assert compiled(x, w).requires_grad
    with torch.no_grad():
        out = compiled(x, w)
    assert not out.requires_grad and torch.equal(out, f(x, w).detach())
    assert compiled(x, w).requires_grad
    assert counter.frame_count == 2
    assert len(reasons) == 1 and "grad mode" in reasons[0]
