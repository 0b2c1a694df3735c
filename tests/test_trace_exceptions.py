"""Exceptions raised and caught inside traced code: `raise`, except clauses (with `as`, tuples,
`else`, `finally`), errors of folded operations (a missing key or attribute, an index out of
range), exceptions leaving inlined functions and generators, implicit and explicit chaining.

Each case runs eagerly and compiled with fullgraph=True: the same result, one graph holding the
tensor ops (so the handler really ran in the trace), and no recompile on the second call.
"""

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same

X = torch.randn(3)


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def check(fn, *args, ops=None):
    expected = fn(*args)
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for _ in range(2):
        assert same(expected, compiled(*args)), (expected, compiled(*args))
    assert counter.frame_count == 1
    if ops is not None:
        assert counter.op_count == ops
    return compiled


def check_text(fn, *args, ops):
    """Results holding text (an exception's str or repr), compared as text."""
    expected = fn(*args)
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for _ in range(2):
        result = compiled(*args)
        assert torch.allclose(result[0], expected[0])
        assert result[1:] == expected[1:]
    assert (counter.frame_count, counter.op_count) == (1, ops)


def test_raise_and_catch_in_the_same_frame():
    def f(x):
        try:
            x = x + 1
            raise ValueError("bad")
        except ValueError:
            x = x * 2
        return x

    check(f, X, ops=2)


def test_the_exception_bound_by_as_and_its_args():
    def f(x):
        try:
            raise KeyError("k", 2)
        except KeyError as e:
            return x * e.args[1], str(e), repr(e), type(e).__name__

    check_text(f, X, ops=1)


def test_a_tuple_of_classes_and_the_first_matching_clause():
    def f(x):
        try:
            raise TypeError
        except (KeyError, TypeError):
            x = x + 1
        except Exception:
            x = x - 100
        return x

    check(f, X, ops=1)


def test_an_unmatched_clause_passes_the_exception_to_an_outer_handler():
    def f(x):
        try:
            try:
                raise IndexError("i")
            except KeyError:
                x = x - 100
        except LookupError:
            x = x + 1
        return x

    check(f, X, ops=1)


def test_else_runs_when_nothing_was_raised_and_finally_always():
    def f(x, fail):
        out = []
        try:
            if fail:
                raise RuntimeError
            out.append("body")
        except RuntimeError:
            out.append("except")
        else:
            out.append("else")
        finally:
            out.append("finally")
        return x + len(out), out

    check(f, X, True, ops=1)
    bytegraph.reset()
    check(f, X, False, ops=1)


def test_finally_runs_and_the_exception_goes_on():
    def f(x):
        log = []
        try:
            try:
                raise ValueError
            finally:
                log.append(1)
                x = x + 1
        except ValueError:
            log.append(2)
        return x, log

    check(f, X, ops=1)


def test_an_exception_from_an_inlined_function_reaches_the_caller_handler():
    def inner(x, items):
        items.append("before")
        raise RuntimeError("inner")

    def f(x):
        items = []
        try:
            inner(x, items)
            items.append("not reached")
        except RuntimeError as e:
            items.append(str(e))
        return x + 1, items

    check(f, X, ops=1)


def test_a_handler_inside_an_inlined_function():
    def lookup(d, key):
        try:
            return d[key]
        except KeyError:
            return -1

    def f(x):
        d = {"a": 2}
        return x * lookup(d, "a") + lookup(d, "b")

    check(f, X, ops=2)


@pytest.mark.parametrize("case", ["key", "index", "attribute", "unpack", "remove", "pop"])
def test_errors_of_folded_operations_are_catchable(case):
    class Config:
        present = 1

    config = Config()

    def f(x):
        try:
            if case == "key":
                {"a": 1}["b"]
            elif case == "index":
                [1, 2][5]
            elif case == "attribute":
                config.absent
            elif case == "unpack":
                a, b = [1, 2, 3]
            elif case == "remove":
                [1].remove(2)
            else:
                [].pop()
        except (LookupError, AttributeError, ValueError) as e:
            return x + 1, type(e).__name__
        return x, None

    check(f, X, ops=1)


def test_the_absent_attribute_a_handler_relied_on_is_guarded():
    class Config:
        pass

    config = Config()

    def f(x):
        try:
            return x * config.scale
        except AttributeError:
            return x + 1

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    assert same(compiled(X), X + 1)
    config.scale = 3
    assert same(compiled(X), X * 3)
    assert counter.frame_count == 2


def test_implicit_context_and_explicit_cause():
    def f(x):
        try:
            try:
                raise ValueError("first")
            except ValueError:
                raise TypeError("second")
        except TypeError as e:
            context = repr(e.__context__)
        try:
            raise KeyError("k") from IndexError("i")
        except KeyError as e:
            cause, suppressed = repr(e.__cause__), e.__suppress_context__
        return x + 1, context, cause, suppressed

    check_text(f, X, ops=1)


