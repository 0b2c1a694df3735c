"""Generated code as Python source, next to the user's original.

What bytegraph generates (the code that calls a compiled graph, the resume functions after a
graph break) is bytecode. People read source, so the logs, explain() and the demo show it
decompiled by depyf (a maintained decompiler on PyPI). Where depyf is not installed or cannot
decompile a code object (it does not know CPython 3.13's bytecode yet), the text is the
disassembly instead, said so in its first line: the degradation is visible, never silent.

Constants that have no literal form (a compiled graph, a function) are shown by name:
`__compiled_fn_3(a, b)` instead of depyf's `'__co_consts[5]'(a, b)`.
"""

import contextlib
import linecache
import re
import signal
import threading
import weakref

from bytegraph import _graph_failure, bytecode

# compiled graph callable -> the graph's name ("__compiled_fn_3")
_constant_names = weakref.WeakKeyDictionary()
_CONSTANT_REFERENCE = re.compile(r"'__co_consts\[(\d+)\]'")


def name_constant(obj, name):
    """Show `obj` as `name` where generated code refers to it."""
    try:
        _constant_names[obj] = name
    except TypeError:  # not weak-referenceable: keep depyf's reference
        pass


def _constant_name(code, index):
    if index >= len(code.co_consts):
        return None
    constant = code.co_consts[index]
    try:
        name = _constant_names.get(constant)
    except TypeError:
        name = None
    if name is not None:
        return name
    name = getattr(constant, "__qualname__", None) or getattr(constant, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else None


# Seconds depyf may take on one code object. It can loop on unusual control flow (a resume
# function entering an exception handler's cleanup), so it runs under a timer, which only the
# main thread can set: elsewhere, or while the program uses the timer itself, the disassembly
# is shown instead.
DECOMPILE_SECONDS = 2.0
_decompiled = weakref.WeakKeyDictionary()


class _TookTooLong(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds):
    def expire(signum, frame):
        raise _TookTooLong()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _can_time_limit():
    return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))


def _decompile(code):
    try:
        return _decompiled[code]
    except (KeyError, TypeError):
        pass
    text = _decompile_now(code)
    try:
        _decompiled[code] = text
    except TypeError:
        pass
    return text


def _decompile_now(code):
    if not _can_time_limit():
        return None
    try:
        from depyf.decompiler import Decompiler
    except ImportError:
        return None
    try:
        with _time_limit(DECOMPILE_SECONDS):
            shown, fallback = _without_eager_fallback(code)
            text = Decompiler(_with_resume_stubs(shown)).decompile(overwite_fn_name=identifier(code.co_name))
    except (Exception, _TookTooLong):  # depyf does not handle this bytecode: show the disassembly
        return None

    def named(match):
        name = _constant_name(code, int(match.group(1)))
        return name if name is not None else match.group(0)

    text = _CONSTANT_REFERENCE.sub(named, text)
    if fallback:
        text = _note_eager_fallback(text)
    return _call_resume_functions_by_name(text).rstrip()


# Generated code catches an exception of its graph call and runs the original bytecode from
# its start (bytegraph/_graph_failure.py): a handler and a copy of the original that no
# decompiler reads as Python. The code is shown without them, and a comment says so.
_GRAPH_CALL_LINE = re.compile(r"^(?P<indent>[ \t]*).*__compiled_fn_\d+\(.*$", re.MULTILINE)


def _without_eager_fallback(code):
    """(code, whether it had the fallback): `code` cut before the fallback's handler."""
    if _graph_failure.FAILURE_LOCAL not in code.co_varnames:
        return code, False
    instructions = bytecode.decode(code)
    handler = next((inst for inst in instructions
                    if inst.opname == "STORE_FAST" and inst.argval == _graph_failure.FAILURE_LOCAL), None)
    if handler is None:
        return code, False
    kept = instructions[:instructions.index(handler)]
    for inst in kept:
        if inst.exn_tab_entry is not None and inst.exn_tab_entry.target is handler:
            inst.exn_tab_entry = None
    return bytecode.assemble(kept, like=code), True


def _note_eager_fallback(text):
    def note(match):
        return (match.group(0) + "\n" + match.group("indent")
                + "# (if this raises, the original code runs uncompiled from its start instead)")

    return _GRAPH_CALL_LINE.sub(note, text, count=1)


def identifier(text):
    """`text` as a Python identifier: a resume function's "foo2 (resumed at line 7)" reads
    `foo2_resumed_at_line_7` where source needs a name."""
    if text.isidentifier():
        return text
    return re.sub(r"\W+", "_", text).strip("_") or "generated"


