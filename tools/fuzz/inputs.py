"""The function's parameters and the input sets it is called with.

A program is called once per input set, in order, on the same compiled function, so the
sets are chosen to cross guards: another batch size (a recompile, then dynamic shapes, then
a reuse of the dynamic entry), float64 instead of float32, negated values (the other side
of `x.sum() > 0`), another int, another flag, another object. Inputs are made by the
program's own `make_inputs(variant)` so a saved program is self-contained.
"""

import dataclasses

from tools.fuzz.scope import BOOL, BOX, DICT, INT, LIST, TENSOR, TUPLE, Var
from tools.fuzz.shapes import COL, FULL, KINDS, ROW, SCALAR

SHAPE_OF = {FULL: "batch, F", ROW: "F", COL: "batch, 1", SCALAR: ""}

# (batch, dtype, sign, n, flag): the first is the base; the others each change something.
BASE = (3, "torch.float32", 1.0, 2, True)
CHANGES = (
    (3, "torch.float32", 1.0, 2, True),  # new values only
    (3, "torch.float32", -1.0, 2, True),
    (5, "torch.float32", 1.0, 2, True),
    (7, "torch.float32", -1.0, 2, True),
    (4, "torch.float32", 1.0, 3, False),
    (3, "torch.float64", 1.0, 2, True),
    (3, "torch.float32", 1.0, 1, True),
    (2, "torch.float32", 1.0, 4, False),
    (1, "torch.float32", 1.0, 2, True),
)


@dataclasses.dataclass
class Param:
    var: Var  # what the function body sees
    make: str  # how make_inputs builds the argument
    star: str = ""  # "*" or "**" for the variadic parameters


def choose_params(g):
    """The parameters of `fn`: always `a`, a full tensor; then a random selection."""
    params = [Param(Var("a", TENSOR, FULL), "tensor(batch, F)")]
    for name in ("b", "c"):
        if g.chance(0.6):
            kind = g.rng.choice(KINDS)
            params.append(Param(Var(name, TENSOR, kind), f"tensor({SHAPE_OF[kind]})"))
    if g.chance(0.5):
        params.append(Param(Var("n", INT), "n"))
    if g.chance(0.3):
        params.append(Param(Var("flag", BOOL), "flag"))
    if g.chance(0.3):
        kind = g.rng.choice(KINDS)
        params.append(Param(Var("items", LIST, kind, length=2),
                            f"[tensor({SHAPE_OF[kind]}), tensor({SHAPE_OF[kind]})]"))
    if g.chance(0.25):
        kind = g.rng.choice(KINDS)
        params.append(Param(Var("opts", DICT, kind, keys=("a", "b")),
                            f'{{"a": tensor({SHAPE_OF[kind]}), "b": tensor({SHAPE_OF[kind]})}}'))
    if g.chance(0.3):
        params.append(Param(Var("box", BOX), "Box(1.0 + 0.5 * variant, flag)"))
    if g.chance(0.2):
        kind = g.rng.choice(KINDS)
        params.append(Param(Var("rest", TUPLE, items=(kind,) * 2),
                            f"(tensor({SHAPE_OF[kind]}), tensor({SHAPE_OF[kind]}))", star="*"))
    if g.chance(0.2):
        params.append(Param(Var("extra", DICT, None, keys=("mode", "scale")),
                            '{"mode": "sum" if flag else "max", "scale": 0.5 * (variant + 1)}', star="**"))
    return params


def choose_variants(g):
    count = g.rng.randint(2, 4)
    return [BASE] + [g.rng.choice(CHANGES) for _ in range(count)]


def signature(params):
    return ", ".join(p.star + p.var.name for p in params)


def render(params, variants, requires_grad):
    rows = "\n".join(f"    ({b}, {d}, {s}, {n}, {f})," for b, d, s, n, f in variants)
    positional = [p.make for p in params if p.star == ""]
    rest = next((p.make for p in params if p.star == "*"), None)
    extra = next((p.make for p in params if p.star == "**"), "{}")
    args = "(" + "".join(f"{m}, " for m in positional) + ")"
    if rest:
        args = f"{args} + {rest}"
    return (
        "# batch, dtype, sign, n, flag\n"
        f"VARIANTS = [\n{rows}\n]\n\n\n"
        "def make_inputs(variant):\n"
        "    batch, dtype, sign, n, flag = VARIANTS[variant]\n"
        "    generator = torch.Generator().manual_seed(variant)\n\n"
        "    def tensor(*shape):\n"
        "        values = torch.randn(shape, generator=generator) * sign\n"
        f"        return values.to(dtype).requires_grad_({requires_grad})\n\n"
        f"    return {args}, {extra}\n"
    )
