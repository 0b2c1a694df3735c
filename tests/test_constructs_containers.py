"""Dicts, dict views and lists made inside traced code: their methods, views and membership
fold at trace time; only the tensor ops reach the graph."""

import collections
import collections.abc

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests._capture import capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def test_dict_methods_on_a_dict_made_in_the_trace():
    def f(x):
        d = {"a": x, "b": 2}
        d.setdefault("c", 3)
        d.setdefault("a", None)
        d.update({"e": 5}, f=6)
        d.update([("g", 7)])
        copy = d.copy()
        popped = d.pop("b") + d.pop("zz", 10)
        last = d.popitem()
        total = sum(v for k, v in d.items() if k != "a")
        return d["a"] * popped + total + len(copy) + last[1] + d.get("c", 0) + d.get("q", 1)

    capture(f, torch.ones(2), ops=6)


def test_iterating_a_dict_and_its_views_and_membership():
    def f(x):
        d = {"w": 2, "v": 3}
        keys = d.keys()
        d["u"] = 4                                   # a view is live: it sees this key
        for k in d:
            x = x + d[k]
        names = [k for k in keys]
        if "u" in keys and 3 in d.values() and ("w", 2) in d.items() and "z" not in d:
            x = x * len(keys)
        return x, names, list(d.values()), sorted(d.items())

    capture(f, torch.ones(2), ops=4)


def test_keys_views_in_the_set_algebra():
    def f(x):
        d = {"a": 1, "b": 2, "c": 3}
        common = d.keys() & {"b", "c", "z"}
        rest = d.keys() - {"a"}
        if d.keys() == {"a", "b", "c"} and isinstance(common, set):
            x = x + len(common) + len(rest)
        return x

    capture(f, torch.ones(2), ops=2)


def _consume(**kwargs):
    return_dict = kwargs.pop("return_dict", True)
    scale = kwargs.pop("scale")
    extra = kwargs.setdefault("extra", 1)
    return return_dict, scale + extra + len(kwargs)


def test_kwargs_pop_and_setdefault_in_an_inlined_call():
    # The transformers pattern: `kwargs.pop("return_dict", ...)` on the **kwargs of a callee.
    def f(x):
        return_dict, k = _consume(scale=2, other=3)
        return x * k if return_dict else x

    capture(f, torch.ones(2), ops=1)


def test_list_methods_on_constants_and_sorted_with_keys():
    def f(x):
        xs = [3, 1, 2, 1]
        ys = xs.copy()
        ys.reverse()
        ys.sort()
        zs = sorted(["bb", "a", "ccc"], key=lambda s: -len(s))
        ws = sorted({"b": 1, "a": 2}.items(), key=lambda kv: kv[1], reverse=True)
        xs.remove(1)
        xs.sort(key=lambda v: -v)
        n = xs.index(2) + xs.count(1) + ys[0]
        ys.clear()
        return x + n + len(ys), xs, zs, ws

    capture(f, torch.ones(2), ops=2)


def test_isinstance_with_tuples_and_abcs():
    def f(x, n):
        checks = [
            isinstance({}, collections.abc.Mapping),
            isinstance([], collections.abc.Sequence),
            isinstance({1}, collections.abc.Set),
            isinstance({}.keys(), collections.abc.KeysView),
            isinstance(n, (int, float)),
            isinstance(x, (list, torch.Tensor)),
            issubclass(bool, int),
            issubclass(dict, (collections.abc.Mapping, list)),
            not isinstance((1,), collections.abc.MutableSequence),
        ]
        return x + sum(checks)

    capture(f, torch.ones(2), 3, ops=1)


def test_dict_methods_on_an_input_dict_are_written_back():
    # The frame's own **kwargs-style dict: pop/setdefault/update change the caller's dict,
    # replayed after the graph.
    def f(x, options):
        scale = options.pop("scale")
        options.setdefault("seen", 1)
        options.update(done=True)
        return x * scale

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    eager_options, compiled_options = {"scale": 2, "k": 0}, {"scale": 2, "k": 0}
    torch.testing.assert_close(compiled(torch.ones(2), compiled_options), f(torch.ones(2), eager_options))
    assert compiled_options == eager_options == {"k": 0, "seen": 1, "done": True}
    assert counter.frame_count == 1 and counter.op_count == 1


