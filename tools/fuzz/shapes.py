"""The shapes a generated tensor can have, and how they combine under broadcasting.

Every tensor of a program has one of four kinds, written against two sizes: the batch B
(changed between input sets, so shapes cross guards and become dynamic) and the feature
size F (fixed per program):

    full    (B, F)
    row     (F,)
    col     (B, 1)
    scalar  ()

Any two kinds broadcast, so a generated binary op is always well-formed; the result's kind
is what `broadcast` says.
"""

FULL, ROW, COL, SCALAR = "full", "row", "col", "scalar"
KINDS = (FULL, ROW, COL, SCALAR)

# Dimensions of each kind: what indexing and reductions may use.
NDIM = {FULL: 2, ROW: 1, COL: 2, SCALAR: 0}


def broadcast(*kinds):
    """The kind of the result of an elementwise op on tensors of these kinds."""
    present = set(kinds) - {SCALAR}
    if not present:
        return SCALAR
    if FULL in present or present == {ROW, COL}:
        return FULL
    (only,) = present
    return only


def fits_into(small, big):
    """True when an op of `big` with `small` gives `big` (`big += small` is valid)."""
    return broadcast(small, big) == big


def shape_text(kind, batch, features):
    """The shape of a kind as source text, given the source of B and F."""
    return {FULL: f"({batch}, {features})", ROW: f"({features},)", COL: f"({batch}, 1)", SCALAR: "()"}[kind]
