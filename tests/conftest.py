"""Suite-wide switches.

Every compile failure raises: `config.suppress_errors` is off whatever the environment says,
and the frame hook re-raises what a compile callback raised instead of running the frame
unmodified. A test that captures nothing because of a bug then fails instead of passing on
the eager fallback. Tests of the fallback itself turn it back on locally
(`bytegraph._frame.raise_on_compile_error(False)`, `config.patch(suppress_errors=True)`).

Every instruction the tracer runs has its handler's push/pop checked against the opcode's
stack effect (`_C.trace.check_stack_effects`; BYTEGRAPH_CHECK_STACK_EFFECTS reaches the
suite's subprocesses: the fuzzer's workers, the distributed ranks): a handler that leaves the
stack wrong fails where it does.
"""

import os

import pytest

import bytegraph
from bytegraph import _frame

# PyTorch's own test/dynamo files (tests/peer/dynamo/, copied in locally) are not this suite's
# tests: `make peer` (tools/peer.py) runs them, each file in its own process, under torch._dynamo
# and under bytegraph.
collect_ignore = ["peer"]


@pytest.fixture(autouse=True, scope="session")
def _compile_errors_raise():
    saved = bytegraph.config.save()
    bytegraph.config.suppress_errors = False
    with _frame.raise_on_compile_error(True):
        yield
    bytegraph.config.restore(saved)


@pytest.fixture(autouse=True, scope="session")
def _stack_effects_checked():
    from bytegraph._extension import _C

    os.environ["BYTEGRAPH_CHECK_STACK_EFFECTS"] = "1"
    before = _C.trace.check_stack_effects(True)
    yield
    _C.trace.check_stack_effects(before)


@pytest.fixture
def fresh_cache():
    """No compiled entry and no recorded state from another test (bytegraph.reset) before and
    after the test. Files opt in with `pytestmark = pytest.mark.usefixtures("fresh_cache")`."""
    bytegraph.reset()
    yield
    bytegraph.reset()


@pytest.fixture
def verified():
    """A fresh bytegraph cache around the test, and every compiled call run eagerly beside it
    on copies of its arguments (config.verify_correctness): a difference raises. Test files of
    Python constructs opt in with `pytestmark = pytest.mark.usefixtures("verified")`."""
    bytegraph.reset()
    with bytegraph.config.patch(verify_correctness=True):
        yield
    bytegraph.reset()
