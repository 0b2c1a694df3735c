"""Builtins over values the tracer knows, torch.Size arithmetic, torch.finfo / iinfo: folded
at trace time, so the graph holds only the tensor ops."""

import math
import operator

import pytest
import torch
import torch.nn as nn

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests._capture import breaks, capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def _plain(v):
    return v


def test_callable_getattr_hasattr_and_type():
    def f(x, layer):
        d, xs = {"a": 1}, [1, 2]
        answers = [
            callable(_plain), callable(layer), callable(torch.relu), callable(len), callable(x.sum),
            callable(lambda: 1), callable(d.get), callable(nn.Linear), not callable(x), not callable(d),
            not callable(3), hasattr(d, "keys"), not hasattr(xs, "keys"), hasattr(layer, "weight"),
            hasattr(x, "shape"), not hasattr(3, "nope"), hasattr(math, "pi"),
            getattr(xs, "missing", None) is None, getattr(math, "tau") == 2 * math.pi,
            getattr(None, "is_compileable", False) is False, getattr(x, "nope", 1) == 1,
            getattr(3, "real") == 3,
            type(d) is dict, type(layer) is nn.Linear, type(x) is torch.Tensor,
        ]
        assert all(answers), answers
        return layer(x) + sum(answers)

    capture(f, torch.randn(2, 4), nn.Linear(4, 4), ops=2)


def test_id_is_a_break():
    def f(x):
        return x + (id(x) % 2)

    _, kinds = breaks(f, torch.ones(2))
    assert kinds == ["unsupported_builtin"]


def test_reductions_and_iteration_builtins_over_known_items():
    def f(x):
        xs = [3, 1, 2]
        ts = [x, x * 2, x * 3]
        n = sum(xs) + min(xs) + max(xs) + min(4, 5) + max(xs, key=lambda v: -v)
        flags = all(v > 0 for v in xs) + any(v > 2 for v in xs) + all([]) + any(())
        order = sorted(xs, reverse=True) + list(reversed(xs))
        pairs = dict(zip("abc", xs))
        indexed = [i * v for i, v in enumerate(xs, start=1)]
        doubled = list(map(lambda v: 2 * v, xs))
        odd = list(filter(lambda v: v % 2, xs)) + list(filter(None, [0, 1, 2]))
        total = sum(ts) + sum(map(torch.sin, ts))
        return total * (n + flags), order, pairs, indexed, doubled, odd

    capture(f, torch.ones(2), ops=13)


def test_numbers_ranges_and_slices():
    def f(x, n):
        q, r = divmod(n, 3)
        r2 = round(2.567, 2) + round(n / 2) + abs(-n)
        k = math.floor(math.sqrt(n)) + math.gcd(12, n) + int(math.log2(8)) + math.prod([1, 2, 3])
        span = range(1, n, 2)
        s = slice(1, None, 2)
        picked = list(range(10))[s] + [span[-1], len(span), span.step]
        return x[s] * (q + r + r2 + k + len(picked)) + x[1::2], picked

    capture(f, torch.arange(6.0), 7, ops=4)


def test_torch_size_arithmetic_and_comparisons():
    def f(x, w):
        size = x.size()
        out_shape = size[:-1] + (w.shape[1],)             # Size + tuple
        b, t, c = x.shape                                   # unpacking
        assert len(size) == 3 and size.numel() == b * t * c and size[-1] == c
        assert size == (b, t, c) and size != torch.Size([1]) and size > (1,)
        flat = torch.Size([b * t, c])
        assert isinstance(out_shape, torch.Size) and type(size[1:]) is torch.Size
        y = torch.mm(x.view(flat), w).view(out_shape)
        return y + len(out_shape), tuple(out_shape), flat

    capture(f, torch.randn(2, 3, 4), torch.randn(4, 5), ops=4)


def test_finfo_and_iinfo_attributes():
    def f(x):
        fi = torch.finfo(x.dtype)
        low, high, eps = fi.min, torch.finfo(torch.float16).max, fi.eps
        big = torch.iinfo(torch.int32).max + torch.iinfo(torch.int8).min + torch.iinfo(torch.int64).bits
        return x.clamp(min=low, max=high) + eps + big + fi.tiny + fi.resolution

    capture(f, torch.randn(4), ops=5)
    capture(f, torch.randn(4, dtype=torch.float64), ops=5)


def test_operator_module_functions():
    def f(x):
        get = operator.itemgetter(1)
        return operator.add(x, get((1, 2))) * operator.mul(2, 3) + operator.truth(x.ndim)

    capture(f, torch.ones(2), ops=3)


