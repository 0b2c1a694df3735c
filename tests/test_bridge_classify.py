"""The torch bridge's classification of objects: the exact-type shortcut answers as the full
rules do."""

import collections

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from bytegraph import _classify


def _samples():
    fake = FakeTensorMode().from_tensor(torch.ones(2))
    return [1, 1.5, True, "s", b"b", 1j, None, ..., torch.float32, torch.device("cpu"), torch.Size([2]),
            slice(1), range(3), [1], {1: 2}, (1,), torch.ones(1), torch.nn.Parameter(torch.ones(1)), fake,
            torch, collections.OrderedDict(a=1), collections.defaultdict(list)]


def test_the_exact_type_shortcut_agrees_with_the_full_classification(monkeypatch):
    samples = _samples()
    assert all(type(sample) in _classify._KIND_OF_EXACT_TYPE for sample in samples)
    fast = [_classify.classify(sample) for sample in samples]
    monkeypatch.setattr(_classify, "_KIND_OF_EXACT_TYPE", {})
    assert fast == [_classify.classify(sample) for sample in samples]


def test_builtins_classified_once_agree_with_the_full_classification():
    import builtins

    for name in ("len", "isinstance", "int", "print", "super", "getattr", "zip"):
        value = getattr(builtins, name)
        assert id(value) in _classify._KIND_OF_BUILTIN, name
        assert _classify.classify(value) == _classify._classify_by_rules(value), name


@pytest.mark.parametrize("value", [[1], (1,), len])
def test_a_user_rule_still_wins_over_the_shortcut(value):
    _classify.set_rule(value, "unknown")
    try:
        assert _classify.classify(value) == "unknown"
    finally:
        _classify._RULES.pop(id(value))
