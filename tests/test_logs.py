"""Log artifacts: BYTEGRAPH_LOGS at import, bytegraph.set_logs, and what each artifact shows."""

import inspect
import logging
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import bytegraph
from bytegraph import _logging, _readable_code
from bytegraph.testing import CompileCounterWithBackend, count_ops
from bytegraph.examples import foo1
from tests._trace_helpers import call_prefix

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


@pytest.fixture(autouse=True)
def _logs_off():
    bytegraph.set_logs()
    yield
    bytegraph.set_logs()


def add_relu(a, b):
    return torch.relu(a + b)


def _run(fn, *args, backend=None):
    """Runs fn compiled and eagerly (same result); returns the graphs' op counts (none are
    counted for a named backend, whose name the logs must show)."""
    counter = CompileCounterWithBackend("eager")
    result = bytegraph.compile(fn, backend=backend or counter)(*args)
    torch.testing.assert_close(result, fn(*args))
    return [count_ops(gm) for gm in counter.graphs]


def _lines(text, prefix):
    return [line[len(prefix):].lstrip() for line in text.splitlines() if line.startswith(prefix)]


def test_parse_spec():
    assert _logging.parse_spec("+trace,graph") == {"trace": logging.DEBUG, "graph": logging.INFO}
    # TORCH_LOGS spellings that mean the same thing here.
    assert _logging.parse_spec("+dynamo,graph_breaks,recompiles,recompiles_verbose,guards,bytecode,"
                               "graph_code,output_code") == {
        "bytegraph": logging.DEBUG, "graph_breaks": logging.INFO, "recompiles": logging.INFO,
        "recompiles_verbose": logging.INFO, "guards": logging.INFO, "bytecode": logging.INFO,
        "graph_code": logging.INFO, "output_code": logging.INFO}
    assert _logging.parse_spec("trace_bytecode") == {"trace": logging.DEBUG}
    assert _logging.parse_spec(" guards , +recompiles ") == {"guards": logging.INFO, "recompiles": logging.DEBUG}
    # trace is a DEBUG artifact: naming it is enough to turn it on.
    assert _logging.parse_spec("trace") == {"trace": logging.DEBUG}
    assert set(_logging.parse_spec("all")) == set(_logging.ARTIFACTS)
    with pytest.raises(ValueError, match="unknown log artifact 'grpah'"):
        _logging.parse_spec("grpah")


def test_set_logs_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown log artifact"):
        bytegraph.set_logs(graphs=True)
    with pytest.raises(TypeError, match="takes a bool"):
        bytegraph.set_logs(graph="yes")


def test_trace_lines_show_each_instruction_and_the_symbolic_stack(capsys):
    bytegraph.set_logs(trace=True)
    _run(add_relu, torch.ones(2, 3), torch.ones(2, 3))
    trace = _lines(capsys.readouterr().err, "[bytegraph.trace]")
    assert trace[0] == "TRACE RESUME 0 []"
    assert "TRACE LOAD_GLOBAL torch []" in trace
    # The call's callable and NULL (in this interpreter's order) under the loads of a and b
    # (one instruction or two, as this interpreter compiles them).
    call = ", ".join(call_prefix("TorchInGraphFunctionVariable(relu)"))
    load_a = next(line for line in trace if re.match(r"TRACE LOAD_FAST\w* \S*\ba\b", line))
    assert load_a.endswith(f" [{call}]")
    assert f"TRACE BINARY_OP 0 [{call}, TensorVariable(l_a_: f32[2, 3]), TensorVariable(l_b_: f32[2, 3])]" in trace
    assert trace[-1] == "TRACE RETURN_VALUE [TensorVariable(relu: f32[2, 3])]"
    # One line per instruction the interpreter ran (no jumps in add_relu: every instruction).
    import dis
    assert len(trace) == len([i for i in dis.get_instructions(add_relu) if i.opname != "CACHE"])


def test_trace_is_off_by_default_even_under_a_verbose_root_logger():
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.DEBUG)
    try:
        assert _logging.trace_sink() is None
    finally:
        root.setLevel(previous)
    bytegraph.set_logs(trace=True)
    assert _logging.trace_sink() is not None


def test_graph_artifact_shows_a_node_table(capsys):
    bytegraph.set_logs(graph=True)
    _run(add_relu, torch.ones(2, 3), torch.ones(2, 3))
    err = capsys.readouterr().err
    assert "[bytegraph.graph] TRACED GRAPH __compiled_fn_" in err and "(add_relu)" in err
    header = next(line for line in err.splitlines() if line.startswith("opcode"))
    assert header.split() == ["opcode", "name", "target", "args", "kwargs"]
    rows = [line.split()[:3] for line in err.splitlines() if line.startswith(("placeholder", "call_function"))]
    assert rows == [["placeholder", "l_a_", "L_a_"], ["placeholder", "l_b_", "L_b_"],
                    ["call_function", "add", "operator.add"], ["call_function", "relu", "torch.relu"]]
    assert "def forward" not in err  # the code is graph_code's


