"""Strings and imports inside traced code: formatting constants (and objects whose text is
fixed: classes, modules) folds to constants; formatting a tensor reads its data and breaks.
Imports of modules already loaded fold to the module; a first-time load breaks."""

import sys

import pytest
import torch

import bytegraph
from tests._capture import breaks, capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def test_f_strings_format_percent_and_join_fold():
    def f(x, n, name):
        key = f"layer_{n:03d}.{name!r}.{1.5:.2f}"
        other = "{}-{k}".format(n, k=name) + "%d/%s" % (n, name) + "%(a)s" % {"a": 1}
        joined = "_".join([name, str(n)]) + ",".join(str(i) for i in range(3))
        parts = key.upper().replace("LAYER", "L").split(".")
        if key.startswith("layer_007") and "-" in other:
            x = x * len(joined)
        return x + len(parts), key, other, joined

    capture(f, torch.ones(2), 7, "q", ops=2)
    capture(f, torch.ones(2), 8, "q", ops=1)  # n is guarded: another n is another trace


_WORD = __import__("re").compile(r"l(ay)+er_(\d+)")


def test_regular_expressions_on_constants_fold():
    import re
    import unittest

    case = unittest.TestCase()

    def f(x, name):
        m = _WORD.search(name)
        n = int(m.group(2)) if m is not None else -1
        full = re.fullmatch(r"[a-z_0-9]+", name) is not None
        with case.assertRaisesRegex(ValueError, "bad .* thing"):
            raise ValueError("a bad little thing")
        return x * n + full, re.escape(name), m.span() if m else None

    capture(f, torch.ones(2), "layer_7")
    capture(f, torch.ones(2), "no match")


def test_text_of_shapes_dtypes_classes_and_modules():
    def f(x):
        text = f"{x.shape}|{x.dtype}|{str(type(x))}|{repr(torch.nn.Linear)}|{torch.nn.functional.__name__}"
        module_text = str(sys)
        return x + len(text) + len(module_text), text, module_text

    capture(f, torch.ones(2, 3), ops=2)


def test_formatting_a_tensor_is_a_data_dependent_break():
    def fstring(x):
        return x + len(f"{x}")

    def str_call(x):
        return x + len(str(x.sum()))

    def percent(x):
        return x + len("%s" % x)

    for fn in (fstring, str_call, percent):
        graphs, kinds = breaks(fn, torch.ones(2))
        # (torch's own formatting code, run eagerly at the break, may add breaks of its own)
        assert kinds[0] == "data_dependent_op", fn.__name__
        compiled = bytegraph.compile(fn, backend="eager")
        torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))


def test_imports_of_loaded_modules_fold():
    def f(x):
        import math
        import torch.nn.functional
        import torch.nn.functional as F
        from collections import OrderedDict
        from torch.nn import functional as G
        from torch import nn

        d = OrderedDict  # a class, read from the module
        assert torch.nn.functional is F is G and nn.functional is F and d is not None
        return F.relu(x) * math.pi

    capture(f, torch.randn(3), ops=2)


def test_relative_imports_resolve_in_the_package(tmp_path, monkeypatch):
    package = tmp_path / "bytegraph_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sibling.py").write_text("SCALE = 3\n")
    (package / "user.py").write_text(
        "from . import sibling\n"
        "def f(x):\n"
        "    from . import sibling as s\n"
        "    from .sibling import SCALE\n"
        "    import bytegraph_pkg.sibling\n"
        "    return x * SCALE + s.SCALE + bytegraph_pkg.sibling.SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        from bytegraph_pkg.user import f

        capture(f, torch.ones(2), ops=3)
    finally:
        for name in ("bytegraph_pkg", "bytegraph_pkg.sibling", "bytegraph_pkg.user"):
            sys.modules.pop(name, None)


def test_an_import_that_would_load_a_module_is_a_break(tmp_path, monkeypatch):
    (tmp_path / "bytegraph_fresh_module.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("bytegraph_fresh_module", None)

    def f(x):
        import bytegraph_fresh_module

        return x * bytegraph_fresh_module.VALUE

    try:
        with bytegraph.config.patch(verify_correctness=False):  # (it would import it first)
            graphs, kinds = breaks(f, torch.ones(2))
        # (the import then runs eagerly; importlib's own frames may add breaks of their own)
        assert kinds[0] == "unsupported_import"
        assert "bytegraph_fresh_module" in sys.modules  # the eager part imported it
        # Now that it is loaded, the import folds.
        bytegraph.reset()
        capture(f, torch.ones(2), ops=1)
    finally:
        sys.modules.pop("bytegraph_fresh_module", None)
