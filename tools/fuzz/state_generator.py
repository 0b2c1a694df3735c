"""Programs for the --mutate-state mode: a function that reads state kept outside it, and
the changes made to that state between calls. They find missing guards: a compiled function
must return what the original returns on every later call, whatever changed in between.

    program = generate(seed=1, index=42)
    print(program.source)

A program is a module: the state (a user nn.Module, an object, a global, a closure, a class,
callables in a container, torch's global state) with whatever reads it, `fn` (the function
under test, reading every piece of state), one `mutate_<kind>()` per piece, listed in
MUTATIONS in the order they are made, and `make_inputs(variant)` with `VARIANTS`, as in the
default mode (the runner calls with the first input set each time, so only the state
changes). Each piece of state comes from a maker of the state_*.py modules; see
state_runner.py for the calls made and what is compared.

Global torch state a change sets (autocast, default dtype, grad mode, ...) is entered on
`RESTORE`, an ExitStack the runner closes after the program, so programs run in one worker
do not see each other's.
"""

import random

from tools.fuzz import state_callables, state_modules, state_objects, state_torch, tensor_exprs
from tools.fuzz.codewriter import CodeWriter
from tools.fuzz.generator import Program
from tools.fuzz.state_piece import StateGen

MODE = "mutate-state"
MAKERS = state_modules.MAKERS + state_objects.MAKERS + state_callables.MAKERS + state_torch.MAKERS

# Modules imported where the program's text uses them (the shrinker drops unused ones anyway).
_OPTIONAL_IMPORTS = ("dataclasses", "functools", "operator", "types")


def generate(seed, index, max_pieces=3):
    rng = random.Random(f"{seed}:{index}:{MODE}")
    sg = StateGen(rng)
    weights = [weight for weight, _ in MAKERS]
    pieces = [maker(sg) for (_, maker) in rng.choices(MAKERS, weights, k=rng.randint(1, max_pieces))]
    body, uses_graph_break = _function_body(sg, pieces)
    parts = ([p.setup.strip("\n") for p in pieces if p.setup.strip()] + [body.rstrip("\n")]
             + [_mutation(i, p) for i, p in enumerate(pieces)] + [_footer(pieces).rstrip("\n")])
    rest = "\n\n\n".join(parts)
    imports = [name for name in _OPTIONAL_IMPORTS if f"{name}." in rest]
    header = (
        f'"""Generated state-mutation program {index} of seed {seed}: {", ".join(p.kind for p in pieces)}."""\n\n'
        + "".join(f"import {name}\n" for name in ["contextlib"] + imports)
        + "\nimport torch\n" + ("\nimport bytegraph\n" if uses_graph_break else "")
        + f"\nF = {rng.choice((3, 4))}\n"
        "# Global torch state a change sets, entered here; the runner closes it after the program.\n"
        "RESTORE = contextlib.ExitStack()"
    )
    return Program(f"{header}\n\n\n{rest}\n", seed, index, mode=MODE)


def _function_body(sg, pieces):
    """fn: each piece's reads (some moved into a helper, some after a graph break), then a
    random combination of their values; returns the values and the combination."""
    w = CodeWriter(depth=1)
    helpers, values, uses_graph_break = [], [], False
    for position, piece in enumerate(pieces):
        if position and sg.chance(0.2):
            w.line("bytegraph.graph_break()  # what follows is guarded by a resume function")
            uses_graph_break = True
        if sg.chance(0.3):  # read in an inlined function: its guards are installed by the caller's frame
            helper = sg.fresh("read_state")
            lines = [f"def {helper}(a):"] + ["    " + line for line in _lines(piece.reads)]
            lines.append(f"    return {piece.value}")
            helpers.append("\n".join(lines))
            w.line(f"{piece.value} = {helper}(a)")
        else:
            w.lines_of("\n".join(_lines(piece.reads)))
        values.append(piece.value)
    if len(values) > 1 or sg.chance(0.5):
        combined = sg.fresh("t")
        left, right = sg.choice(values), sg.choice(values)
        expression = sg.choice(tensor_exprs.BINARY).format(a=sg.unary(left), b=right)
        w.line(f"{combined} = {expression}")
        values.append(combined)
    w.line(f"return {', '.join(values)}" if len(values) > 1 else f"return {values[0]}")
    text = "".join(h + "\n\n\n" for h in helpers) + "def fn(a):\n" + w.text()
    return text, uses_graph_break


def _lines(lines):
    """Single lines, from items that may hold several (a maker's block)."""
    return [part for line in lines for part in line.splitlines()]


def _mutation(position, piece):
    lines = [f"def {mutation_name(position, piece)}():", f"    torch.manual_seed({position + 1})"]
    if piece.rebinds:
        lines.append(f"    global {', '.join(piece.rebinds)}")
    lines += ["    " + line for line in _lines(piece.mutation)]
    return "\n".join(lines)


def mutation_name(position, piece):
    return f"mutate_{piece.kind}" if position == 0 else f"mutate{position}_{piece.kind}"


def _footer(pieces):
    names = ", ".join(mutation_name(i, p) for i, p in enumerate(pieces))
    return (
        f"# The changes, made in this order between calls.\nMUTATIONS = [{names}]\n\n"
        "# The batch size of each input set: the runner calls with the first one each time.\nVARIANTS = [3]\n\n\n"
        "def make_inputs(variant):\n"
        "    generator = torch.Generator().manual_seed(variant)\n"
        "    return (torch.randn(VARIANTS[variant], F, generator=generator, dtype=torch.float32),), {}\n"
    )
