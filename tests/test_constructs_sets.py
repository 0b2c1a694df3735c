"""Sets and frozensets inside traced code: literals, comprehensions, set(), methods, the set
algebra and membership, all folded at trace time (the graph holds only the tensor ops)."""

import pytest
import torch
import torch.nn as nn

import bytegraph
import bytegraph._C as C
from tests._capture import breaks, capture
from tests._trace_helpers import trace


@pytest.fixture(autouse=True)
def verified():
    bytegraph.reset()
    with bytegraph.config.patch(verify_correctness=True):
        yield
    bytegraph.reset()


def test_set_literals_comprehensions_and_membership():
    def f(x, n):
        s = {1, 2, n}                       # BUILD_SET
        t = {*s, 7}                          # SET_UPDATE
        u = {i * i for i in range(4)}        # SET_ADD in a set comprehension
        if 9 in u and 5 not in t:
            x = x + len(s) + len(t) + len(u)
        return x * 2

    capture(f, torch.ones(3), 3, ops=4)


def test_set_constructor_methods_and_iteration_order():
    def f(x):
        s = set(["b", "a"])
        s.add("c")
        s.discard("a")
        s.update(("d", "e"), ["f"])
        s.remove("e")
        names = sorted(s)
        for name in s:                       # iteration in the real set's order
            x = x + len(name)
        return x * len(names), names

    capture(f, torch.ones(2), ops=5)


def test_set_algebra_and_comparisons():
    def f(x):
        a = {1, 2, 3}
        b = frozenset({2, 3, 4})
        union, common, only_a, either = a | b, a & b, a - b, a ^ b
        a |= {10}
        a -= {1}
        assert type(b | a) is frozenset and type(a | b) is set
        if common <= union and a >= {2, 10} and a != b and only_a == {1}:
            x = x + sum(union) + len(either)
        return x + a.isdisjoint({99}) + a.issubset(range(20))

    capture(f, torch.zeros(2), ops=4)


def test_sets_of_classes_and_functions_by_identity():
    def f(x, layer):
        kinds = {nn.Linear, nn.Conv2d}
        acts = {torch.relu, torch.tanh}
        if type(layer) in kinds:
            x = layer(x)
        for act in (torch.relu, torch.sigmoid):
            if act in acts:
                x = act(x)
        return x

    capture(f, torch.randn(2, 4), nn.Linear(4, 3), ops=2)


def test_frozensets_are_constants_and_globals_of_them_are_guarded():
    def f(x, name):
        if name in _NAMES and frozenset([name]) <= _NAMES:
            return x + 1
        return x - 1

    capture(f, torch.ones(2), "a", ops=1)
    capture(f, torch.ones(2), "z", ops=1)


_NAMES = frozenset({"a", "b"})


def test_a_set_of_tensors_holds_them_by_identity():
    # torch.nn's named_parameters() keeps a `memo` set of the tensors it has seen (HF's
    # ModuleUtilsMixin.dtype walks it): membership is identity, which the fakes follow.
    def f(x, w):
        y = x + 1
        z = y.mul_(2)  # the same tensor as y
        memo = {y, w}
        memo.add(z)
        memo.discard(x)
        count = sum(1 for p in (x, y, z, w) if p in memo)
        return y * len(memo) + count

    capture(f, torch.ones(2), torch.zeros(2), ops=4)


def test_parameters_of_a_module_with_shared_weights_are_listed_once():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight

    def f(x):
        return x * len(list(model.parameters())) + next(model.parameters()).sum()

    capture(f, torch.ones(2), ops=3)


def test_iterating_a_set_of_tensors_is_a_break():
    # A real set of tensors is ordered by their addresses, which a trace cannot know.
    def f(x):
        y = x + 1
        total = 0
        for t in {x, y}:
            total = total + t
        return total

    graphs, kinds = breaks(f, torch.ones(2))
    assert kinds == ["unsupported_set"]
    assert graphs == 0  # the set being iterated cannot be rebuilt after a split: runs eagerly
    torch.testing.assert_close(bytegraph.compile(f, backend="eager")(torch.ones(2)), f(torch.ones(2)))


class _HashedByValue:
    def __hash__(self):
        return 7


def _add_both(s, a, b):
    s.add(a)
    s.add(b)


def test_set_mutation_in_a_rolled_back_instruction_is_undone():
    # The second add() breaks (a member whose hash is its own code); rolling back to the call
    # also undoes the first add.
    def f(x):
        s = {1}
        y = x + 1
        _add_both(s, 2, _HashedByValue())
        return y * len(s)

    with pytest.raises(C.Unsupported) as info:
        trace(f, torch.ones(2))
    assert info.value.kind == "unsupported_set"
    assert info.value.partial.graph_break["locals"]["s"] == "SetVariable({1})"


def test_isdisjoint_and_issuperset_stop_consuming_a_generator_at_the_deciding_item():
    def f(x):
        produced = []

        def gen():
            for v in (1, 2, 3):
                produced.append(v)
                yield v

        disjoint = {2, 4}.isdisjoint(gen())          # stops at 2
        superset = {1, 3}.issuperset(gen())          # stops at 2
        return x + len(produced), disjoint, superset, produced

    capture(f, torch.randn(2), ops=1)
