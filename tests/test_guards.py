"""The guard tree (bytegraph._C.guards): every leaf kind passes on the value it was built
from and fails, with its exact reason, on each property that can change; accessors reach
nested values and treat missing ones as failures; checks do not leak references."""

import collections
import math
import sys
import types

import pytest
import torch

from bytegraph._C import guards as g

L = g.local


def tree_of(*adds):
    """Builds a tree from (method name, source, value) triples."""
    gs = g.GuardSet()
    for method, source, *args in adds:
        getattr(gs, method)(source, *args)
    return gs.build()


def assert_passes(tree, locals_, globals_=None, **kwargs):
    assert tree.check_locals(locals_, globals_, **kwargs) is True
    assert tree.explain_locals(locals_, globals_, **kwargs) == ""


def assert_fails(tree, locals_, reason, globals_=None, **kwargs):
    assert tree.check_locals(locals_, globals_, **kwargs) is False
    assert tree.explain_locals(locals_, globals_, **kwargs) == reason


# --- sources -------------------------------------------------------------------------------


def test_source_reprs():
    self_ = L("self", 0)
    assert repr(self_) == "L['self']"
    assert repr(g.global_("w")) == "G['w']"
    assert repr(g.builtin("len")) == "builtins['len']"
    assert repr(g.closure("y", 1)) == "closure['y']"
    assert repr(self_.attr("fc").attr("weight")) == "L['self'].fc.weight"
    assert repr(L("xs", 2).item(0)) == "L['xs'][0]"
    assert repr(L("d", 2).item("k")) == "L['d']['k']"
    assert repr(L("x", 1).type()) == "type(L['x'])"
    src = self_.attr("fc")
    assert src.kind == "attr" and src.name == "fc" and repr(src.base) == "L['self']"
    assert L("x", 3).index == 3 and L("x", 3).base is None


def test_source_rejects_bad_input():
    with pytest.raises(ValueError):
        L("x", -1)
    with pytest.raises(TypeError):
        L("xs", 0).item([1])  # unhashable key


# --- TYPE_MATCH, ID_MATCH, NONE ------------------------------------------------------------


def test_type_match_is_exact():
    tree = tree_of(("add_type_match", L("n", 0), int))
    assert_passes(tree, [5])
    assert_fails(tree, [True], "L['n'] type: expected int, got bool")
    assert_fails(tree, [1.0], "L['n'] type: expected int, got float")


def test_type_match_names_module_types():
    tree = tree_of(("add_type_match", L("x", 0), torch.Tensor))
    assert_passes(tree, [torch.zeros(1)])
    assert_fails(tree, [torch.nn.Parameter(torch.zeros(1))],
                 "L['x'] type: expected torch.Tensor, got torch.nn.parameter.Parameter")


def test_id_match():
    flag = object()
    tree = tree_of(("add_id_match", g.global_("flag"), flag))
    assert_passes(tree, [], {"flag": flag})
    assert_fails(tree, [], "G['flag'] identity changed", {"flag": object()})


def test_none_and_not_none():
    tree = tree_of(("add_none_match", L("a", 0), True), ("add_none_match", L("b", 1), False))
    assert_passes(tree, [None, 0])
    assert_fails(tree, [0, 0], "L['a'] is None: got 0")
    assert_fails(tree, [None, None], "L['b'] is not None: got None")


# --- EQUALS_MATCH --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [3, -7, 2**100, 1.5, "abc", b"xy", True, False, None,
                                   (1, "a", (2.0, None)), (), 1j, ...])
def test_equals_match_passes_on_equal_copies(value):
    tree = tree_of(("add_equals_match", L("v", 0), value))
    assert_passes(tree, [value])
    # An equal but distinct object (where Python can make one) passes too.
    if isinstance(value, (int, float, str, bytes)) and not isinstance(value, bool):
        copy = type(value)(value)
        assert_passes(tree, [copy])


def test_equals_match_reason():
    tree = tree_of(("add_equals_match", L("n", 0), 3))
    assert_fails(tree, [4], "L['n'] == 3: got 4")
    tree = tree_of(("add_equals_match", L("s", 0), "a"))
    assert_fails(tree, ["b"], "L['s'] == 'a': got 'b'")


