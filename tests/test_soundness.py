"""Soundness: a compiled function returns what the original returns, for every input it is
called with after compiling. Each test reaches the same code again with inputs the first trace
did not see (other shapes, other objects, aliased tensors, other functions) and checks both
the value and what was captured, with config.verify_correctness on (the eager original runs
beside each compiled call and any difference raises)."""

import collections

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import bytegraph
from bytegraph.exc import CorrectnessError
from bytegraph.testing import CompileCounter
from tests._capture import compiled_with_counter


pytestmark = pytest.mark.usefixtures("verified")  # conftest.py


# ---- values a graph or resume function depends on are guarded ---------------------------


def test_a_size_folded_before_a_break_is_guarded_through_its_tensor():
    # The Conv1D pattern: the output shape comes from x.size(), then a break, then the view.
    # No graph op uses x before the break, but the constant size_out depends on its shape.
    def f(x, w):
        size_out = x.size()[:-1] + (w.shape[1],)
        bytegraph.graph_break()
        return torch.mm(x.view(-1, x.size(-1)), w).view(size_out)

    cf, counter = compiled_with_counter(f)
    w = torch.randn(3, 5)
    for length in (4, 5, 6):
        x = torch.randn(1, length, 3)
        torch.testing.assert_close(cf(x, w), f(x, w))
    assert counter.frame_count == 3  # one resume graph per length (static shapes)


def test_one_function_reached_with_two_shapes_in_one_call():
    # The encoder/decoder pattern: the same attention code runs on length 8, then 16.
    def attend(q, k):
        scores = q @ k.transpose(-1, -2)
        bytegraph.graph_break()
        return scores.softmax(-1) @ k

    def model(src, tgt):
        memory = attend(src, src)
        return attend(tgt, memory)

    cf, counter = compiled_with_counter(model)
    for _ in range(2):
        src, tgt = torch.randn(2, 8, 4), torch.randn(2, 16, 4)
        torch.testing.assert_close(cf(src, tgt), model(src, tgt))
    assert counter.frame_count >= 2


@pytest.mark.parametrize("length", [4, 5, 6, 7])
def test_sequence_length_sweep_on_a_small_decoder(length):
    torch.manual_seed(0)
    block = nn.TransformerDecoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True).eval()

    def decode(ids, memory):
        x = F.embedding(ids, torch.ones(32, 16))
        size = x.shape[:-1]
        bytegraph.graph_break()
        return block(x, memory).reshape(*size, 16)

    cf, counter = compiled_with_counter(decode)
    for n in (length, length + 1):
        ids, memory = torch.randint(0, 32, (1, n)), torch.randn(1, 3, 16)
        with torch.no_grad():
            torch.testing.assert_close(cf(ids, memory), decode(ids, memory))
    assert counter.frame_count >= 2


def test_the_same_tensor_passed_twice_is_guarded_as_one():
    def f(x, y):
        return x + y * 2

    cf, counter = compiled_with_counter(f)
    a, b = torch.ones(3), torch.full((3,), 5.0)
    torch.testing.assert_close(cf(a, a), f(a, a))
    torch.testing.assert_close(cf(a, b), f(a, b))  # traced as one placeholder: must recompile
    assert counter.frame_count == 2


def test_distinct_tensors_then_aliased_with_an_inplace_update():
    def f(x, y):
        x.add_(1)
        return x + y

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(3), torch.ones(3)), torch.full((3,), 3.0))
    a = torch.ones(3)
    torch.testing.assert_close(cf(a, a), torch.full((3,), 4.0))
    assert counter.frame_count == 2


def test_a_closure_made_per_call_is_not_recompiled_for_each_call():
    def apply(fn, x):
        return fn(x) + 1

    cf, counter = compiled_with_counter(apply)
    for scale in (2.0, 2.0, 2.0):
        x = torch.ones(2)
        torch.testing.assert_close(cf(lambda t: t * scale, x), x * scale + 1)
    assert counter.frame_count == 1
    # Another function, or the same code closing over another value, is another trace.
    torch.testing.assert_close(cf(lambda t: t - 1, torch.ones(2)), torch.ones(2))
    torch.testing.assert_close(cf(lambda t: t * 3.0, torch.ones(2)), torch.full((2,), 4.0))


