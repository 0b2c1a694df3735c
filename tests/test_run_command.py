"""`python -m bytegraph run script.py [args]`: a torch.compile program runs unchanged, compiled
by bytegraph (tests/programs/torch_compile_tour.py: tutorials' and transformers' uses)."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

import bytegraph
from bytegraph import run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOUR = os.path.join(REPO, "tests", "programs", "torch_compile_tour.py")


def _run(args, tmp_path, **env_changes):
    env = dict(os.environ, PYTHONPATH=REPO, BYTEGRAPH_TRACE=str(tmp_path / "trace"))
    for name in ("BYTEGRAPH_LOGS", "TORCH_LOGS", "TORCH_TRACE"):
        env.pop(name, None)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "bytegraph", "run", *args], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=600)


def _compiled_frames(tmp_path):
    """The frames bytegraph compiled, from its compile trace: {qualified name: compiles}."""
    frames = {}
    for log in (tmp_path / "trace").glob("bytegraph_trace_*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("V") and '{"dynamo_start"' in line:
                name = json.loads(line.split("] ", 1)[1])["dynamo_start"]["stack"][-1]["name"]
                frames[name] = frames.get(name, 0) + 1
    return frames


def test_the_tour_runs_unchanged_on_bytegraph(tmp_path):
    pytest.importorskip("transformers", reason="the tour builds a small transformers GPT-2")
    done = _run([TOUR, "--steps", "3"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "steps=3"  # the script's own arguments reach it
    results = [line for line in lines if "same=" in line]
    assert [line.split(":")[0] for line in results] == [
        "torch.compile(fn)", "@torch.compile", "torch.compile(module)", "module.compile()",
        "torch._dynamo.optimize", "training", "transformers GPT2"]
    assert all("same=True" in line for line in results), results
    assert lines[-1] == "done"
    # What bytegraph compiled: each torch.compile entry point reached bytegraph's frame hook.
    frames = _compiled_frames(tmp_path)
    assert frames["foo"] == 1 and frames["bar"] == 1  # torch.compile(foo), torch._dynamo.optimize(...)(bar)
    assert frames["opt_foo2"] == 1
    assert frames["MLP.forward"] >= 3  # the module, module.compile() and the training model
    # gpt2.forward is transformers' decorator wrapper around GPT2LMHeadModel.forward: captured
    # whole, it is the one frame compiled (a break would compile GPT2 frames too).
    assert any(name.startswith("GPT2") or name.endswith("<locals>.wrapper") for name in frames)
    assert "log_value" not in frames  # torch.compiler.disable kept it out


def test_run_passes_the_exit_code_and_reports_a_missing_script(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import sys, torch\nf = torch.compile(lambda x: x + 1, backend='eager')\n"
                      "assert int(f(torch.ones(1))) == 2\nsys.exit(3)\n")
    assert _run([str(script)], tmp_path).returncode == 3
    missing = _run([str(tmp_path / "nope.py")], tmp_path)
    assert missing.returncode == 2 and "no such script" in missing.stderr


def test_run_honours_torch_logs_spellings(tmp_path):
    script = tmp_path / "breaks.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    if x.sum() > 0:\n"
        "        return x + 1\n"
        "    return x - 1\n"
        "print(torch.compile(f, backend='eager')(torch.ones(2)).tolist())\n")
    done = _run(["--compile-times", str(script)], tmp_path, TORCH_LOGS="graph_breaks,aot_graphs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 2.0]"
    assert "[bytegraph.graph_breaks] Graph break in f (data_dependent_branch)" in done.stderr
    assert "TORCH_LOGS names bytegraph does not have are ignored: aot_graphs" in done.stderr
    assert re.search(r"^f \[0/0\] +1 ", done.stderr, re.MULTILINE)  # --compile-times


def test_routing_replaces_torch_entry_points_and_restores_them(fresh_cache):
    original = (torch.compile, torch._dynamo.optimize, torch.compiler.is_compiling, torch.compiler.disable)
    routing = run.Routing()
    try:
        assert torch.compile is run.torch_compile
        assert torch.compiler.is_compiling is bytegraph.is_compiling
        assert torch.compiler.set_stance is bytegraph.set_stance
        # Code that checks for a compiled module sees ours.
        assert isinstance(torch.compile(torch.nn.Linear(2, 2), backend="eager"), torch._dynamo.OptimizedModule)

        def f(x):
            return x * 3

        with pytest.warns(UserWarning, match=r"torch.compile\(name=...\) is accepted and ignored"):
            compiled = torch.compile(f, backend="eager", name="ignored-name-is-accepted")
        assert torch.equal(compiled(torch.ones(2)), torch.ones(2) * 3)
        assert bytegraph.compile_times(repr="csv")[1][-1][0].endswith("<locals>.f [0/0]")

        # torch._dynamo.testing's helpers compile through optimize_assert: fullgraph.
        counter = bytegraph.testing.CompileCounter()
        assert torch.equal(torch._dynamo.optimize_assert(counter)(lambda x: x + 1)(torch.ones(2)), torch.ones(2) + 1)
        assert counter.frame_count == 1

        def breaks(x):
            torch._dynamo.graph_break()
            return x + 1

        with pytest.raises(bytegraph.exc.GraphBreakError):
            torch._dynamo.optimize_assert(counter)(breaks)(torch.ones(2))

        # Code that catches torch's errors catches bytegraph's of the same meaning.
        def broken_backend(gm, example_inputs):
            raise ValueError("kaboom")

        with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="kaboom") as failure:
            torch.compile(f, backend=broken_backend)(torch.ones(3))
        assert isinstance(failure.value, bytegraph.exc.BackendCompilerFailed)
        assert isinstance(failure.value.inner_exception, ValueError)
    finally:
        routing.restore()
        bytegraph.reset()
    assert (torch.compile, torch._dynamo.optimize, torch.compiler.is_compiling, torch.compiler.disable) == original


def test_routing_links_torch_dynamo_config_to_bytegraph_config():
    import torch._dynamo.config as dynamo_config

    routing = run.Routing()
    try:
        with dynamo_config.patch(recompile_limit=3, automatic_dynamic_shapes=False, error_on_recompile=True):
            assert bytegraph.config.cache_size_limit == 3
            assert bytegraph.config.automatic_dynamic_shapes is False and bytegraph.config.error_on_recompile
        assert bytegraph.config.cache_size_limit == dynamo_config.recompile_limit
        with bytegraph.config.patch(verbose=True):  # a write through bytegraph reaches torch's too
            assert dynamo_config.verbose is True
        assert dynamo_config.verbose is False
    finally:
        routing.restore()
    with dynamo_config.patch(recompile_limit=3):
        assert bytegraph.config.cache_size_limit == 8  # unlinked again


def test_a_fullgraph_break_is_a_torch_dynamo_unsupported_for_code_that_catches_it(tmp_path):
    script = tmp_path / "catches.py"
    script.write_text(
        "import torch\n"
        "from torch._dynamo.exc import Unsupported\n"
        "import bytegraph\n"
        "@torch.compile(fullgraph=True, backend='eager')\n"
        "def f(x):\n"
        "    print('a side effect')\n"
        "    return x + 1\n"
        "try:\n"
        "    f(torch.ones(1))\n"
        "except Unsupported as error:\n"
        "    print('caught', isinstance(error, bytegraph.exc.GraphBreakError), error.kind)\n")
    done = _run([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "caught True print"
