"""`match` statements in traced code: sequence, mapping, class and literal patterns decide at
trace time on what the trace knows (types, lengths, keys, attributes), each read guarded; the
tensor work of the taken case is the graph."""

import dataclasses

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests._capture import capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


@dataclasses.dataclass
class Point:
    x: object
    y: object


class Plain:
    def __init__(self, value):
        self.value = value


def classify(x, subject):
    match subject:
        case []:
            return x * 10
        case [a]:
            return x + a
        case [a, b, *rest]:
            return x * a + b + len(rest)
        case {"scale": s, **others}:
            return x * s + len(others)
        case Point(px, y=py):
            return x * px - py
        case Plain(value=v):
            return x + v
        case int(n) | float(n):
            return x - n
        case str() as text:
            return x * len(text)
        case _:
            return -x


@pytest.mark.parametrize("subject", [
    [], [2], (1, 2, 3, 4), {"scale": 3, "k": 1}, Point(2, 5), Plain(7), 4, 2.5, "abc", None,
], ids=["empty", "one", "tuple", "mapping", "dataclass", "keyword-only", "int", "float", "str", "other"])
def test_each_kind_of_pattern_captured_whole(subject):
    capture(classify, torch.ones(3), subject, ops=None)


def test_a_subject_holding_tensors_binds_them_in_the_graph():
    def f(pair):
        match pair:
            case (a, b) if a.shape == b.shape:
                return a + b
            case (a, b):
                return a
        return None

    _, counter = capture(f, (torch.ones(2), torch.ones(2)), ops=1)


def test_another_kind_of_subject_recompiles_and_matches_like_eager():
    counter = CompileCounter()
    compiled = bytegraph.compile(classify, backend=counter)
    x = torch.ones(2)
    for subject in ([1], [1], {"scale": 2}, Point(1, 1), [1]):
        assert torch.equal(compiled(x, subject), classify(x, subject))
    assert counter.frame_count == 3


def test_match_errors_are_cpythons():
    class NoArgs:
        pass

    def f(x, subject):
        try:
            match subject:
                case NoArgs(a):
                    return x
        except TypeError as error:
            return x + 1, str(error)
        return x

    result, _ = capture(f, torch.ones(2), NoArgs(), ops=1)
    assert "accepts 0 positional sub-patterns (1 given)" in result[1]