def test_one_true_and_one_point_zero_are_different_constants():
    values = [1, True, 1.0]
    assert values[0] == values[1] == values[2]  # Python says equal...
    for expected in values:
        tree = tree_of(("add_equals_match", L("v", 0), expected))
        for got in values:
            if type(got) is type(expected):
                assert_passes(tree, [got])
            else:  # ...the guard does not, since a traced graph could depend on the type
                assert_fails(tree, [got], f"L['v'] == {expected!r}: got {got!r}")


class _Placement:
    """An immutable value type with its own == (as torch's opaque value types are)."""

    def __init__(self, dim):
        self.dim = dim

    def __eq__(self, other):
        return type(other) is type(self) and other.dim == self.dim

    def __hash__(self):
        return hash(self.dim)

    def __repr__(self):
        return f"Shard({self.dim})"


class _OtherPlacement(_Placement):
    pass


def test_value_match_compares_with_the_classes_own_equality():
    tree = tree_of(("add_value_match", L("p", 0), _Placement(0)))
    assert_passes(tree, [_Placement(0)])  # made anew, equal: the same constant
    assert_fails(tree, [_Placement(1)], "L['p'] == Shard(0): got Shard(1)")
    # Another class is another constant, even where its == would say equal.
    assert_fails(tree, [_OtherPlacement(0)], "L['p'] == Shard(0): got Shard(0)")


def test_equals_match_nan_and_signed_zero():
    nan_tree = tree_of(("add_equals_match", L("f", 0), float("nan")))
    assert float("nan") != float("nan")
    assert_passes(nan_tree, [float("nan")])
    assert_fails(nan_tree, [1.0], "L['f'] == nan: got 1.0")
    zero_tree = tree_of(("add_equals_match", L("f", 0), 0.0))
    assert_passes(zero_tree, [0.0])
    assert math.copysign(1, -0.0) != math.copysign(1, 0.0)
    assert_fails(zero_tree, [-0.0], "L['f'] == 0.0: got -0.0")


def test_equals_match_tuples_compare_elementwise_with_types():
    tree = tree_of(("add_equals_match", L("t", 0), (1, 2.0, "x")))
    assert_passes(tree, [(1, 2.0, "x")])
    assert_fails(tree, [(1, 2, "x")], "L['t'] == (1, 2.0, 'x'): got (1, 2, 'x')")
    assert_fails(tree, [(1, 2.0)], "L['t'] == (1, 2.0, 'x'): got (1, 2.0)")
    assert_fails(tree, [[1, 2.0, "x"]], "L['t'] == (1, 2.0, 'x'): got [1, 2.0, 'x']")


def test_bool_and_none_equality_is_identity():
    self_ = L("self", 0)
    tree = tree_of(("add_equals_match", self_.attr("training"), True))
    assert_passes(tree, [types.SimpleNamespace(training=True)])
    assert_fails(tree, [types.SimpleNamespace(training=False)],
                 "L['self'].training == True: got False")
    assert_fails(tree, [types.SimpleNamespace(training=1)],
                 "L['self'].training == True: got 1")


class MyInt(int):
    pass


@pytest.mark.parametrize("value", [[1], {"a": 1}, object(), frozenset({1}), bytearray(b"x"),
                                   MyInt(1), (1, [2])])
def test_equals_match_rejects_non_constants(value):
    with pytest.raises(TypeError, match="EQUALS_MATCH supports"):
        g.GuardSet().add_equals_match(L("v", 0), value)


# --- LENGTH, DICT_KEYS ---------------------------------------------------------------------


def test_length_match():
    tree = tree_of(("add_length_match", L("xs", 0), 2))
    for ok in ([1, 2], (1, 2), {"a": 1, "b": 2}, collections.OrderedDict(a=1, b=2)):
        assert_passes(tree, [ok])
    assert_fails(tree, [[1, 2, 3]], "len(L['xs']) == 2: got 3")
    assert_fails(tree, [(1,)], "len(L['xs']) == 2: got 1")
    assert_fails(tree, ["ab"], "len(L['xs']) == 2: got a str, not a list, tuple or dict")


