"""bytegraph.bytecode: decoding against `dis`, editing and re-assembling, errors."""

import contextlib
import dis
import io
import json
import opcode
import sys
import types

import pytest

from bytegraph import bytecode
from bytegraph.bytecode import Instruction

NB_ADD = next(i for i, (name, _) in enumerate(opcode._nb_ops) if name == "NB_ADD")
NB_SUBTRACT = next(i for i, (name, _) in enumerate(opcode._nb_ops) if name == "NB_SUBTRACT")


def _sample(x, y=2, *args, key=None, **kwargs):
    total = 0
    try:
        for i in range(x):
            if i % 2:
                continue
            total += i * y
    except (ValueError, TypeError) as error:
        total = len(str(error))
    finally:
        total += 1
    with open(__file__) as handle:
        first = handle.readline()
    inner = lambda z: z + total  # noqa: E731
    return sorted([inner(v) for v in args], key=key), first[:1], dict(kwargs, a=1), print(x, sep="")


def _conditional(flag):
    if flag:
        return "yes"
    return "no"


def _loop(n):
    total = 0
    for i in range(n):
        total += i
    return total


def _function(code, template):
    return types.FunctionType(code, template.__globals__, template.__name__, template.__defaults__,
                              template.__closure__)


SAMPLES = [_sample, _conditional, _loop, dis.findlinestarts, json.encoder.py_encode_basestring_ascii]


# ---- decoding -----------------------------------------------------------------------------

def _starts_line(inst):
    """dis's line number for an instruction that starts a line (3.13's starts_line is a flag)."""
    if isinstance(inst.starts_line, bool):
        return inst.line_number if inst.starts_line else None
    return inst.starts_line


@pytest.mark.parametrize("fn", SAMPLES, ids=lambda fn: fn.__name__)
def test_decode_matches_dis_get_instructions(fn):
    ours = bytecode.decode(fn.__code__)
    theirs = list(dis.get_instructions(fn))
    assert [i.opname for i in ours] == [i.opname for i in theirs]
    for a, b in zip(ours, theirs):
        if b.argrepr.startswith("to L"):  # dis 3.13 names jump targets by label; we give offsets
            assert a.argrepr == f"to {b.argval}"
            a.argrepr = b.argrepr
        if a.opname == "KW_NAMES" and not b.argrepr:  # dis 3.11 leaves it unresolved (argval <unknown>)
            assert a.argval == fn.__code__.co_consts[a.arg] and a.argrepr == repr(a.argval)
            a.argval, a.argrepr = b.argval, b.argrepr
        assert (a.opcode, a.arg, a.argval, a.argrepr, a.offset, a.starts_line, a.is_jump_target, a.positions) == \
               (b.opcode, b.arg, b.argval, b.argrepr, b.offset, _starts_line(b), b.is_jump_target, b.positions), b


def test_jump_targets_are_instructions():
    instructions = bytecode.decode(_sample.__code__)
    jumps = [i for i in instructions if i.opcode in opcode.hasjrel]
    assert jumps
    for jump in jumps:
        assert jump.target in instructions
        assert jump.target.offset == jump.argval
        assert jump.target.is_jump_target


def test_exception_entries_match_the_table():
    code = _sample.__code__
    instructions = bytecode.decode(code)
    by_offset = {i.offset: i for i in instructions}
    for entry in dis._parse_exception_table(code):
        covered = [i for i in instructions if entry.start <= i.offset < entry.end]
        assert covered
        for inst in covered:
            ours = inst.exn_tab_entry
            assert ours.start is covered[0] and ours.end is covered[-1]
            assert ours.target is by_offset[entry.target]
            assert (ours.depth, ours.lasti) == (entry.depth, entry.lasti)
    protected = {i.offset for e in dis._parse_exception_table(code) for i in instructions if e.start <= i.offset < e.end}
    assert all(i.exn_tab_entry is None for i in instructions if i.offset not in protected)


def test_argvals_are_resolved():
    def outer(a):
        def inner():
            return a + len([])
        return inner, print(a, sep=" ")

    instructions = bytecode.decode(outer.__code__)
    make_cell = next(i for i in instructions if i.opname == "MAKE_CELL")
    assert make_cell.argval == "a"
    # The keyword names: KW_NAMES's argument, or (3.13) a constant loaded for CALL_KW.
    kw_names = next(i for i in instructions if i.opname == "KW_NAMES" or i.argval == ("sep",))
    assert kw_names.argval == ("sep",)
    inner = next(i.argval for i in instructions if isinstance(i.argval, types.CodeType))
    inner_instructions = bytecode.decode(inner)
    load_global = next(i for i in inner_instructions if i.opname == "LOAD_GLOBAL")
    assert load_global.argval == "len" and load_global.pushes_null
    assert next(i for i in inner_instructions if i.opname == "LOAD_DEREF").argval == "a"


