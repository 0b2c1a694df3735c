"""Resume functions: where a frame split at a graph break continues.

A resume function is a code object made from the ORIGINAL code (csrc/codegen/resume_function.h):
its arguments are the value stack (NULLs left out) and the live locals at the continuation,
its prologue rebuilds the stack and jumps to the continuation's offset. They are cached per
(original code, offset, stack shape, live locals), so recompiles and repeated breaks reuse
them, and a resume function that breaks again gets its own continuation built from the
original code too (its offsets are mapped back first).

A resume function is named after the user's function and the line it continues at,
`foo2 (resumed at line 7)` (co_name; co_qualname carries the qualified name), so tracebacks,
graph-break logs and recompile reasons name the user's code. A second continuation at the
same line gets `#2`, and so on.
"""

import collections
import logging

from bytegraph._extension import _C

bytecode_log = logging.getLogger("bytegraph.bytecode")

# (original code, offset, stack slot kinds, live locals) -> resume code
_cache = {}
# resume code -> (original code, {offset in resume code: offset in original})
_origins = {}
# resume code -> (offset in the original it continues at, stack slot kinds)
_continuations = {}
# (original code, line) -> how many resume functions continue there
_per_line = collections.Counter()


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
    line = line_at(original, at)
    _per_line[original, line] += 1
    suffix = f"resumed at line {line}" if line is not None else f"resumed at offset {at}"
    if _per_line[original, line] > 1:
        suffix += f" #{_per_line[original, line]}"
    name = f"{original.co_name} ({suffix})"
    resume, offsets = _C.codegen.make_resume_code(original, at, list(key[2]), list(key[3]), name)
    resume = resume.replace(co_qualname=f"{original.co_qualname} ({suffix})")
    _cache[key] = resume
    _origins[resume] = (original, offsets)
    _continuations[resume] = (at, key[2])
    if bytecode_log.isEnabledFor(logging.INFO):
        from bytegraph import _readable_code

        bytecode_log.info("RESUME FUNCTION %s\n%s", resume.co_qualname,
                          _readable_code.source_and_original(resume, original))
    return resume


def line_at(code, offset):
    """The source line of the instruction at `offset` in `code` (None if it has none)."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return None


def continuation(code):
    """(original code, offset it continues at, stack slot kinds) for a resume function, else None."""
    if code not in _continuations:
        return None
    at, stack = _continuations[code]
    return _origins[code][0], at, stack


def cached_count():
    """How many resume functions exist (tests check this stays bounded)."""
    return len(_cache)


def reset():
    _cache.clear()
    _origins.clear()
    _continuations.clear()
    _per_line.clear()
