"""OptimizedModule: what `bytegraph.compile(module)` returns.

It behaves as the original module does, except that calling it runs the compiled call:

- it shares the original's parameter, buffer, submodule and state-dict-hook tables, so
  `parameters()` yields the very same objects and `state_dict()` has the original's keys
  (not prefixed with `_orig_mod.`), also when the compiled module is itself a child of
  another module;
- attribute reads the wrapper cannot answer, and every attribute write or delete, go to the
  original module (`compiled.lr = 0.1` sets `original.lr`); `training` is the original's;
- `train()`, `eval()`, `apply()` act on the original and return the wrapper;
- its class is its own: assigning `__class__` changes the wrapper's (fully_shard gives the
  module it shards a subclass with FSDP's methods), and `named_modules()`/`modules()` list
  the wrapper where the original sits (the two share their submodules), so that APIs keeping
  per-module state (fully_shard, DDP) find the module they were applied to.
"""

import torch

# The original's tables the wrapper reuses as its own. Forward/backward hook tables are not
# shared: hooks registered through the wrapper are registered on the original (see
# `_HOOK_REGISTRATIONS`), and the original runs them inside the compiled call, exactly once.
_SHARED_TABLES = (
    "_parameters",
    "_buffers",
    "_non_persistent_buffers_set",
    "_modules",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)

# Names the wrapper answers itself; everything else is looked up on the original.
_OWN_ATTRIBUTES = frozenset({"_orig_mod", "_compiled_call", "_compile_options", "_rebuild", "_initialized"})


class OptimizedModule(torch.nn.Module):
    """A module whose `__call__` (and `forward`) runs `compiled_call`; see the module docstring."""

    def __init__(self, module, compiled_call, compile_options=None, rebuild=None):
        """`rebuild(module, compile_options)` compiles it again: what unpickling calls."""
        object.__setattr__(self, "_initialized", False)
        super().__init__()
        for name in _SHARED_TABLES:
            object.__setattr__(self, name, getattr(module, name))
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_compiled_call", compiled_call)
        object.__setattr__(self, "_compile_options", dict(compile_options or {}))
        object.__setattr__(self, "_rebuild", rebuild)
        object.__setattr__(self, "_initialized", True)

    def __call__(self, *args, **kwargs):
        self._initialize_lazy(args, kwargs)
        return self._compiled_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        self._initialize_lazy(args, kwargs)
        return self._compiled_call(*args, **kwargs)

    def _initialize_lazy(self, args, kwargs):
        # A lazy module (LazyModuleMixin) makes its parameters on its first call, in a forward
        # pre-hook; that runs here, uncompiled, as the eager first call runs it, so the compiled
        # call sees the module as it is from then on.
        module = self._orig_mod
        if isinstance(module, torch.nn.modules.lazy.LazyModuleMixin) and hasattr(module, "_initialize_hook"):
            module._infer_parameters(module, args, kwargs)

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, mode):
        # nn.Module.__init__ sets training=True; that must not change the original.
        if self._initialized:
            self._orig_mod.training = mode

    def __getattr__(self, name):
        # Reached only when normal lookup fails: the original answers.
        if name in _OWN_ATTRIBUTES:
            raise AttributeError(name)
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if name in _OWN_ATTRIBUTES:
            raise AttributeError(f"OptimizedModule.{name} cannot be reassigned")
        if name in ("training", "__class__"):
            object.__setattr__(self, name, value)
            return
        setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        delattr(self._orig_mod, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(self._orig_mod)))

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"

    def __bool__(self):
        return bool(self._orig_mod)

    def __len__(self):
        return len(self._orig_mod)

    def __iter__(self):
        return iter(self._orig_mod)

    def __getitem__(self, index):
        return self._orig_mod[index]

    def __reduce__(self):
        if self._rebuild is None:
            raise TypeError("this OptimizedModule cannot be pickled: it was made without a way to compile it again")
        return (self._rebuild, (self._orig_mod, self._compile_options))

    # --- nn.Module methods answered by the original -----------------------------------------

    def train(self, mode=True):
        self._orig_mod.train(mode)
        return self

    def apply(self, fn):
        self._orig_mod.apply(fn)
        return self

    def state_dict(self, *args, **kwargs):
        return self._orig_mod.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return self._orig_mod.load_state_dict(state_dict, strict=strict, assign=assign)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        self._orig_mod._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, *args, **kwargs):
        self._orig_mod._load_from_state_dict(*args, **kwargs)

    def extra_repr(self):
        return self._orig_mod.extra_repr()

    def _get_name(self):
        return f"OptimizedModule({self._orig_mod._get_name()})"


# Hooks around the call belong to the original: the compiled call runs the original's
# `__call__`, which runs them.
_HOOK_REGISTRATIONS = (
    "register_forward_hook",
    "register_forward_pre_hook",
    "register_full_backward_hook",
    "register_full_backward_pre_hook",
    "register_backward_hook",
)


def _delegate_to_original(name):
    def delegated(self, *args, **kwargs):
        return getattr(self._orig_mod, name)(*args, **kwargs)

    delegated.__name__ = name
    delegated.__qualname__ = f"OptimizedModule.{name}"
    delegated.__doc__ = f"Calls the original module's {name}."
    return delegated


for _name in _HOOK_REGISTRATIONS:
    setattr(OptimizedModule, _name, _delegate_to_original(_name))
del _name
