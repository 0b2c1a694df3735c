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



@pytest.fixture
def verified():
    """A fresh bytegraph cache around the test, and every compiled call run eagerly beside it
    on copies of its arguments (config.verify_correctness): a difference raises. Test files of
    Python constructs opt in with `pytestmark = pytest.mark.usefixtures("verified")`."""
    bytegraph.reset()
    with bytegraph.config.patch(verify_correctness=True):
        yield
    bytegraph.reset()
