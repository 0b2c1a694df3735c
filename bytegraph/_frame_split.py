"""How a frame is split at a graph break: what generated code rebuilds, which resume functions
it calls, and when the frame must run eagerly instead (docs/graph-breaks.md).

`plan_split(code, info)` takes the code being replaced (an original or a resume function) and
the trace's `graph_break` description, and returns a `Split`, or a string saying why the frame
cannot be split exactly.
"""

import dataclasses

import torch

from bytegraph import _bridge, _resume
from bytegraph._extension import _C
from bytegraph.bytecode import decode


@dataclasses.dataclass
class Split:
    stack: list  # plans, bottom first (loop iterators as tuples, grad-mode exits as EnterContext)
    locals: dict  # {name: plan}: the live locals
    resumes: list  # per continuation: (resume code, stack slot kinds, locals passed)
    cells: dict  # {name: plan}: the contents of the frame's cell variables
    restore_grad_mode: tuple = None  # (torch._C._set_grad_enabled, mode outside) inside grad-mode blocks


def plan_split(code, info):
    if not info["restorable"]:
        return info["not_restorable"]
    stack, locals_plan = list(info["stack_plan"]), dict(info["locals_plan"])
    grad_blocks = _open_grad_mode_blocks(code, info)
    site = _C.codegen.break_site(code, info["offset"], bool(grad_blocks))
    why = _why_not_split(code, info, site)
    if why is not None:
        return why
    restore_grad_mode = None
    if grad_blocks:
        restore_grad_mode = (torch._C._set_grad_enabled, stack[grad_blocks[0]].previous)
        _enter_grad_mode_blocks_again(stack, grad_blocks, info["grad_enabled"])
    kinds = _stack_kinds(stack, site)
    resumes = []
    for offset, pops, pushes in site["continuations"]:
        slots = kinds[:len(stack) - pops] + ["value"] * pushes
        live = set(_C.codegen.live_locals(code, offset))
        names = [name for name in locals_plan if name in live]
        names = _keep_instance_first(code, names, locals_plan)
        resumes.append((_resume.resume_code_for(code, offset, slots, names), slots, names))
    return Split(stack, locals_plan, resumes, dict(info["cells_plan"]), restore_grad_mode)


def _keep_instance_first(code, names, locals_plan):
    """Zero-argument super() reads the instance from the frame's first slot and the class from
    the `__class__` cell: a resume function of such code takes the original's first argument
    first, whether or not liveness sees it used."""
    if "__class__" not in code.co_freevars or code.co_argcount == 0:
        return names
    first = code.co_varnames[0]
    if first not in locals_plan:
        return names
    return [first] + [name for name in names if name != first]


_UNSPLITTABLE_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


def _why_not_split(code, info, site):
    """Why the frame cannot be split exactly at this break (None when it can)."""
    if code.co_flags & _UNSPLITTABLE_FLAGS:
        return "generators and coroutines are not split"
    if not site["splittable"]:
        return site["reason"]
    if _resume.is_resume_code(code) and _C.codegen.inside_loop(code, info["offset"]):
        # Its continuation would be itself (or another resume function of the same loop),
        # nesting one call per iteration: the loop's remaining iterations run eagerly.
        return "a break inside a loop of a resume function is not split again"
    return None


def _open_grad_mode_blocks(code, info):
    """Stack positions of the exits of the grad-mode `with` blocks open at the break, when the
    handlers protecting the breaking instruction are exactly those blocks' cleanups (one per
    block, innermost first, nothing around them); else None (an empty list: no handler)."""
    stack = info["stack_plan"]
    exits = [i for i, plan in enumerate(stack) if isinstance(plan, _bridge.GradModeExit)]
    instructions = decode(code)
    position = {id(inst): i for i, inst in enumerate(instructions)}
    entry = next(inst for inst in instructions if inst.offset == info["offset"]).exn_tab_entry
    for exit_position in reversed(exits):
        if entry is None or entry.depth != exit_position + 1:
            return None
        handler = entry.target
        following = position[id(handler)] + 1
        if handler.opname != "PUSH_EXC_INFO" or following >= len(instructions) or \
                instructions[following].opname != "WITH_EXCEPT_START" or handler.exn_tab_entry is None:
            return None
        # The cleanup's own handler (COPY, POP_EXCEPT, RERAISE) is protected by the next block out.
        entry = handler.exn_tab_entry.target.exn_tab_entry
    return exits if entry is None else None


def _enter_grad_mode_blocks_again(stack, exits, grad_enabled):
    """Replaces the blocks' exits by plans that enter the same modes again (outermost first)."""
    for k, exit_position in enumerate(exits):
        inside = stack[exits[k + 1]].previous if k + 1 < len(exits) else grad_enabled
        stack[exit_position] = _bridge.EnterContext(torch.enable_grad if inside else torch.no_grad)


def _stack_kinds(stack, site):
    """Each stack slot's kind for the resume functions; a loop iterator that the breaking
    instruction does not consume is passed on as the tuple of its remaining items (the
    resume function's prologue calls iter() on it), so the resumed loop can be traced."""
    untouched = len(stack) - max((pops for _, pops, _ in site["continuations"]), default=len(stack))
    kinds = []
    for i, plan in enumerate(stack):
        if isinstance(plan, _bridge.Null):
            kinds.append("null")
        elif isinstance(plan, _bridge.EnterContext):
            kinds.append(("context", plan.cls))
        elif isinstance(plan, _bridge.Iterator) and i < untouched:
            stack[i] = tuple(plan.items)
            kinds.append("iter")
        else:
            kinds.append("value")
    return kinds
