"""Control flow: if/elif/else on constants, sizes and tensor values; for and while loops
with break/continue; grad-mode blocks; early returns."""

from tools.fuzz import returns, scalar_exprs
from tools.fuzz.scope import DICT, INT, LIST, TENSOR, Var

MAX_DEPTH = 2


def _body(g, low=1, high=3):
    g.statements(g.rng.randint(low, high))


def if_else(g):
    if g.depth >= MAX_DEPTH:
        return False
    with g.nested(f"if {scalar_exprs.condition(g)}:"):
        _body(g)
    if g.chance(0.2):
        with g.nested(f"elif {scalar_exprs.condition(g)}:"):
            _body(g)
    if g.chance(0.5):
        with g.nested("else:"):
            _body(g)
    return True


def for_range(g):
    if g.depth >= MAX_DEPTH:
        return False
    index = g.fresh("i")
    bound = g.rng.choice((str(g.rng.randint(1, 3)), f"min({scalar_exprs.int_expr(g)}, 3)"))
    with g.nested(f"for {index} in range({bound}):"):
        g.scope.add(Var(index, INT))
        _body(g)
        _maybe_break(g)
    return True


def for_each(g):
    """Over a list (plain, enumerate, reversed, zip) or a dict's items."""
    if g.depth >= MAX_DEPTH:
        return False
    lists = [v for v in g.scope.of_type(LIST) if v.kind is not None]
    dicts = [v for v in g.scope.of_type(DICT) if v.kind is not None]
    if not lists and not dicts:
        return False
    item = g.fresh("item")
    if lists and (not dicts or g.chance(0.7)):
        lst = g.rng.choice(lists)
        header, names = g.rng.choice((
            (f"for {item} in {lst.name}:", [item]),
            (f"for {item}_index, {item} in enumerate({lst.name}):", [item]),
            (f"for {item} in reversed({lst.name}):", [item]),
            (f"for {item}, {item}_twin in zip({lst.name}, {lst.name}[1:]):", [item, item + "_twin"]),
        ))
        container, kind = lst.name, lst.kind
    else:
        d = g.rng.choice(dicts)
        header, names = f"for {item}_key, {item} in {d.name}.items():", [item]
        container, kind = d.name, d.kind
    with g.nested(header):
        g.iterating.add(container)
        for name in names:
            g.scope.add(Var(name, TENSOR, kind))
        _body(g)
        _maybe_break(g)
        g.iterating.discard(container)
    return True


def while_loop(g):
    """Always ends: the counter is bumped first and bounded by a constant."""
    if g.depth >= MAX_DEPTH:
        return False
    counter = g.fresh("step")
    g.w.line(f"{counter} = 0")
    g.scope.add(Var(counter, INT))
    with g.nested(f"while {counter} < {g.rng.randint(1, 4)} and ({scalar_exprs.condition(g)}):"):
        g.w.line(f"{counter} += 1")
        _body(g)
    return True


def _maybe_break(g):
    if g.chance(0.25):
        with g.nested(f"if {scalar_exprs.condition(g)}:"):
            g.w.line(g.rng.choice(("break", "continue")))


def grad_mode(g):
    if g.depth >= MAX_DEPTH:
        return False
    with g.nested(g.rng.choice(("with torch.no_grad():", "with torch.enable_grad():",
                                "with torch.set_grad_enabled(False):"))):
        _body(g)
    return True


def early_return(g):
    """`if <cond>: return ...` in the function under test (not in a nested def)."""
    if g.depth >= MAX_DEPTH or g.in_nested_def:
        return False
    with g.nested(f"if {scalar_exprs.condition(g)}:"):
        g.w.line(f"return {returns.return_expr(g)}")
    return True


MAKERS = [(6, if_else), (4, for_range), (3, for_each), (2, while_loop), (1, grad_mode), (1, early_return)]
