"""The ways a program is compiled: a backend (always counting graphs and ops) and the
compile options that go with it.

- eager: CompileCounter (the graph runs as it is), dynamic=None (automatic dynamic shapes)
- dynamic: CompileCounter with dynamic=True (sizes symbolic from the first compile)
- static: CompileCounter with dynamic=False (a recompile per shape)
- aot_eager: AOTAutograd's forward/backward graphs, run eagerly (slower: used on a fraction)
- warm_start: "eager" by name with warm-start records; the program runs once to write them and
  is compared on its second run, as a new process installing the recorded entries
  (runner.warm_started)
"""

from bytegraph.testing import CompileCounter, CompileCounterWithBackend

CONFIGS = {
    "eager": (CompileCounter, {}),
    "dynamic": (CompileCounter, {"dynamic": True}),
    "static": (CompileCounter, {"dynamic": False}),
    "aot_eager": (lambda: CompileCounterWithBackend("aot_eager"), {}),
    "warm_start": (None, {}),
}
DEFAULT = ("eager", "dynamic")
OCCASIONAL = "aot_eager"  # added to a fraction of the programs


def make(name):
    """(counting backend, compile options) for a configuration name."""
    factory, options = CONFIGS[name]
    return factory(), dict(options)
