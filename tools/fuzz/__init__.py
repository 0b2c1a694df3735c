"""A differential fuzzer for bytegraph: random small PyTorch programs, each run eagerly and
compiled (several backends, several input sets that cross guards), compared on results,
exceptions, mutations, printed output and gradients.

    python -m tools.fuzz --n 300 --seed 0 [--backends eager dynamic] [--save-failures]

generator.py writes the programs (with scope.py, shapes.py, the expression and stmt_*.py
makers, inputs.py, preamble.py), runner.py runs and compares one program, batch.py runs
programs in worker processes (crashes and hangs are caught), campaign.py tallies a run,
shrinker.py reduces a failure to a regression test in tests/fuzz_regressions/, and
known_bugs.py lists the failures not fixed yet.

    python -m tools.fuzz --mutate-state --n 300 --seed 0

finds missing guards instead: state_generator.py writes programs whose function reads state
outside it (state_piece.py, state_values.py and the state_*.py makers), and state_runner.py
changes that state between calls, comparing eager and compiled after each change.
"""