# Generated code makes each resume function from its code constant and calls it; decompiled,
# that is a nested `def __temp_N(...)` repeating the resume function's whole body. The
# constants are swapped for stubs whose body names the function, and the nested definitions
# become calls by name (each resume function is shown on its own).
# A stub returns a global named after the resume function: a name decompiles the same way on
# every version (a string constant does not: 3.12's RETURN_CONST loses its quotes in depyf).
_STUB_MARK = "__bytegraph_resume__"
_NESTED_STUB = re.compile(
    r"^(?P<indent>[ \t]*)def (?P<temp>\w+)\([^)]*\):\n[ \t]*return " + re.escape(_STUB_MARK)
    + r"(?P<name>\w+)\n(?:[ \t]*\n)*", re.MULTILINE)


def _with_resume_stubs(code):
    from bytegraph._extension import _C

    constants = list(code.co_consts)
    changed = False
    for i, constant in enumerate(constants):
        if hasattr(constant, "co_code") and _C.codegen.is_resume_code(constant):
            arguments = ", ".join(constant.co_varnames[:constant.co_argcount])
            name = identifier(constant.co_name)
            source = f"def {name}({arguments}):\n    return {_STUB_MARK + name}\n"
            constants[i] = next(c for c in compile(source, "<stub>", "exec").co_consts if hasattr(c, "co_code"))
            changed = True
    return code.replace(co_consts=tuple(constants)) if changed else code


def _call_resume_functions_by_name(text):
    renames = {}

    def drop(match):
        renames[match.group("temp")] = match.group("name")
        return ""

    text = _NESTED_STUB.sub(drop, text)
    for temp, name in renames.items():
        text = re.sub(rf"\b{re.escape(temp)}\(", f"{name}(", text)
    if renames:  # the blank lines depyf put around the nested definitions
        text = re.sub(r"\n(?:[ \t]*\n)+", "\n", text)
    return text


def original_code(code):
    """The user's code a resume function continues (`code` itself for any other code)."""
    from bytegraph._extension import _C

    origin = _C.codegen.resume_origin(code)
    return origin[0] if origin is not None else code


def line_at(code, offset):
    """The source line of the instruction at `offset` in `code` (None if it has none)."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return None


def _probe(x):
    if x:
        return x + 1
    return None


_reads_this_interpreter = None


def decompiler_reads_this_interpreter() -> bool:
    """Whether generated code can be shown as source here: depyf is installed and reads this
    interpreter's bytecode (depyf 0.20 stops at CPython 3.12; 3.13 gets the disassembly)."""
    global _reads_this_interpreter
    if _reads_this_interpreter is None:
        if not _can_time_limit():
            return False  # depyf only runs under a timer, which only the main thread can set
        _reads_this_interpreter = _decompile_now(_probe.__code__) is not None
    return _reads_this_interpreter


def python_source(code):
    """(text, is_source): `code` decompiled to Python, or its disassembly when that fails."""
    text = _decompile(code)
    if text is not None:
        return text, True
    return "# (disassembly: this code could not be decompiled here)\n" + bytecode.dis(code).rstrip(), False


def original_source(code):
    """The user's source lines of `code` from its file, or its decompiled form."""
    lines = _file_lines(code)
    if lines:
        return "\n".join(lines)
    return python_source(code)[0]


def _file_lines(code):
    first = code.co_firstlineno
    all_lines = linecache.getlines(code.co_filename)
    if not all_lines or first > len(all_lines):
        return []
    last = max((line for _, _, line in code.co_lines() if line is not None), default=first)
    chunk = [line.rstrip("\n") for line in all_lines[first - 1:last]]
    indent = min((len(line) - len(line.lstrip()) for line in chunk if line.strip()), default=0)
    return [line[indent:] for line in chunk]


def side_by_side(left_title, left, right_title, right, width=56):
    """Two texts as columns `left | right`; long left lines are cut at `width`."""
    left_lines = [left_title, "-" * len(left_title), *left.splitlines()]
    right_lines = [right_title, "-" * len(right_title), *right.splitlines()]
    column = min(width, max(len(line) for line in left_lines))
    rows = []
    for i in range(max(len(left_lines), len(right_lines))):
        a = left_lines[i] if i < len(left_lines) else ""
        b = right_lines[i] if i < len(right_lines) else ""
        if len(a) > column:
            a = a[:column - 1] + "…"
        rows.append(f"{a.ljust(column)} | {b.rstrip()}")  # the separator kept where `b` is blank
    return "\n".join(rows)


def source_and_original(new_code, original):
    """`original` (the user's source) next to `new_code` (what runs instead), as columns."""
    generated, _ = python_source(new_code)
    return side_by_side(f"original: {original.co_qualname}", original_source(original),
                        f"generated: {new_code.co_qualname}", generated)
