"""Callables held in state, for the --mutate-state mode: in a dict, a list, a class attribute
or a global, swapped for another between calls (torch functions, torch.nn.functional's
Python functions, operator's builtins, len and sum, functools.partial, lambdas, a module
instance, a type).

A guard on the container (its length, its keys) does not cover which callable it holds, so
each holder is a case of its own. Each maker returns a state_piece.Piece.
"""

from tools.fuzz import state_values
from tools.fuzz.state_piece import Piece

# signature: (the pool of callables, the call in fn (`{c}` the callable, `{v}` the value))
SIGNATURES = {
    "unary": (state_values.UNARY, ("{v} = {c}(a)", "{v} = {c}(a * 2) + a")),
    "binary": (state_values.BINARY, ("{v} = {c}(a, a * 0.5)", "{v} = {c}(a.relu(), a)")),
    "reducer": (state_values.REDUCERS, ("{v} = a * {c}([1.5, 2.0, 3.0])", "{v} = a + {c}([0.5, -1.0])")),
    "cast": (state_values.CASTS, ("{v} = a * {c}(1.5)", "{v} = a + {c}(-2.5)")),
    "factory": (state_values.FACTORIES, ("{v} = a + {c}(F)", "{v} = a * {c}(F).float()")),
}
HOLDERS = ("dict", "list", "class", "global")


def callable_swapped(sg):
    holder, signature = sg.choice(HOLDERS), sg.choice(list(SIGNATURES))
    pool, calls = SIGNATURES[signature]
    old = sg.choice(pool)
    new = state_values.other(sg.rng, pool, old)
    value = sg.fresh("v")
    rebinds = ()
    if holder == "dict":
        name = sg.fresh("OPS")
        setup = f'{name} = {{"op": {old}, "unused": len}}\n'
        slot = f'{name}["op"]'
        mutation = sg.choice((f"{slot} = {new}", f"{name}.update(op={new})"))
    elif holder == "list":
        name = sg.fresh("CHAIN")
        setup = f"{name} = [{old}]\n"
        slot = f"{name}[0]"
        mutation = sg.choice((f"{slot} = {new}", f"{name}.insert(0, {new})"))
    elif holder == "class":
        name = sg.fresh("Ops")
        # Read through the class: a Python function there is not bound as a method.
        setup = f"class {name}:\n    op = {old}\n"
        slot = f"{name}.op"
        mutation = sg.choice((f"{slot} = {new}", f'setattr({name}, "op", {new})'))
    else:
        name = sg.fresh("OP")
        setup = f"{name} = {old}\n"
        slot = name
        mutation = f"{name} = {new}"
        rebinds = (name,)
    reads = [sg.choice(calls).format(c=slot, v=value)]
    return Piece(f"callable_in_{holder}_swapped", setup, reads, value, [mutation], rebinds=rebinds)


MAKERS = [(5, callable_swapped)]
