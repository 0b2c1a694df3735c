"""Random small PyTorch programs, as Python source, from a seed.

    program = generate(seed=1, index=42)
    print(program.source)

A program is a module: the preamble (classes, helpers, globals; preamble.py), `fn`, the
function under test, and `make_inputs(variant)` with `VARIANTS`, the input sets it is
called with (inputs.py). The body of `fn` is a random sequence of statements, each written
by a maker from one of the stmt_*.py modules; makers only write well-typed code over the
variables in scope (scope.py), so most programs run without error and those that raise do
so on purpose (and are compared on the exception).
"""

import contextlib
import dataclasses
import itertools
import random

from tools.fuzz import (inputs, preamble, returns, stmt_containers, stmt_control, stmt_exceptions, stmt_functions,
                        stmt_objects, stmt_printing, stmt_tensors)
from tools.fuzz.codewriter import CodeWriter
from tools.fuzz.scope import BOX, NET, Scope, Var

MAKER_GROUPS = (
    stmt_tensors.MAKERS, stmt_control.MAKERS, stmt_containers.MAKERS, stmt_objects.MAKERS,
    stmt_functions.MAKERS, stmt_exceptions.MAKERS, stmt_printing.MAKERS,
)
MAKERS = [maker for group in MAKER_GROUPS for maker in group]


@dataclasses.dataclass
class Program:
    source: str
    seed: int
    index: int
    requires_grad: bool = False
    mode: str = "default"  # or "mutate-state" (state_generator.py): which runner runs it

    @property
    def name(self):
        prefix = "" if self.mode == "default" else "state_"
        return f"{prefix}seed{self.seed}_{self.index:05d}"


class Gen:
    """What the makers write with: the random source, the writer, the scope, and flags."""

    def __init__(self, rng, requires_grad):
        self.rng = rng
        self.grad = requires_grad
        self.w = CodeWriter(depth=1)
        self.scope = Scope()
        self.depth = 0
        self.in_nested_def = False
        self.iterating = set()  # containers a loop walks here: not grown
        self.uses_global_count = False
        self._names = itertools.count()

    def chance(self, probability):
        return self.rng.random() < probability

    def fresh(self, prefix):
        return f"{prefix}{next(self._names)}"

    @contextlib.contextmanager
    def nested(self, header, in_def=False):
        """A block with its own child scope (names bound inside are forgotten after it)."""
        outer_scope, outer_def, outer_iterating = self.scope, self.in_nested_def, set(self.iterating)
        self.scope = outer_scope.child()
        self.depth += 1
        self.in_nested_def = outer_def or in_def
        try:
            with self.w.block(header):
                yield
        finally:
            self.scope, self.in_nested_def, self.iterating = outer_scope, outer_def, outer_iterating
            self.depth -= 1

    def assign(self, name, templates, **values):
        """`name = <one of templates, formatted with values>`."""
        self.w.line(f"{name} = {self.rng.choice(templates).format(**values)}")

    def statement(self):
        weights = [weight for weight, _ in MAKERS]
        while True:
            (_, maker), = self.rng.choices(MAKERS, weights)
            if maker(self):
                return

    def statements(self, count):
        for _ in range(count):
            self.statement()


def generate(seed, index, min_statements=3, max_statements=10):
    rng = random.Random(f"{seed}:{index}")
    requires_grad = rng.random() < 0.2
    g = Gen(rng, requires_grad)
    params = inputs.choose_params(g)
    for param in params:
        g.scope.add(param.var)
    g.scope.add(Var("shared_box", BOX))
    g.scope.add(Var("net", NET))
    g.statements(rng.randint(min_statements, max_statements))
    g.w.line(f"return {returns.return_expr(g)}")
    features = rng.choice((3, 4))
    source = "\n".join((
        f'"""Generated program {index} of seed {seed}."""\n',
        preamble.render(features),
        _function(g, params),
        inputs.render(params, inputs.choose_variants(g), requires_grad),
    ))
    return Program(source, seed, index, requires_grad)


def _function(g, params):
    header = f"\ndef fn({inputs.signature(params)}):\n"
    if g.uses_global_count:
        header += "    global COUNT\n"
    return header + g.w.text() + "\n"