def test_a_function_with_other_defaults_is_another_trace():
    def make(k):
        def scale(t, k=k):
            return t * k

        return scale

    def apply(fn, x):
        return fn(x)

    cf, counter = compiled_with_counter(apply)
    torch.testing.assert_close(cf(make(2.0), torch.ones(2)), torch.full((2,), 2.0))
    torch.testing.assert_close(cf(make(5.0), torch.ones(2)), torch.full((2,), 5.0))
    assert counter.frame_count == 2


def test_identity_comparisons_of_functions_are_guarded():
    def relu(t):
        return t.relu()

    def gelu(t):
        return F.gelu(t)

    def f(act, x):
        if act is relu:
            return x * 2
        return act(x)

    cf, counter = compiled_with_counter(f)
    x = torch.randn(4)
    torch.testing.assert_close(cf(relu, x), x * 2)
    torch.testing.assert_close(cf(gelu, x), F.gelu(x))
    assert counter.frame_count == 2


def test_a_method_on_the_stack_at_a_break_does_not_churn():
    # x.view is on the stack when the break happens: the resume function gets a new bound
    # method each call and must not pin its identity.
    def f(x):
        size = x.shape
        return x.view(bytegraph.graph_break() or size) * 2

    cf, counter = compiled_with_counter(f)
    for _ in range(4):
        x = torch.randn(2, 3)
        torch.testing.assert_close(cf(x), x * 2)
    assert counter.frame_count == 1


def test_globals_of_a_helper_from_another_module_are_guarded():
    import _trace_other_module as other

    def f(x):
        return other.helper(x)

    cf, counter = compiled_with_counter(f)
    x = torch.ones(3)
    expected = other.helper(x)
    torch.testing.assert_close(cf(x), expected)
    saved = other.SCALE
    try:
        other.SCALE = saved + 10  # folded into the graph as a constant: must recompile
        torch.testing.assert_close(cf(x), other.helper(x))
    finally:
        other.SCALE = saved
    assert counter.frame_count == 2


# ---- types user code sees ------------------------------------------------------------------


def test_type_of_a_tensor_is_torch_tensor_not_the_fake():
    def f(x):
        scale = 2 if type(x) is torch.Tensor else 3
        if x.__class__ is not torch.Tensor:
            scale += 10
        return x * scale

    cf, counter = compiled_with_counter(f)
    x = torch.ones(3)
    torch.testing.assert_close(cf(x), x * 2)
    assert counter.frame_count == 1 and counter.op_count == 1


def test_parameters_keep_their_type():
    lin = nn.Linear(2, 2)

    def f(x):
        kind = 1.0 if type(lin.weight) is nn.Parameter else 0.0
        return lin(x) * kind + isinstance(lin.bias, nn.Parameter)

    cf, counter = compiled_with_counter(f)
    x = torch.randn(1, 2)
    torch.testing.assert_close(cf(x), f(x))
    assert counter.frame_count == 1


@pytest.mark.parametrize("op", [
    lambda x: torch.max(x, dim=1),
    lambda x: x.max(dim=0),
    lambda x: torch.min(x, 1),
    lambda x: torch.topk(x, 2),
    lambda x: torch.sort(x, dim=-1),
    lambda x: x.median(dim=1),
], ids=["torch.max", "Tensor.max", "torch.min", "topk", "sort", "median"])
def test_ops_returning_structseqs_return_them(op):
    def f(x):
        result = op(x)
        return result, result.values * 2, result.indices

    cf, counter = compiled_with_counter(f)
    x = torch.randn(3, 4)
    result, doubled, indices = cf(x)
    expected = op(x)
    assert type(result) is type(expected)
    torch.testing.assert_close(result.values, expected.values)
    torch.testing.assert_close(doubled, expected.values * 2)
    assert torch.equal(indices, expected.indices)
    assert counter.frame_count == 1