def test_defaultdict_made_in_the_trace_fills_missing_keys_and_is_rebuilt():
    import collections

    def f(x, words):
        groups = collections.defaultdict(list)
        counts = collections.defaultdict(int)
        for word in words:
            groups[word[0]].append(word)
            counts[word[0]] += 1
        plain = collections.defaultdict(None, {"k": 1})
        try:
            plain["missing"]
        except KeyError:
            x = x + 1
        return x * len(groups), dict(groups), counts, groups.default_factory is list, plain

    out, _ = capture(f, torch.ones(1), ["ab", "ac", "bd"], ops=2)
    assert type(out[2]) is collections.defaultdict and out[2].default_factory is int


def test_del_of_items_of_lists_dicts_and_dict_subclasses():
    class Counted(dict):
        def __delitem__(self, key):
            super().__delitem__(key)
            self.deleted = getattr(self, "deleted", 0) + 1

    def f(x):
        xs, d, c = [x, x + 1, x + 2], {"a": x, "b": 1}, Counted(a=1, b=2)
        del xs[-1], xs[0], d["a"], c["b"]
        try:
            del d["missing"]
        except KeyError:
            pass
        try:
            del (x,)[0]
        except TypeError as error:
            message = str(error)
        return xs, d, dict(c), c.deleted, message

    capture(f, torch.ones(2), ops=2)


_ordered = collections.OrderedDict(a=1, b=2)
_seen = collections.defaultdict(list)