def test_decode_rejects_non_code():
    with pytest.raises(TypeError):
        bytecode.decode(_loop)
    with pytest.raises(TypeError):
        bytecode.decode(42)


def test_decode_rejects_unknown_opcodes():
    # Neither a base nor a specialised opcode (co_code shows these as CACHE).
    unused = next(op for op in range(1, 256) if dis._all_opname[op].startswith("<"))
    code = _loop.__code__
    broken = code.replace(co_code=bytes([unused, 0]) + code.co_code[2:])
    with pytest.raises(ValueError, match="unknown opcode"):
        bytecode.decode(broken)


def test_decode_rejects_jumps_outside_the_code():
    code = _conditional.__code__
    raw = bytearray(code.co_code)
    jump_at = next(i.offset for i in dis.get_instructions(code) if i.opcode in opcode.hasjrel)
    raw[jump_at + 1] = 200
    with pytest.raises(ValueError, match="does not start an instruction"):
        bytecode.decode(code.replace(co_code=bytes(raw)))


# ---- stack depth ----------------------------------------------------------------------------

@pytest.mark.parametrize("fn", SAMPLES, ids=lambda fn: fn.__name__)
def test_stack_depth_matches_cpython(fn):
    assert bytecode.stack_depth(bytecode.decode(fn.__code__)) == fn.__code__.co_stacksize


def test_stack_underflow_names_the_instruction():
    instructions = [Instruction.create("RESUME", 0), Instruction.create("POP_TOP"),
                    Instruction.create("LOAD_CONST", argval=None), Instruction.create("RETURN_VALUE")]
    with pytest.raises(ValueError, match="POP_TOP"):
        bytecode.stack_depth(instructions)


# ---- editing and assembling -----------------------------------------------------------------

def test_inserting_before_a_jump_target_keeps_the_jump_on_its_target():
    instructions = bytecode.decode(_conditional.__code__)
    jump = next(i for i in instructions if i.opcode in opcode.hasjrel)
    at = instructions.index(jump.target)
    # Dead code placed right before the target: landing on it would return 99.
    instructions[at:at] = [Instruction.create("LOAD_CONST", argval=99), Instruction.create("RETURN_VALUE")]
    fn = _function(bytecode.assemble(instructions, like=_conditional.__code__), _conditional)
    assert (fn(True), fn(False)) == ("yes", "no")
    after = bytecode.decode(fn.__code__)
    new_jump = next(i for i in after if i.opcode in opcode.hasjrel)
    assert new_jump.arg == jump.arg + 2 and new_jump.target.opname == jump.target.opname
    assert 99 in fn.__code__.co_consts


def test_long_loop_body_grows_extended_args():
    instructions = bytecode.decode(_loop.__code__)
    store = next(i for i in instructions if i.opname == "STORE_FAST" and i.argval == "total"
                 and i.offset > instructions[0].offset + 10)
    at = instructions.index(store)
    instructions[at:at] = [Instruction.create("NOP") for _ in range(300)]
    code = bytecode.assemble(instructions, like=_loop.__code__)
    assert _function(code, _loop)(10) == 45
    raw_ops = code.co_code[::2]
    assert opcode.opmap["EXTENDED_ARG"] in raw_ops
    decoded = bytecode.decode(code)
    backward = next(i for i in decoded if i.opname == "JUMP_BACKWARD")
    assert backward.arg > 255 and backward.target.opname == "FOR_ITER"
    for_iter = next(i for i in decoded if i.opname == "FOR_ITER")
    assert for_iter.arg > 255 and for_iter.target.offset > backward.offset


# The conditional jump of the countdown, written in the wrong direction where the interpreter
# has both (3.11); 3.12+ conditional jumps go forward only.
_EXIT_JUMP = "POP_JUMP_BACKWARD_IF_FALSE" if "POP_JUMP_BACKWARD_IF_FALSE" in opcode.opmap else "POP_JUMP_IF_FALSE"
_EXIT_JUMP_FIXED = "POP_JUMP_FORWARD_IF_FALSE" if "POP_JUMP_FORWARD_IF_FALSE" in opcode.opmap else "POP_JUMP_IF_FALSE"


