"""The knobs torch.compile users reach for, with its names and meaning: set_stance,
allow_in_graph, disallow_in_graph, disable, is_compiling, config.patch, compile_times,
list_backends, recompile_limit and the cache-limit message."""

import logging

import pytest
import torch

import bytegraph
from bytegraph.examples import foo2
from bytegraph.testing import CompileCounter


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


@pytest.fixture(autouse=True)
def _default_stance_after():
    yield
    bytegraph.set_stance("default")


def double(x):
    return x * 2 + 1


# ---- set_stance ---------------------------------------------------------------------------


def test_force_eager_ignores_compile_and_compiled_entries():
    counter = CompileCounter()
    compiled = bytegraph.compile(double, backend=counter)
    x = torch.ones(3)
    bytegraph.set_stance("force_eager")
    torch.testing.assert_close(compiled(x), double(x))
    assert counter.frame_count == 0  # nothing compiled
    bytegraph.set_stance("default")
    compiled(x)
    assert counter.frame_count == 1

    # A compiled entry exists now; under force_eager it is not used either.
    def uses_is_compiling(x):
        return x + (10 if bytegraph.is_compiling() else 0)

    c2 = bytegraph.compile(uses_is_compiling, backend="eager")
    assert torch.equal(c2(x), x + 10)
    with bytegraph.set_stance("force_eager"):
        assert torch.equal(c2(x), x)
    assert torch.equal(c2(x), x + 10)  # the context manager restored the default


def test_eager_on_recompile_uses_cached_entries_and_runs_new_inputs_eagerly():
    counter = CompileCounter()
    compiled = bytegraph.compile(double, backend=counter)
    compiled(torch.ones(3))
    with bytegraph.set_stance("eager_on_recompile"):
        torch.testing.assert_close(compiled(torch.ones(5)), double(torch.ones(5)))  # would recompile
        torch.testing.assert_close(compiled(torch.ones(3)), double(torch.ones(3)))  # cached entry
    assert counter.frame_count == 1
    compiled(torch.ones(5))
    assert counter.frame_count == 2  # the default stance recompiles again


def test_fail_on_recompile_raises_with_the_failed_guard_and_what_to_do():
    compiled = bytegraph.compile(double, backend="eager")
    compiled(torch.ones(3))

    @bytegraph.set_stance("fail_on_recompile")
    def strict_call(x):
        return compiled(x)

    assert torch.equal(strict_call(torch.ones(3)), double(torch.ones(3)))  # a cache hit is fine
    with pytest.raises(bytegraph.stance.RecompileError) as info:
        strict_call(torch.ones(4))
    message = str(info.value)
    assert "double" in message and "fail_on_recompile" in message
    assert "L['x'] size[0]: expected 3, got 4" in message
    assert "set_stance('default')" in message
    # The decorator applied the stance only during the call.
    assert bytegraph.stance.current().name == "default"
    compiled(torch.ones(4))


def test_error_on_recompile_raises_instead_of_compiling_again():
    counter = CompileCounter()
    compiled = bytegraph.compile(double, backend=counter)
    with bytegraph.config.patch(error_on_recompile=True):
        compiled(torch.ones(3))  # the first compile is not a recompile
        compiled(torch.ones(3))
        with pytest.raises(bytegraph.stance.RecompileError) as info:
            compiled(torch.ones(4))
    assert "error_on_recompile" in str(info.value) and "expected 3, got 4" in str(info.value)
    assert counter.frame_count == 1
    compiled(torch.ones(4))
    assert counter.frame_count == 2


def test_accumulated_cache_size_limit_counts_entries_across_functions():
    def triple(x):
        return x * 3

    counter = CompileCounter()
    first, second = bytegraph.compile(double, backend=counter), bytegraph.compile(triple, backend=counter)
    with bytegraph.config.patch(accumulated_cache_size_limit=2):
        first(torch.ones(3))
        first(torch.ones(2, 2))
        torch.testing.assert_close(second(torch.ones(3)), triple(torch.ones(3)))  # over the limit: eager
        assert counter.frame_count == 2
        first(torch.ones(3))  # compiled entries still run
        assert counter.frame_count == 2
    bytegraph.reset()  # the count starts again
    second(torch.ones(3))
    assert counter.frame_count == 3


def test_set_stance_rejects_what_it_does_not_know():
    with pytest.raises(ValueError, match="unknown stance 'eagerly'"):
        bytegraph.set_stance("eagerly")
    with pytest.raises(ValueError, match="force_backend only goes with the 'default' stance"):
        bytegraph.set_stance("force_eager", force_backend="eager")
    with pytest.raises(NotImplementedError, match="skip_guard_eval_unsafe"):
        bytegraph.set_stance(skip_guard_eval_unsafe=True)
    assert bytegraph.stance.current().name == "default"


def test_force_backend_compiles_with_the_given_backend():
    counter = CompileCounter()
    compiled = bytegraph.compile(double, backend="eager")
    with bytegraph.set_stance(force_backend=counter):
        compiled(torch.ones(3))
    assert counter.frame_count == 1 and counter.op_count == 2


