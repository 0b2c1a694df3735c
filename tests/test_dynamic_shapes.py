"""Dynamic shapes: automatic dynamic, dynamic=True/False, marks, symbolic ints, size
arithmetic and branches, specialisation, shape guards (C++), logs, explain and inductor.

Every case runs eagerly and compiled on the same inputs and asserts how many graphs were
compiled and, where it matters, that the graph's inputs are symbolic (`s0`)."""

import logging

import pytest
import torch
import torch.nn as nn

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend, same


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def sweep(fn, calls, backend=None, **compile_options):
    """Runs fn eagerly and compiled on each argument tuple; returns the counting backend."""
    counter = backend or CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(fn, backend=counter, **compile_options)
    for args in calls:
        expected = fn(*args)
        actual = compiled(*args)
        assert same(expected, actual), f"compiled result differs from eager for {[_shape(a) for a in args]}"
    return counter


def _shape(value):
    return tuple(value.shape) if isinstance(value, torch.Tensor) else value


def _input_name(node):
    """A placeholder's local name: its target is the source's, as torch.compile spells it (`L_x_`)."""
    target = node.target
    return target[2:-1] if target.startswith("L_") and target.endswith("_") else target


def placeholders(gm):
    return {_input_name(node): node.meta.get("example_value") for node in gm.graph.nodes if node.op == "placeholder"}


def symbolic_sizes(gm):
    """Placeholder name -> sizes as text, e.g. {'x': ['s0', '4']}."""
    return {name: [str(s) for s in value.shape] for name, value in placeholders(gm).items()
            if isinstance(value, torch.Tensor)}


def batch(x):
    return torch.relu(x) * 2 + 1


def batches(sizes, *rest):
    return [(torch.randn(b, *rest),) for b in sizes]


# ---- dynamic=None: automatic --------------------------------------------------------------------


def test_automatic_batch_sweep_compiles_twice():
    counter = sweep(batch, batches(range(2, 13), 4))
    assert counter.frame_count == 2
    static, dynamic = counter.graphs
    assert symbolic_sizes(static) == {"x": ["2", "4"]}
    assert symbolic_sizes(dynamic) == {"x": ["s0", "4"]}


def test_automatic_makes_only_the_dimension_that_changed_dynamic():
    counter = sweep(batch, [(torch.randn(2, 3, 5),), (torch.randn(2, 4, 5),), (torch.randn(2, 6, 5),)])
    assert counter.frame_count == 2
    assert symbolic_sizes(counter.graphs[1]) == {"x": ["2", "s0", "5"]}


def test_size_one_is_static_then_the_sweep_is_dynamic():
    # 0 and 1 are specialised (as under torch.compile): 1, then 2 makes a dynamic graph for 2..
    counter = sweep(batch, batches(range(1, 9), 3))
    assert counter.frame_count == 2


def test_config_automatic_dynamic_shapes_off_recompiles_per_size():
    with bytegraph.config.patch(automatic_dynamic_shapes=False):
        counter = sweep(batch, batches(range(2, 6), 3))
    assert counter.frame_count == 4


def test_reset_forgets_what_was_seen():
    counter = CompileCounter()
    compiled = bytegraph.compile(batch, backend=counter)
    compiled(torch.randn(2, 3))
    compiled(torch.randn(3, 3))
    bytegraph.reset()
    compiled(torch.randn(4, 3))  # a fresh start: static again
    compiled(torch.randn(4, 3))
    assert counter.frame_count == 3


# ---- dynamic=True / False --------------------------------------------------------------------------


def test_dynamic_true_compiles_once_for_the_sweep():
    counter = sweep(batch, batches(range(2, 13), 4), dynamic=True)
    assert counter.frame_count == 1
    assert symbolic_sizes(counter.graphs[0]) == {"x": ["s0", "s1"]}