def _countdown_instructions(jump_back_opname):
    """while n: total += n; n -= 1  -- written by hand with a deliberately wrong jump direction."""
    end = Instruction.create("LOAD_FAST", argval="total")
    loop = Instruction.create("LOAD_FAST", argval="n")
    return [
        Instruction.create("RESUME", 0),
        Instruction.create("LOAD_CONST", argval=0),
        Instruction.create("STORE_FAST", argval="total"),
        loop,
        *([Instruction.create("TO_BOOL")] if "TO_BOOL" in opcode.opmap else []),  # 3.13 jumps on exact bools
        Instruction.create(_EXIT_JUMP, target=end),  # must become FORWARD
        Instruction.create("LOAD_FAST", argval="total"),
        Instruction.create("LOAD_FAST", argval="n"),
        Instruction.create("BINARY_OP", NB_ADD),
        Instruction.create("STORE_FAST", argval="total"),
        Instruction.create("LOAD_FAST", argval="n"),
        Instruction.create("LOAD_CONST", argval=1),
        Instruction.create("BINARY_OP", NB_SUBTRACT),
        Instruction.create("STORE_FAST", argval="n"),
        Instruction.create(jump_back_opname, target=loop),
        end,
        Instruction.create("RETURN_VALUE"),
    ]


def test_jump_directions_are_flipped_to_match_their_targets():
    def template(n):
        pass

    code = bytecode.assemble(_countdown_instructions("JUMP_FORWARD"), like=template.__code__, co_name="countdown")
    assert code.co_varnames == ("n", "total") and code.co_nlocals == 2 and code.co_name == "countdown"
    names = [i.opname for i in bytecode.decode(code)]
    assert "JUMP_BACKWARD" in names and "JUMP_FORWARD" not in names
    assert _EXIT_JUMP_FIXED in names and "POP_JUMP_BACKWARD_IF_FALSE" not in names
    assert _function(code, template)(4) == 10
    assert code.co_stacksize == 2


def test_forward_only_jumps_cannot_go_backward():
    def template(n):
        pass

    instructions = _countdown_instructions("JUMP_FORWARD")
    instructions[-3] = Instruction.create("FOR_ITER", target=instructions[3])
    with pytest.raises(ValueError, match="FOR_ITER cannot jump backward"):
        bytecode.assemble(instructions, like=template.__code__)


def test_constants_are_matched_by_identity():
    def template():
        pass

    values = (0, False, 0.0, -0.0)
    instructions = [Instruction.create("RESUME", 0)]
    instructions += [Instruction.create("LOAD_CONST", argval=v) for v in values]
    instructions += [Instruction.create("BUILD_TUPLE", 4), Instruction.create("RETURN_VALUE")]
    result = _function(bytecode.assemble(instructions, like=template.__code__), template)()
    assert [type(v) for v in result] == [int, bool, float, float]
    assert str(result[3]) == "-0.0"


def test_new_globals_and_calls():
    def template():
        pass

    instructions = [
        Instruction.create("RESUME", 0),
        Instruction.create("LOAD_GLOBAL", argval="len", push_null=True),
        Instruction.create("LOAD_CONST", argval="abcd"),
        *([Instruction.create("PRECALL", 1)] if "PRECALL" in opcode.opmap else []),
        Instruction.create("CALL", 1),
        Instruction.create("RETURN_VALUE"),
    ]
    code = bytecode.assemble(instructions, like=template.__code__)
    assert code.co_names == ("len",)
    assert _function(code, template)() == 4


@pytest.mark.skipif("LOAD_FAST_LOAD_FAST" not in opcode.opmap, reason="paired local instructions are 3.13's")
def test_paired_locals_moved_past_slot_15_are_split_in_two():
    def swap(a, b):
        a, b = b, a
        return a - b

    instructions = bytecode.decode(swap.__code__)
    paired = [i for i in instructions if "_FAST_" in opcode.opname[i.opcode]]
    assert paired, "3.13 compiles the swap to paired local instructions"
    # The same locals laid out after 20 others, as a resume function with many locals does.
    varnames = tuple(f"pad{k}" for k in range(20)) + swap.__code__.co_varnames
    code = bytecode.assemble(instructions, like=swap.__code__, co_varnames=varnames, co_argcount=22)
    assert not any("_FAST_" in i.opname for i in dis.get_instructions(code))
    assert types.FunctionType(code, {})(*range(20), 3, 10) == 7