# ---- allow_in_graph / disallow_in_graph / is_compiling ------------------------------------


def _scaled_sin(x):
    return torch.sin(x) * 2


def uses_scaled_sin(x):
    return _scaled_sin(x) + 1


def test_allow_in_graph_puts_the_call_in_the_graph_as_one_node():
    try:
        bytegraph.allow_in_graph(_scaled_sin)
        out = bytegraph.explain(uses_scaled_sin)(torch.ones(3))
        assert out.ops_per_graph == [["call_function _scaled_sin", "call_function operator.add"]]
        compiled = bytegraph.compile(uses_scaled_sin, backend="eager")
        torch.testing.assert_close(compiled(torch.ones(3)), uses_scaled_sin(torch.ones(3)))
    finally:
        bytegraph._classify._RULES.pop(id(_scaled_sin), None)
    # Without the rule the body is traced.
    out = bytegraph.explain(uses_scaled_sin)(torch.ones(3))
    assert out.ops_per_graph == [["call_function torch.sin", "call_function operator.mul", "call_function operator.add"]]


def uses_cosine(x):
    return torch.cos(x * 2) - 1


def test_disallow_in_graph_breaks_the_graph_at_the_call():
    try:
        bytegraph.disallow_in_graph(torch.cos)
        out = bytegraph.explain(uses_cosine)(torch.ones(3))
        compiled = bytegraph.compile(uses_cosine, backend="eager")
        torch.testing.assert_close(compiled(torch.ones(3)), uses_cosine(torch.ones(3)))
    finally:
        bytegraph._classify._RULES.pop(id(torch.cos), None)
    assert out.graph_break_count == 1
    assert out.break_reasons[0].source_line == "return torch.cos(x * 2) - 1"
    assert out.ops_per_graph == [["call_function operator.mul"], ["call_function operator.sub"]]
    assert not any("torch.cos" in op for ops in out.ops_per_graph for op in ops)


def test_allow_and_disallow_reject_non_callables():
    with pytest.raises(TypeError, match="allow_in_graph expects"):
        bytegraph.allow_in_graph(3)
    with pytest.raises(TypeError, match="disallow_in_graph expects"):
        bytegraph.disallow_in_graph("torch.cos")


def branches_on_compiling(x):
    if bytegraph.is_compiling():
        return x + 1
    return x - 1


def test_is_compiling_is_false_eagerly_and_true_in_captured_code():
    assert bytegraph.is_compiling() is False
    x = torch.zeros(2)
    assert torch.equal(branches_on_compiling(x), x - 1)
    counter = CompileCounter()
    assert torch.equal(bytegraph.compile(branches_on_compiling, backend=counter)(x), x + 1)
    assert counter.frame_count == 1 and counter.op_count == 1  # folded: no break, one add


def test_disable_as_a_decorator_keeps_a_function_out_of_capture():
    @bytegraph.disable
    def eager_part(x):
        return x + (100 if bytegraph.is_compiling() else 0)

    def f(x):
        return eager_part(x * 2) - 1

    counter = CompileCounter()
    out = bytegraph.compile(f, backend=counter)(torch.ones(2))
    assert torch.equal(out, torch.ones(2) * 2 - 1)  # eager_part ran eagerly
    assert counter.frame_count == 2  # the graphs before and after the call


# ---- config.patch, compile_times, list_backends, recompile limits -------------------------


def test_config_patch_as_context_manager_and_decorator():
    counter = CompileCounter()
    compiled = bytegraph.compile(double, backend=counter)
    with bytegraph.config.patch(cache_size_limit=1):
        for n in (2, 3, 4):
            compiled(torch.ones(n))
        assert counter.frame_count == 1
    assert bytegraph.config.cache_size_limit == 8

    @bytegraph.config.patch(suppress_errors=True)
    def read():
        return bytegraph.config.suppress_errors

    assert read() is True and bytegraph.config.suppress_errors is False


def test_compile_times_reports_each_frame_by_phase():
    compiled = bytegraph.compile(foo2, backend="eager")
    compiled(torch.ones(3), -torch.ones(3))
    compiled(torch.ones(4), -torch.ones(4))  # a recompile of foo2 and its resume functions
    header, rows = bytegraph.compile_times(repr="csv")
    assert header == ["frame", "compiles", "tracing", "backend", "guards", "codegen", "total"]
    names = [row[0] for row in rows]
    assert names[0] == "foo2 [0/0]" and "foo2 [0/1]" in names
    assert any(name.startswith("foo2 (resumed at line ") for name in names)
    for row in rows:
        assert all(value >= 0 for value in row[2:])
        assert row[-1] >= sum(row[2:6]) * 0.99  # total covers the phases
    aggregated = dict((row[0], row[1]) for row in bytegraph.compile_times(repr="csv", aggregate=True)[1])
    assert aggregated["foo2"] == 2
    table = bytegraph.compile_times()
    assert table.splitlines()[0].split()[:4] == ["frame", "compiles", "tracing", "(ms)"]
    bytegraph.reset()
    assert bytegraph.compile_times(repr="csv")[1] == []
    with pytest.raises(ValueError):
        bytegraph.compile_times(repr="json")


