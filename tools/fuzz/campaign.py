"""A fuzzing campaign: programs 0..n-1 of a seed, run in worker processes, tallied.

    summary = run_campaign(n=300, seed=0)
    print(summary.text())

With mode="mutate-state" the programs are state_generator.py's, run by state_runner.py:
state outside the function changed between calls, and `recompile` a verdict of its own.
"""

import collections
import dataclasses
import random
import time

from tools.fuzz import backends, generator, known_bugs, state_generator
from tools.fuzz.batch import Job, WorkerPool

VERDICTS = ("ok", "wrong", "crash", "internal", "error", "recompile")
GENERATORS = {"default": generator.generate, state_generator.MODE: state_generator.generate}


@dataclasses.dataclass
class Failure:
    program: object  # generator.Program
    job: Job
    outcome: object  # runner.Outcome
    known: str = None  # the known bug it matches, if any


@dataclasses.dataclass
class Summary:
    programs: int = 0
    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    known: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: list = dataclasses.field(default_factory=list)
    captured: int = 0  # programs with at least one graph with ops
    graphs: int = 0
    ops: int = 0
    calls: int = 0
    eager_errors: int = 0
    seconds: float = 0.0
    mode: str = "default"

    def unknown_failures(self):
        return [f for f in self.failures if f.known is None]

    def text(self):
        def count(verdict):
            known = self.known[verdict]
            return f"{self.counts[verdict]}" + (f" ({known} known)" if known else "")

        # (a program whose results also differed counts as wrong, not as a recompile)
        recompiles = f"recompile {count('recompile')}  " if self.mode != "default" or self.counts["recompile"] else ""
        lines = [
            f"programs {self.programs}  ok {self.counts['ok']}  wrong {count('wrong')}  crash {count('crash')}  "
            f"internal errors {count('internal')}  {recompiles}seconds {self.seconds:.1f}",
            f"captured: {self.captured} programs with a graph ({100.0 * self.captured / max(self.programs, 1):.1f}%), "
            f"{self.graphs} graphs, {self.ops} ops; {self.eager_errors} of {self.calls} calls raised eagerly",
        ]
        if self.counts["error"]:
            lines.append(f"programs the runner could not run: {self.counts['error']}")
        for name, number in sorted(known_bugs.tally(self.failures).items()):
            lines.append(f"known bug {name}: {number}")
        return "\n".join(lines)


def choose_backends(seed, index, names, occasional_fraction):
    """The configured backends, plus aot_eager for a fraction of the programs."""
    chosen = list(names)
    if occasional_fraction > 0 and random.Random(f"{seed}:{index}:backends").random() < occasional_fraction:
        if backends.OCCASIONAL not in chosen:
            chosen.append(backends.OCCASIONAL)
    return tuple(chosen)


def run_campaign(n, seed, backend_names=backends.DEFAULT, occasional_fraction=0.2, jobs=1, timeout=120.0,
                 start=0, on_failure=None, mode="default"):
    summary = Summary(mode=mode)
    programs = {}
    job_list = []
    for index in range(start, start + n):
        program = GENERATORS[mode](seed, index)
        job = Job(program.name, program.source, choose_backends(seed, index, backend_names, occasional_fraction),
                  mode)
        programs[job.id] = program
        job_list.append(job)
    began = time.perf_counter()
    with WorkerPool(jobs=jobs, timeout=timeout) as pool:
        for job, outcome, _ in pool.run(job_list):
            _tally(summary, outcome)
            if outcome.verdict != "ok":
                failure = Failure(programs[job.id], job, outcome, known_bugs.match(job.source, outcome))
                summary.failures.append(failure)
                if failure.known:
                    summary.known[outcome.verdict] += 1
                if on_failure is not None:
                    on_failure(failure)
    summary.seconds = time.perf_counter() - began
    summary.failures.sort(key=lambda f: f.program.index)
    return summary


def _tally(summary, outcome):
    summary.programs += 1
    summary.counts[outcome.verdict] += 1
    summary.captured += outcome.ops > 0
    summary.graphs += outcome.graphs
    summary.ops += outcome.ops
    summary.calls += outcome.calls
    summary.eager_errors += outcome.eager_errors
