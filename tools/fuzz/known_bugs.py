"""Bugs the fuzzer finds that are not fixed yet, each with its strict-xfail regression test
in tests/fuzz_regressions/. A failure is attributed to a known bug when its verdict and
detail match the bug's pattern and its program contains the construct that causes it; the
summary counts those apart, and the CI slice fails only on the others."""

import collections
import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    regression: str  # the file in tests/fuzz_regressions/
    verdicts: tuple
    detail: str  # regex over the outcome's detail
    source: str  # regex over the program's source: the construct involved

    def matches(self, source, outcome):
        return (outcome.verdict in self.verdicts and re.search(self.detail, outcome.detail or "", re.S) is not None
                and re.search(self.source, source) is not None)


KNOWN_BUGS = ()


def match(source, outcome):
    """The name of the known bug this failure is, or None."""
    for bug in KNOWN_BUGS:
        if bug.matches(source, outcome):
            return bug.name
    return None


def tally(failures):
    return collections.Counter(f.known for f in failures if f.known)
