"""The variables a generated program can use at the point being written, with their types.

The generator only writes well-typed code: each variable has a type (`tensor`, `int`,
`list`, ...) and, for tensors and containers of tensors, a shape kind (see shapes.py).
Inside a block (if/for/while/try/def) a child scope is used: names defined there are
forgotten when the block ends, since they may be unbound after it, and names from outside
may be rebound only to a value of the same type and kind, so what follows the block can
rely on them whichever way the block went.
"""

import dataclasses

TENSOR, INT, FLOAT, BOOL, LIST, DICT, TUPLE, SIZE, MAX_RESULT, BOX, NET, STR = (
    "tensor", "int", "float", "bool", "list", "dict", "tuple", "size", "max_result", "box", "net", "str")


@dataclasses.dataclass
class Var:
    name: str
    type: str
    kind: str = None  # tensors: their shape kind; lists/dicts: their elements' kind
    length: int = 0  # lists: the fewest elements it can have here
    keys: tuple = ()  # dicts: keys it certainly has here
    items: tuple = ()  # tuples: the kinds of its tensors


class Scope:
    def __init__(self, variables=None, outer=frozenset()):
        self.vars = dict(variables or {})
        self.outer = outer  # names bound outside the current block

    def child(self):
        return Scope({name: dataclasses.replace(var) for name, var in self.vars.items()}, frozenset(self.vars))

    def add(self, var):
        self.vars[var.name] = var
        return var

    def of_type(self, type_, kind=None):
        return [v for v in self.vars.values() if v.type == type_ and (kind is None or v.kind == kind)]

    def tensors(self, kind=None):
        return self.of_type(TENSOR, kind)

    def can_bind(self, name, type_, kind=None):
        """May `name` be (re)bound here to a value of this type and kind?"""
        if name not in self.vars or name not in self.outer:
            return True
        old = self.vars[name]
        return old.type == type_ and old.kind == kind

    def names(self):
        return set(self.vars)
