"""What a maker of the --mutate-state mode writes: one piece of state outside the function
under test, what reads it, and one change made to it between calls (`Piece`); and what it
writes with (`StateGen`: the random source and fresh names)."""

import dataclasses

from tools.fuzz import tensor_exprs


@dataclasses.dataclass
class Piece:
    kind: str  # the change, named as its mutate function is: "parameter_replaced"
    setup: str  # module-level source: the state and the classes or functions reading it
    reads: list  # lines of fn's body reading the state; the last binds `value`
    value: str  # the name bound there: a tensor that broadcasts against the input (batch, F)
    mutation: list  # the statements of the change (run at module level, inside a function)
    rebinds: tuple = ()  # globals the change rebinds (declared `global` in its function)


class StateGen:
    def __init__(self, rng):
        self.rng = rng
        self._count = 0

    def chance(self, probability):
        return self.rng.random() < probability

    def choice(self, options):
        return self.rng.choice(options)

    def fresh(self, prefix):
        self._count += 1
        return f"{prefix}{self._count}"

    def unary(self, x):
        """A random shape-keeping op on `x`, so the graphs around the reads vary."""
        return self.rng.choice(tensor_exprs.SAME_KIND).format(x=x)
