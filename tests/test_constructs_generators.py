"""Generators called from traced code run a step at a time: each item is computed when the
consumer asks for it, so a generator and its consumer interleave as they do eagerly."""

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests._capture import breaks, capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def _scaled(x, n):
    for i in range(n):
        yield x * (i + 1)
    return n


def _chain(x):
    total = yield from _scaled(x, 2)       # SEND / the generator protocol, with its return value
    yield from [total * 10, total * 100]   # yield from a list
    yield from range(2)
    return "done"


def test_yield_from_generators_lists_and_ranges():
    def f(x):
        items = list(_chain(x))
        return items[0] + items[1] + items[2] + items[3] + items[4] + items[5]

    capture(f, torch.ones(2), ops=7)


def test_generator_expressions_consumed_by_builtins():
    def f(x):
        xs = [1, 2, 3]
        a = tuple(x * v for v in xs)
        b = list(v for v in xs if v > 1)
        c = any(v > 2 for v in xs) + all(v > 0 for v in xs)
        d = dict((str(v), v) for v in xs)
        e = sum(x * v for v in xs)
        g = next(v for v in xs if v > 1)
        h = sorted((v for v in xs), reverse=True) + [min(v for v in xs), max(v * 2 for v in xs)]
        s = set(v % 2 for v in xs)
        j = "-".join(str(v) for v in xs)
        return a[2] + e + c + g + len(b) + len(d) + len(s) + len(j), h

    capture(f, torch.ones(2), ops=16)


def _counter():
    n = 0
    while True:          # infinite: only ever consumed lazily
        yield n
        n += 1


def test_next_on_an_infinite_generator_and_zip_enumerate_map_over_generators():
    def f(x):
        gen = _counter()
        first, second = next(gen), next(gen)
        pairs = list(zip(_counter(), "abc"))
        for i, v in enumerate(_counter(), start=1):
            if i > 2:
                tagged = i * v
                break
        scaled = list(map(lambda v: x * v, (v for v in range(3))))
        return x * (first + second + len(pairs) + next(gen)) + scaled[2], tagged

    capture(f, torch.ones(2), ops=5)


def _reads(seen):
    for _ in range(3):
        yield len(seen)


def test_a_generator_interleaves_with_its_consumer():
    # Each step of the generator sees what the consumer appended before asking for it.
    def f(x):
        seen = []
        for n in _reads(seen):
            seen.append(n)
        return x + sum(seen), seen

    result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1] == [0, 1, 2]


def _yields_then_breaks(x):
    yield x + 1
    bytegraph.graph_break()   # never reached: any() stops at the first truthy item
    yield x


def test_any_and_next_stop_the_generator_where_eager_does():
    def f(x):
        gen = _yields_then_breaks(x)
        first = next(gen)
        found = any(v is not None for v in _yields_then_breaks(x))
        return first * 2 if found else first

    capture(f, torch.ones(2), ops=3)


def _tree(depth):
    if depth == 0:
        yield depth
        return
    yield depth
    yield from _tree(depth - 1)


def test_recursive_generators():
    def f(x):
        return x + sum(_tree(4))

    capture(f, torch.ones(2), ops=1)


def _accumulator(log):
    total = 0
    try:
        while True:
            value = yield total
            total += value
    except GeneratorExit:
        log.append("exit")
    finally:
        log.append("finally")


def test_send_close_and_throw():
    def f(x):
        log = []
        g = _accumulator(log)
        next(g)
        first, second = g.send(2), g.send(3)
        g.close()
        h = _accumulator(log)
        next(h)
        try:
            h.throw(ValueError("into the generator"))
        except ValueError as e:
            thrown = str(e)
        try:
            next(h)
        except StopIteration:
            finished = True
        return x * second, first, thrown, finished, log

    capture(f, torch.randn(2), ops=1)


def _inner(log):
    try:
        while True:
            got = yield len(log)
            log.append(("inner got", got))
    except ValueError as e:
        log.append(("inner caught", str(e)))
        yield "recovered"
        return "inner done"
    finally:
        log.append("inner finally")


def _outer(log):
    try:
        result = yield from _inner(log)
        log.append(("outer result", result))
        yield "after"
    except KeyError as e:
        log.append(("outer caught", str(e)))
        yield "outer recovered"
    finally:
        log.append("outer finally")


def test_send_throw_and_close_go_through_yield_from_to_the_delegate():
    def f(x):
        log = []
        g = _outer(log)
        items = [next(g), g.send(10), g.send("b")]          # sent values reach _inner
        items.append(g.throw(ValueError("v")))               # caught by _inner, which yields
        items.append(next(g))                                # _inner returns: `yield from` ends
        g.close()
        h = _outer(log)
        next(h)
        items.append(h.throw(KeyError("k")))                 # _inner does not catch: raised in _outer
        h.close()                                            # closes _inner first, then _outer
        k = _outer(log)
        next(k)
        k.close()
        return x * len(items), items, log

    capture(f, torch.randn(2), ops=1)


def _raising_close():
    try:
        yield 1
    finally:
        raise RuntimeError("from the delegate's close")


def _delegating():
    yield from _raising_close()


def test_an_error_from_the_delegates_close_is_raised_in_the_delegating_generator():
    def f(x):
        g = _delegating()
        next(g)
        try:
            g.close()
        except RuntimeError as e:
            return x + 1, str(e)
        return x, None

    capture(f, torch.randn(2), ops=1)