class _Recorded(collections.OrderedDict):
    """A dict subclass whose __setitem__ has an effect of its own (as transformers' ModelOutput)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.writes = getattr(self, "writes", 0) + 1


def test_ordereddict_defaultdict_and_dict_subclass_globals_are_changed_in_the_trace():
    recorded = _Recorded(z=0)

    def f(x, recorded):
        _ordered["c"] = x + 1
        _ordered.pop("b", None)
        _seen["last"] = [x]
        recorded["w"] = x
        return _ordered["a"] * x + len(_seen["missing"])

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2)
    # Checked here, not by verify_correctness: its deep copy of `recorded` calls __setitem__.
    for calls in (1, 2, 3):
        with bytegraph.config.patch(verify_correctness=False):
            result = compiled(x, recorded)
        assert torch.equal(result, x)
        assert list(_ordered) == ["a", "c"] and torch.equal(_ordered["c"], x + 1)
        assert list(_seen) == ["last", "missing"] and _seen["last"][0] is x and _seen["missing"] == []
        # The class's __setitem__ ran once per call (in the trace), never again on write-back.
        assert list(recorded) == ["z", "w"] and recorded.writes == calls + 1
    # Recompiled once, for the keys the first call changed and for `writes`: an int attribute
    # seen to change is symbolic from then on (automatic dynamic), so the third call hits.
    assert counter.frame_count == 2


def test_fromkeys_of_dict_classes_makes_an_instance_of_the_class():
    class Tagged(dict):
        def __setitem__(self, key, value):
            super().__setitem__(key, (key, value))

    def f(x):
        ordered = collections.OrderedDict.fromkeys(("b", "a"), value=x)
        defaults = collections.defaultdict.fromkeys(iter("cd"), x + 1)
        tagged = Tagged.fromkeys(["e"], 2)
        return ordered, defaults, tagged, type(ordered), type(defaults), type(tagged)

    result, _ = capture(f, torch.ones(2), ops=1)
    assert list(result[0]) == ["b", "a"] and result[2] == {"e": ("e", 2)}


def test_a_classmethod_replaced_on_a_python_dict_class_is_seen():
    class Keys(dict):
        pass

    def f(x):
        return x * len(Keys.fromkeys("ab"))

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2)
    assert torch.equal(compiled(x), x * 2) and torch.equal(compiled(x), x * 2)
    Keys.fromkeys = classmethod(lambda cls, keys: cls(zip(keys, keys), extra=1))
    assert torch.equal(compiled(x), x * 3)
    assert counter.frame_count == 2


def test_dicts_keyed_by_tensors_from_outside_like_an_optimizer_state():
    weight, bias = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.zeros(3))
    state = {weight: {"avg": torch.zeros(3)}, bias: {"avg": torch.zeros(3)}}
    seen = collections.defaultdict(list)

    def step(lr):
        for p, s in state.items():
            s["avg"].mul_(0.5).add_(p)
            seen[p] = [lr]
        return seen[weight]

    counter = CompileCounter()
    compiled = bytegraph.compile(step, backend=counter, fullgraph=True)
    with bytegraph.config.patch(verify_correctness=False):  # it compares against a deep copy
        for _ in range(3):
            result = compiled(0.1)
            assert result == [0.1] and seen[weight] is result
    assert torch.allclose(state[weight]["avg"], torch.full((3,), 1.75))  # avg = avg / 2 + 1, three times
    assert list(seen) == [weight, bias]
    assert counter.frame_count == 2  # the second call finds the keys the first added to `seen`
    # Another tensor as the key: the dict's key guard sees it is not the same object.
    state[torch.nn.Parameter(torch.ones(3))] = state.pop(bias)
    with bytegraph.config.patch(verify_correctness=False):
        compiled(0.1)
    assert counter.frame_count == 3


def test_deques_made_in_the_trace():
    def f(a, b):
        d = collections.deque([a, b])
        d.append(a + 1)
        d.extend([a, b])
        d.insert(0, "first")
        last = d.pop()
        d.extendleft(collections.deque([last]))
        d[2] = "set"
        d = d.copy()
        d.append(d.popleft())
        bounded = collections.deque(range(5), maxlen=3)  # keeps the last three
        bounded.rotate(1)
        bounded.appendleft(-1)                           # drops from the right
        lazy = collections.deque([1])
        lazy.extendleft(map(lambda z: z + lazy[0], range(3)))  # each step reads what the last added
        xs = [1]
        xs.extend(map(lambda z: z + xs[-1], range(3)))       # list.extend consumes lazily too
        return xs, d, bounded, bounded.maxlen, lazy, len(d), 4 in bounded, bounded.count(4), lazy.index(2)

    capture(f, torch.ones(2), torch.zeros(2), ops=1)


def test_list_slice_assignment_deletion_and_repetition():
    def f(x, n):
        xs = [x, x + 1, x + 2, x + 3]
        xs[1:3] = [x * 2]                       # shrinks
        xs[::2] = (x - 1, x - 2)                # extended slice of equal length
        xs[len(xs):] = map(lambda t: t * 3, [x])  # any iterable, appended
        del xs[::2]
        xs[-1] = x / 2
        ys = 3 * [x] + [n] * 2                  # repetition either way round
        zs = list(range(6))
        del zs[1:n]
        zs[n] = x.sum()
        return xs, ys, zs

    capture(f, torch.ones(3), 2, ops=9)


def test_list_assignment_errors_are_cpythons():
    def f(x):
        xs = [x, x]
        try:
            xs[::2] = [x, x, x]
        except ValueError as error:
            message = str(error)
        try:
            xs[5] = x
        except IndexError:
            x = x + 1
        try:
            (x, x)[0] = 1
        except TypeError as error:
            message += str(error)
        return x, message

    result, _ = capture(f, torch.ones(2), ops=1)
    assert "extended slice of size 1" in result[1] and "'tuple' object does not support item assignment" in result[1]


class Scores(list):
    """A list subclass with methods of its own and a __getitem__ that must not run unasked."""

    def doubled_length(self):
        return len(self) * 2

    def __contains__(self, value):
        self.checked = True
        return super().__contains__(value)


class Pair(tuple):
    def total(self):
        return self[0] + self[1]


def test_list_and_tuple_subclass_instances_from_outside():
    def f(x, scores, pair):
        if 3 in scores:
            x = x.cos()
        scores.append(x.sum())
        scores[0] = 10
        del scores[1]
        return x * scores.doubled_length() + pair.total() + sum(pair), pair == (1, 2), scores + [0]

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        expected_scores, actual_scores = Scores([1, 2, 3]), Scores([1, 2, 3])
        expected, actual = f(torch.ones(2), expected_scores, Pair((1, 2))), compiled(torch.ones(2), actual_scores, Pair((1, 2)))
        assert same(expected, actual)
        assert type(actual_scores) is Scores and actual_scores.checked
        assert same(list(expected_scores), list(actual_scores))
    assert counter.frame_count == 1
    compiled(torch.ones(2), Scores([1, 2, 3, 4]), Pair((1, 2)))   # another length: guarded
    assert counter.frame_count == 2


def test_list_and_tuple_subclass_instances_made_in_the_trace_are_rebuilt_without_their_getitem():
    class Strict(list):
        def __getitem__(self, index):
            raise RuntimeError("the rebuilt list must not be read through __getitem__")

    def f(x):
        made = Strict([x, x + 1])
        made.append(x * 2)
        bare = list.__new__(Strict)
        bare.append(x)
        pair = tuple.__new__(Pair, [x, x])
        pair.note = "set in the trace"
        return made, bare, pair, Pair([1, 2]).total()

    capture(f, torch.ones(2), ops=2)
    made, bare, pair, total = bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert type(made) is Strict and len(made) == 3 and type(bare) is Strict and len(bare) == 1
    assert type(pair) is Pair and pair.note == "set in the trace" and total == 3


def test_mappings_that_are_no_dicts_are_read_through_keys_and_getitem():
    class Bag(collections.abc.MutableMapping):
        def __init__(self):
            self._store = {}

        def __getitem__(self, key):
            return self._store[key]

        def __setitem__(self, key, value):
            self._store[key] = value

        def __delitem__(self, key):
            del self._store[key]

        def __iter__(self):
            return iter(self._store)

        def __len__(self):
            return len(self._store)

    bag = Bag()
    bag["a"] = torch.ones(2) * 2

    def scaled(x, a=1):
        return x * a

    def f(x):
        copied = dict(bag)
        merged = {**bag, "b": 3}
        return x * copied["a"] + scaled(x, **bag) + merged["b"]

    capture(f, torch.ones(2), ops=4)


def test_equality_of_lists_and_tuples_holding_tensors_is_decided_by_identity_first():
    Pair = collections.namedtuple("Pair", "a b")

    def f(x, y):
        same = Pair(x, y) == Pair(x, y) and [x, 1] == [x, 1] and (x, y) == Pair(x, y)
        differ = (x,) != (x, y) and [x] != (x,) and [1, x] != [2, x]
        return (x + 1 if same and differ else x - 1)

    capture(f, torch.ones(2), torch.zeros(2), ops=1)


def test_dict_views_passed_in_read_and_guard_the_dict_they_show():
    def f(x, d, keys, items):
        d["z"] = 5                                   # seen through the views: the same dict
        total = sum(v for _, v in items)
        return (x + len(keys) if "c" in keys else x - total), keys

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for extra in ({}, {}, {"c": 3}):
        expected_dict, actual_dict = {"a": 1, **extra}, {"a": 1, **extra}
        expected = f(torch.ones(2), expected_dict, expected_dict.keys(), expected_dict.items())
        actual = compiled(torch.ones(2), actual_dict, actual_dict.keys(), actual_dict.items())
        assert same(expected[0], actual[0]) and actual_dict == expected_dict
        assert type(actual[1]) is type({}.keys()) and list(actual[1]) == list(expected[1])
    assert counter.frame_count == 2                  # a key added to the viewed dict recompiles


class _PlainDictSubclass(dict):
    pass


def test_copy_of_dict_subclasses_made_in_the_trace():
    # dict's copy gives a plain dict (also for a subclass); OrderedDict's gives an OrderedDict.
    def f(x):
        pairs = [("a", x), ("b", x + 1), ("c", x + 2)]
        ordered = collections.OrderedDict(pairs)
        ordered["c"] = x + 20
        ordered_copy = ordered.copy()
        ordered_copy["c"] = x - 10
        mine = _PlainDictSubclass(a=x)
        mine_copy = mine.copy()
        mine_copy["b"] = x * 3
        checks = (type(ordered_copy) is collections.OrderedDict, type(mine_copy) is dict,
                  list(ordered_copy), len(mine))
        return ordered["c"] * ordered_copy["c"] + mine_copy["b"], checks

    result, _ = capture(f, torch.ones(2), ops=7)
    assert result[1] == (True, True, ["a", "b", "c"], 1)