def test_dynamic_true_specialises_sizes_zero_and_one():
    counter = sweep(batch, batches([3, 1, 4], 2), dynamic=True)
    assert counter.frame_count == 2
    assert symbolic_sizes(counter.graphs[1]) == {"x": ["1", "s0"]}


def test_dynamic_false_recompiles_per_size():
    counter = sweep(batch, batches(range(2, 6), 3), dynamic=False)
    assert counter.frame_count == 4


def test_duck_sizing_shares_a_symbol_and_guards_it():
    def add(x, y):
        return x + y

    counter = sweep(add, [(torch.randn(3, 3), torch.randn(3, 3)), (torch.randn(4, 4), torch.randn(4, 4))],
                    dynamic=True)
    assert counter.frame_count == 1
    assert symbolic_sizes(counter.graphs[0]) == {"x": ["s0", "s0"], "y": ["s0", "s0"]}
    # A square input and a non-square one: the shared symbol no longer holds.
    compiled = bytegraph.compile(add, backend=counter, dynamic=True)
    x = torch.randn(4, 5)
    assert same(add(x, x), compiled(x, x))
    assert counter.frame_count == 2


# ---- ints -------------------------------------------------------------------------------------------


def scale(x, n):
    return x * n + n


def test_automatic_int_argument_becomes_symbolic():
    counter = sweep(scale, [(torch.randn(3), n) for n in range(2, 9)])
    assert counter.frame_count == 2
    assert isinstance(placeholders(counter.graphs[1])["n"], torch.SymInt)


def test_automatic_int_a_function_argument_closes_over_becomes_symbolic():
    def adder(n):
        def add(y):
            return y + n

        return add

    counter = sweep(lambda x, fn: fn(x), [(torch.randn(5), adder(n)) for n in range(6)])
    assert counter.frame_count == 2