def test_dict_keys_match_is_ordered():
    tree = tree_of(("add_dict_keys_match", L("d", 0), ("a", "b")))
    assert_passes(tree, [{"a": 1, "b": 2}])
    assert list({"b": 2, "a": 1}) != ["a", "b"]
    assert_fails(tree, [{"b": 2, "a": 1}], "L['d'] keys: expected ('a', 'b'), got ('b', 'a')")
    assert_fails(tree, [{"a": 1}], "L['d'] keys: expected ('a', 'b'), got ('a',)")
    assert_fails(tree, [[("a", 1)]], "L['d'] keys: expected a dict, got list")


def test_dict_keys_match_uses_a_subclass_own_order():
    od = collections.OrderedDict(a=1, b=2)
    tree = tree_of(("add_dict_keys_match", L("d", 0), tuple(od)))
    assert_passes(tree, [od])
    od.move_to_end("a")
    assert_fails(tree, [od], "L['d'] keys: expected ('a', 'b'), got ('b', 'a')")


def test_dict_keys_types_matter():
    tree = tree_of(("add_dict_keys_match", L("d", 0), (1,)))
    assert_passes(tree, [{1: "x"}])
    assert_fails(tree, [{True: "x"}], "L['d'] keys: expected (1,), got (True,)")


# --- accessors -----------------------------------------------------------------------------


class Module:
    def __init__(self):
        self.training = True
        self.fc = types.SimpleNamespace(weight=torch.zeros(2, 3), bias=None)


def test_nested_attribute_item_and_type_sources():
    self_ = L("self", 0)
    xs = L("xs", 1)
    tree = tree_of(
        ("add_tensor_match", self_.attr("fc").attr("weight"), torch.zeros(2, 3)),
        ("add_none_match", self_.attr("fc").attr("bias"), True),
        ("add_equals_match", xs.item(0), 5),
        ("add_equals_match", xs.item(-1).item("k"), "v"),
        ("add_id_match", self_.type(), Module),
    )
    mod = Module()
    assert_passes(tree, [mod, [5, {"k": "v"}]])
    assert_fails(tree, [mod, [6, {"k": "v"}]], "L['xs'][0] == 5: got 6")
    assert_fails(tree, [mod, [5, {"k": "w"}]], "L['xs'][-1]['k'] == 'v': got 'w'")
    mod.fc.weight = torch.zeros(3, 3)
    assert_fails(tree, [mod, [5, {"k": "v"}]], "L['self'].fc.weight size[0]: expected 2, got 3")
    other = types.SimpleNamespace(**vars(Module()))
    assert_fails(tree, [other, [5, {"k": "v"}]], "type(L['self']) identity changed")


def test_item_on_tuples_and_custom_mappings():
    tree = tree_of(("add_equals_match", L("t", 0).item(1), 2))
    assert_passes(tree, [(1, 2)])
    assert_passes(tree, [{1: 2}])
    assert_passes(tree, [collections.defaultdict(int, {1: 2})])
    assert_fails(tree, [(1,)], "L['t'][1]: item missing")
    assert_fails(tree, [{}], "L['t'][1]: item missing")


def test_a_key_on_a_builtin_sequence_is_missing():
    tree = tree_of(("add_equals_match", L("d", 0).item("k"), 1))
    assert_passes(tree, [{"k": 1}])
    assert_fails(tree, [[1]], "L['d']['k']: item missing")
    assert_fails(tree, [(1,)], "L['d']['k']: item missing")