def test_graph_code_artifact_shows_the_graph_as_python(capsys):
    bytegraph.set_logs(graph_code=True)
    _run(add_relu, torch.ones(2, 3), torch.ones(2, 3))
    err = capsys.readouterr().err
    assert "[bytegraph.graph_code] TRACED GRAPH __compiled_fn_" in err
    assert 'def forward(self, L_a_: "f32[2, 3]", L_b_: "f32[2, 3]")' in err
    assert "torch.relu(add)" in err
    assert "opcode" not in err


def test_guards_artifact(capsys):
    bytegraph.set_logs(guards=True)
    _run(add_relu, torch.ones(2, 3), torch.ones(2, 3))
    err = capsys.readouterr().err
    assert "[bytegraph.guards] GUARDS add_relu" in err
    assert "L['a']: TENSOR_MATCH" in err and "size=[2, 3]" in err


def test_recompiles_artifact_names_the_failed_guard(capsys):
    bytegraph.set_logs(recompiles=True)
    compiled = bytegraph.compile(add_relu, backend="eager")
    compiled(torch.ones(2, 3), torch.ones(2, 3))
    assert "Recompiling" not in capsys.readouterr().err
    compiled(torch.ones(4, 3), torch.ones(4, 3))
    err = capsys.readouterr().err
    assert "[bytegraph.recompiles] Recompiling function add_relu" in err
    assert "L['a']" in err


def test_graph_breaks_artifact_gives_reason_and_user_stack(capsys):
    bytegraph.set_logs(graph_breaks=True)
    a, b = torch.ones(3), -torch.ones(3)
    _run(foo1, a, b)
    err = capsys.readouterr().err
    line = inspect.getsourcelines(foo1)[1] + 2  # `if b.sum() < 0:`
    assert "[bytegraph.graph_breaks] Graph break in foo1 (data_dependent_branch)" in err
    assert f"examples.py:{line} in foo1\n    if b.sum() < 0:" in err


@pytest.mark.skipif(not _readable_code.decompiler_reads_this_interpreter(), reason="generated code as source needs depyf reading this interpreter's bytecode (depyf 0.20 stops at 3.12)")
def test_bytecode_artifact_shows_generated_functions_as_source_next_to_the_original(capsys):
    bytegraph.set_logs(bytecode=True)
    _run(foo1, torch.ones(3), -torch.ones(3))
    err = capsys.readouterr().err
    first = foo1.__code__.co_firstlineno
    assert "[bytegraph.bytecode] GENERATED CODE foo1 (graph break in foo1)" in err
    assert f"[bytegraph.bytecode] RESUME FUNCTION foo1 (resumed at line {first + 3})" in err
    columns = [line.split(" | ") for line in err.splitlines() if " | " in line]
    assert ["original: foo1", "generated: foo1"] in [[c.strip() for c in row] for row in columns]
    generated = [row[1] for row in columns if len(row) == 2]
    # The graph is called by name and each branch calls its resume function by name.
    assert "    ___graph_out = __compiled_fn_0(a, b)" in generated or any(
        "___graph_out = __compiled_fn_" in line for line in generated)
    assert any(f"return foo1_resumed_at_line_{first + 3}(" in line for line in generated)
    assert "__resume_at_" not in err and "LOAD_FAST" not in err  # no disassembly at INFO
    # The user's source sits in the left column.
    assert any(row[0].strip() == "if b.sum() < 0:" for row in columns)


def test_plus_bytecode_adds_the_disassembly(capsys):
    bytegraph.set_logs(bytecode=logging.DEBUG)
    _run(foo1, torch.ones(3), -torch.ones(3))
    err = capsys.readouterr().err
    assert "[bytegraph.bytecode] ORIGINAL BYTECODE foo1" in err
    assert "[bytegraph.bytecode] MODIFIED BYTECODE foo1" in err and "LOAD_FAST" in err


def test_recompiles_verbose_lists_every_entry(capsys):
    bytegraph.set_logs(recompiles_verbose=True)
    compiled = bytegraph.compile(add_relu, backend="eager", dynamic=False)
    for size in (2, 3, 4):
        compiled(torch.ones(size), torch.ones(size))
    err = capsys.readouterr().err
    assert "[bytegraph.recompiles_verbose] Recompiling function add_relu" in err
    assert "each of its 2 cache entries failed a guard" in err
    assert "entry 0: L['a'] size[0]: expected 3, got 4" in err
    assert "entry 1: L['a'] size[0]: expected 2, got 4" in err
    assert "[bytegraph.recompiles]" not in err


