import subprocess
import sys


def test_demo_shows_graphs_guards_breaks_and_timings():
    result = subprocess.run(
        [sys.executable, "-m", "bytegraph", "demo", "--no-inductor"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "re-assembled code is byte-identical: True" in out
    assert "self_fc" in out and "torch.nn.functional.relu" in out  # the Net graph
    assert "TENSOR_MATCH" in out  # its guards
    assert "size[0]: expected 2, got 5" in out  # a recompilation reason
    assert "call_function  gt  gt  (sum_1, 3)" in out  # constants folded before the break
    assert "equals eager: False" not in out
    assert "cache hit" in out
    assert "RESUME FUNCTION __resume_at_" in out and "MODIFIED BYTECODE" in out  # foo2's breaks
    assert "graphs compiled for foo2 over the four sign combinations: 5" in out
