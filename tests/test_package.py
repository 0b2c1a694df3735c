import os
import subprocess
import sys
import textwrap

import bytegraph

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_extension_loads_and_reports_the_running_interpreter():
    assert bytegraph._C.PY_VERSION_HEX == sys.hexversion


def test_core_exceptions_are_python_exceptions():
    assert issubclass(bytegraph._C.Unsupported, RuntimeError)
    assert issubclass(bytegraph._C.InternalError, SystemError)


def test_a_compile_with_a_callable_backend_does_not_run_torch_dynamo():
    # torch._dynamo's package (about 90 modules, most of a cold start) runs only when used.
    script = textwrap.dedent("""
        import sys, torch, bytegraph
        from bytegraph import _lazy_dynamo
        from bytegraph.testing import CompileCounter
        counter = CompileCounter()
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        x = torch.randn(2, 4)
        assert torch.equal(bytegraph.compile(model, backend=counter)(x), model(x))
        assert counter.frame_count == 1 and not _lazy_dynamo.loaded(), sorted(
            k for k in sys.modules if k.startswith("torch._dynamo"))
        import torch._dynamo
        torch._dynamo.mark_dynamic(x, 0)  # reading an attribute runs the package
        assert _lazy_dynamo.loaded() and torch._dynamo.config is sys.modules["torch._dynamo.config"]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
