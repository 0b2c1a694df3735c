"""Sets and frozensets inside traced code: literals, comprehensions, set(), methods, the set
algebra and membership, all folded at trace time (the graph holds only the tensor ops)."""

import pytest
import torch
import torch.nn as nn

import bytegraph
import bytegraph._C as C
from bytegraph.testing import CompileCounter, same
from tests._capture import breaks, capture
from tests._trace_helpers import trace


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


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


# ---- sets from outside the trace --------------------------------------------------------

SKIPPED_NAMES = {"b", "c"}


def test_a_set_argument_is_read_by_its_members_and_guarded_on_them():
    def f(x, names):
        if "a" in names and "z" not in names:
            x = x + len(names)
        return x * 2, sorted(names)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    names = {"a", "b"}
    assert same(compiled(torch.ones(2), names), f(torch.ones(2), names))
    # An equal set in the same iteration order (a copy) hits the entry; the guard compares the
    # order too, since a trace may have iterated the set.
    assert same(compiled(torch.ones(2), set(names)), f(torch.ones(2), set(names)))
    assert counter.frame_count == 1 and counter.op_count == 2
    # Other members: the trace read them, so a new one is traced.
    assert same(compiled(torch.ones(2), {"z", "a"}), f(torch.ones(2), {"z", "a"}))
    assert counter.frame_count == 2
    names.add("q")  # mutated in place between calls: the guard sees it
    assert same(compiled(torch.ones(2), names), f(torch.ones(2), names))
    assert counter.frame_count == 3


def test_changes_to_a_set_from_outside_are_written_back():
    def f(x, seen):
        seen.add("step")
        seen.discard("old")
        return x + len(seen)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    mine, theirs = {"old", 1}, {"old", 1}
    expected = f(torch.ones(1), theirs)
    assert same(compiled(torch.ones(1), mine), expected)
    assert mine == theirs == {1, "step"}
    assert counter.frame_count == 1 and counter.op_count == 1


def test_a_global_set_of_functions_guards_their_identity():
    def relu(t):
        return t.relu()

    def neg(t):
        return -t

    allowed = {relu}

    def f(x, fn):
        if fn in allowed:
            return fn(x)
        return x * 2

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(4)
    assert same(compiled(x, relu), relu(x))
    assert same(compiled(x, neg), x * 2)
    allowed.add(neg)
    assert same(compiled(x, neg), neg(x))  # the set changed: not the answer traced before
    assert counter.frame_count == 3


def test_a_set_reached_twice_is_one_set():
    def f(x, a, b):
        a.add(3)
        return x + len(b)

    s = {1}
    out, _ = capture(f, torch.ones(1), s, s, calls=1)
    assert s == {1, 3}
    assert same(out, torch.ones(1) * 3)


def test_a_set_of_tensors_from_outside_is_passed_along_untouched():
    t = torch.ones(1)

    def f(x, s):
        return x + 1, s

    counter = CompileCounter()
    out = bytegraph.compile(f, backend=counter, fullgraph=True)(torch.ones(1), {t})
    assert out[1] == {t} and counter.frame_count == 1


# ---- set and frozenset subclasses ----------------------------------------------------------


class Tags(set):
    def add(self, item):  # an override reaching set's own method through super()
        return super().add(item.lower())


class FrozenTags(frozenset):
    def joined(self):
        return ",".join(sorted(self))


def test_set_subclass_made_in_the_trace_keeps_its_class_and_overrides():
    def f(x):
        tags = Tags(["a"])
        tags.add("B")
        tags |= {"c"}
        both = tags & {"a", "c", "z"}
        assert isinstance(tags, Tags) and type(both) is set
        return x + len(tags), tags, both, "b" in tags, repr(Tags()), f"{Tags(['q'])}"

    out, counter = capture(f, torch.ones(1), ops=1)
    assert type(out[1]) is Tags and out[1] == {"a", "b", "c"}


def test_frozenset_subclass_is_made_with_its_members():
    def f(x):
        frozen = FrozenTags("ba")
        other = FrozenTags(["b", "c"])
        return x * len(frozen | other), frozen.joined(), frozen, FrozenTags.__sub__(frozen, other), frozen < {"a", "b", "c"}

    out, _ = capture(f, torch.ones(1), ops=1)
    assert type(out[2]) is FrozenTags and out[2] == frozenset("ab") and out[3] == {"a"}


def test_a_set_subclass_argument_is_guarded_and_written_back():
    def f(x, tags):
        tags.add("New")
        return x + len(tags), "a" in tags

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    mine, theirs = Tags(["a"]), Tags(["a"])
    assert same(compiled(torch.ones(1), mine), f(torch.ones(1), theirs))
    assert type(mine) is Tags and mine == theirs == {"a", "new"}
    assert same(compiled(torch.ones(1), Tags(["a"])), f(torch.ones(1), Tags(["a"])))
    assert counter.frame_count == 1
    assert same(compiled(torch.ones(1), Tags(["b"])), f(torch.ones(1), Tags(["b"])))  # other members
    assert counter.frame_count == 2


def test_set_methods_called_through_the_class():
    def f(x):
        p, q = {"a", "b"}, {"b", "c"}
        return x + len(set.union(p, q)), set.__or__(p, q), set.__len__(p), set.__contains__(q, "c")

    capture(f, torch.ones(1), ops=1)


def test_unhashable_members_and_non_set_operands_raise_as_in_python():
    def f(x):
        caught = []
        for attempt in (lambda: {1}.union([[]]), lambda: {1} - 1, lambda: {1}.add(), lambda: {[1]: 2},
                        lambda: set().union(1)):
            try:
                attempt()
            except TypeError as error:
                caught.append(str(error))
        return x + len(caught), caught

    out, _ = capture(f, torch.ones(1), ops=1)
    assert len(out[1]) == 5


def test_a_set_is_looked_up_as_a_frozenset_and_classes_are_dict_keys():
    def f(x):
        s = {frozenset("ab"), 3}
        found = {"a", "b"} in s
        s.discard({"a", "b"})
        kinds = {int: "int", float: "float"}
        kinds[str] = "str"
        return x + len(s), found, kinds[int], str in kinds, list(kinds)

    capture(f, torch.ones(1), ops=1)


def test_members_of_a_cpp_enum_are_dict_keys():
    # torch.nn.attention.sdpa_kernel dedups its backends with dict.fromkeys: pybind11 enum
    # members, one object per value, hashed and compared in C++.
    from torch.nn.attention import SDPBackend

    def f(x, backends):
        unique = list(dict.fromkeys(backends))
        names = {SDPBackend.MATH: 1, SDPBackend.FLASH_ATTENTION: 2}
        return x + names[unique[0]] * len(unique), SDPBackend.MATH in names

    capture(f, torch.ones(1), [SDPBackend.MATH, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], ops=1)


def test_tuples_holding_classes_are_dict_keys():
    cache = {}

    def compile_pattern(kind, text):
        key = (type(text), text, kind)
        if key not in cache:
            cache[key] = len(cache)
        return cache[key]

    def f(x):
        first = compile_pattern(0, "a")
        again = compile_pattern(0, "a")
        return x + first + again, [k for k in cache]

    capture(f, torch.ones(1), ops=2, calls=1)
    assert list(cache) == [(str, "a", 0)]


def test_zip_strict():
    def f(x):
        rows = list(zip([1, 2], ("a", "b"), strict=True))
        return x + len(rows), rows

    capture(f, torch.ones(1), ops=1)
