"""Bugs the fuzzer finds that are not fixed yet, each with its strict-xfail regression test
in tests/fuzz_regressions/. A failure is attributed to a known bug when its verdict and
detail match the bug's pattern and its program contains the construct that causes it; the
summary counts those apart, and the CI slice fails only on the others."""

import collections
import dataclasses
import re
import sys


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    regression: str  # the file in tests/fuzz_regressions/
    verdicts: tuple
    detail: str  # regex over the outcome's detail
    source: str  # regex over the program's source: the construct involved
    backend: str = None  # only failures with this backend, if set
    pythons: tuple = None  # only on these (major, minor) interpreters, if set

    def matches(self, source, outcome):
        if self.pythons is not None and sys.version_info[:2] not in self.pythons:
            return False
        return (outcome.verdict in self.verdicts and self.backend in (None, outcome.backend)
                and re.search(self.detail, outcome.detail or "", re.S) is not None
                and re.search(self.source, source) is not None)


KNOWN_BUGS = (
    KnownBug(
        "aot_eager_in_place_write_of_a_differentiable_value_into_an_input",
        "aot_eager_in_place_write_of_a_differentiable_value_into_an_input.py", ("internal",),
        r"BackendCompilerFailed.*modified by an inplace operation", r"", backend="aot_eager"),
    KnownBug(
        "aot_eager_drops_an_unused_op_that_raises", "aot_eager_drops_an_unused_op_that_raises.py", ("wrong",),
        r"^eager raised \w+, compiled raised None", r"", backend="aot_eager"),
    KnownBug(  # the same where the program catches the error: what its handler does is missing, or
        # what the rest of the try block did (it runs on) shows in the result
        "aot_eager_drops_an_unused_op_that_raises", "aot_eager_drops_an_unused_op_that_raises.py", ("wrong",),
        r"^printed output differs|call\['(globals|args)'\]|call\['result'\]: values differ",
        r"torch\.tensor\(\[F \* 10\]\)|torch\.linalg\.inv",
        backend="aot_eager"),
    KnownBug(
        "aot_eager_zero_gradient_instead_of_none", "aot_eager_zero_gradient_instead_of_none.py", ("wrong",),
        r"\.grad: None != a tensor", r"", backend="aot_eager"),
    KnownBug(
        "aot_eager_one_tensor_for_two_equal_outputs", "aot_eager_one_tensor_for_two_equal_outputs.py", ("wrong",),
        r"\('tensor'.* != \('ref', \d+\)", r"", backend="aot_eager"),
    KnownBug(
        "aot_eager_in_place_write_through_a_view_of_an_expanded_tensor",
        "aot_eager_in_place_write_through_a_view_of_an_expanded_tensor.py", ("internal",),
        r"BackendCompilerFailed.*more than one element of the written-to tensor", r"", backend="aot_eager"),
)


def match(source, outcome):
    """The name of the known bug this failure is, or None."""
    for bug in KNOWN_BUGS:
        if bug.matches(source, outcome):
            return bug.name
    return None


def tally(failures):
    return collections.Counter(f.known for f in failures if f.known)
