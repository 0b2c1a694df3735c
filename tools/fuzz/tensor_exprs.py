"""Tensor expressions: elementwise ops, broadcasting, reductions, views and shape reads.

Each maker returns (source, kind) for an expression over variables in scope, or None when
the scope lacks what it needs. `tensor_expr(g)` builds any tensor expression,
`tensor_of_kind(g, kind)` one of a given shape kind (used where the kind matters: list
elements, in-place updates, loop accumulators).
"""

from tools.fuzz import scalar_exprs
from tools.fuzz.scope import NET
from tools.fuzz.shapes import COL, FULL, KINDS, ROW, SCALAR, broadcast

# Same kind in, same kind out. `{x}` is the operand.
SAME_KIND = (
    "torch.relu({x})", "{x}.sigmoid()", "torch.tanh({x})", "{x}.sin()", "torch.cos({x})", "{x}.abs()",
    "-{x}", "{x} * 2", "{x} + 1", "{x} - 0.5", "{x} ** 2", "torch.clamp({x}, -1.0, 1.0)",
    "torch.nn.functional.gelu({x})", "{x}.clone()", "{x}.neg()", "torch.where({x} > 0, {x}, {x} * 0.1)",
    "{x}.clamp(-3, 3).exp()", "torch.sqrt({x}.abs() + 1)", "{x}.float()", "{x}.double()",
    "{x}.to(torch.float32)", "{x}.detach()", "torch.square({x})", "{x}.sign()",
)
SAME_KIND_NOT_SCALAR = (
    "{x}.softmax(-1)", "torch.cumsum({x}, -1)", "{x}.flip(-1)", "{x}.unsqueeze(0).squeeze(0)",
    "{x}.contiguous()", "torch.nn.functional.normalize({x}, dim=-1)",
)
# Views and size reads: under dynamic shapes these go through symbolic sizes.
SAME_KIND_FULL = (
    "{x}.view({x}.shape[0], -1)", "{x}.reshape(-1).view({x}.shape)", "{x}.t().t()",
    "torch.cat([{x}, {x}], 0)[:{x}.shape[0]]", "{x}.transpose(0, 1).contiguous().transpose(0, 1)",
    "{x}.new_ones({x}.shape) * {x}", "{x}[torch.arange({x}.size(0))]", "{x}.unflatten(-1, (1, -1)).flatten(1)",
    "torch.stack([{x}, {x}]).sum(0)", "{x}.split(1, dim=0)[0].expand_as({x})",
)
# (template, kind in, kind out)
CHANGE_KIND = (
    ("{x}.sum(0)", FULL, ROW), ("{x}.mean(0)", FULL, ROW), ("{x}.amax(0)", FULL, ROW), ("{x}[0]", FULL, ROW),
    ("{x}[-1]", FULL, ROW), ("{x}.sum(1, keepdim=True)", FULL, COL), ("{x}.mean(-1, keepdim=True)", FULL, COL),
    ("{x}[:, :1]", FULL, COL), ("{x}[:, -1:]", FULL, COL), ("{x}.sum()", FULL, SCALAR), ("{x}.norm()", FULL, SCALAR),
    ("{x}.max()", FULL, SCALAR), ("{x}[0, 0]", FULL, SCALAR), ("torch.max({x}, dim=-1, keepdim=True).values", FULL, COL),
    ("{x}.sum()", ROW, SCALAR), ("{x}.mean()", ROW, SCALAR), ("{x}[0]", ROW, SCALAR), ("{x}.min()", ROW, SCALAR),
    ("{x}.sum()", COL, SCALAR), ("{x}[0, 0]", COL, SCALAR), ("{x}.amax()", COL, SCALAR),
    ("{x} * torch.ones(F)", SCALAR, ROW), ("{x}.expand(F)", SCALAR, ROW), ("{x}.reshape(1, 1)[:, :1].squeeze()", SCALAR, SCALAR),
    ("{x} * torch.ones({x}.shape[0], F)", COL, FULL), ("{x}.expand(-1, F)", COL, FULL),
    ("torch.arange({x}.shape[0]).float().unsqueeze(1)", FULL, COL),
    ("torch.zeros({x}.shape[0], 1, dtype={x}.dtype)", FULL, COL), ("{x}.new_zeros({x}.shape[0], F)", FULL, FULL),
)
BINARY = (
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b}.abs() + 1)", "torch.maximum({a}, {b})",
    "torch.minimum({a}, {b})", "torch.add({a}, {b}, alpha=0.5)", "torch.where({a} > {b}, {a}, {b})",
    "torch.atan2({a}, {b})", "{a} * {b}.sigmoid()",
)
WITH_NUMBER = ("{x} * {n}", "{x} + {n}", "{x} / ({n} + 1)", "{n} - {x}", "torch.mul({x}, {n})")