def test_itertools_over_known_items():
    import itertools

    def f(x):
        a = [x, x + 1]
        out = [t.sum() for t in itertools.chain(a, (x * 2,))]
        out += [(p * q).sum() for p, q in itertools.product(a, repeat=2)]
        out += list(itertools.combinations([1, 2, 3], 2)) + list(itertools.permutations("ab"))
        out += list(itertools.chain.from_iterable([a, a])) + list(itertools.islice([1, 2, 3, 4], 1, 3))
        out += list(itertools.zip_longest([1], a, fillvalue=x)) + list(itertools.pairwise([1, 2, 3]))
        out += list(itertools.repeat(x, 2)) + list(itertools.compress("abc", [1, 0, 1]))
        return out

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(2)
    assert same(f(x), compiled(x))
    assert counter.frame_count == 1


def test_itertools_over_a_generator_is_a_break_not_a_reordering():
    # The generator's effects would run before the loop's body: not captured this way.
    import itertools

    def gen(log):
        log.append("first")
        yield 1

    def f(x):
        log = []
        for v in itertools.chain(gen(log)):
            log.append("body")
        return x + 1, log

    compiled = bytegraph.compile(f, backend="eager")
    assert same(f(torch.ones(1)), compiled(torch.ones(1)))


def test_itertools_that_read_their_input_whole_consume_iterators_and_generators_at_once():
    import itertools

    def gen(log, x):
        log.append("first")
        yield x
        log.append("second")
        yield x + 1

    def f(x):
        log = []
        it = iter([1, 2, 3])
        pairs = itertools.combinations(it, 2)
        left = list(it)                                   # combinations took them all
        made = itertools.product(gen(log, x), repeat=1)
        log.append("after product")                      # the generator ran to its end before
        return [a * b for a, b in pairs], left, [p[0].sum() for p in made], log

    capture(f, torch.ones(2), ops=3)


def test_endless_itertools_count_and_repeat_are_lazy():
    import itertools

    def f(x, xs):
        scaled = [v * i for i, v in zip(itertools.count(1), xs)]
        c = itertools.count(0.5, 2)
        a, b = next(c), next(c)
        shifted = list(map(lambda t, k: t + k, xs, itertools.count()))
        paired = list(zip(xs, itertools.repeat(x)))
        for k in itertools.count(10, -3):
            if k < 0:
                break
            x = x + k
        return scaled, a + b, shifted, paired[1][1] + x, next(c)

    capture(f, torch.ones(2), [torch.ones(1), torch.zeros(1)], ops=9)

    def returned(x):
        c = itertools.count(x.dim(), 0.5)
        next(c)
        return c                                               # made again where it got to

    assert repr(bytegraph.compile(returned, backend="eager", fullgraph=True)(torch.ones(2))) == "count(1.5, 0.5)"


def test_islice_over_an_iterator_takes_only_the_items_it_reaches():
    import itertools

    def f(a):
        x, y = list(itertools.islice(itertools.chain([a + 1, a + 2], [a + 3, a + 4]), 1, 3))
        it = iter([1, 2, 3, 4, 5, 6, 7])
        first = list(itertools.islice(it, 2))
        rest = list(it)                                        # islice took two, no more
        g = (a * i for i in range(100))
        some = list(itertools.islice(g, 3, 12, 4))
        after = next(g)                                        # the generator stopped at 11
        endless = list(itertools.islice(itertools.count(), 2, 9, 3))
        left = itertools.islice(iter([a, a + 1, a + 2]), 1, None)
        next(left)
        return x - y, first, rest, some, after, endless, list(left)

    capture(f, torch.ones(2), ops=20)
    with pytest.raises(ValueError, match="Indices for islice"):
        bytegraph.compile(lambda x: list(itertools.islice(iter([x]), -1, 2)), backend="eager")(torch.ones(1))


def test_a_union_of_classes_is_made_for_isinstance():
    import abc

    class A:
        pass

    class B(abc.ABC):
        pass

    def f(x, obj):
        either = A | B
        return x + 1, isinstance(obj, either), isinstance(3, int | None), either

    capture(f, torch.ones(1), A(), ops=1)


def test_infer_size_of_static_sizes_folds_and_its_errors_are_catchable():
    def f(x, y):
        shape = torch._C._infer_size(x.shape[:-1], y.shape[:-1])
        try:
            torch._C._infer_size(torch.Size([2, 3]), torch.Size([4, 5]))
        except RuntimeError as error:
            message = str(error)
        return shape, torch.ones(shape), message

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True, dynamic=False)
    x, y = torch.randn(2, 1, 3), torch.randn(4, 3)
    result, expected = compiled(x, y), f(x, y)
    assert type(result[0]) is torch.Size and result[0] == expected[0] and result[2] == expected[2]
    assert torch.equal(result[1], expected[1]) and counter.frame_count == 1


def test_iterators_of_builtin_containers_have_their_types_and_length_hints():
    range_iterator = type(iter(range(0)))

    def f(a, b):
        it = range(5).__iter__()
        listed = iter([1, 2, 3])
        next(listed)
        members = iter({1, 2})
        known = isinstance(it, range_iterator) and isinstance(listed, type(iter([])))
        hints = listed.__length_hint__(), operator.length_hint(members)
        return (a + b if known else a - b), hints, sum([a, b], start=a)

    capture(f, torch.ones(1), torch.ones(1), ops=3)
