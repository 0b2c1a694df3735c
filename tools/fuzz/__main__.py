"""python -m tools.fuzz --n N --seed S [--backends ...] [--save-failures] [--mutate-state]

Generates N programs from the seed, runs each eagerly and compiled, prints each failure and
a summary (programs, ok, wrong, crash, internal errors, seconds). With --save-failures,
failures not attributed to a known bug are shrunk and saved as regression tests in
tests/fuzz_regressions/ (the first few of each kind of failure).

With --mutate-state the programs read state outside the function (modules, objects, globals,
closures, classes, callables, torch's global state), which is changed between calls: a
compiled function that misses the change (a missing guard) is `wrong`, one that compiles
again when called again with nothing changed is `recompile` (state_runner.py).
"""

import argparse
import sys

from tools.fuzz import backends, state_generator
from tools.fuzz.campaign import run_campaign


def parse_arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="programs to generate and run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first program")
    parser.add_argument("--backends", nargs="+", default=list(backends.DEFAULT), choices=sorted(backends.CONFIGS))
    parser.add_argument("--aot-fraction", type=float, default=0.2,
                        help=f"fraction of programs also compiled with {backends.OCCASIONAL}")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per program before it counts as a hang")
    parser.add_argument("--save-failures", action="store_true", help="shrink failures into tests/fuzz_regressions/")
    parser.add_argument("--max-saved", type=int, default=3, help="failures saved per kind of failure")
    parser.add_argument("--show", type=int, default=20, help="failures printed in full")
    parser.add_argument("--mutate-state", action="store_true",
                        help="programs whose state is changed between calls: finds missing guards")
    return parser.parse_args(argv)


def main(argv=None):
    options = parse_arguments(argv)
    shown = []

    def report(failure):
        outcome = failure.outcome
        label = f"known bug {failure.known}" if failure.known else outcome.verdict.upper()
        first_line = (outcome.detail or "").splitlines()[0] if outcome.detail else ""
        where = "input set" if failure.program.mode == "default" else "call"
        print(f"{failure.program.name}: {label} ({outcome.backend}, {where} {outcome.variant}): {first_line[:200]}",
              flush=True)
        if not failure.known:
            shown.append(failure)

    summary = run_campaign(options.n, options.seed, tuple(options.backends), options.aot_fraction, options.jobs,
                           options.timeout, options.start, on_failure=report,
                           mode=state_generator.MODE if options.mutate_state else "default")
    for failure in shown[: options.show]:
        print(f"\n==== {failure.program.name}: {failure.outcome.verdict}\n{failure.outcome.detail}")
    if options.save_failures and summary.unknown_failures():
        from tools.fuzz.shrinker import save_failures

        for path in save_failures(summary.unknown_failures(), options.max_saved, jobs=options.jobs):
            print(f"saved {path}")
    print(summary.text())
    return 1 if summary.unknown_failures() else 0


if __name__ == "__main__":
    sys.exit(main())
