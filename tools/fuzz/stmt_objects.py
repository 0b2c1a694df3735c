"""Attribute access on user objects (Box) and on the nn.Module (Net): reads, method and
property calls, writes, new and deleted attributes, module calls and parameter walks.

`shared_box` and `net` are globals, so what the function does to them carries over from
one call to the next, eager and compiled alike."""

from tools.fuzz import scalar_exprs, tensor_exprs
from tools.fuzz.scope import BOX, FLOAT, INT, NET, TENSOR, Var
from tools.fuzz.shapes import FULL, ROW, SCALAR


def _box(g):
    return g.rng.choice(g.scope.of_type(BOX)).name


def _net(g):
    return g.rng.choice(g.scope.of_type(NET)).name


def read_box(g):
    box = _box(g)
    if g.chance(0.5):
        name = g.fresh("f")
        g.assign(name, ('{b}.scale', '{b}.double_scale', 'getattr({b}, "scale", 1.0)'), b=box)
        g.scope.add(Var(name, FLOAT))
        return True
    x = g.rng.choice(g.scope.tensors())
    name = g.fresh("t")
    g.assign(name, ('{b}.scaled({x})', '{x} * {b}.scale', 'Box.scaled({b}, {x})'), b=box, x=x.name)
    g.scope.add(Var(name, TENSOR, x.kind))
    return True


def write_box(g):
    box = _box(g)
    g.w.line(g.rng.choice((
        "{b}.count += 1", "{b}.bump()", "{b}.bump(step={k})", "{b}.scale = {b}.scale * 0.5",
        "{b}.flag = not {b}.flag", "{b}.items.append({x})", "{b}.extra = {x}", 'setattr({b}, "tag", {k})',
        "{b}.scale = {f}",
    )).format(b=box, x=tensor_exprs.operand(g), k=scalar_exprs.int_expr(g), f=scalar_exprs.float_expr(g)))
    return True


def delete_attribute(g):
    box = _box(g)
    with g.nested(f'if hasattr({box}, "extra"):'):
        g.w.line(f"del {box}.extra")
    return True


def new_box(g):
    name = g.fresh("obj")
    g.w.line(f"{name} = Box({scalar_exprs.float_expr(g)}, {g.rng.choice(('True', 'False'))})")
    g.scope.add(Var(name, BOX))
    return True


def call_net(g):
    kinds = [k for k in (FULL, ROW) if g.scope.tensors(k)]
    net = _net(g)
    kind = g.rng.choice(kinds)
    name = g.fresh("h")
    template = g.rng.choice(("{m}({x})", "{m}.forward({x})", "{m}.linear({x}.float()).relu()", "{m}({m}({x}))"))
    g.w.line(f"{name} = {template.format(m=net, x=tensor_exprs.operand(g, kind))}")
    g.scope.add(Var(name, TENSOR, kind))
    return True


def read_net(g):
    net = _net(g)
    choice = g.rng.randrange(4)
    if choice == 0:
        name = g.fresh("k")
        g.assign(name, ('{m}.calls', 'sum(p.numel() for p in {m}.parameters())', 'len(list({m}.children()))'), m=net)
        g.scope.add(Var(name, INT))
        return True
    name = g.fresh("t")
    if choice == 1:
        g.assign(name, ('{m}.offset', '{m}.linear.bias', '{m}.linear.weight.sum(0)'), m=net)
        g.scope.add(Var(name, TENSOR, ROW))
        return True
    if choice == 2:
        g.w.line(f"{name} = sum(p.sum() for p in {net}.parameters())")
        g.scope.add(Var(name, TENSOR, SCALAR))
        return True
    g.w.line(f"{name} = {tensor_exprs.operand(g, ROW) or net + '.offset'} * {net}.gain")
    g.scope.add(Var(name, TENSOR, ROW))
    return True


def write_net(g):
    net = _net(g)
    g.w.line(g.rng.choice(("{m}.calls += 1", "{m}.gain = {m}.gain * 0.5", "{m}.train({m}.training)",
                           "{m}.gain = {f}")).format(m=net, f=scalar_exprs.float_expr(g)))
    return True


def named_walk(g):
    """A loop over named parameters or buffers adding into an accumulator."""
    if g.depth >= 2:
        return False
    net = _net(g)
    acc = g.fresh("acc")
    g.w.line(f"{acc} = 0.0")
    walk = g.rng.choice(("named_parameters()", "named_buffers()", "state_dict().items()"))
    with g.nested(f"for name, value in {net}.{walk}:"):
        with g.nested('if "weight" not in name:'):
            g.w.line(f"{acc} = {acc} + value.sum()")
    g.scope.add(Var(acc, TENSOR, SCALAR))  # every walk reaches at least one tensor
    return True


MAKERS = [
    (2, read_box), (2, write_box), (1, delete_attribute), (1, new_box), (3, call_net), (2, read_net),
    (1, write_net), (1, named_walk),
]