def test_missing_values_fail_without_raising():
    tree = tree_of(("add_equals_match", L("self", 0).attr("fc").attr("n"), 1),
                   ("add_equals_match", g.global_("g"), 2))
    assert_passes(tree, [types.SimpleNamespace(fc=types.SimpleNamespace(n=1))], {"g": 2})
    assert_fails(tree, [types.SimpleNamespace(fc=object())], "L['self'].fc.n: attribute missing",
                 {"g": 2})
    assert_fails(tree, [types.SimpleNamespace()], "L['self'].fc: attribute missing", {"g": 2})
    assert_fails(tree, [types.SimpleNamespace(fc=types.SimpleNamespace(n=1))], "G['g']: global missing", {})
    assert_fails(tree, [g.UNBOUND], "L['self']: local unbound", {"g": 2})
    assert_fails(tree, [], "L['self']: local unbound", {"g": 2})


def test_closure_and_builtins():
    y = 3

    def fn():
        return y

    assert fn.__code__.co_freevars == ("y",)
    tree = tree_of(("add_equals_match", g.closure("y", 0), 3),
                   ("add_id_match", g.builtin("len"), len))
    import builtins
    assert_passes(tree, [], {}, builtins=vars(builtins), closure=fn.__closure__)
    y = 4  # noqa: F841 (rebinding the cell the closure shares)
    assert fn() == 4
    assert_fails(tree, [], "closure['y'] == 3: got 4", {}, builtins=vars(builtins),
                 closure=fn.__closure__)
    assert_fails(tree, [], "closure['y']: closure cell empty", {}, builtins=vars(builtins))
    y = 3
    assert_fails(tree, [], "builtins['len']: builtin missing", {}, builtins={},
                 closure=fn.__closure__)


def test_an_empty_cell_is_missing():
    def outer():
        def inner():
            return late  # noqa: F821

        cells = inner.__closure__
        late = 1  # noqa: F841
        return cells

    cells = outer()
    tree = tree_of(("add_equals_match", g.closure("late", 0), 1))
    assert_passes(tree, [], closure=cells)
    tree2 = tree_of(("add_none_match", g.closure("x", 0), False))
    assert_fails(tree2, [], "closure['x']: closure cell empty", closure=(types.CellType(),))


def test_a_raising_attribute_is_an_error_not_a_failure():
    class Bad:
        @property
        def value(self):
            raise ValueError("boom")

    tree = tree_of(("add_equals_match", L("o", 0).attr("value"), 1))
    with pytest.raises(ValueError, match="boom"):
        tree.check_locals([Bad()])
    assert tree.explain_locals([Bad()]) == "L['o'].value: raised ValueError: boom"


def test_fail_fast_stops_before_later_accessors():
    calls = []

    class Counting:
        @property
        def value(self):
            calls.append(1)
            return 1

    tree = tree_of(("add_equals_match", L("a", 0), 0),
                   ("add_equals_match", L("b", 1).attr("value"), 1))
    assert tree.check_locals([1, Counting()]) is False
    assert calls == []  # L['a'] failed first; L['b'].value was never read
    assert tree.check_locals([0, Counting()]) is True
    assert calls == [1]


# --- TENSOR_MATCH --------------------------------------------------------------------------


def tensor_tree(example, **kwargs):
    gs = g.GuardSet()
    gs.add_tensor_match(L("x", 0), example, **kwargs)
    return gs.build()


def test_tensor_match_passes_on_same_metadata():
    x = torch.randn(3, 4)
    tree = tensor_tree(x)
    assert_passes(tree, [x])
    assert_passes(tree, [torch.zeros(3, 4)])


def test_tensor_match_detects_each_property():
    x = torch.randn(3, 4)
    tree = tensor_tree(x)
    cases = [
        (torch.randn(4, 4), "L['x'] size[0]: expected 3, got 4"),
        (torch.randn(3, 5), "L['x'] size[1]: expected 4, got 5"),
        (torch.randn(3, 4, 1), "L['x'] ndim: expected 2, got 3"),
        (x.double(), f"L['x'] dtype: expected {x.dtype}, got {torch.float64}"),
        (x.to("meta"), "L['x'] device: expected cpu, got meta"),
        (x.clone().requires_grad_(), "L['x'] requires_grad: expected False, got True"),
        (torch.nn.Parameter(x),
         "L['x'] type: expected torch.Tensor, got torch.nn.parameter.Parameter"),
    ]
    for value, reason in cases:
        assert_fails(tree, [value], reason)