def test_a_structseq_on_the_stack_at_a_break_keeps_its_type():
    def f(x):
        result = torch.max(x, dim=1)
        bytegraph.graph_break()
        return result.values + 1, result

    cf, counter = compiled_with_counter(f)
    x = torch.randn(3, 4)
    values, result = cf(x)
    assert type(result) is torch.return_types.max
    torch.testing.assert_close(values, torch.max(x, dim=1).values + 1)
    assert counter.frame_count == 2


Point = collections.namedtuple("Point", ["x", "y"])


def test_namedtuple_inputs_are_read_by_field_and_returned_as_themselves():
    def f(p):
        return Point(p.y, p.x), p.x + p.y, p

    cf, counter = compiled_with_counter(f)
    p = Point(torch.ones(2), torch.arange(2.0))
    swapped, total, same = cf(p)
    assert type(swapped) is Point and same is p
    torch.testing.assert_close(total, p.x + p.y)


# ---- code generation reads what it returns -------------------------------------------------

_OFFSETS = {"a": 1.0, "b": 2.0}


def test_returning_a_module_level_dict_global():
    def f(x):
        return x + _OFFSETS["a"], _OFFSETS

    cf, counter = compiled_with_counter(f)
    out, offsets = cf(torch.ones(2))
    assert offsets is _OFFSETS
    torch.testing.assert_close(out, torch.full((2,), 2.0))
    assert counter.frame_count == 1


def test_an_input_container_returned_after_a_break():
    def f(xs, y):
        y = y * 2
        bytegraph.graph_break()
        return xs, y + xs[0]

    cf, counter = compiled_with_counter(f)
    xs = [torch.ones(2), torch.zeros(2)]
    returned, total = cf(xs, torch.ones(2))
    assert returned is xs
    torch.testing.assert_close(total, torch.full((2,), 3.0))
    assert counter.frame_count == 2


# ---- one classification of callables -------------------------------------------------------


def test_torch_dynamo_graph_break_breaks():
    import torch._dynamo

    def f(x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2)), torch.full((2,), 4.0))
    assert counter.frame_count == 2 and counter.op_count == 2


def test_unknown_c_functions_of_torch_break_instead_of_entering_the_graph():
    def f(x):
        y = x + 1
        torch.manual_seed(0)  # RNG state: never a graph node, never reordered
        return y + torch.rand(2)

    cf, counter = compiled_with_counter(f)
    out = cf(torch.zeros(2))
    torch.manual_seed(0)
    torch.testing.assert_close(out, 1 + torch.rand(2))
    assert counter.frame_count == 2


def test_compiler_queries_fold_to_their_traced_answers():
    def f(x):
        if torch.compiler.is_compiling() and not torch.jit.is_scripting() and not torch.jit.is_tracing():
            return x + 1
        return x - 1

    cf, counter = compiled_with_counter(f)
    with bytegraph.config.patch(verify_correctness=False):  # eager answers differently on purpose
        torch.testing.assert_close(cf(torch.zeros(2)), torch.ones(2))
    torch.testing.assert_close(f(torch.zeros(2)), -torch.ones(2))
    assert counter.frame_count == 1 and counter.op_count == 1


def test_torch_python_helpers_are_inlined_so_dead_calls_vanish():
    def f(x, mask=None):
        mask = F._canonical_mask(mask=mask, mask_name="mask", other_type=None, other_name="",
                                 target_type=x.dtype)
        return x.relu() if mask is None else x + mask

    cf, counter = compiled_with_counter(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x.relu())
    assert counter.frame_count == 1 and counter.op_count == 1


def test_disabled_functions_run_eagerly_between_graphs():
    calls = []

    @torch.compiler.disable
    def log_shape(t):
        calls.append(tuple(t.shape))
        return t

    def f(x):
        x = x * 2
        x = log_shape(x)
        return x + 1

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2)), torch.full((2,), 3.0))
    assert counter.frame_count == 2
    assert calls == [(2,), (2,)]  # once eagerly beside the compiled call, once compiled


