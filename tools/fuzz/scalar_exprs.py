"""Python values: ints, floats and the conditions of ifs and whiles.

Ints come from constants, int arguments, sizes (`x.shape[0]`, symbolic under dynamic
shapes), lengths and object attributes; conditions test constants, sizes, dtypes, object
state and tensor values (`x.sum() > 0`, a data-dependent branch: a graph break).
"""

from tools.fuzz.scope import BOOL, BOX, DICT, FLOAT, INT, LIST, NET, TENSOR


def _name(g, type_):
    found = g.scope.of_type(type_)
    return g.rng.choice(found).name if found else None


def int_expr(g):
    """A small non-negative int."""
    options = [lambda: str(g.rng.randint(0, 4))]
    n, t, lst, box = _name(g, INT), _name(g, TENSOR), _name(g, LIST), _name(g, BOX)
    if n:
        options += [lambda: n, lambda: f"({n} + 1)", lambda: f"({n} % 3)", lambda: f"max({n}, 1)"]
    if t:
        options += [lambda: f"{t}.shape[0]", lambda: f"{t}.dim()", lambda: f"len({t}.shape)", lambda: f"{t}.ndim"]
        if g.scope.vars[t].kind in ("full", "col"):
            options += [lambda: f"{t}.size(0)", lambda: f"({t}.shape[0] // 2)"]
    if lst:
        options.append(lambda: f"len({lst})")
    if box:
        options.append(lambda: f"{box}.count")
    options.append(lambda: 'STATE["calls"]')
    return g.rng.choice(options)()


def float_expr(g):
    options = [lambda: g.rng.choice(("0.5", "1.5", "-2.0", "0.25"))]
    box = _name(g, BOX)
    f = _name(g, FLOAT)
    if box:
        options += [lambda: f"{box}.scale", lambda: f"{box}.double_scale"]
    if f:
        options += [lambda: f, lambda: f"({f} * 0.5)"]
    return g.rng.choice(options)()


def number_expr(g):
    return int_expr(g) if g.chance(0.5) else float_expr(g)


def tensor_condition(g):
    """A condition on tensor values: eager and compiled must take the same branch."""
    t = _name(g, TENSOR)
    return g.rng.choice((
        "{t}.sum() > 0", "({t} > 0).any()", "{t}.max() > 1", "bool({t}.mean() < 0)", "{t}.sum().item() > 0",
        "({t} > 0).all()", "float({t}.min()) < -0.5", "torch.all({t} < 3)",
    )).format(t=t)


def static_condition(g):
    """A condition the compiler folds to a constant and guards on."""
    options = [lambda: f"{int_expr(g)} > {g.rng.randint(0, 4)}", lambda: f"{int_expr(g)} % 2 == 0"]
    t, u = _name(g, TENSOR), _name(g, TENSOR)
    lst, d, box, net, flag = _name(g, LIST), _name(g, DICT), _name(g, BOX), _name(g, NET), _name(g, BOOL)
    options += [
        lambda: f"{t}.shape[0] > 3", lambda: f"{t}.dtype == torch.float64", lambda: f"{t}.is_floating_point()",
        lambda: f"type({t}) is torch.Tensor", lambda: f"isinstance({t}, torch.Tensor)", lambda: f"{t}.requires_grad",
        lambda: f"{t}.shape == {u}.shape", lambda: f"{t}.dim() == 2", lambda: f"{t}.numel() > 10",
        lambda: "torch.is_grad_enabled()", lambda: 'STATE["calls"] > 2',
    ]
    if lst:
        options += [lambda: f"len({lst}) > 2", lambda: f"bool({lst})"]
    if d:
        key = g.rng.choice(("a", "b", "c", "extra"))
        options += [lambda: f'"{key}" in {d}', lambda: f"len({d}) >= 2"]
    if box:
        options += [lambda: f"{box}.flag", lambda: f'hasattr({box}, "extra")', lambda: f"{box}.count > 1",
                    lambda: f"{box}.scale > 1.0"]
    if net:
        options.append(lambda: f"{net}.training")
    if flag:
        options += [lambda: flag, lambda: f"not {flag}"]
    return g.rng.choice(options)()


def condition(g):
    if g.chance(0.15):
        joiner = g.rng.choice((" and ", " or "))
        return f"({static_condition(g)}){joiner}({condition_one(g)})"
    return condition_one(g)


def condition_one(g):
    return tensor_condition(g) if g.chance(0.4) else static_condition(g)
