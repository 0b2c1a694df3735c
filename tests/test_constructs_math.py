"""math.ceil / floor / trunc, operator.index, bin / oct / hex and operator.length_hint on
instances of user classes: their Python special methods are inlined (found on the class, as
CPython's special lookup finds them), their results checked as CPython checks them, and the
errors raised with CPython's words where the traced code can catch them."""

import enum
import math
import operator
import warnings

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests._capture import capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def outcome(call):
    """What `call()` gives: ("ok", result) or ("raise", exception type name, message)."""
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the point is to compare any exception
        return ("raise", type(e).__name__, str(e))


class Rounds:
    def __init__(self, k):
        self.k = k

    def __ceil__(self):
        return self.k + 1

    def __floor__(self):
        return self.k - 1

    def __trunc__(self):
        return self.k * 10


class FloatLike:
    def __init__(self, value):
        self.value = value

    def __float__(self):
        return self.value


class IndexLike:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


class Up(float):
    def __ceil__(self):
        return 100


class Size(int):
    pass


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Text(str):
    pass


class HintError(TypeError):
    pass


# Instances of int, float and str subclasses are made outside the trace (the trace does not
# make them) and read as constants.
HALF, SEVEN_AND_A_HALF = Up(2.5), Up(7.5)
THREE, FIVE, THIRTY_ONE = Size(3), Size(5), Size(31)
TEXT = Text("2.5")
OBJECT = object()


# ---- math.ceil / floor / trunc ------------------------------------------------------------


def test_a_classes_ceil_floor_and_trunc_are_inlined_from_the_class_not_the_instance():
    def f(x):
        r = Rounds(5)
        r.__ceil__ = lambda: -1  # special lookup ignores the instance
        return x + math.ceil(r) + math.floor(r) + math.trunc(r)

    capture(f, torch.ones(2), ops=3)


def test_without_ceil_the_value_converts_through_float_or_index():
    def f(x):
        return x + 1, (math.ceil(FloatLike(41.5)), math.floor(FloatLike(-2.5)), math.ceil(IndexLike(7)),
                   math.floor(IndexLike(2**53 + 1)), math.ceil(FloatLike(x.shape[0] / 4)))

    result, _ = capture(f, torch.ones(6), ops=1)
    assert result[1] == (42, -3, 7, 2**53, 2)


def test_int_and_float_subclasses_use_their_own_special_method_or_their_bases():
    def f(x):
        return x + 1, (math.ceil(HALF), math.floor(HALF), math.trunc(HALF), math.ceil(SEVEN_AND_A_HALF),
                       math.floor(SEVEN_AND_A_HALF), math.floor(FIVE), math.trunc(Color.GREEN))

    result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1] == (100, 2, 2, 100, 7, 5, 2)


def test_a_float_subclass_returned_by_float_is_used_with_a_deprecation_warning():
    value = Up(4.25)

    def f(x):
        return x + 1, math.floor(FloatLike(value)), math.ceil(IndexLike(THREE))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1:] == (4, 3)


BAD_ROUNDINGS = [
    ("float_returns_int", lambda: math.ceil(FloatLike(1))),
    ("float_returns_str", lambda: math.floor(FloatLike("1.5"))),
    ("infinity", lambda: math.ceil(FloatLike(float("inf")))),
    ("nan", lambda: math.floor(FloatLike(float("nan")))),
    ("index_returns_float", lambda: math.ceil(IndexLike(1.5))),
    ("index_too_large_for_float", lambda: math.floor(IndexLike(10**400))),
    ("no_trunc", lambda: math.trunc(FloatLike(2.5))),
    ("object", lambda: math.floor(OBJECT)),
    ("str_subclass", lambda: math.ceil(TEXT)),
    ("extra_argument", lambda: math.ceil(Rounds(1), 0)),
    ("keyword", lambda: math.floor(x=Rounds(1))),
    ("trunc_both", lambda: math.trunc(Rounds(1), 0, x=Rounds(1))),
    ("no_argument", lambda: math.ceil()),
]


@pytest.mark.parametrize("name,call", BAD_ROUNDINGS, ids=[name for name, _ in BAD_ROUNDINGS])
def test_rounding_errors_are_cpythons_and_caught_in_the_trace(name, call):
    def f(x):
        return x + 1, outcome(call)

    result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1][0] == "raise", result


def test_patching_or_adding_a_special_method_on_the_class_recompiles():
    class Number:
        def __float__(self):
            return 2.5

    number = Number()

    def f(x):
        return x + math.ceil(number)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    assert same(compiled(torch.ones(2)), torch.ones(2) + 3)
    Number.__ceil__ = lambda self: 10  # absent when traced: guarded so
    assert same(compiled(torch.ones(2)), torch.ones(2) + 10)
    Number.__ceil__ = lambda self: 20  # a different function where the class holds it
    assert same(compiled(torch.ones(2)), torch.ones(2) + 20)
    assert counter.frame_count == 3


# ---- operator.index, bin, oct, hex ----------------------------------------------------------


