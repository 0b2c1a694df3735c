"""The floor for a fake-tensor tracer: running each captured op once on FakeTensors.

A tracer that records ops by running them on fake tensors (as both bytegraph and Dynamo do)
cannot be faster than running each op once in a FakeTensorMode. This replays a captured
torch.fx graph that way. The fakes of the inputs, of get_attr tensors and of the parameters
and buffers of called modules (shallow module twins holding fakes, so that no op meets a
real tensor) are made untimed: the timed run is the ops alone, the first ones run in that
mode, as in a trace (each trace has a new mode). That makes the floor a strict one, since a
real trace also makes its mode and its input fakes. A second figure, the same replay in an
already warmed mode, shows what per-mode caches (e.g. FakeTensorMode's dispatch cache) save.
"""

import copy

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.node import map_arg

from benchmarks.timing import clock, median


def _fetch_attr(root, target):
    value = root
    for name in target.split("."):
        value = getattr(value, name)
    return value


def _fake(mode, value):
    return mode.from_tensor(value) if isinstance(value, torch.Tensor) else value


def _fake_twin(module, mode):
    """A shallow copy of module whose parameters and buffers (recursively) are fakes."""
    twin = copy.copy(module)
    twin._parameters = {name: _fake(mode, p) for name, p in module._parameters.items()}
    twin._buffers = {name: _fake(mode, b) for name, b in module._buffers.items()}
    twin._modules = {name: None if m is None else _fake_twin(m, mode) for name, m in module._modules.items()}
    return twin


class FakeReplay:
    """gm's call nodes, ready to run on fakes: inputs, attributes and modules faked once."""

    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.mode = FakeTensorMode()
        self.inputs = [_fake(self.mode, value) for value in example_inputs]
        self.attrs = {}
        self.modules = {}
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                self.attrs[node.target] = _fake(self.mode, _fetch_attr(gm, node.target))
            elif node.op == "call_module" and node.target not in self.modules:
                self.modules[node.target] = _fake_twin(gm.get_submodule(node.target), self.mode)

    def run(self):
        inputs = iter(self.inputs)
        env = {}
        with self.mode:
            for node in self.gm.graph.nodes:
                if node.op == "placeholder":
                    env[node] = next(inputs)
                    continue
                if node.op == "output":
                    break
                args = map_arg(node.args, env.__getitem__)
                kwargs = map_arg(node.kwargs, env.__getitem__)
                if node.op == "call_function":
                    env[node] = node.target(*args, **kwargs)
                elif node.op == "call_method":
                    env[node] = getattr(args[0], node.target)(*args[1:], **kwargs)
                elif node.op == "call_module":
                    env[node] = self.modules[node.target](*args, **kwargs)
                elif node.op == "get_attr":
                    env[node] = self.attrs[node.target]
        return env


def op_count(gm):
    return sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))


def fake_floor_seconds(gm, example_inputs, repeats):
    """(fresh, warm): median seconds to run gm's ops once on fakes in a new mode, and again
    in a mode that ran them before (after one untimed warm-up run of each)."""
    fresh, warm = [], []
    with torch.no_grad():
        for _ in range(repeats + 1):
            replay = FakeReplay(gm, example_inputs)
            start = clock()
            replay.run()
            fresh.append(clock() - start)
            start = clock()
            replay.run()
            warm.append(clock() - start)
    return median(fresh[1:]), median(warm[1:])
