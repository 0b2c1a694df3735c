import subprocess
import sys

import bytegraph


def test_extension_loads_and_reports_the_running_interpreter():
    assert bytegraph._C.PY_VERSION_HEX == sys.hexversion


def test_core_exceptions_are_python_exceptions():
    assert issubclass(bytegraph._C.Unsupported, RuntimeError)
    assert issubclass(bytegraph._C.InternalError, SystemError)
