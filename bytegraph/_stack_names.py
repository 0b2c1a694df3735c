"""What a resume function's stack arguments hold, in the user's words.

A resume function takes the value stack of the frame it continues as arguments named
`___stack<i>`, and guards name them `L['___stack0']`. Users never wrote those names: in
user-facing text (recompile reasons, guard listings, explain) each is shown as what it is,
"the value of `x * 2` on the stack at line 7".

The expression is found in the user's source: the instruction the resume function continues
at has source positions; the syntax node with those positions, and the operands already
evaluated on the way to it, are the values on the stack (Python evaluates operands left to
right, each leaving one value). A description is given only when that count matches the
stack's values exactly; otherwise the text says "a value on the stack at line N".
"""

import ast
import dis
import functools
import linecache
import re

from bytegraph._extension import _C
from bytegraph._readable_code import line_at

_STACK_SOURCE = re.compile(r"L\['___stack(\d+)'\]")


@functools.lru_cache(maxsize=64)
def _parsed(filename, text):
    try:
        return ast.parse(text, filename)
    except SyntaxError:
        return None


def _tree(code):
    lines = linecache.getlines(code.co_filename)
    return _parsed(code.co_filename, "".join(lines)) if lines else None, lines


def _segment(lines, node):
    return ast.get_source_segment("".join(lines), node) or ast.unparse(node)


def _evaluated(node):
    """`node`'s children that are on the stack when `node` itself is computed, in order."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call):
        return [node.func, *node.args, *(keyword.value for keyword in node.keywords)]
    if isinstance(node, ast.Subscript):
        return [node.value, node.slice]
    if isinstance(node, (ast.Attribute, ast.UnaryOp)):
        return [node.value if isinstance(node, ast.Attribute) else node.operand]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, (ast.Return, ast.Expr, ast.Assign, ast.AugAssign)):
        return [node.value] if node.value is not None else []
    return []


def _parents(tree):
    parents = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    return parents


def _node_at(tree, positions):
    key = (positions.lineno, positions.col_offset, positions.end_lineno, positions.end_col_offset)
    found = None
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) is None:
            continue
        if (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset) == key:
            found = node  # the innermost node with these positions (walk is breadth-first)
    return found


def _stack_expressions(code, offset):
    """[(kind, node)] for the stack at `offset` of `code`, bottom first; None if unknown."""
    tree, lines = _tree(code)
    if tree is None:
        return None, lines
    instruction = next((i for i in dis.get_instructions(code) if i.offset == offset), None)
    if instruction is None or instruction.positions is None or instruction.positions.lineno is None:
        return None, lines
    node = _node_at(tree, instruction.positions)
    if node is None:
        return None, lines
    parents = _parents(tree)
    if instruction.opname.startswith(("POP_JUMP", "JUMP_IF")) or instruction.opname == "POP_TOP":
        # The condition about to be tested; the value of an expression statement, discarded.
        top = [node.value if isinstance(node, ast.Expr) else node]
    elif isinstance(getattr(node, "ctx", None), ast.Store):
        owner = parents.get(node)
        top = [owner.value] if isinstance(owner, (ast.Assign, ast.AnnAssign)) and owner.value else []
        node = owner if owner is not None else node
    else:
        top = _evaluated(node)
    pending = []
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(parent, ast.For) and child in parent.body:
            pending.append([("iter", parent.iter)])
        elif isinstance(parent, ast.With) and child in parent.body:
            pending.append([("context", item.context_expr) for item in parent.items])
        elif isinstance(parent, ast.expr) or isinstance(parent, (ast.Return, ast.Expr, ast.Assign)):
            siblings = _evaluated(parent)
            if child in siblings:
                pending.append([("value", sibling) for sibling in siblings[:siblings.index(child)]])
        child, parent = parent, parents.get(parent)
    slots = [slot for level in reversed(pending) for slot in level] + [("value", n) for n in top]
    return slots, lines


@functools.lru_cache(maxsize=256)
def stack_descriptions(code):
    """{argument name: description} for the `___stack<i>` arguments of resume function `code`."""
    continuation = _C.codegen.resume_continuation(code)
    if continuation is None:
        return {}
    original, offset, kinds = continuation
    line = line_at(original, offset)
    where = f"on the stack at line {line}" if line is not None else "on the stack"
    positions = [i for i, kind in enumerate(kinds) if kind in ("value", "iter", "list_iter")]
    slots, lines = _stack_expressions(original, offset)
    # Context slots are not arguments; the others match the stack's non-NULL values in order.
    if slots is not None:
        slots = [slot for slot in slots if slot[0] != "context"]
    descriptions = {}
    matched = slots is not None and len(slots) == len(positions)
    for k, position in enumerate(positions):
        name = f"___stack{position}"
        if matched:
            kind, node = slots[k]
            text = _segment(lines, node)
            noun = "the iterator over" if kind == "iter" else "the value of"
            if kinds[position] == "list_iter":
                noun = "the list and index of the loop over"
            descriptions[name] = f"{noun} `{text}` {where}"
        else:
            descriptions[name] = f"a value {where} (position {position})"
    return descriptions


def readable(text, code):
    """`text` with each `L['___stack<i>']` of resume function `code` replaced by what it is."""
    if "___stack" not in text:
        return text
    descriptions = stack_descriptions(code)
    if not descriptions:
        return text

    def describe(match):
        return descriptions.get(f"___stack{match.group(1)}", match.group(0))

    return _STACK_SOURCE.sub(describe, text)


def reset():
    stack_descriptions.cache_clear()
