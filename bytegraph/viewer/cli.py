"""`python -m bytegraph trace script.py:function --args EXPR --html out.html`: the viewer's command.

The script is loaded as a module (its `if __name__ == "__main__":` block does not run), the
arguments expression is evaluated with torch imported and the script's names in scope, and
`bytegraph.trace(fn, *args)` records the trace that is written out.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

OUTPUTS = {"html": "to_html", "beamer": "to_beamer", "org": "to_org"}


class TraceCommandError(Exception):
    """A mistake in the command's input, reported as one line without a traceback."""


def add_arguments(parser) -> None:
    parser.add_argument("target", help="the function to trace, as path/to/script.py:function")
    parser.add_argument(
        "--args",
        default="()",
        help="Python expression for the arguments, evaluated with torch imported; a tuple is "
        "spread into positional arguments (write ((1, 2),) to pass one tuple)",
    )
    parser.add_argument("--html", metavar="PATH", help="write the interactive page here")
    parser.add_argument("--beamer", metavar="PATH", help="write LaTeX beamer slides here")
    parser.add_argument("--org", metavar="PATH", help="write org-mode beamer slides here")


def load_function(target: str):
    path_text, separator, name = target.rpartition(":")
    if not separator or not path_text or not name:
        raise TraceCommandError(f"expected path/to/script.py:function, got {target!r}")
    path = Path(path_text)
    if not path.is_file():
        raise TraceCommandError(f"no such script: {path}")
    spec = importlib.util.spec_from_file_location(f"_bytegraph_trace_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise TraceCommandError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    sys.path.insert(0, str(path.resolve().parent))  # so the script can import its neighbours
    spec.loader.exec_module(module)
    function = module
    for part in name.split("."):
        if not hasattr(function, part):
            raise TraceCommandError(f"{path} has no {name!r}")
        function = getattr(function, part)
    if not callable(function):
        raise TraceCommandError(f"{name!r} in {path} is not callable")
    return module, function


def evaluate_arguments(expression: str, module) -> tuple:
    import torch

    scope = dict(vars(module))
    scope["torch"] = torch
    try:
        value = eval(expression, scope)
    except Exception as error:
        raise TraceCommandError(f"--args {expression!r} failed: {type(error).__name__}: {error}") from error
    return value if isinstance(value, tuple) else (value,)


def tracer():
    import bytegraph

    trace = getattr(bytegraph, "trace", None)
    if trace is None:
        raise TraceCommandError(
            "bytegraph.trace is not available in this build: the tracer is not wired to the viewer yet"
        )
    return trace


def run(options) -> int:
    wanted = {kind: getattr(options, kind) for kind in OUTPUTS if getattr(options, kind)}
    if not wanted:
        raise TraceCommandError("nothing to write: give at least one of --html, --beamer, --org")
    trace_function = tracer()
    module, function = load_function(options.target)
    arguments = evaluate_arguments(options.args, module)
    trace = trace_function(function, *arguments)
    missing = [method for method in OUTPUTS.values() if not callable(getattr(trace, method, None))]
    if missing:
        raise TraceCommandError(f"bytegraph.trace returned {type(trace).__name__}, which cannot be rendered")
    steps = sum(len(frame.steps) for frame in trace.frames)
    for kind, path in wanted.items():
        getattr(trace, OUTPUTS[kind])(path)
        print(f"wrote {path} ({len(trace.frames)} frames, {steps} steps)")
    return 0


def main(options) -> int:
    try:
        return run(options)
    except TraceCommandError as error:
        print(f"bytegraph trace: error: {error}", file=sys.stderr)
        return 2