def test_bin_oct_hex_and_index_go_through_index():
    def f(x):
        obj = IndexLike(255)
        return x + operator.index(obj), (bin(obj), oct(obj), hex(obj), hex(IndexLike(-x.shape[0])),
                                         bin(FIVE), hex(Color.GREEN), operator.index(Color.RED))

    result, _ = capture(f, torch.ones(3), ops=1)
    assert result[1] == ("0b11111111", "0o377", "0xff", "-0x3", "0b101", "0x2", 1)


class IntOnly:
    def __int__(self):
        return 5


BAD_INDEXES = [
    ("no_index", lambda: hex(FloatLike(1.0))),
    ("int_is_not_index", lambda: bin(IntOnly())),
    ("index_returns_str", lambda: oct(IndexLike("7"))),
    ("index_raises", lambda: operator.index(IndexLike(None).missing)),
    ("two_arguments", lambda: hex(IndexLike(1), 2)),
]


@pytest.mark.parametrize("name,call", BAD_INDEXES, ids=[name for name, _ in BAD_INDEXES])
def test_index_errors_are_cpythons_and_caught_in_the_trace(name, call):
    def f(x):
        return x + 1, outcome(call)

    result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1][0] == "raise", result


def test_an_int_subclass_returned_by_index_warns_and_counts_as_its_value():
    def f(x):
        return x + 1, hex(IndexLike(THIRTY_ONE)), operator.index(IndexLike(True))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result, _ = capture(f, torch.ones(2), ops=1)
    assert result[1:] == ("0x1f", 1) and type(result[2]) is int


# ---- operator.length_hint -----------------------------------------------------------------


class Hint:
    def __init__(self, value):
        self.value = value

    def __length_hint__(self):
        if isinstance(self.value, type):
            raise self.value("from the hint")
        return self.value


class Sized:
    def __init__(self, length):
        self.length = length

    def __len__(self):
        if isinstance(self.length, type):
            raise self.length("from len")
        return self.length

    def __length_hint__(self):
        return 7


class NoHint:
    pass


def _numbers():
    yield 1


LENGTH_HINTS = [
    ("list", lambda: operator.length_hint([1, 2], 9)),
    ("dict", lambda: operator.length_hint({"a": 1})),
    ("list_iterator", lambda: operator.length_hint(iter([1, 2, 3]))),
    ("list_iterator_advanced", lambda: (lambda it: (next(it), operator.length_hint(it))[1])(iter([1, 2, 3]))),
    ("generator_has_no_hint", lambda: operator.length_hint(_numbers(), 4)),
    ("hint", lambda: operator.length_hint(Hint(2))),
    ("bool_hint_is_an_int", lambda: type(operator.length_hint(Hint(True)))),
    ("not_implemented", lambda: operator.length_hint(Hint(NotImplemented), 4)),
    ("hint_type_error", lambda: operator.length_hint(Hint(TypeError), 12)),
    ("hint_type_error_subclass", lambda: operator.length_hint(Hint(HintError), 3)),
    ("hint_other_error", lambda: operator.length_hint(Hint(LookupError))),
    ("hint_not_int", lambda: operator.length_hint(Hint("abc"))),
    ("hint_negative", lambda: operator.length_hint(Hint(-2))),
    ("hint_too_large", lambda: operator.length_hint(Hint(2**200))),
    ("len_first", lambda: operator.length_hint(Sized(3))),
    ("len_type_error_falls_to_hint", lambda: operator.length_hint(Sized(TypeError))),
    ("len_not_int_falls_to_hint", lambda: operator.length_hint(Sized("x"))),
    ("len_negative", lambda: operator.length_hint(Sized(-1))),
    ("len_value_error", lambda: operator.length_hint(Sized(ValueError))),
    ("no_hint", lambda: operator.length_hint(NoHint(), 10)),
    ("negative_default", lambda: operator.length_hint(NoHint(), -5)),
    ("index_default", lambda: operator.length_hint(NoHint(), IndexLike(6))),
    ("bad_default_before_the_object", lambda: operator.length_hint(Hint(LookupError), "abc")),
    ("default_too_large", lambda: operator.length_hint(Hint(2), 2**200)),
    ("too_many_arguments", lambda: operator.length_hint([], 1, 2)),
    ("keyword_default", lambda: operator.length_hint([], default=3)),
]


@pytest.mark.parametrize("name,call", LENGTH_HINTS, ids=[name for name, _ in LENGTH_HINTS])
def test_length_hint_is_cpythons(name, call):
    def f(x):
        return x + 1, outcome(call)

    capture(f, torch.ones(2), ops=1)


def test_length_hint_of_a_symbolic_size_is_specialized():
    def f(x):
        return x + 1, operator.length_hint(Hint(x.shape[0] - 1)), operator.length_hint(NoHint(), x.shape[0])

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True, dynamic=True)
    for n in (3, 5):
        assert same(compiled(torch.ones(n)), f(torch.ones(n)))