def test_list_backends_excludes_tags():
    default = bytegraph.list_backends()
    everything = bytegraph.list_backends(exclude_tags=())
    assert {"eager", "aot_eager", "inductor"} <= set(default)
    assert set(default) < set(everything)
    assert bytegraph.list_backends(exclude_tags=None) == everything


def scale_by(x, n):
    return x * n


def test_recompile_limit_and_its_message_say_what_to_do(caplog):
    counter = CompileCounter()
    compiled = bytegraph.compile(scale_by, backend=counter, recompile_limit=2, dynamic=False)
    with caplog.at_level(logging.WARNING, logger="bytegraph"):
        for n in range(4):
            assert torch.equal(compiled(torch.ones(2), n), torch.ones(2) * n)
    assert counter.frame_count == 2
    [warning] = [r.getMessage() for r in caplog.records if "runs eagerly from now on" in r.getMessage()]
    assert "scale_by" in warning and "compile(recompile_limit=2)" in warning
    assert "L['n'] == 1: got 2" in warning
    assert "To fix: A Python value it reads keeps changing" in warning
    with pytest.raises(ValueError, match="recompile_limit"):
        bytegraph.compile(scale_by, recompile_limit=0)


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.linear(x)) + x


def test_modules_compiled_one_by_one_each_count_their_own_entries(caplog):
    # Each block's entry pins its block: twelve blocks are twelve entries of one code object,
    # none of which competes with another for the per-code limit (torchtitan compiles each
    # transformer block this way). One block recompiling still stops at the limit.
    counter = CompileCounter()
    blocks = [_Block() for _ in range(12)]
    compiled = [bytegraph.compile(block, backend=counter) for block in blocks]
    x = torch.randn(2, 4)
    with caplog.at_level(logging.WARNING, logger="bytegraph"):
        y, expected = x, x
        for block, original in zip(compiled, blocks):
            y, expected = block(y), original(expected)
    torch.testing.assert_close(y, expected)
    assert counter.frame_count == 12
    assert not [r for r in caplog.records if "runs eagerly from now on" in r.getMessage()]
    with bytegraph.config.patch(cache_size_limit=1), caplog.at_level(logging.WARNING, logger="bytegraph"):
        batched = torch.randn(3, 2, 4)  # another rank: block 0 would need a second entry
        torch.testing.assert_close(compiled[0](batched), blocks[0](batched))
    assert counter.frame_count == 12
    assert [r for r in caplog.records if "runs eagerly from now on" in r.getMessage()]


def test_the_next_block_compiled_one_by_one_is_no_recompile():
    # error_on_recompile and fail_on_recompile forbid compiling a frame again; the first entry
    # of another block (its own module, pinned by identity) is a first compile, as for
    # torch.compile's identity-matched self. Block 0 seeing another rank is a recompile.
    counter = CompileCounter()
    blocks = [_Block() for _ in range(3)]
    compiled = [bytegraph.compile(block, backend=counter) for block in blocks]
    x = torch.randn(2, 4)
    with bytegraph.config.patch(error_on_recompile=True):
        for block, original in zip(compiled, blocks):
            torch.testing.assert_close(block(x), original(x))
        assert counter.frame_count == 3
        with pytest.raises(bytegraph.stance.RecompileError, match="would be compiled again"):
            compiled[0](torch.randn(3, 2, 4))


def _add_inner(x, n):
    return x + n


def _add_outer(x, n):
    return _add_inner(x + n, n)


def test_past_the_recompile_limit_entries_still_serve_and_callees_are_not_compiled():
    # As torch.compile's RUN_ONLY: a call matching an entry runs it; a miss runs eagerly, and the
    # functions the eager frame calls are not compiled one by one instead.
    counter = CompileCounter()
    compiled = bytegraph.compile(_add_outer, backend=counter, recompile_limit=2, dynamic=False)
    for n in range(6):
        assert torch.equal(compiled(torch.ones(2), n), torch.ones(2) + 2 * n)
    assert counter.frame_count == 2
    from bytegraph import _frame

    served = _frame.stats()["cache_hits"]
    assert torch.equal(compiled(torch.ones(2), 1), torch.ones(2) + 2)  # n=1 has an entry
    assert _frame.stats()["cache_hits"] == served + 1
    assert counter.frame_count == 2


def test_every_setting_is_read_somewhere_in_the_package():
    """A setting nothing reads would silently do nothing: each is read as `config.<name>`
    outside config.py (where the tests above prove what it does)."""
    import pathlib
    import re

    from bytegraph import config

    package = pathlib.Path(bytegraph.__file__).parent
    sources = "\n".join(path.read_text() for path in package.rglob("*.py") if path.name != "config.py")
    unread = [name for name in config.defaults() if not re.search(rf"\bconfig\.{name}\b", sources)]
    assert unread == []
