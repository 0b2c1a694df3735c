"""print(): of sizes, dtypes, ints, flags and container shapes, never of float values
(a backend may round differently in the last place; the values are compared anyway)."""

from tools.fuzz import scalar_exprs
from tools.fuzz.scope import DICT, LIST


def print_values(g):
    t = g.rng.choice(g.scope.tensors()).name
    parts = [repr(g.fresh("p"))]
    options = [f"{t}.shape", f"{t}.dtype", f"{t}.requires_grad", scalar_exprs.int_expr(g), f"type({t}).__name__",
               f"bool({t}.sum() > 0)", f"{t}.dim()", f"tuple({t}.size())", "len(LOG)"]
    lists = g.scope.of_type(LIST)
    dicts = [d for d in g.scope.of_type(DICT) if d.kind is not None]
    if lists:
        options.append(f"len({g.rng.choice(lists).name})")
    if dicts:
        options.append(f"sorted({g.rng.choice(dicts).name})")
    parts += g.rng.sample(options, g.rng.randint(1, 3))
    if g.chance(0.3):
        # The values hold double quotes, never single ones (3.11 f-strings cannot nest quotes).
        g.w.line("print(f'{" + parts[1] + "} / {" + parts[-1] + "}')")
    else:
        ending = g.rng.choice(("", ', sep="|"', ', end=";\\n"'))
        g.w.line(f"print({', '.join(parts)}{ending})")
    return True


MAKERS = [(2, print_values)]
