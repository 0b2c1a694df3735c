"""Guard-tree timings (not a test): ns per check of typical trees, measured by a C++ loop
around GuardTree::check (time_check), so neither the binding nor Python is counted.

    PYTHONPATH=. python tools/bench_guards.py [--iterations N]
"""

import argparse
import types

import torch

from bytegraph._C import guards as g


def best_ns(tree, locals_, globals_=None, iterations=200_000, repeats=7):
    runs = []
    for _ in range(repeats):
        ns, passed = tree.time_check(locals_, globals_, iterations=iterations)
        assert passed, tree.explain_locals(locals_, globals_)
        runs.append(ns)
    return min(runs)


def build(*adds):
    gs = g.GuardSet()
    for method, *args in adds:
        getattr(gs, method)(*args)
    return gs.build()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200_000)
    args = parser.parse_args()
    n = args.iterations

    x, y = torch.randn(8, 16), torch.randn(16)
    module = types.SimpleNamespace(training=True,
                                   fc=types.SimpleNamespace(weight=torch.randn(4, 16)))
    rows = []

    empty = g.GuardSet().build()
    rows.append(("empty tree", best_ns(empty, [], iterations=n)))

    one_int = build(("add_equals_match", g.local("n", 0), 3))
    rows.append(("1 EQUALS_MATCH (int)", best_ns(one_int, [3], iterations=n)))

    one_tensor = build(("add_tensor_match", g.local("x", 0), x))
    rows.append(("1 TENSOR_MATCH (cpu)", best_ns(one_tensor, [x], iterations=n)))

    meta = torch.empty(8, 16, device="meta")
    one_meta = build(("add_tensor_match", g.local("x", 0), meta))
    rows.append(("1 TENSOR_MATCH (meta)", best_ns(one_meta, [meta], iterations=n)))

    two_tensors = build(("add_tensor_match", g.local("x", 0), x),
                        ("add_tensor_match", g.local("y", 1), y))
    rows.append(("f(x, y): 2 TENSOR_MATCH", best_ns(two_tensors, [x, y], iterations=n)))

    self_ = g.local("self", 0)
    typical = build(
        ("add_id_match", self_.type(), types.SimpleNamespace),
        ("add_equals_match", self_.attr("training"), True),
        ("add_tensor_match", self_.attr("fc").attr("weight"), module.fc.weight),
        ("add_tensor_match", g.local("x", 1), x),
        ("add_equals_match", g.local("n", 2), 3),
        ("add_id_match", g.global_("torch"), torch),
    )
    rows.append(("module forward: 6 guards, 2 tensors, 1 getattr chain",
                 best_ns(typical, [module, x, 3], {"torch": torch}, iterations=n)))

    for name, ns in rows:
        print(f"{name:55s} {ns:8.1f} ns")


if __name__ == "__main__":
    main()
