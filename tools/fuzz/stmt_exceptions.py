"""Exceptions: raised and caught (user, Python and torch errors, some raised by a graph op
only when it runs), try/except/else/finally, uncaught raises that end the call after side
effects, and names left unbound on one path (a local and a closure cell) then read."""

import contextlib

from tools.fuzz import scalar_exprs, tensor_exprs
from tools.fuzz.scope import LIST

# Statements that raise; `{x}` a tensor, `{l}` a list. The second item is what to catch.
RAISING = (
    ('raise FuzzError("planned")', "FuzzError"),
    ("{x} + torch.ones(F + 3)", "RuntimeError"),  # a shape mismatch the tracer sees
    ("{l}[10]", "IndexError"),
    ('{{"a": 1}}["missing"]', "KeyError"),
    ('int("not a number")', "ValueError"),
    ("1 // ({k} - {k})", "ZeroDivisionError"),
    ("{x}.view(-1, 7, 13)", "RuntimeError"),
    ("{x}.item()", "RuntimeError"),  # more than one element, except for a scalar
)
# Raised by the kernel only when the op runs (the tracer's fake tensors cannot tell): rarer,
# since bytegraph loses these inside try blocks (known_bugs.py), which would hide the rest.
RAISING_WHEN_RUN = (
    ("{x}[torch.tensor([F * 10])]", "IndexError"),
    ("torch.linalg.inv(torch.zeros(2, 2))", "RuntimeError"),
)


def _raising_statement(g):
    template, caught = g.rng.choice(RAISING_WHEN_RUN if g.chance(0.05) else RAISING)
    lists = [v.name for v in g.scope.of_type(LIST)]
    text = template.format(x=tensor_exprs.operand(g), l=g.rng.choice(lists) if lists else "[]",
                           k=scalar_exprs.int_expr(g))
    return text, caught


def try_except(g):
    if g.depth >= 2:
        return False
    statement, caught = _raising_statement(g)
    handler = g.rng.choice((caught, "Exception", f"({caught}, TypeError)"))
    with g.nested("try:"):
        g.statements(g.rng.randint(0, 2))
        with g.nested(f"if {scalar_exprs.condition(g)}:") if g.chance(0.5) else contextlib.nullcontext():
            g.w.line(statement)
        g.statements(g.rng.randint(0, 1))
    with g.nested(f"except {handler} as error:"):
        g.w.line(g.rng.choice(("print(type(error).__name__)", "LOG.append(type(error).__name__)",
                               "STATE[\"calls\"] += 1")))
        g.statements(g.rng.randint(0, 1))
    if g.chance(0.2):
        with g.nested("else:"):
            g.statements(1)
    if g.chance(0.3):
        with g.nested("finally:"):
            g.w.line('LOG.append("finally")')
    return True


def uncaught_raise(g):
    """Side effects, then (for some inputs) an exception out of the function."""
    if g.in_nested_def:
        return False
    g.w.line(f"LOG.append({scalar_exprs.int_expr(g)})")
    statement, _ = _raising_statement(g)
    with g.nested(f"if {scalar_exprs.condition(g)}:"):
        g.w.line(statement)
    return True


def unbound_local(g):
    """A local bound on one path only, read on both: UnboundLocalError on the other."""
    if g.depth >= 2:
        return False
    name = g.fresh("maybe")
    x = g.rng.choice(g.scope.tensors())
    with g.nested(f"if {scalar_exprs.condition(g)}:"):
        g.w.line(f"{name} = {x.name} * 2")
    with g.nested("try:"):
        g.w.line(f"{x.name} = {x.name} + {name}" if g.chance(0.5) else f"print({name}.shape)")
    with g.nested("except NameError as error:"):
        g.w.line("print(type(error).__name__)")
    return True


def unbound_cell(g):
    """The same with a cell: read in the function (UnboundLocalError) and in a closure
    (NameError: free variable referenced before assignment)."""
    if g.depth >= 2:
        return False
    name, reader = g.fresh("cell"), g.fresh("read")
    x = g.rng.choice(g.scope.tensors())
    with g.nested(f"if {scalar_exprs.condition(g)}:"):
        g.w.line(f"{name} = {x.name} + 1")
    with g.nested(f"def {reader}():", in_def=True):
        g.w.line(f"return {name}")
    for read in (f"{reader}()", name):
        with g.nested("try:"):
            g.w.line(f"{x.name} = {x.name} * {read}.sum()" if g.chance(0.5) else f"LOG.append({read}.shape)")
        with g.nested("except NameError as error:"):
            g.w.line("print(type(error).__name__)")
    return True


def side_effect_then_failing_op(g):
    """Mutations right before a graph op that raises at run time, caught by the caller."""
    if g.depth >= 2:
        return False
    x = tensor_exprs.operand(g)
    lists = [v for v in g.scope.of_type(LIST) if v.kind and v.name not in g.iterating]
    with g.nested("try:"):
        g.w.line('STATE["calls"] += 1')
        if lists:
            lst = g.rng.choice(lists)
            g.w.line(f"{lst.name}.append({tensor_exprs.tensor_of_kind(g, lst.kind)})")
        if not g.grad:
            g.w.line(f"{x}.add_(1)")
        g.w.line(f"{g.fresh('t')} = {x}[torch.tensor([F * 10])] + 1")
    with g.nested("except IndexError:"):
        g.w.line('LOG.append("index error")')
    return True


MAKERS = [(3, try_except), (1, uncaught_raise), (1, unbound_local), (1, unbound_cell),
           (0.2, side_effect_then_failing_op)]  # rare: a known bug (known_bugs.py)