def operand(g, kind=None):
    """A tensor variable in scope (of `kind` if given), or None."""
    found = g.scope.tensors(kind)
    return g.rng.choice(found).name if found else None


def same_kind(g, kind):
    x = operand(g, kind)
    if x is None:
        return None
    templates = SAME_KIND
    if kind != SCALAR:
        templates += SAME_KIND_NOT_SCALAR
    if kind == FULL:
        templates += SAME_KIND_FULL
    return g.rng.choice(templates).format(x=x), kind


def change_kind(g, kind_out=None):
    options = [(t, k_in, k_out) for t, k_in, k_out in CHANGE_KIND
               if (kind_out is None or k_out == kind_out) and g.scope.tensors(k_in)]
    if not options:
        return None
    template, k_in, k_out = g.rng.choice(options)
    return template.format(x=operand(g, k_in)), k_out


def binary(g, kind_out=None):
    pairs = [(a, b) for a in KINDS for b in KINDS
             if g.scope.tensors(a) and g.scope.tensors(b) and (kind_out is None or broadcast(a, b) == kind_out)]
    if not pairs:
        return None
    ka, kb = g.rng.choice(pairs)
    return g.rng.choice(BINARY).format(a=operand(g, ka), b=operand(g, kb)), broadcast(ka, kb)


def with_number(g, kind=None):
    x = operand(g, kind)
    if x is None:
        return None
    number = scalar_exprs.number_expr(g)
    found_kind = kind or g.scope.vars[x].kind
    return g.rng.choice(WITH_NUMBER).format(x=x, n=number), found_kind


def module_call(g, kind=None):
    """The global nn.Module, its submodule or its weights applied to a full or row tensor."""
    nets = g.scope.of_type(NET)
    kinds = [k for k in (FULL, ROW) if (kind is None or k == kind) and g.scope.tensors(k)]
    if not nets or not kinds:
        return None
    net, k = g.rng.choice(nets).name, g.rng.choice(kinds)
    x = operand(g, k)
    # The weights are float32: x.float() keeps float64 input sets from a dtype mismatch.
    template = g.rng.choice(("{m}({x})", "{m}.linear({x}.float())", "{x}.float() @ {m}.linear.weight.t()",
                             "{m}({x}) + {m}.offset",
                             "torch.nn.functional.linear({x}.float(), {m}.linear.weight, {m}.linear.bias)"))
    return template.format(m=net, x=x), k


def tensor_of_kind(g, kind, depth=0):
    """An expression of exactly this kind; always succeeds (a full tensor is always in scope)."""
    makers = [same_kind, change_kind, binary, with_number, module_call]
    g.rng.shuffle(makers)
    if depth == 0 and g.scope.tensors(kind) and g.chance(0.3):
        return operand(g, kind)
    for maker in makers:
        made = maker(g, kind)
        if made is not None:
            return made[0]
    # From the full tensor every program has.
    full = operand(g, FULL)
    return {FULL: f"{full}.clone()", ROW: f"{full}.sum(0)", COL: f"{full}[:, :1]", SCALAR: f"{full}.sum()"}[kind]


def tensor_expr(g):
    """Any tensor expression; returns (source, kind)."""
    makers = [same_kind, same_kind, change_kind, binary, binary, with_number, module_call]
    while True:
        maker = g.rng.choice(makers)
        kind = g.rng.choice(KINDS) if maker in (same_kind,) else None
        made = maker(g, kind)
        if made is not None:
            return made