def test_tensor_match_detects_strides():
    base = torch.randn(4, 3)
    transposed = base.t()
    assert transposed.shape == (3, 4) and not transposed.is_contiguous()
    tree = tensor_tree(torch.randn(3, 4))
    assert_fails(tree, [transposed],
                 f"L['x'] stride[0]: expected 4, got {transposed.stride(0)}")
    assert_passes(tensor_tree(transposed), [torch.randn(4, 3).t()])
    assert_fails(tensor_tree(transposed), [torch.randn(3, 4)],
                 "L['x'] stride[0]: expected 1, got 4")


def test_tensor_match_on_meta_and_parameters():
    meta = torch.empty(2, 2, device="meta")
    tree = tensor_tree(meta)
    assert_passes(tree, [torch.empty(2, 2, device="meta")])
    assert_fails(tree, [torch.empty(2, 2)], "L['x'] device: expected meta, got cpu")
    param = torch.nn.Parameter(torch.zeros(2))
    ptree = tensor_tree(param)
    assert_passes(ptree, [torch.nn.Parameter(torch.ones(2))])
    assert_fails(ptree, [torch.zeros(2)],
                 "L['x'] type: expected torch.nn.parameter.Parameter, got torch.Tensor")
    assert_fails(ptree, [torch.nn.Parameter(torch.zeros(2), requires_grad=False)],
                 "L['x'] requires_grad: expected True, got False")


def test_tensor_match_detects_a_user_subclass():
    class MyTensor(torch.Tensor):
        pass

    x = torch.zeros(2)
    mine = x.as_subclass(MyTensor)
    assert_fails(tensor_tree(x), [mine],
                 f"L['x'] type: expected torch.Tensor, got {__name__}."
                 "test_tensor_match_detects_a_user_subclass.<locals>.MyTensor")
    assert_passes(tensor_tree(mine), [torch.ones(2).as_subclass(MyTensor)])


def test_tensor_match_dynamic_dims():
    tree = tensor_tree(torch.randn(3, 4), dynamic_dims=[0])
    assert_passes(tree, [torch.randn(7, 4)])
    assert_fails(tree, [torch.randn(7, 5)], "L['x'] size[1]: expected 4, got 5")
    inner = tensor_tree(torch.randn(3, 4), dynamic_dims=[-1])
    assert_passes(inner, [torch.randn(3, 9)])  # stride[0] scales with size[1]: unchecked
    assert_fails(inner, [torch.randn(9, 3).t()[:3]], "L['x'] stride[1]: expected 1, got 3")
    assert "size=[?, 4] stride=[4, 1]" in tree.describe()[0]
    assert "size=[3, ?] stride=[?, 1]" in inner.describe()[0]
    both = tensor_tree(torch.randn(3, 4), dynamic_dims=[1, 0])
    assert "size=[?, ?] stride=[?, 1]" in both.describe()[0]
    assert_passes(both, [torch.randn(5, 6)])
    assert_fails(both, [torch.randn(6, 5).t()], "L['x'] stride[1]: expected 1, got 5")
    with pytest.raises(IndexError):
        tensor_tree(torch.randn(3), dynamic_dims=[1])


def test_tensor_match_rejects_non_tensors():
    with pytest.raises(TypeError, match="needs a torch.Tensor"):
        g.GuardSet().add_tensor_match(L("x", 0), [1, 2])
    tree = tensor_tree(torch.zeros(1))
    assert_fails(tree, [[0.0]], "L['x'] type: expected torch.Tensor, got list")


# --- GuardSet: dedupe, describe ------------------------------------------------------------


def test_duplicate_guards_are_collected_once():
    gs = g.GuardSet()
    x = torch.zeros(2)
    for _ in range(3):
        gs.add_tensor_match(L("x", 0), x)
        gs.add_equals_match(L("n", 1), 3)
        gs.add_type_match(L("n", 1), int)
    gs.add_equals_match(L("n", 1), 3.0)  # a different constant: kept
    assert len(gs) == 4
    assert len(gs.build()) == 4