def test_a_bare_raise_re_raises_the_handled_exception():
    def f(x):
        try:
            try:
                raise ValueError("again")
            except ValueError:
                x = x + 1
                raise
        except ValueError as e:
            return x * 2, str(e)

    check_text(f, X, ops=2)


def test_user_exception_classes_with_their_own_init():
    class MyError(Exception):
        def __init__(self, code):
            super().__init__(f"code {code}")
            self.code = code

    def f(x):
        try:
            raise MyError(3)
        except MyError as e:
            return x * e.code, str(e), e.args

    check_text(f, X, ops=1)


def test_a_raised_exception_leaves_a_generator_and_finishes_it():
    def gen():
        yield 1
        raise ValueError("from the generator")

    def f(x):
        g = gen()
        seen = []
        try:
            for v in g:
                seen.append(v)
        except ValueError:
            seen.append("caught")
        return x + len(seen), seen, list(g)

    check(f, X, ops=1)


def test_an_exception_leaving_a_grad_mode_block_restores_the_mode():
    def f(x):
        try:
            with torch.no_grad():
                y = x * 2
                raise RuntimeError
        except RuntimeError:
            pass
        return y, x * 3, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    expected = f(x)
    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    result = compiled(x)
    assert result[2] is True and torch.is_grad_enabled()
    assert not result[0].requires_grad and result[1].requires_grad
    assert same(expected, result)


def test_a_made_exception_is_returned_rebuilt():
    def f(x):
        e = ValueError("made", 2)
        e.extra = "attr"
        return x + 1, e

    counter = CompileCounter()
    result = bytegraph.compile(f, backend=counter, fullgraph=True)(X)
    assert type(result[1]) is ValueError and result[1].args == ("made", 2) and result[1].extra == "attr"
    assert counter.frame_count == 1


def test_an_uncaught_exception_raises_as_python_raises_it():
    def f(x):
        y = x + 1
        if y.shape[0] == 3:
            raise ValueError("uncaught")
        return y

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for _ in range(2):
        with pytest.raises(ValueError, match="uncaught"):
            compiled(X)
    assert counter.frame_count == 1


def test_an_uncaught_exception_under_fullgraph_names_the_raise():
    def f(x):
        raise ValueError("uncaught")

    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    with pytest.raises(bytegraph.exc.GraphBreakError, match="uncaught_exception"):
        compiled(X)


def test_a_break_inside_a_handler_rolls_back_to_the_raise():
    def f(x):
        x = x + 1
        try:
            raise ValueError
        except ValueError:
            torch._dynamo.graph_break()
            x = x * 2
        return x

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for _ in range(2):
        assert same(compiled(X), f(X))
    # The graph before the raise; the raise, its handler and the rest run eagerly.
    assert counter.frame_count == 1


def test_catching_a_non_exception_class_is_a_type_error():
    def f(x):
        try:
            raise ValueError
        except int:
            pass

    compiled = bytegraph.compile(f, backend="eager")
    with pytest.raises(TypeError, match="catching classes that do not inherit from BaseException"):
        compiled(X)


def test_errors_of_calls_and_folds_are_catchable():
    def takes_one(a):
        return a

    def f(x):
        caught = []
        for attempt in range(3):
            try:
                if attempt == 0:
                    takes_one(1, 2)  # binding the arguments raises TypeError
                elif attempt == 1:
                    1 / 0
                else:
                    for _ in 5:
                        pass
            except (TypeError, ZeroDivisionError) as e:
                caught.append((type(e).__name__, str(e)))
        return x + len(caught), caught

    check(f, X, ops=1)


def test_sys_exc_info_and_exception_in_and_after_except_blocks():
    import sys

    def f(x):
        try:
            raise ValueError("inside")
        except ValueError:
            kind, value, _ = sys.exc_info()
            inside = (kind is ValueError, str(value), str(sys.exception()))
        after = sys.exc_info()[0] is None and sys.exception() is None
        return x + 1, inside, after

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2)
    assert same(compiled(x), f(x)) and same(compiled(x), f(x))
    assert counter.frame_count == 1


def test_the_callers_handled_exception_read_by_the_trace_is_guarded():
    import sys

    def f(x):
        return x + 1, sys.exc_info()[0]

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    x = torch.ones(2)
    assert compiled(x)[1] is None
    try:
        raise KeyError("the caller's")
    except KeyError:
        # Called inside the caller's except block: the None the trace answered does not hold.
        result = compiled(x)
    assert result[1] is KeyError and same(result[0], x + 1)
    assert compiled(x)[1] is None
    # Recompiled once inside the except block (its graph stops before sys.exc_info(), which
    # runs for real); the first entry serves the last call again.
    assert counter.frame_count == 2