def test_plus_bytegraph_does_not_turn_the_artifacts_on(capsys):
    bytegraph.set_logs(dynamo=logging.DEBUG)  # torch's name for the front end's own logger
    assert logging.getLogger("bytegraph").level == logging.DEBUG
    _run(foo1, torch.ones(3), -torch.ones(3))
    assert "TRACE" not in capsys.readouterr().err
    assert not _logging.enabled("graph_breaks") and _logging.trace_sink() is None


def test_a_handler_on_an_artifact_logger_sees_what_the_environment_shows():
    """One setup: the artifact is the logger bytegraph.<name> whichever way it is enabled."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("bytegraph.graph_breaks")
    logger.addHandler(handler)
    try:
        bytegraph.set_logs(graph_breaks=True)
        _run(foo1, torch.ones(3), -torch.ones(3))
    finally:
        logger.removeHandler(handler)
    assert [r.name for r in records] == ["bytegraph.graph_breaks"]
    assert records[0].getMessage().startswith("Graph break in foo1 (data_dependent_branch)")


def test_stack_arguments_of_resume_functions_are_named_in_the_users_words(capsys):
    bytegraph.set_logs(guards=True, recompiles=True)
    compiled = bytegraph.compile(_adds_a_printed_value, backend="eager")
    compiled(torch.ones(2))
    compiled(torch.ones(3))
    err = capsys.readouterr().err
    line = inspect.getsourcelines(_adds_a_printed_value)[1] + 1
    assert "___stack" not in err
    assert f"the value of `_printed(x * 2)` on the stack at line {line}: TENSOR_MATCH" in err
    assert f"Recompiling function _adds_a_printed_value (resumed at line {line})" in err
    assert f"the value of `_printed(x * 2)` on the stack at line {line} size[0]: expected 2, got 3" in err


def _printed(x):
    print("value:", x.shape)
    return x


def _adds_a_printed_value(x):
    return 3 + _printed(x * 2)


def test_output_code_artifact_shows_inductor_generated_code(capsys):
    bytegraph.set_logs(output_code=True)
    _run(add_relu, torch.ones(2, 3), torch.ones(2, 3), backend="inductor")
    err = capsys.readouterr().err
    assert "[bytegraph.output_code] OUTPUT CODE __compiled_fn_" in err and "(backend inductor)" in err
    assert "def call(" in err  # the inductor wrapper module's entry point
    assert "kernel" in err


def test_output_code_is_silent_for_backends_without_code(capsys):
    bytegraph.set_logs(output_code=True)
    assert _run(add_relu, torch.ones(2, 3), torch.ones(2, 3)) == [2]
    assert "OUTPUT CODE" not in capsys.readouterr().err


def test_everything_off_prints_nothing(capsys):
    assert _run(foo1, torch.ones(3), -torch.ones(3)) == [3, 1]
    assert capsys.readouterr().err == ""
    assert _logging._handler not in logging.getLogger("bytegraph").handlers


def test_set_logs_turns_off_what_it_does_not_name(capsys):
    bytegraph.set_logs(graph=True, guards=True)
    bytegraph.set_logs(guards=True)
    _run(add_relu, torch.ones(2), torch.ones(2))
    err = capsys.readouterr().err
    assert "GUARDS add_relu" in err and "TRACED GRAPH" not in err


_SCRIPT = textwrap.dedent("""
    import torch, bytegraph
    def f(a, b):
        return a * b
    bytegraph.compile(f, backend="eager")(torch.ones(2), torch.ones(2))
""")


def _run_script(env_value):
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop(_logging.ENV_VAR, None)
    if env_value is not None:
        env[_logging.ENV_VAR] = env_value
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_environment_variable_is_read_at_import():
    err = _run_script("+trace,graph_code,guards")
    assert re.search(r"^\[bytegraph\.trace\] TRACE LOAD_FAST\w* \S*\ba\b.* \[\]$", err, re.MULTILINE)
    assert "[bytegraph.graph_code] TRACED GRAPH" in err
    assert "[bytegraph.guards] GUARDS f" in err
    assert "[bytegraph.bytecode]" not in err
    assert _run_script(None) == ""
    assert "ignoring BYTEGRAPH_LOGS" in _run_script("nonsense")


def test_the_tracer_gets_no_log_callback_while_trace_is_off(monkeypatch):
    """Logs off cost nothing per instruction: the interpreter is given no callback at all."""
    from bytegraph._extension import _C

    given = []
    real_trace = _C.trace.trace_frame  # what the compile path calls on a cache miss

    def spy(*args, **kwargs):
        given.append(kwargs.get("log"))
        return real_trace(*args, **kwargs)

    monkeypatch.setattr(_C.trace, "trace_frame", spy)
    bytegraph.set_logs(graph=True, guards=True)  # other artifacts on: still no trace callback
    _run(add_relu, torch.ones(2), torch.ones(2))
    bytegraph.reset()
    bytegraph.set_logs(trace=True)
    _run(add_relu, torch.ones(2), torch.ones(2))
    assert given[0] is None and callable(given[-1])
