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


def test_a_deferred_torch_dynamo_runs_outside_the_global_import_lock():
    # Importing a torch._dynamo submodule runs the deferred package first. The import system
    # calls finders holding its global lock; running the package there deadlocked threads
    # that import at the same time (each needs the global lock to take its module's lock).
    script = textwrap.dedent("""
        import _imp, sys, torch, bytegraph
        from bytegraph import _lazy_dynamo
        package = sys.modules["torch._dynamo"]
        assert not _lazy_dynamo.loaded()
        loader, held = package.__spec__.loader, []
        run_package = loader.exec_module
        def exec_module(module):
            held.append(_imp.lock_held())
            return run_package(module)
        loader.exec_module = exec_module
        import torch._dynamo.convert_frame as convert_frame
        from torch._dynamo import convert_frame as again
        assert held == [False] and _lazy_dynamo.loaded(), held
        assert convert_frame is again is sys.modules["torch._dynamo.convert_frame"]
        assert convert_frame.__spec__.loader is convert_frame.__loader__
        assert type(convert_frame.__loader__).__name__ == "SourceFileLoader"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
