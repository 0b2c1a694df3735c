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
            slice(1), range(3), torch.strided, torch.channels_last, torch.finfo(torch.float32),
            torch.iinfo(torch.int8), _samples.__code__, [1], {1: 2}, (1,), torch.ones(1), torch.nn.Parameter(torch.ones(1)), fake,
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


class _Settings:
    pass


class _Pretending:
    @property
    def __class__(self):
        return torch.Tensor


def test_answers_kept_per_class_agree_with_the_full_classification_and_follow_changes():
    settings, pretending = _Settings(), _Pretending()
    for obj in (settings, _Settings, pretending, torch.nn.Linear, collections.OrderedDict):
        first = _classify.classify(obj)
        assert first == _classify.classify(obj) == _classify._classify_by_rules(obj), obj
    assert _classify._kind_by_class(settings) == "object"  # kept for the class
    assert _classify._kind_by_class(pretending) is None  # a class that lies about itself: never kept
    assert _classify.classify(pretending) == "tensor"
    # A rule on the class, then new bases: the kept answers go with them.
    _classify.set_rule(_Settings, "unknown")
    try:
        assert _classify.classify(_Settings) == "unknown"
    finally:
        _classify._RULES.pop(id(_Settings))
    assert _classify.classify(settings) == "object"

    class Base:
        pass

    class Other:
        pass

    class Plain(Base):
        pass

    plain = Plain()
    assert _classify.classify(plain) == "object" and _classify._kind_by_class(plain) == "object"
    assert _classify.classify(Plain) == "user_class" and _classify._kind_by_class(Plain) == "user_class"
    Plain.__bases__ = (Other,)
    assert _classify._kind_by_class(plain) is None and _classify._kind_by_class(Plain) is None
    assert _classify.classify(plain) == "object"
