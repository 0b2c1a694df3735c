"""Statements on tensors: new values, rebinding, in-place updates, size reads, `.item()`.

In-place statements are left out of programs whose inputs require grad: there an in-place
write to a leaf, or to a value saved for backward, is an error eager and compiled may
report at different moments (torch.compile functionalizes), which is not what is tested.
"""

from tools.fuzz import scalar_exprs, tensor_exprs
from tools.fuzz.scope import FLOAT, INT, MAX_RESULT, SIZE, TENSOR, Var
from tools.fuzz.shapes import COL, FULL, KINDS, SCALAR, fits_into


def new_tensor(g):
    source, kind = tensor_exprs.tensor_expr(g)
    name = g.fresh("t")
    g.w.line(f"{name} = {source}")
    g.scope.add(Var(name, TENSOR, kind))
    return True


def rebind_tensor(g):
    """`x = <expr of x's kind>`: allowed inside blocks too, the kind stays what it was."""
    target = g.rng.choice(g.scope.tensors())
    value = tensor_exprs.tensor_of_kind(g, target.kind)
    if value == target.name:
        return False
    g.w.line(f"{target.name} = {value}")
    return True


def accumulate(g):
    """`x = x + y` / `x += y` with y's kind fitting into x's (`+=` is in place on a tensor)."""
    target = g.rng.choice(g.scope.tensors())
    smaller = [k for k in KINDS if g.scope.tensors(k) and fits_into(k, target.kind)]
    value = tensor_exprs.tensor_of_kind(g, g.rng.choice(smaller))
    op = g.rng.choice(("+", "-", "*"))
    if g.grad or g.chance(0.5):
        g.w.line(f"{target.name} = {target.name} {op} {value}")
    else:
        g.w.line(f"{target.name} {op}= {value}")
    return True


IN_PLACE = (
    "{x}.add_(1)", "{x}.mul_(0.5)", "{x}.clamp_(min=-1.0)", "torch.relu_({x})", "{x}.zero_()", "{x}.neg_()",
    "{x}.masked_fill_({x} > 1, 0.0)", "{x}.sigmoid_()", "{x}.copy_({same})", "{x}.add_({same}, alpha=2)",
    "{x}.sub_({smaller})", "{x}.mul_({smaller})",
)
IN_PLACE_INDEXED = {
    FULL: ("{x}[0] = 1.0", "{x}[:, 0] += 1", "{x}[-1] = {x}[0]", "{x}[{x} > 0] = 0.0", "{x}[:, 1:] *= 2"),
    COL: ("{x}[0] = 2.0", "{x}[:, 0] -= 1"),
    "row": ("{x}[0] = 1.0", "{x}[1:] += 1", "{x}[{x} < 0] = 0.0"),
    SCALAR: ("{x}.fill_(3.0)",),
}


def in_place(g):
    if g.grad:
        return False
    target = g.rng.choice(g.scope.tensors())
    smaller = g.rng.choice([k for k in KINDS if g.scope.tensors(k) and fits_into(k, target.kind)])
    templates = IN_PLACE + IN_PLACE_INDEXED[target.kind]
    template = g.rng.choice(templates)
    values = {"x": target.name}
    if "{same}" in template:
        values["same"] = tensor_exprs.tensor_of_kind(g, target.kind)
    if "{smaller}" in template:
        values["smaller"] = tensor_exprs.tensor_of_kind(g, smaller)
    g.w.line(template.format(**values))
    return True


def view_then_write(g):
    """A view of a tensor written in place: the base (maybe an input) changes too."""
    if g.grad or not g.scope.tensors(FULL):
        return False
    base = tensor_exprs.operand(g, FULL)
    view = g.fresh("v")
    template = g.rng.choice(("{b}[0]", "{b}[:, 0]", "{b}.view(-1)", "{b}.t()", "{b}[1:]", "{b}.diagonal()"))
    g.w.line(f"{view} = {template.format(b=base)}")
    g.w.line(g.rng.choice(("{v}.add_(1.0)", "{v}.mul_(-1)", "{v}.zero_()", "{v}[0] = 5.0")).format(v=view))
    return True


def read_size(g):
    t = g.rng.choice(g.scope.tensors())
    if g.chance(0.5) or t.kind == SCALAR:
        name = g.fresh("shape")
        g.w.line(f"{name} = {t.name}.{g.rng.choice(('shape', 'size()'))}")
        g.scope.add(Var(name, SIZE, t.kind))
        return True
    name = g.fresh("k")
    g.assign(name, ('{t}.shape[0]', '{t}.size(0)', '{t}.shape[-1]', '{t}.numel()'), t=t.name)
    g.scope.add(Var(name, INT))
    return True


def use_size(g):
    """A tensor built from a size read earlier: `torch.zeros(shape)`, `x.view(shape)`."""
    sizes = [s for s in g.scope.of_type(SIZE) if s.kind in (FULL, COL) and g.scope.tensors(s.kind)]
    if not sizes:
        return False
    size = g.rng.choice(sizes)
    x = tensor_exprs.operand(g, size.kind)
    name = g.fresh("t")
    template = g.rng.choice(("torch.zeros({s})", "{x}.reshape(-1).view({s})", "torch.ones({s}[0], {s}[1]) + {x}",
                             "{x}.new_full({s}, 2.0)", "{x}.expand({s})", "torch.empty({s}).fill_(1.0) * {x}"))
    g.w.line(f"{name} = {template.format(s=size.name, x=x)}")
    g.scope.add(Var(name, TENSOR, size.kind))
    return True


def size_arithmetic(g):
    name = g.fresh("k")
    g.w.line(f"{name} = {scalar_exprs.int_expr(g)} {g.rng.choice(('+', '*', '-'))} {scalar_exprs.int_expr(g)}")
    g.scope.add(Var(name, INT))
    return True


def to_python_number(g):
    """`.item()` / `float()` / `int()`: data leaves the graph (a break)."""
    t = g.rng.choice(g.scope.tensors())
    if g.chance(0.5):
        name = g.fresh("f")
        template = g.rng.choice(("{t}.sum().item()", "float({t}.mean())", "{t}.max().item()"))
        g.w.line(f"{name} = {template.format(t=t.name)}")
        g.scope.add(Var(name, FLOAT))
    else:
        name = g.fresh("k")
        g.w.line(f"{name} = int(({t.name} > 0).sum())")
        g.scope.add(Var(name, INT))
    return True


def max_with_indices(g):
    """torch.max(x, dim) returns torch.return_types.max, not a plain tuple."""
    if not g.scope.tensors(FULL):
        return False
    x = tensor_exprs.operand(g, FULL)
    name = g.fresh("mx")
    op = g.rng.choice(("max", "min", "sort", "topk"))
    call = {"max": f"torch.max({x}, dim=-1, keepdim=True)", "min": f"{x}.min(dim=1, keepdim=True)",
            "sort": f"torch.sort({x}, dim=-1)", "topk": f"{x}.topk(1, dim=-1)"}[op]
    g.w.line(f"{name} = {call}")
    g.scope.add(Var(name, MAX_RESULT, FULL if op == "sort" else COL))
    values = g.fresh("t")
    g.assign(values, ('{m}.values', '{m}[0]', '{m}.indices.float() + {m}.values'), m=name)
    g.scope.add(Var(values, TENSOR, FULL if op == "sort" else COL))
    return True


MAKERS = [
    (12, new_tensor), (6, rebind_tensor), (5, accumulate), (4, in_place), (2, view_then_write),
    (3, read_size), (2, use_size), (1, size_arithmetic), (2, to_python_number), (1, max_with_indices),
]
