"""Lists, dicts and tuples of tensors: building, reading, mutating, iterating while mutating.

A list's or dict's elements all have one shape kind. Statements that remove elements run
only outside blocks (where the generator knows how many are left); a container being
iterated is not grown, except by the guarded append of `append_while_iterating`.
"""

from tools.fuzz import scalar_exprs, tensor_exprs
from tools.fuzz.scope import DICT, INT, LIST, TENSOR, TUPLE, Var
from tools.fuzz.shapes import FULL, KINDS, ROW

KEYS = ("a", "b", "c", "d")


def _lists(g, min_length=0, growable=False):
    return [v for v in g.scope.of_type(LIST) if v.kind is not None and v.length >= min_length
            and not (growable and v.name in g.iterating)]


def _dicts(g, growable=False):
    return [v for v in g.scope.of_type(DICT) if v.kind is not None and not (growable and v.name in g.iterating)]


def new_list(g):
    kind = g.rng.choice(KINDS)
    count = g.rng.randint(1, 3)
    name = g.fresh("lst")
    g.w.line(f"{name} = [{', '.join(tensor_exprs.tensor_of_kind(g, kind) for _ in range(count))}]")
    g.scope.add(Var(name, LIST, kind, length=count))
    return True


def list_comprehension(g):
    lists = _lists(g)
    name = g.fresh("lst")
    if lists and g.chance(0.6):
        src = g.rng.choice(lists)
        op = g.rng.choice(("{t} * 2", "{t}.relu()", "{t} + 1", "torch.sin({t})"))
        cond = g.rng.choice(("", "", " if {t}.sum() > 0", " if {t}.dim() >= 0"))
        g.w.line(f"{name} = [{op.format(t='e')} for e in {src.name}{cond.format(t='e')}]")
        g.scope.add(Var(name, LIST, src.kind, length=0 if cond else src.length))
        return True
    full = tensor_exprs.operand(g, FULL)
    g.w.line(f"{name} = [{full}[i] * i for i in range({full}.shape[0])]")
    g.scope.add(Var(name, LIST, ROW, length=1))
    return True


def grow_list(g):
    lists = _lists(g, growable=True)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    value = tensor_exprs.tensor_of_kind(g, lst.kind)
    template = g.rng.choice(("{l}.append({v})", "{l}.insert(0, {v})", "{l}.extend([{v}, {v}])", "{l} += [{v}]",
                             "{l}[len({l}):] = [{v}]"))
    g.w.line(template.format(l=lst.name, v=value))
    if g.depth == 0:
        lst.length += 1
    return True


def change_list(g):
    """Writes that keep the length: item assignment, reverse, sort by a key."""
    lists = _lists(g, min_length=1)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    template = g.rng.choice(("{l}[0] = {v}", "{l}[-1] = {v}", "{l}.reverse()", "{l}.sort(key=lambda e: float(e.sum()))",
                             "{l}[:1] = [{v}]"))
    g.w.line(template.format(l=lst.name, v=tensor_exprs.tensor_of_kind(g, lst.kind)))
    return True


def shrink_list(g):
    if g.depth > 0:
        return False
    lists = _lists(g, min_length=2)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    g.w.line(g.rng.choice(("{l}.pop()", "{l}.pop(0)", "del {l}[0]", "{l}.remove({l}[-1])")).format(l=lst.name))
    lst.length -= 1
    return True


def read_list(g):
    lists = _lists(g, min_length=1)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    name = g.fresh("t")
    template = g.rng.choice(("{l}[0]", "{l}[-1]", "sum({l})", "torch.stack({l}).sum(0)", "torch.stack({l}).mean(0)",
                             "{l}[len({l}) // 2]", "max({l}, key=lambda e: float(e.sum()))", "sum({l}[1:], {l}[0])"))
    g.w.line(f"{name} = {template.format(l=lst.name)}")
    g.scope.add(Var(name, TENSOR, lst.kind))
    return True


def copy_list(g):
    lists = _lists(g)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    name = g.fresh("lst")
    template, shorter = g.rng.choice((("{l}[1:]", 1), ("list({l})", 0), ("{l}.copy()", 0), ("{l} + {l}", 0),
                                      ("{l}[::-1]", 0), ("[*{l}]", 0), ("sorted({l}, key=lambda e: e.shape[0])", 0)))
    g.w.line(f"{name} = {template.format(l=lst.name)}")
    g.scope.add(Var(name, LIST, lst.kind, length=max(lst.length - shorter, 0)))
    return True


def append_while_iterating(g):
    """A list grown while a for loop walks it: the loop sees the new items."""
    if g.depth >= 2:
        return False
    lists = _lists(g, min_length=1, growable=True)
    if not lists:
        return False
    lst = g.rng.choice(lists)
    item = g.fresh("item")
    limit = lst.length + g.rng.randint(1, 3)
    with g.nested(f"for {item} in {lst.name}:"):
        with g.nested(f"if len({lst.name}) < {limit}:"):
            g.w.line(f"{lst.name}.append({item} * 0.5)")
    return True


