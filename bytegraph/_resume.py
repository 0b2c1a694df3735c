"""Resume functions: where a frame split at a graph break continues.

A resume function is a code object made from the ORIGINAL code (csrc/codegen/resume_function.h):
its arguments are the value stack (NULLs left out) and the live locals at the continuation,
its prologue rebuilds the stack and jumps to the continuation's offset. They are cached per
(original code, offset, stack shape, live locals), so recompiles and repeated breaks reuse
them, and a resume function that breaks again gets its own continuation built from the
original code too (its offsets are mapped back first).
"""

import itertools
import logging

from bytegraph._extension import _C

bytecode_log = logging.getLogger("bytegraph.bytecode")

_names = itertools.count()
# (original code, offset, stack slot kinds, live locals) -> resume code
_cache = {}
# resume code -> (original code, {offset in resume code: offset in original})
_origins = {}


def origin(code):
    """(original code, offset map or None) for `code`: itself unless it is a resume function."""
    return _origins.get(code, (code, None))


def is_resume_code(code):
    return code in _origins


def original_offset(code, offset):
    """The original code's offset of the instruction at `offset` in `code`."""
    original, offsets = origin(code)
    return offset if offsets is None else offsets[offset]


def resume_code_for(code, offset, stack, live_locals):
    """The resume function continuing `code` (an original or a resume code) at `offset`;
    `stack` gives each slot's kind there ('value', 'null' or 'iter')."""
    original, _ = origin(code)
    at = original_offset(code, offset)
    key = (original, at, tuple(stack), tuple(live_locals))
    cached = _cache.get(key)
    if cached is not None:
        return cached
    name = f"__resume_at_{at}_{next(_names)}"
    resume, offsets = _C.codegen.make_resume_code(original, at, list(key[2]), list(key[3]), name)
    _cache[key] = resume
    _origins[resume] = (original, offsets)
    if bytecode_log.isEnabledFor(logging.INFO):
        from bytegraph.bytecode import dis

        bytecode_log.info("RESUME FUNCTION %s (%s)\n%s", name, original.co_qualname, dis(resume))
    return resume


def cached_count():
    """How many resume functions exist (tests check this stays bounded)."""
    return len(_cache)


def reset():
    _cache.clear()
    _origins.clear()
