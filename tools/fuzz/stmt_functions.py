"""Functions: closures over locals (read and `nonlocal` write), lambdas, local generators,
calls with *args/**kwargs, the preamble's helpers (variadic, generator, higher-order,
global-writing), functools.partial, and the function's own *rest/**extra."""

from tools.fuzz import scalar_exprs, tensor_exprs
from tools.fuzz.scope import DICT, INT, LIST, TENSOR, Var
from tools.fuzz.shapes import KINDS, broadcast


def closure(g):
    """A nested def reading a captured tensor (a cell) and maybe a captured int."""
    captured = g.rng.choice(g.scope.tensors())
    name = g.fresh("inner")
    with g.nested(f"def {name}(t):", in_def=True):
        g.w.line(f"return t * {scalar_exprs.number_expr(g)} + {captured.name}")
    arg = g.rng.choice(g.scope.tensors())
    result = g.fresh("t")
    g.w.line(f"{result} = {name}({arg.name})")
    g.scope.add(Var(result, TENSOR, broadcast(arg.kind, captured.kind)))
    return True


def nonlocal_counter(g):
    total, bump = g.fresh("total"), g.fresh("bump")
    g.w.line(f"{total} = 0")
    with g.nested(f"def {bump}(step):", in_def=True):
        g.w.line(f"nonlocal {total}")
        g.w.line(f"{total} += step")
        g.w.line(f"return {total}")
    g.w.line(f"{bump}({scalar_exprs.int_expr(g)})")
    g.w.line(f"{bump}(1)")
    g.scope.add(Var(total, INT))
    return True


def lambda_call(g):
    fn, result = g.fresh("fn"), g.fresh("t")
    x = g.rng.choice(g.scope.tensors())
    body = g.rng.choice(("t.relu() + 1", "t * 2 - t.mean()", "torch.sin(t) * k", "t.clamp(min=k - 1)"))
    g.w.line(f"{fn} = lambda t, k={scalar_exprs.int_expr(g)}: {body}")
    g.assign(result, ('{f}({x})', 'apply_twice({f}, {x})', '{f}({x}, k=2)'), f=fn, x=x.name)
    g.scope.add(Var(result, TENSOR, x.kind))
    return True


def variadic_call(g):
    """combine(*tensors, scale=..., **extras): star-args from lists, tuples and dicts."""
    kind = g.rng.choice(KINDS)
    result = g.fresh("t")
    lists = [v for v in g.scope.of_type(LIST) if v.kind and v.length >= 1]
    dicts = [v for v in g.scope.of_type(DICT) if v.kind]
    parts = [tensor_exprs.tensor_of_kind(g, kind)]
    kinds = [kind]
    if lists and g.chance(0.5):
        lst = g.rng.choice(lists)
        parts.append(f"*{lst.name}")
        kinds.append(lst.kind)
    if g.chance(0.5):
        parts.append(f"scale={scalar_exprs.number_expr(g)}")
    if dicts and g.chance(0.4):
        d = g.rng.choice(dicts)
        parts.append(f"**{d.name}")
        kinds.append(d.kind)
    elif g.chance(0.3):
        other = g.rng.choice(g.scope.tensors())
        parts.append(f"bias={other.name}")
        kinds.append(other.kind)
    g.w.line(f"{result} = {g.rng.choice(('combine', 'functools.partial(combine, scale=0.5)'))}({', '.join(parts)})")
    g.scope.add(Var(result, TENSOR, broadcast(*kinds)))
    return True


def use_generator(g):
    """The preamble's generator, a local generator or a generator expression, consumed."""
    lists = [v for v in g.scope.of_type(LIST) if v.kind and v.length >= 1]
    if not lists:
        return False
    lst = g.rng.choice(lists)
    result = g.fresh("t")
    choice = g.rng.randrange(4)
    if choice == 0:
        g.w.line(f"{result} = sum(scaled_items({lst.name}, {scalar_exprs.number_expr(g)}))")
    elif choice == 1:
        g.w.line(f"{result} = next(scaled_items({lst.name}, 2))")
    elif choice == 2:
        gen = g.fresh("gen")
        with g.nested(f"def {gen}():", in_def=True):
            with g.nested(f"for e in {lst.name}:"):
                g.w.line(f"yield e + {tensor_exprs.tensor_of_kind(g, lst.kind)}")
        g.assign(result, ('sum({gen}())', 'list({gen}())[-1]', 'max({gen}(), key=lambda e: float(e.sum()))'), gen=gen)
    else:
        g.w.line(f"{result} = sum(e * i for i, e in enumerate({lst.name})) + {lst.name}[0]")
    g.scope.add(Var(result, TENSOR, lst.kind))
    return True


def consume_into_list(g):
    lists = [v for v in g.scope.of_type(LIST) if v.kind and v.length >= 1]
    if not lists:
        return False
    lst = g.rng.choice(lists)
    result = g.fresh("lst")
    g.assign(result, ('list(scaled_items({l}, 1.0))', '[*scaled_items({l}, 0.5)]', 'list(map(torch.relu, {l}))', 'list(filter(lambda e: e.sum() > 0, {l}))'), l=lst.name)
    g.scope.add(Var(result, LIST, lst.kind, length=0))
    return True


def first_positive_call(g):
    kind = g.rng.choice(KINDS)
    result = g.fresh("t")
    args = ", ".join(tensor_exprs.tensor_of_kind(g, kind) for _ in range(2))
    g.w.line(f"{result} = first_positive({args}, default={tensor_exprs.tensor_of_kind(g, kind)})")
    g.scope.add(Var(result, TENSOR, kind))
    return True


def global_writes(g):
    choice = g.rng.randrange(4)
    if choice == 0:
        g.w.line(f"LOG.append({g.rng.choice(('len(LOG)', scalar_exprs.int_expr(g), repr(g.fresh('event'))))})")
    elif choice == 1:
        g.w.line('STATE["calls"] += 1')
    elif choice == 2:
        name = g.fresh("k")
        g.w.line(f"{name} = count_calls()")
        g.scope.add(Var(name, INT))
    else:
        if g.in_nested_def:
            return False
        g.uses_global_count = True
        g.w.line("COUNT += 1")
    return True


def own_varargs(g):
    """The function's own *rest tuple and **extra dict."""
    rest = g.scope.vars.get("rest")
    extra = g.scope.vars.get("extra")
    if rest is None and extra is None:
        return False
    result = g.fresh("t")
    if rest is not None and (extra is None or g.chance(0.5)):
        kind = rest.items[0]
        g.w.line(f"{result} = {g.rng.choice(('sum(rest)', 'combine(*rest)', 'rest[0] * len(rest)', 'rest[-1]'))}")
        g.scope.add(Var(result, TENSOR, kind))
        return True
    x = g.rng.choice(g.scope.tensors())
    g.w.line(f"{result} = {x.name} * extra.get(\"scale\", 1.0)")
    g.scope.add(Var(result, TENSOR, x.kind))
    with g.nested('if extra.get("mode") == "sum":'):
        g.w.line(f"{result} = {result} + {x.name}")
    return True


MAKERS = [
    (3, closure), (1, nonlocal_counter), (2, lambda_call), (2, variadic_call), (2, use_generator),
    (1, consume_into_list), (1, first_positive_call), (2, global_writes), (2, own_varargs),
]
