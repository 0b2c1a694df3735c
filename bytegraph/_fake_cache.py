"""Fakes of real tensors kept from one static trace to the next.

Faking a tensor (FakeTensorMode.from_tensor) costs far more than running an op on fakes, and
the same parameters and buffers are faked again by every trace of a model: each recompile,
each resume function after a graph break, each model sharing layers. Static traces on a
thread therefore share one FakeTensorMode, and the fake of each real tensor is kept while that
tensor lives.

A fake is only reused while everything it copied from the real tensor still holds: type,
dtype, device, layout, sizes, strides, storage offset and address, autograd state (so a
`.data =` swap, an in-place resize or transpose, `requires_grad_` or a new `.grad` all give
a new fake). Values are never part of a fake, so in-place updates of the data (optimizer
steps) keep it. Tensors whose metadata this cannot check (subclasses, sparse or nested
layouts) are faked in the shared mode once and then retire it, so torch's own memo in that
mode can never serve a stale fake.

A trace that turns symbolic gives the mode a ShapeEnv: the mode then belongs to that trace
(`retire`), and the next static trace starts a new one.

A tensor torch cannot fake (its meta converter rejects the copy) raises UnfakeableTensor
through `fake_copy`, which the tracer turns into a graph break.
"""

import os
import threading
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def _signature(real):
    """What a fake copies from `real`, or None when it cannot be read cheaply and surely."""
    if type(real) not in _PLAIN_TYPES or real.layout is not torch.strided or real.is_nested:
        return None
    is_leaf = real.is_leaf
    # A non-leaf's .grad is only ever set when it retains it (reading it otherwise warns).
    grad = real.grad if is_leaf or real.retains_grad else None
    return (
        _shape_and_autograd(real),
        type(real), real.device, real.untyped_storage().data_ptr(), real._base is not None,
        None if grad is None else (grad.dtype, grad.shape, grad.stride()),
        real.is_conj(), real.is_neg(), real.is_inference(),
    )


def _shape_and_autograd(tensor):
    """The part of a signature that in-place ops can change: a trace runs the program's
    in-place ops on the fakes (`b += w(x)` makes b's fake require grad, `x.t_()` transposes
    it), so a kept fake is checked against the real tensor on this part too."""
    return (tensor.dtype, tensor.shape, tensor.stride(), tensor.storage_offset(), tensor.requires_grad,
            tensor.is_leaf)


class SharedFakes:
    """One thread's shared mode and the fakes made in it, keyed by the real tensor's id."""

    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=False)
        self._entries = {}  # id(real) -> (weakref to real, signature, fake)
        self.retired = False

    def fake(self, real):
        key = id(real)
        entry = self._entries.get(key)
        signature = _signature(real)
        if entry is not None and entry[0]() is real:
            if (signature is not None and entry[1] == signature
                    and _shape_and_autograd(entry[2]) == signature[0]):
                return entry[2]
            # The tensor changed under its fake, or an earlier trace's in-place op changed the
            # fake. The trace in progress keeps this mode (its other fakes live in it) but must
            # not get torch's memoised stale fake; later traces get a new mode.
            del self._entries[key]
            self.retire()
            self._forget_in_mode(real)
            return self._fresh(real)
        fake = self._fresh(real)
        if signature is None:
            self.retire()
        elif not self.retired:
            self._entries[key] = (weakref.ref(real, self._forget(key)), signature, fake)
        return fake

    def _fresh(self, real):
        # Untraced: torch's structured log of each fake (its describe_* records) is Dynamo's;
        # bytegraph's trace records its own compiles.
        return self.mode.from_tensor(real, static_shapes=True, trace=False)

    def _forget_in_mode(self, real):
        describer = self.mode.fake_tensor_converter.meta_converter.describer
        describer.lookup_tensor.pop(real, None)

    def _forget(self, key):
        owner = weakref.ref(self)  # the callback must not keep this cache alive

        def forget(ref):
            fakes = owner()
            if fakes is not None and key in fakes._entries and fakes._entries[key][0] is ref:
                del fakes._entries[key]

        return forget

    def retire(self):
        """This mode stops being shared: later traces on this thread get a new one."""
        self.retired = True
        if getattr(_local, "fakes", None) is self:
            _local.fakes = None

    def __len__(self):
        return len(self._entries)


_local = threading.local()


def shared():
    """This thread's SharedFakes for a static trace."""
    fakes = getattr(_local, "fakes", None)
    if fakes is None:
        fakes = _local.fakes = SharedFakes()
    return fakes


def clear():
    """Drops this thread's shared mode and its fakes (bytegraph.reset())."""
    fakes = getattr(_local, "fakes", None)
    if fakes is not None:
        fakes.retire()


class UnfakeableTensor(Exception):
    """A tensor torch's fake tensors cannot copy (its metadata does not survive the copy: a
    view whose base was later written in place with a value that requires grad)."""


_TORCH_DIR = os.path.join(os.path.dirname(os.path.realpath(torch.__file__)), "")


def fake_copy(make):
    """make(), a fake copy of a real tensor; an error raised inside torch (its meta converter
    checks that the copy's metadata matches) becomes UnfakeableTensor, ours stays ours.
    A tensor subclass's __torch_function__ does not run: reading its metadata is the tracer's
    business, not the program's."""
    try:
        with torch._C.DisableTorchFunctionSubclass():
            return make()
    except Exception as error:
        innermost = error.__traceback__
        while innermost.tb_next is not None:
            innermost = innermost.tb_next
        if os.path.realpath(innermost.tb_frame.f_code.co_filename).startswith(_TORCH_DIR):
            raise UnfakeableTensor(f"{type(error).__name__}: {error}") from error
        raise