class StepCounting(nn.Module):
    """Counts its calls in an int attribute, as training code counts steps."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        y = self.lin(x) * self.step
        self.step += 1
        return y.relu()


@pytest.mark.parametrize("dynamic", [None, True])
def test_an_int_attribute_that_changes_becomes_symbolic_and_is_written_back(dynamic):
    model, reference = StepCounting(), StepCounting()
    reference.load_state_dict(model.state_dict())
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter, dynamic=dynamic)
    x = torch.randn(2, 4)
    for _ in range(12):
        assert same(compiled(x), reference(x))
    assert model.step == reference.step == 12
    # Static for the first value (dynamic=True too: an attribute is symbolic only once it
    # changed), symbolic from then on: two compiles, not one per step.
    assert counter.frame_count == 2
    with bytegraph.config.patch(automatic_dynamic_shapes=False):
        bytegraph.reset()
        counter = CompileCounter()
        compiled = bytegraph.compile(StepCounting(), backend=counter)
        for _ in range(3):
            compiled(x)
        assert counter.frame_count == 3


def test_an_argument_that_swaps_between_tensor_and_int_is_made_dynamic():
    def mul(x, y):
        return x * y

    calls = [(torch.randn(n), torch.randn(n) if y is None else y)
             for n, y in [(2, None), (3, 3), (4, None), (4, None), (5, 4), (5, 4), (6, None)]]
    assert sweep(mul, calls).frame_count == 3


def test_assume_static_by_default_off_compiles_dynamic_first():
    with bytegraph.config.patch(assume_static_by_default=False):
        counter = sweep(batch, batches([3, 5, 7], 4))
        assert counter.frame_count == 1
        assert sweep(batch, batches([3, 5], 4), dynamic=False).frame_count == 2  # dynamic=False still wins


def test_dynamic_true_int_is_symbolic_from_the_start_and_zero_one_are_not_special():
    counter = sweep(scale, [(torch.randn(3), n) for n in (5, 0, 1, 7)], dynamic=True)
    assert counter.frame_count == 1


def test_dynamic_false_int_recompiles_per_value():
    counter = sweep(scale, [(torch.randn(3), n) for n in range(2, 6)], dynamic=False)
    assert counter.frame_count == 4


def test_symbolic_int_used_as_a_list_index_is_specialised():
    def pick(x, i):
        return x * [1.0, 2.0, 3.0, 4.0][i]

    counter = sweep(pick, [(torch.randn(2), i) for i in (0, 1, 2, 3, 1)], dynamic=True)
    assert counter.frame_count == 4  # one per index value; no graph break


def test_bool_arguments_stay_constants():
    def flag(x, b):
        return x + 1 if b else x - 1

    counter = sweep(flag, [(torch.randn(2), b) for b in (True, False, True)], dynamic=True)
    assert counter.frame_count == 2


# ---- compile / optimize / OptimizedModule ----------------------------------------------------------


def test_optimize_is_automatic_by_default():
    counter = CompileCounter()
    compiled = bytegraph.optimize(counter)(batch)
    for b in range(2, 8):
        x = torch.randn(b, 3)
        assert same(batch(x), compiled(x))
    assert counter.frame_count == 2


def test_optimized_module_batch_sweep():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(model, backend=counter)
    assert isinstance(compiled, bytegraph.OptimizedModule)
    for b in range(2, 10):
        x = torch.randn(b, 8)
        assert same(model(x), compiled(x))
    assert counter.frame_count == 2
    assert list(symbolic_sizes(counter.graphs[1]).values()) == [["s0", "8"]]


# ---- marks --------------------------------------------------------------------------------------------


def test_mark_dynamic_is_dynamic_from_the_first_compile():
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(batch, backend=counter)
    for b in range(2, 7):
        x = torch.randn(b, 3)
        bytegraph.mark_dynamic(x, 0)
        assert same(batch(x), compiled(x))
    assert counter.frame_count == 1
    assert symbolic_sizes(counter.graphs[0]) == {"x": ["s0", "3"]}


def test_mark_dynamic_bounds_are_guarded():
    counter = CompileCounter()
    failures = []
    guarded = bytegraph.optimize(counter, guard_fail_fn=lambda failure: failures.append(failure.reason), dynamic=False)(batch)
    for b in (3, 5, 8):
        x = torch.randn(b, 2)
        bytegraph.mark_dynamic(x, 0, min=2, max=8)
        assert same(batch(x), guarded(x))
    assert counter.frame_count == 1
    x = torch.randn(9, 2)  # outside the bounds: a recompile (static: the new tensor is not marked)
    assert same(batch(x), guarded(x))
    assert counter.frame_count == 2
    assert failures[0] == "shape guard L['x'].size()[0] <= 8 failed: L['x'].size()[0] = 9"


def test_mark_dynamic_bounds_the_marked_tensor_must_meet():
    x = torch.randn(9, 2)
    bytegraph.mark_dynamic(x, 0, min=2, max=8)
    with pytest.raises(bytegraph.exc.ConstraintViolationError, match="not in range"):
        bytegraph.compile(batch, backend="eager")(x)


def test_torch_dynamo_marks_are_honoured():
    import torch._dynamo

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(batch, backend=counter, dynamic=False)
    for b in (2, 3, 4):
        x = torch.randn(b, 3)
        torch._dynamo.mark_dynamic(x, 0)
        assert same(batch(x), compiled(x))
    assert counter.frame_count == 1
    assert symbolic_sizes(counter.graphs[0]) == {"x": ["s0", "3"]}


def test_mark_static_wins_over_dynamic_true():
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(batch, backend=counter, dynamic=True)
    for b in (2, 3):
        x = torch.randn(b, 5)
        bytegraph.mark_static(x, 1)
        assert same(batch(x), compiled(x))
    assert counter.frame_count == 1
    assert symbolic_sizes(counter.graphs[0]) == {"x": ["s0", "5"]}


def test_mark_dynamic_specialised_by_the_code_is_an_error():
    def unrolled(x):
        for i in range(x.shape[0]):
            x = x + i
        return x

    x = torch.randn(3)
    bytegraph.mark_dynamic(x, 0)
    with pytest.raises(bytegraph.exc.ConstraintViolationError, match=r"L\['x'\].size\(\)\[0\].*specialised it to 3"):
        bytegraph.compile(unrolled, backend="eager")(x)


def test_automatic_dynamic_as_unbacked_reuses_the_compile_for_sizes_one_and_zero():
    with bytegraph.config.patch(automatic_dynamic_shapes_mark_as="unbacked"):
        counter = sweep(batch, batches([3, 2, 1, 0, 5], 4))
    assert counter.frame_count == 2  # not one per size 1 and 0 as with backed symbols
    assert symbolic_sizes(counter.graphs[1]) == {"x": ["u0", "4"]}


def test_automatic_dynamic_mark_as_rejects_other_kinds():
    with pytest.raises(ValueError, match="must be one of"):
        bytegraph.config.automatic_dynamic_shapes_mark_as = "oblivious"


def test_mark_unbacked_compiles_once_and_a_branch_on_it_is_a_break():
    def total(x):
        return x.sum(0) + x.shape[0]

    calls = []
    for n in (3, 1, 0, 7):
        x = torch.randn(n, 2)
        bytegraph.mark_unbacked(x, 0)
        calls.append((x,))
    counter = sweep(total, calls, fullgraph=True)
    assert counter.frame_count == 1 and counter.op_count == 2

    def branches(x):
        return x + 1 if x.shape[0] > 2 else x - 1

    x = torch.randn(4)
    bytegraph.mark_unbacked(x, 0)
    with pytest.raises(bytegraph.exc.GraphBreakError, match=r"data_dependent_branch.*u0 > 2.*unbacked size"):
        bytegraph.compile(branches, backend="eager", fullgraph=True)(x)
    assert same(bytegraph.compile(branches, backend="eager")(x), x + 1)


def test_maybe_mark_dynamic_may_be_specialised():
    def unrolled(x):
        for i in range(x.shape[0]):
            x = x + i
        return x

    x = torch.randn(3)
    bytegraph.maybe_mark_dynamic(x, 0)
    counter = CompileCounter()
    assert same(unrolled(x.clone()), bytegraph.compile(unrolled, backend=counter)(x))
    assert counter.frame_count == 1


@pytest.mark.parametrize("call,error", [
    (lambda: bytegraph.mark_dynamic([1, 2], 0), TypeError),
    (lambda: bytegraph.mark_dynamic(torch.zeros(2), 1), IndexError),
    (lambda: bytegraph.mark_dynamic(torch.zeros(2), "0"), TypeError),
    (lambda: bytegraph.mark_dynamic(torch.zeros(2), 0, min=5, max=2), ValueError),
    (lambda: bytegraph.mark_static(torch.zeros(2, 2), -3), IndexError),
])
def test_marks_reject_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_negative_mark_dims_count_from_the_end():
    x = torch.randn(2, 3)
    bytegraph.mark_dynamic(x, -1)
    assert x._dynamo_dynamic_indices == {1}


# ---- size arithmetic, branches, loops ------------------------------------------------------------


def heads(x, h):
    b, t, c = x.shape
    y = x.view(b, t, h, c // h).transpose(1, 2)
    return y.reshape(b * h, t, -1) * (x.size(-1) // h) + x.shape[0] * 2


def test_size_arithmetic_is_recorded():
    calls = [(torch.randn(b, t, 8), 2) for b, t in ((2, 3), (3, 5), (4, 4), (5, 7))]
    counter = sweep(heads, calls, dynamic=True)
    assert counter.frame_count == 1
    code = counter.graphs[0].code
    assert "view(" in code and "//" in code and "*" in code


def test_branch_on_a_size_is_guarded_not_a_break():
    def branch(x):
        if x.shape[0] > 4:
            return x + 1
        return x - 1

    failures = []
    counter = CompileCounter()
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: failures.append(failure.reason), dynamic=True)(branch)
    for b in (2, 3, 4):
        assert same(branch(torch.ones(b)), compiled(torch.ones(b)))
    assert counter.frame_count == 1
    assert same(branch(torch.ones(6)), compiled(torch.ones(6)))
    assert counter.frame_count == 2
    assert failures == ["shape guard L['x'].size()[0] <= 4 failed: L['x'].size()[0] = 6"]
    explained = bytegraph.explain(branch)(torch.ones(3))
    assert explained.graph_break_count == 0


def test_range_over_a_size_is_unrolled_and_specialised(caplog):
    def unrolled(x):
        total = x
        for i in range(x.shape[0]):
            total = total + i
        return total

    bytegraph.set_logs(dynamic=True)
    try:
        with caplog.at_level(logging.INFO, logger="bytegraph.dynamic"):
            counter = sweep(unrolled, batches((2, 3, 3), 2), dynamic=True)
    finally:
        bytegraph.set_logs()
    assert counter.frame_count == 2
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "specialised L['x'].size()[0] (s0) to 2: range() is unrolled" in text
    assert "for i in range(x.shape[0]):" in text


def test_arange_and_symbolic_slices():
    def f(x, y):
        n = x.shape[0]
        return x + torch.arange(n), y[: n - 1], y[1:n]

    calls = [(torch.randn(b), torch.randn(10)) for b in (2, 5, 7)]
    counter = sweep(f, calls, dynamic=True)
    assert counter.frame_count == 1


def test_len_numel_and_size_results_leave_the_graph():
    def f(x):
        return x * len(x), x.numel(), x.size(0) * 2

    counter = sweep(f, batches((2, 3, 4), 3), dynamic=True)
    assert counter.frame_count == 1
    assert isinstance(placeholders(counter.graphs[0])["s0"], torch.SymInt)


def test_shapes_compared_as_tuples():
    def same_shape(x, y):
        if x.shape == y.shape:
            return x + y
        return x

    calls = [(torch.randn(b, 2), torch.randn(b, 2)) for b in (2, 3)] + [(torch.randn(4, 2), torch.randn(5, 2))]
    counter = sweep(same_shape, calls, dynamic=True)
    assert counter.frame_count == 2


def test_min_max_and_int_of_sizes():
    def f(x):
        n = min(x.shape[0], 4)
        m = max(x.shape[0] // 2, 1)
        return x[:n] * int(x.shape[0]) + m

    counter = sweep(f, batches((2, 3, 6, 9), 7), dynamic=True)
    assert counter.frame_count == 1


def test_graph_break_with_symbolic_sizes():
    def broken(x):
        y = x * x.shape[0]
        bytegraph.graph_break()
        return y + x.shape[0]

    counter = sweep(broken, batches((2, 3, 4, 5), 7), dynamic=True)
    assert counter.frame_count == 2  # one graph before the break, one in the resume function


def test_non_contiguous_input_recompiles():
    def f(x):
        return x.view(-1) * 2

    counter = CompileCounter()
    failures = []
    compiled = bytegraph.optimize(counter, guard_fail_fn=lambda failure: failures.append(failure.reason), dynamic=True)(f)
    x = torch.randn(3, 4)
    assert same(f(x), compiled(x))
    y = torch.randn(5, 7)[:, :4]  # same rank, stride[0] is 7, not size[1]
    assert same(f(y.contiguous()), compiled(y.contiguous()))
    assert counter.frame_count == 1 and not failures
    with pytest.raises(RuntimeError):
        f(y)  # eager refuses to view it
    with pytest.raises(RuntimeError):
        compiled(y)  # and the compiled function does not run the graph made for contiguous inputs
    assert failures == ["shape guard L['x'].stride()[0] == L['x'].size()[1] failed: "
                        "L['x'].stride()[0] = 7, L['x'].size()[1] = 4"]


# ---- guards ----------------------------------------------------------------------------------------


def test_shape_guards_are_listed_and_checked_in_the_guard_tree():
    exported = []
    compiled = bytegraph.optimize("eager", guard_export_fn=exported.append, dynamic=True)(lambda x, y: x @ y)
    compiled(torch.randn(3, 4), torch.randn(4, 5))
    lines = exported[0]
    assert "SHAPE_GUARD: 2 <= L['x'].size()[0]" in lines
    assert any("TENSOR_MATCH" in line and "size=[?, ?]" in line for line in lines)
    # Inner dimensions must agree (the matmul guarded it), so a mismatch is a recompile
    # that eager also rejects, not a silent wrong result.
    with pytest.raises(RuntimeError):
        compiled(torch.randn(3, 4), torch.randn(5, 5))


def test_shape_guard_tree_on_tensors_directly():
    g = bytegraph._C.guards
    gs = g.GuardSet()
    x = g.local("x", 0)
    y = g.local("y", 1)
    gs.add_tensor_match_unchecked(x, torch.zeros(3, 4), [0], [])
    gs.add_symbol_binding(x, "size", 0, 0)
    gs.add_symbol_binding(y, "size", 1, 1)
    gs.add_shape_guard(("eq", ("sym", 0), ("sym", 1)), "L['x'].size()[0] == L['y'].size()[1]")
    tree = gs.build()
    assert tree.check_locals([torch.zeros(5, 4), torch.zeros(2, 5)])
    assert not tree.check_locals([torch.zeros(5, 4), torch.zeros(2, 6)])
    assert tree.explain_locals([torch.zeros(5, 4), torch.zeros(2, 6)]) == (
        "shape guard L['x'].size()[0] == L['y'].size()[1] failed: L['x'].size()[0] = 5, L['y'].size()[1] = 6")
    assert not tree.check_locals([torch.zeros(5, 3), torch.zeros(2, 5)])  # static size still checked
    assert "y" in tree.explain_locals([torch.zeros(5, 4), torch.zeros(2)])  # no dimension 1


def test_shape_guard_tree_reads_strides_and_storage_offsets():
    g = bytegraph._C.guards
    gs = g.GuardSet()
    x = g.local("x", 0)
    gs.add_symbol_binding(x, "stride", 0, 0)
    gs.add_symbol_binding(x, "offset", -1, 1)
    gs.add_shape_guard(("eq", ("sym", 1), ("mul", ("int", 2), ("sym", 0))),
                       "L['x'].storage_offset() == 2*L['x'].stride()[0]")
    tree = gs.build()
    assert tree.check_locals([torch.zeros(6, 5)[2:, 1:]]) is False  # offset 11, stride 5
    assert tree.check_locals([torch.zeros(6, 5)[2:]])
    assert tree.explain_locals([torch.zeros(6, 5)[1:]]) == (
        "shape guard L['x'].storage_offset() == 2*L['x'].stride()[0] failed: "
        "L['x'].stride()[0] = 5, L['x'].storage_offset() = 5")
    with pytest.raises(ValueError, match="size, stride, offset or int"):
        gs.add_symbol_binding(x, "volume", 0, 2)


# ---- showing it -------------------------------------------------------------------------------------


def test_dynamic_log_says_which_dimension_became_dynamic_and_why(caplog):
    bytegraph.set_logs(dynamic=True)
    try:
        with caplog.at_level(logging.INFO, logger="bytegraph.dynamic"):
            sweep(scale, [(torch.randn(2), 3), (torch.randn(3), 4)])
    finally:
        bytegraph.set_logs()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "L['x'].size()[0] is dynamic: its size changed from 2 to 3 (automatic dynamic)" in text
    assert "L['n'] is dynamic: it changed from 3 to 4 (automatic dynamic)" in text


def test_dynamic_is_a_log_artifact_of_bytegraph_logs():
    assert bytegraph._logging.parse_spec("dynamic,recompiles") == {"dynamic": logging.INFO, "recompiles": logging.INFO}


def test_explain_shows_symbolic_sizes():
    x = torch.randn(4, 3)
    bytegraph.mark_dynamic(x, 0)
    text = str(bytegraph.explain(lambda x: x.view(x.shape[0], -1) * 2)(x))
    assert "s0: Sym(s0), L_x_: f32[s0, 3]" in text
    assert "SHAPE_GUARD: 2 <= L['x'].size()[0]" in text


def test_trace_viewer_shows_symbolic_sizes():
    x = torch.randn(4, 3)
    bytegraph.mark_dynamic(x, 0)
    trace = bytegraph.trace(lambda x: x * x.shape[0], x)
    stacks = [item for step in trace.frames[0].steps for item in step.stack]
    assert "TensorVariable(l_x_: f32[s0, 3])" in stacks
    assert "SymNodeVariable(s0)" in stacks
    assert "SHAPE_GUARD: 2 <= L['x'].size()[0]" in trace.guards


# ---- backends ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backends_run_dynamic_graphs(backend):
    def f(x, y):
        b = x.shape[0]
        return (x.view(b, -1, 2) * y[:b].view(b, 1, 1)).sum(-1) + torch.arange(b).view(-1, 1)

    counter = CompileCounterWithBackend(backend)
    calls = [(torch.randn(b, 6), torch.randn(10)) for b in (3, 5, 7)]
    sweep(f, calls, backend=counter, dynamic=True)
    assert counter.frame_count == 1


def reshape_with_a_built_shape(x):
    # GPT-2's `(-1,) + input_shape[1:]`: a constant tuple joined with symbolic sizes.
    shape = (-1,) + x.shape[1:]
    return x.reshape(shape) * 2, [7] + list(x.shape[:1])


def test_tuples_of_constants_joined_with_symbolic_sizes_stay_in_the_graph():
    counter = sweep(reshape_with_a_built_shape, [(torch.randn(2, s, 3),) for s in range(4, 9)], dynamic=True)
    assert counter.frame_count == 1


def symbolic_layout(gm, name):
    """(strides, storage offset) of placeholder `name` as text, e.g. (['s1', '1'], 's2')."""
    fake = placeholders(gm)[name]
    return [str(s) for s in fake.stride()], str(fake.storage_offset())


def symbol_inputs(gm):
    """The placeholders that carry symbols (SymInts), by name."""
    return [name for name, value in placeholders(gm).items() if isinstance(value, torch.SymInt)]


def write_column(a, column):
    a[:, 0] = column * 2


def test_a_column_input_gets_a_stride_symbol_that_a_graph_input_carries():
    # A matrix's column skips elements: its stride (the row length) does not follow from its
    # size, so it is a symbol of its own. Unless a graph input carries it, AOTAutograd fails
    # ("s2 is not tracked with proxy"); torch.compile lifts it, and so does bytegraph.
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(write_column, backend=counter)
    for rows, columns in ((3, 4), (2, 4), (5, 4), (4, 6), (1, 3)):
        a = torch.randn(rows, columns)
        expected = a.clone()
        write_column(expected, expected[:, 0])
        compiled(a, a[:, 0])
        assert same(a, expected)
    # static; rows symbolic (the column's stride already is); columns too; one row (1 stays
    # static)
    assert counter.frame_count == 4
    strides, _ = symbolic_layout(counter.graphs[1], "column")
    assert strides[0].startswith("s") and len(symbol_inputs(counter.graphs[1])) >= 3


def test_a_one_row_column_input_compiles_once_for_each_kind_of_size():
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(write_column, backend=counter)
    for rows in (3, 1, 3, 1):
        a = torch.randn(rows, 4)
        expected = a.clone()
        write_column(expected, expected[:, 0])
        compiled(a, a[:, 0])
        assert same(a, expected)
    assert counter.frame_count == 2  # one graph per size, each reused


def scaled(x):
    return x * 2 + x.sum(0)


# view of a (rows, 5) matrix -> whether each stride, and the storage offset, is a symbol
VIEWS = {
    "rows_from_2": (lambda base: base[2:], [True, False], True),  # offset: 2 rows
    "column_1": (lambda base: base[:, 1], [True], False),  # offset 1 stays static
    "column_2": (lambda base: base[:, 2], [True], True),
    "every_other_row": (lambda base: base[::2], [True, False], False),
    "expanded": (lambda base: base[0].expand(3, -1), [False, False], False),
    "transposed": (lambda base: base.t(), [False, True], False),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_views_as_inputs_keep_one_graph_under_dynamic_true(view):
    make, symbolic_strides, symbolic_offset = VIEWS[view]
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(scaled, backend=counter, dynamic=True)
    for rows in (6, 7, 9):
        x = make(torch.randn(rows, 5))
        assert same(compiled(x), scaled(x))
    assert counter.frame_count == 1
    strides, offset = symbolic_layout(counter.graphs[0], "x")
    assert [not s.isdigit() for s in strides] == symbolic_strides
    assert (not offset.isdigit()) == symbolic_offset


def test_a_stride_symbol_is_guarded_like_a_size():
    # A stride symbol is 2 or more (0 and 1 are specialised, as sizes are): a contiguous input
    # (stride 1) is another graph, and its results stay right.
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(scaled, backend=counter, dynamic=True)
    for x in (torch.randn(6, 5)[:, 1], torch.randn(7, 4)[:, 1], torch.randn(8)):
        assert same(compiled(x), scaled(x))
    assert counter.frame_count == 2
    x = torch.randn(3, 9)[:, 2]
    assert same(compiled(x), scaled(x))
    assert counter.frame_count == 2


def test_reading_a_symbolic_stride_gives_its_graph_input():
    def by_stride(x):
        return x * x.stride(0)

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(by_stride, backend=counter, dynamic=True)
    for rows, start in ((8, 2), (9, 3), (7, 2)):
        x = torch.randn(rows, 5 + start)[start:, 1]
        assert same(compiled(x), by_stride(x))
    assert counter.frame_count == 1
    (gm,) = counter.graphs
    stride = next(n for n in gm.graph.nodes if n.op == "call_function").args[1]
    assert stride.op == "placeholder" and isinstance(stride.meta["example_value"], torch.SymInt)


def test_methods_of_a_symbolic_int_specialise_it():
    def f(t, m):
        return 2 * t if m.bit_length() > 1 else t - m.conjugate()

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, dynamic=True, fullgraph=True)
    for m in (1, 2, 3, 3):
        assert torch.equal(compiled(torch.ones(2), m), f(torch.ones(2), m))
    assert counter.frame_count == 3  # the value read by .bit_length() is guarded: one entry per value


def test_parameter_inputs_keep_static_sizes_unless_configured_otherwise():
    w = torch.nn.Parameter(torch.randn(3, 2))

    def foo(x):
        return x @ w

    def frames(**settings):
        bytegraph.reset()
        counter = CompileCounter()
        with bytegraph.config.patch(**settings):
            compiled = bytegraph.compile(foo, backend=counter, fullgraph=True)
            for rows in (1, 10, 11, 15, 15):
                x = torch.nn.Parameter(torch.randn(rows, 3))
                torch.testing.assert_close(compiled(x), foo(x))
        return counter.frame_count

    # torch.compile's default: a Parameter's new shape recompiles (4 shapes, 4 graphs).
    assert frames() == 4
    assert frames(force_parameter_static_shapes=False) == 2  # automatic dynamic after one change
    assert frames(force_parameter_static_shapes=False, automatic_dynamic_shapes=False) == 4