def test_dangling_jump_target_is_rejected():
    instructions = bytecode.decode(_conditional.__code__)
    jump = next(i for i in instructions if i.opcode in opcode.hasjrel)
    instructions.remove(jump.target)
    with pytest.raises(ValueError, match="not an instruction of the list"):
        bytecode.assemble(instructions, like=_conditional.__code__)


def test_jump_without_target_and_unknown_opcode_are_rejected():
    jump = Instruction(opcode.opmap["JUMP_FORWARD"], 0)
    with pytest.raises(ValueError, match="without a target"):
        bytecode.assemble([Instruction.create("RESUME", 0), jump], like=_loop.__code__)
    unused = next(op for op in range(1, 256) if opcode.opname[op].startswith("<"))
    with pytest.raises(ValueError, match="unknown opcode"):
        bytecode.assemble([Instruction(unused)], like=_loop.__code__)


def test_the_same_instruction_twice_is_rejected():
    instructions = bytecode.decode(_loop.__code__)
    with pytest.raises(ValueError, match="appears twice"):
        bytecode.assemble(instructions + instructions[-1:], like=_loop.__code__)


def test_assemble_rejects_bad_arguments():
    with pytest.raises(TypeError):
        bytecode.assemble(bytecode.decode(_loop.__code__), like=_loop)
    with pytest.raises(TypeError, match="co_code"):
        bytecode.assemble(bytecode.decode(_loop.__code__), like=_loop.__code__, co_code=b"")
    with pytest.raises(ValueError, match="not a cell or free variable"):
        bytecode.assemble([Instruction.create("LOAD_DEREF", argval="nope")], like=_loop.__code__)


# ---- dis ---------------------------------------------------------------------------------------

@pytest.mark.skipif(sys.version_info >= (3, 13), reason="dis 3.13 lists jump labels (L1:) instead of offsets; "
                    "bytegraph.bytecode.dis keeps the offset listing of 3.11 and 3.12")
@pytest.mark.parametrize("fn", SAMPLES, ids=lambda fn: fn.__name__)
def test_dis_matches_cpython_listing(fn):
    expected = io.StringIO()
    with contextlib.redirect_stdout(expected):
        dis.dis(fn.__code__, depth=0)
    ours = bytecode.dis(fn.__code__)
    # dis 3.11 leaves KW_NAMES unresolved; we show the names tuple.
    if not any(" KW_NAMES " in line and " (" in line for line in expected.getvalue().split("\n")):
        ours = "\n".join(line.split(" (")[0] if " KW_NAMES " in line else line for line in ours.split("\n"))
    assert ours == expected.getvalue()


def test_dis_marks_the_current_instruction_and_shows_edited_offsets():
    instructions = bytecode.decode(_loop.__code__)
    instructions.insert(1, Instruction.create("NOP"))
    current = instructions[3]
    lines = bytecode.dis(instructions, current=current).splitlines()
    marked = [line for line in lines if "-->" in line]
    assert len(marked) == 1 and current.opname in marked[0]
    nop_line = next(line for line in lines if " NOP" in line)
    assert nop_line.split()[-2:] == ["2", "NOP"]  # placed where it would be assembled


# ---- generated tables and adaptive code --------------------------------------------------------

def test_generated_stack_effects_match_dis_for_every_opcode():
    from bytegraph._extension import _C

    args = list(range(0, 300)) + [511, 512, 0x1234, 0xFFFF, 0x10000, 0xFFFFFF]
    checked = 0
    for op in range(256):
        if opcode.opname[op].startswith("<"):
            continue
        for arg in (args if op >= opcode.HAVE_ARGUMENT else [0]):
            for jump in (False, True):
                try:
                    expected = dis.stack_effect(op, arg if op >= opcode.HAVE_ARGUMENT else None, jump=jump)
                except ValueError:
                    expected = None
                assert _C.bytecode.stack_effect(op, arg, jump) == expected, (opcode.opname[op], arg, jump)
                checked += 1
    assert checked > 10000


def test_decode_reads_the_unquickened_code():
    def hot(xs):
        total = 0
        for x in xs:
            total += x.real
        return total

    for _ in range(200):
        hot([1, 2, 3])
    assert hot.__code__._co_code_adaptive != hot.__code__.co_code  # it really was specialised
    instructions = bytecode.decode(hot.__code__)
    assert all(opcode.opname[i.opcode] == i.opname and not i.opname.startswith("<") for i in instructions)
    assert [i.opname for i in instructions] == [i.opname for i in dis.get_instructions(hot)]
    again = bytecode.assemble(instructions, like=hot.__code__)
    assert again.co_code == hot.__code__.co_code