def test_tensor_methods_with_effects_outside_the_graph_break():
    def f(x):
        y = x * 2
        y.retain_grad()
        return y.sum()

    cf, counter = compiled_with_counter(f)
    x = torch.ones(2, requires_grad=True)
    cf(x).backward()
    assert counter.frame_count >= 1
    torch.testing.assert_close(x.grad, torch.full((2,), 2.0))


# ---- the checker itself ------------------------------------------------------------------


def test_verify_correctness_catches_a_wrong_backend():
    def wrong(gm, example_inputs):
        return lambda *args: tuple(out + 1 for out in gm(*args))

    def f(x):
        return x * 2

    cf = bytegraph.compile(f, backend=wrong)
    with pytest.raises(CorrectnessError, match="return value"):
        cf(torch.ones(2))


def test_verify_correctness_catches_a_lost_mutation():
    def lose_mutations(gm, example_inputs):
        def run(*args):
            return gm(*[a.clone() for a in args])
        return run

    def f(x):
        x.mul_(3)
        return x.sum()

    cf = bytegraph.compile(f, backend=lose_mutations)
    with pytest.raises(CorrectnessError, match="arguments"):
        cf(torch.ones(2))


# ---- names and attributes that can change between calls ------------------------------------


def test_a_global_that_shadows_a_builtin_later_is_guarded():
    def f(x):
        return x * len(x.shape)

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2, 2)), torch.full((2, 2), 2.0))
    globals()["len"] = lambda value: 10
    try:
        torch.testing.assert_close(cf(torch.ones(2, 2)), torch.full((2, 2), 10.0))
    finally:
        del globals()["len"]
    torch.testing.assert_close(cf(torch.ones(2, 2)), torch.full((2, 2), 2.0))
    assert counter.frame_count == 2


class Scaled(nn.Module):
    factor = 2.0  # a class attribute

    def __init__(self):
        super().__init__()
        self._shift = 1.0

    @property
    def shift(self):
        return self._shift

    def forward(self, x):
        return x * self.factor + self.shift


def test_properties_and_class_attributes_of_modules_are_guarded():
    m = Scaled()
    cm = bytegraph.compile(m, backend=CompileCounter())
    x = torch.ones(2)
    torch.testing.assert_close(cm(x), x * 2 + 1)
    m._shift = 5.0  # read through the property
    torch.testing.assert_close(cm(x), x * 2 + 5)
    Scaled.factor = 3.0
    try:
        torch.testing.assert_close(cm(x), x * 3 + 5)
    finally:
        Scaled.factor = 2.0


def test_an_augmented_assignment_of_a_tensor_to_a_number_is_the_binary_operator():
    # T5's relative position buckets: `buckets = 0; buckets += (n > 0).to(torch.long) * 16`.
    # An int has no in-place add, so Python computes `0 + tensor`; the graph must too.
    def f(x, scale):
        buckets = 0
        buckets += (x > 0).to(torch.long) * 16
        total = scale
        total *= x
        return buckets, total

    compiled, counter = compiled_with_counter(f)
    x = torch.randn(4)
    for got, want in zip(compiled(x, 3), f(x, 3)):
        assert torch.equal(got, want)
    assert counter.frame_count == 1 and counter.op_count == 5  # gt, to, mul, add, mul


def test_environment_variables_read_in_traced_code_are_guarded(monkeypatch):
    import os

    def f(x):
        if os.environ.get("BYTEGRAPH_TEST_FLAG", "0") == "1":
            x = x * 2
        if "BYTEGRAPH_TEST_OTHER" in os.environ:
            x = x + int(os.environ["BYTEGRAPH_TEST_OTHER"])
        return x + (os.getenv("BYTEGRAPH_TEST_MISSING") is None)

    monkeypatch.delenv("BYTEGRAPH_TEST_FLAG", raising=False)
    monkeypatch.delenv("BYTEGRAPH_TEST_OTHER", raising=False)
    compiled, counter = compiled_with_counter(f)
    x = torch.ones(2)
    assert torch.equal(compiled(x), f(x))
    monkeypatch.setenv("BYTEGRAPH_TEST_FLAG", "1")
    assert torch.equal(compiled(x), f(x))
    monkeypatch.setenv("BYTEGRAPH_TEST_OTHER", "5")
    assert torch.equal(compiled(x), f(x))
    assert torch.equal(compiled(x), f(x))  # a cache hit
    assert counter.frame_count == 3


class RoundStraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad):
        return grad * 3  # not the derivative of forward: only the custom backward gives this


@pytest.mark.parametrize("backend", ["counter", "aot_eager"])
def test_a_custom_autograd_function_is_one_node_and_keeps_its_backward(backend):
    def f(x, w):
        return (RoundStraightThrough.apply(x * w) + 1).sum()

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter if backend == "counter" else backend)
    x = torch.randn(5)
    w_compiled = torch.randn(5, requires_grad=True)
    w_eager = w_compiled.detach().clone().requires_grad_()
    for _ in range(2):
        got, want = compiled(x, w_compiled), f(x, w_eager)
        got.backward()
        want.backward()
        assert torch.allclose(got, want) and torch.allclose(w_compiled.grad, w_eager.grad)
    if backend == "counter":
        assert counter.frame_count == 1 and counter.op_count == 4  # mul, apply, add, sum


def test_the_result_of_an_in_place_op_is_the_same_object():
    # `y = x.add_(1)` gives back x itself; `is` and set membership must say so (they compared
    # graph nodes, and answered False).
    def f(x):
        y = x.add_(1)
        z = torch.relu_(x)
        same = (y is x, z is y, x.contiguous() is x, x.detach() is x, z in {x})
        return same, x * 2

    compiled, counter = compiled_with_counter(f)
    flags, _ = compiled(torch.ones(2))
    assert flags == (True, True, True, False, True)
    assert counter.frame_count == 1 and counter.op_count == 5


class _Slotted:
    __slots__ = ("scale", "cache")

    def __init__(self):
        self.scale = 2.0
        self.cache = None


def test_a_slot_written_in_the_trace_reads_back_as_written():
    # A __slots__ attribute of an object from outside read the real (old) value after the
    # trace wrote it: packaging's Version.__lt__ fills `_key_cache` then compares it, and
    # compared None with None.
    def f(x, box):
        if box.cache is None:
            box.cache = box.scale * 3
        box.scale = box.scale + 1
        return x * box.cache + box.scale

    compiled, counter = compiled_with_counter(f)
    eager_box, compiled_box = _Slotted(), _Slotted()
    assert torch.equal(compiled(torch.ones(2), compiled_box), f(torch.ones(2), eager_box))
    assert (compiled_box.scale, compiled_box.cache) == (eager_box.scale, eager_box.cache) == (3.0, 6.0)
    assert counter.frame_count == 1 and counter.op_count == 2


# ---- code that reads its own frame ----------------------------------------------------------


def test_locals_is_the_traced_frames_variables():
    def f(x, fullname="abc"):
        y = x + 1
        captured = dict(locals())
        captured.pop("x"), captured.pop("y")
        return y * 2, "spec_for_{fullname}".format(**captured), sorted(vars())

    cf, counter = compiled_with_counter(f)
    assert f(torch.ones(1))[1:] == cf(torch.ones(1))[1:]
    assert counter.frame_count == 1 and counter.op_count == 2


def test_a_break_at_a_call_that_reads_the_frame_runs_the_frame_eagerly():
    import inspect
    import sys

    def f(x):
        y = x + 1
        here = sys._getframe()
        return y, here.f_code.co_name, sorted(here.f_locals), inspect.currentframe().f_code.co_name

    cf, counter = compiled_with_counter(f)
    # Resumed after a break, these calls would see the generated function's frame.
    assert cf(torch.ones(1))[1:] == f(torch.ones(1))[1:] == ("f", ["here", "inspect", "sys", "x", "y"], "f")
    kinds = [reason.kind for reason in bytegraph.explain(f)(torch.ones(1)).break_reasons]
    assert kinds and kinds[0] == "frame_introspection"
