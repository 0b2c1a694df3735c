"""Suite-wide switches.

Every compile failure raises: `config.suppress_errors` is off whatever the environment says,
and the frame hook re-raises what a compile callback raised instead of running the frame
unmodified. A test that captures nothing because of a bug then fails instead of passing on
the eager fallback. Tests of the fallback itself turn it back on locally
(`bytegraph._frame.raise_on_compile_error(False)`, `config.patch(suppress_errors=True)`).
"""

import pytest

import bytegraph
from bytegraph import _frame


@pytest.fixture(autouse=True, scope="session")
def _compile_errors_raise():
    saved = bytegraph.config.save()
    bytegraph.config.suppress_errors = False
    with _frame.raise_on_compile_error(True):
        yield
    bytegraph.config.restore(saved)


def _decompiles_branches():
    """Whether the installed depyf turns bytecode with a jump into source on this interpreter
    (depyf 0.20 reads jump targets from dis's argrepr, which 3.13 prints as labels `L1`)."""
    try:
        from depyf.decompiler import Decompiler
    except ImportError:
        return False

    def branch(x):
        if x:
            return 1
        return 2

    try:
        Decompiler(branch.__code__).decompile()
    except Exception:  # noqa: BLE001 (any failure means: no decompiled source here)
        return False
    return True


# Tests of the decompiled (Python source) form of generated code; elsewhere bytegraph shows
# the disassembly instead, which other tests cover.
needs_decompiler = pytest.mark.skipif(
    not _decompiles_branches(),
    reason="depyf cannot decompile code with jumps on this interpreter (3.13's dis labels), so "
           "generated code is shown as disassembly")