def test_describe_lists_one_guard_per_line_sorted_by_source():
    gs = g.GuardSet()
    gs.add_tensor_match(L("x", 0), torch.zeros(2, 3))
    gs.add_equals_match(L("n", 1), 3)
    gs.add_type_match(L("n", 1), int)
    marker = types.SimpleNamespace(tag=1)
    gs.add_id_match(g.global_("marker"), marker)
    gs.add_length_match(L("xs", 2), 2)
    gs.add_dict_keys_match(L("d", 3), ["a"])
    expected = [
        "G['marker']: ID_MATCH namespace(tag=1)",
        "L['d']: DICT_KEYS_MATCH ('a',)",
        "L['n']: TYPE_MATCH int",
        "L['n']: EQUALS_MATCH 3",
        "L['x']: TENSOR_MATCH torch.Tensor dtype=torch.float32 device=cpu size=[2, 3] "
        "stride=[3, 1] requires_grad=False",
        "L['xs']: LENGTH_MATCH 2",
    ]
    assert gs.describe() == expected
    assert gs.build().describe() == expected


def test_long_reprs_are_shortened_in_listings():
    gs = g.GuardSet()
    gs.add_id_match(g.global_("torch"), torch)
    (line,) = gs.describe()
    assert line.startswith("G['torch']: ID_MATCH <module 'torch'") and line.endswith("...")


def test_a_module_is_named_by_its_class_and_address_without_running_its_repr(monkeypatch):
    # nn.Module's repr prints every submodule: a trace describes a guard on each module it reads.
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    monkeypatch.setattr(torch.nn.Module, "__repr__", lambda self: pytest.fail("repr of a module ran"))
    gs = g.GuardSet()
    gs.add_id_match(L("self", 0), model)
    assert gs.describe() == [f"L['self']: ID_MATCH <torch.nn.modules.container.Sequential at {id(model):#x}>"]


def test_type_match_needs_a_type():
    with pytest.raises(TypeError):
        g.GuardSet().add_type_match(L("x", 0), 3)


# --- references ----------------------------------------------------------------------------


def test_no_reference_leaks_over_many_checks():
    x, y = torch.randn(3, 4), torch.randn(5)
    mod = Module()
    weight = mod.fc.weight
    keys = {"a": 1, "b": 2}
    glob = {"flag": True, "cfg": keys}
    self_ = L("self", 0)
    gs = g.GuardSet()
    gs.add_tensor_match(L("x", 1), x)
    gs.add_tensor_match(L("y", 2), y)
    gs.add_tensor_match(self_.attr("fc").attr("weight"), weight)
    gs.add_equals_match(self_.attr("training"), True)
    gs.add_id_match(g.global_("flag"), True)
    gs.add_dict_keys_match(g.global_("cfg"), ("a", "b"))
    gs.add_equals_match(g.global_("cfg").item("a"), 1)
    tree = gs.build()
    watched = [x, y, mod, mod.fc, weight, keys, glob]
    locals_ = [mod, x, y]
    bad = [mod, x.double(), y]
    assert tree.check_locals(locals_, glob)
    before = [sys.getrefcount(o) for o in watched]
    ns, passed = tree.time_check(locals_, glob, iterations=100_000)
    assert passed
    for _ in range(1000):
        tree.check_locals(locals_, glob)
    assert [sys.getrefcount(o) for o in watched] == before
    # The failure paths release what they fetched too.
    for _ in range(1000):
        assert not tree.check_locals(bad, glob)
        tree.explain_locals(bad, glob)
    assert [sys.getrefcount(o) for o in watched] == before


def test_a_value_borrowed_from_a_dict_survives_python_code_that_drops_it():
    glob = {}

    class Fragile:
        @property
        def a(self):
            glob.clear()  # drops the dict's reference: only the guard tree still holds one
            return 1

        c = 2

    glob["obj"] = Fragile()
    tree = tree_of(("add_equals_match", g.global_("obj").attr("a"), 1),
                   ("add_equals_match", g.global_("obj").attr("c"), 2))
    assert tree.check_locals([], glob) is True
    assert glob == {}
