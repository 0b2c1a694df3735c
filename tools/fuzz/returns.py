"""What the function under test returns: one value or a tuple, list or dict of several of
the values in scope (tensors, ints, sizes, containers, objects, torch.return_types)."""

from tools.fuzz.scope import BOX, DICT, FLOAT, INT, LIST, MAX_RESULT, SIZE, TENSOR, TUPLE

# How likely each type is picked, relative to the others.
WEIGHTS = {TENSOR: 8, INT: 2, FLOAT: 1, SIZE: 2, LIST: 2, DICT: 1, TUPLE: 1, MAX_RESULT: 1, BOX: 1}


def _candidates(g):
    found = []
    for var in g.scope.vars.values():
        if var.type in WEIGHTS and "." not in var.name:
            found += [var.name] * WEIGHTS[var.type]
    return found


def return_expr(g):
    candidates = _candidates(g)
    # Names defined last are favoured: they carry most of the computation.
    recent = [name for name in list(g.scope.vars)[-4:] if name in candidates] or candidates
    count = g.rng.randint(1, 4)
    picked = []
    for _ in range(count):
        pool = recent if g.chance(0.5) else candidates
        name = g.rng.choice(pool)
        if name not in picked:
            picked.append(name)
    if not picked:
        picked = ["a"]
    if len(picked) == 1:
        return picked[0]
    shape = g.rng.choice(("tuple", "tuple", "list", "dict"))
    if shape == "list":
        return "[" + ", ".join(picked) + "]"
    if shape == "dict":
        return "{" + ", ".join(f'"{name}": {name}' for name in picked) + "}"
    return ", ".join(picked)