class _ProtocolIterator:
    """An iterator (no generator) with send(), throw() and close() of its own."""

    def __init__(self, log):
        self.log = log

    def __iter__(self):
        return self

    def __next__(self):
        return 1

    def send(self, value):
        self.log.append(("send", value))
        return value * 2

    def throw(self, exception):
        self.log.append(("throw", type(exception).__name__))
        raise StopIteration("ended by throw")

    def close(self):
        self.log.append("close")


def _over(iterator, log):
    result = yield from iterator
    log.append(("result", result))
    yield "after"


def test_yield_from_an_iterator_object_uses_its_send_throw_and_close():
    def f(x):
        log = []
        g = _over(_ProtocolIterator(log), log)
        items = [next(g), g.send(21), g.throw(ValueError("v"))]   # throw() ends `yield from`
        h = _over(_ProtocolIterator(log), log)
        next(h)
        h.close()
        k = _over(iter([1, 2]), log)                               # no throw(): raised in _over
        next(k)
        try:
            k.throw(KeyError("k"))
        except KeyError:
            items.append("raised")
        return x * len(items), items, log

    capture(f, torch.randn(2), ops=1)


class _Countdown:
    """An iterator object: __iter__ returns itself, __next__ raises StopIteration at the end."""

    def __init__(self, start, log):
        self.value, self.log = start, log

    def __iter__(self):
        return self

    def __next__(self):
        if self.value == 0:
            raise StopIteration
        self.value -= 1
        self.log.append(self.value)
        return self.value


def test_an_iterator_object_is_advanced_a_step_at_a_time():
    def f(x):
        log = []
        seen = []
        for v in _Countdown(3, log):
            seen.append(len(log))  # the body sees what each __next__ did so far
            x = x + v
        return x, seen, list(_Countdown(2, log)), next(_Countdown(5, log))

    capture(f, torch.randn(2), ops=3)


def test_a_stop_iteration_leaving_a_generator_becomes_a_runtime_error():
    def stops_early():
        yield 1
        raise StopIteration  # PEP 479

    def f(x):
        try:
            list(stops_early())
        except RuntimeError as e:
            return x + 1, str(e), type(e.__cause__).__name__

    capture(f, torch.randn(2), ops=1)


def _returned_whole(fn, *args):
    """`fn` compiled whole; its result (an iterator, or a tuple holding some) consumed and compared
    with eager's on two calls; the types match (a map stays a map, a generator a generator)."""
    from bytegraph.testing import same

    def consumed(result):
        items = result if isinstance(result, tuple) else (result,)
        return [(type(item), list(item)) if hasattr(item, "__next__") else (type(item), item) for item in items]

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    with bytegraph.config.patch(verify_correctness=False):
        for _ in range(2):
            expected, actual = consumed(fn(*args)), consumed(compiled(*args))
            assert [t for t, _ in expected] == [t for t, _ in actual]
            assert same([v for _, v in expected], [v for _, v in actual])
    assert counter.frame_count == 1
    return counter


def test_returned_map_filter_zip_and_enumerate_stay_lazy_iterators():
    def f(x):
        m = map(lambda a: a * 2, [x, x + 1, x + 2])
        first = next(m)                          # one call in the trace, two left for the caller
        pairs = zip([1, 2, 3], map(lambda v: v + 1, [4, 5, 6]))
        kept = filter(lambda p: p[0] + p[1] < 8, zip([1, 2, 3], [1, 2, 3]))
        numbered = enumerate(map(lambda v: v, (x, x)), start=5)
        next(numbered)
        return m, pairs, kept, numbered, first.sum()

    _returned_whole(f, torch.ones(2))


def _whoo(t, k=1):
    yield t + k
    yield t * k


def test_returned_generators_not_started_are_made_by_calling_again():
    def f(t):
        g1, g2 = _whoo(t), _whoo(t + 1, k=3)
        gen_expr = (v * 2 for v in [t, t])
        return (g1, g2, gen_expr)[0], g2, gen_expr, t.sin()

    _returned_whole(f, torch.randn(2))


def test_a_returned_generator_runs_its_body_when_the_caller_iterates():
    seen = []

    def noting(t):
        seen.append("started")
        yield t + 1

    def f(t):
        return noting(t), t * 2

    counter = CompileCounter()
    gen, _ = bytegraph.compile(f, backend=counter, fullgraph=True)(torch.ones(2))
    assert counter.frame_count == 1 and counter.op_count == 1
    assert seen == [] and type(gen).__name__ == "generator"
    assert torch.equal(next(gen), torch.ones(2) + 1) and seen == ["started"]


def test_a_generator_that_has_run_is_not_returned_compiled():
    def whoo(t):
        yield t + 1
        yield t + 2

    def f(t):
        gen = whoo(t)
        next(gen)
        return gen

    with bytegraph.config.patch(verify_correctness=False):
        with pytest.raises(bytegraph.exc.GraphBreakError, match="which has run"):
            bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
        gen = bytegraph.compile(f, backend="eager")(torch.ones(2))
    assert torch.equal(next(gen), torch.ones(2) + 2)


def test_an_iterator_reached_twice_is_made_once():
    def f(x):
        it = iter([x, x + 1, x + 2])
        m = map(lambda v: v * 2, it)
        return m, it

    # Made once it cannot be (two plans would make two iterators): the return is refused and
    # the frame runs as it is.
    assert breaks(f, torch.ones(2)) == (0, ["unsupported_return"])
    with bytegraph.config.patch(verify_correctness=False):
        m, it = bytegraph.compile(f, backend="eager")(torch.ones(2))
    assert torch.equal(next(it), torch.ones(2))  # the map and `it` share the one iterator
    assert torch.equal(next(m), (torch.ones(2) + 1) * 2)