def new_dict(g):
    kind = g.rng.choice(KINDS)
    keys = g.rng.sample(KEYS, g.rng.randint(1, 3))
    name = g.fresh("d")
    values = [tensor_exprs.tensor_of_kind(g, kind) for _ in keys]
    if g.chance(0.8):
        g.w.line(f"{name} = {{" + ", ".join(f'"{k}": {v}' for k, v in zip(keys, values)) + "}")
    else:
        g.w.line(f"{name} = dict(" + ", ".join(f"{k}={v}" for k, v in zip(keys, values)) + ")")
    g.scope.add(Var(name, DICT, kind, keys=tuple(keys)))
    return True


def write_dict(g):
    dicts = _dicts(g, growable=True)
    if not dicts:
        return False
    d = g.rng.choice(dicts)
    key = g.rng.choice(KEYS + ("extra",))
    value = tensor_exprs.tensor_of_kind(g, d.kind)
    template = g.rng.choice(('{d}["{k}"] = {v}', '{d}.update({k}={v})', '{d}.setdefault("{k}", {v})',
                             '{d} |= {{"{k}": {v}}}'))
    g.w.line(template.format(d=d.name, k=key, v=value))
    if g.depth == 0 and "setdefault" not in template and key not in d.keys:
        d.keys += (key,)
    return True


def remove_from_dict(g):
    if g.depth > 0:
        return False
    dicts = [d for d in _dicts(g) if d.keys]
    if not dicts:
        return False
    d = g.rng.choice(dicts)
    key = g.rng.choice(d.keys)
    if g.chance(0.5):
        g.w.line(f'del {d.name}["{key}"]')
    else:
        name = g.fresh("t")
        g.w.line(f'{name} = {d.name}.pop("{key}")')
        g.scope.add(Var(name, TENSOR, d.kind))
    d.keys = tuple(k for k in d.keys if k != key)
    return True


def read_dict(g):
    dicts = _dicts(g)
    if not dicts:
        return False
    d = g.rng.choice(dicts)
    name = g.fresh("t")
    default = tensor_exprs.tensor_of_kind(g, d.kind)
    options = [f'{d.name}.get("{g.rng.choice(KEYS)}", {default})']
    if d.keys:
        options += [f'{d.name}["{g.rng.choice(d.keys)}"]', f"sum({d.name}.values())",
                    f"torch.stack(list({d.name}.values())).sum(0)", f"{d.name}[sorted({d.name})[0]]"]
    g.w.line(f"{name} = {g.rng.choice(options)}")
    g.scope.add(Var(name, TENSOR, d.kind))
    return True


def dict_comprehension(g):
    dicts = _dicts(g)
    if not dicts:
        return False
    d = g.rng.choice(dicts)
    name = g.fresh("d")
    g.w.line(g.rng.choice((
        "{n} = {{k: v * 2 for k, v in {d}.items()}}", "{n} = {{k + '_x': v.relu() for k, v in {d}.items() if k != 'a'}}",
        "{n} = dict(sorted({d}.items(), reverse=True))", "{n} = {{**{d}, 'z': list({d}.values())[0]}}",
    )).format(n=name, d=d.name))
    g.scope.add(Var(name, DICT, d.kind, keys=()))
    return True


def make_tuple(g):
    tensors = g.scope.tensors()
    picked = g.rng.sample(tensors, min(len(tensors), g.rng.randint(2, 3)))
    name = g.fresh("tup")
    g.w.line(f"{name} = ({', '.join(v.name for v in picked)},)")
    g.scope.add(Var(name, TUPLE, items=tuple(v.kind for v in picked)))
    return True


def unpack(g):
    tuples = [v for v in g.scope.of_type(TUPLE) if v.items]
    lists = _lists(g, min_length=1)
    if tuples and (not lists or g.chance(0.6)):
        tup = g.rng.choice(tuples)
        names = [g.fresh("u") for _ in tup.items]
        g.w.line(f"{', '.join(names)} = {tup.name}")
        for name, kind in zip(names, tup.items):
            g.scope.add(Var(name, TENSOR, kind))
        return True
    if not lists:
        return False
    lst = g.rng.choice(lists)
    head, tail = g.fresh("head"), g.fresh("tail")
    g.w.line(f"{head}, *{tail} = {lst.name}")
    g.scope.add(Var(head, TENSOR, lst.kind))
    g.scope.add(Var(tail, LIST, lst.kind, length=lst.length - 1))
    return True


def length(g):
    containers = _lists(g) + _dicts(g) + g.scope.of_type(TUPLE)
    if not containers:
        return False
    name = g.fresh("k")
    g.w.line(f"{name} = len({g.rng.choice(containers).name})")
    g.scope.add(Var(name, INT))
    return True


def int_list(g):
    name = g.fresh("sizes")
    g.w.line(f"{name} = [{scalar_exprs.int_expr(g)}, {scalar_exprs.int_expr(g)}]")
    k = g.fresh("k")
    g.assign(k, ('sum({s})', 'max({s})', '{s}[0] + {s}[-1]', 'len({s} * 2)'), s=name)
    g.scope.add(Var(k, INT))
    return True


MAKERS = [
    (3, new_list), (2, list_comprehension), (3, grow_list), (2, change_list), (1, shrink_list), (3, read_list),
    (1, copy_list), (1, append_while_iterating), (2, new_dict), (2, write_dict), (1, remove_from_dict),
    (2, read_dict), (1, dict_comprehension), (1, make_tuple), (2, unpack), (1, length), (1, int_list),
]
