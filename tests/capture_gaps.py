"""What keeps bytegraph from capturing the model zoo whole, as minimal programs.

Each `Gap` is one reason found by the zoo (benchmarks/zoo.py; ranked in
benchmarks/results/ZOO_TRIAGE.md, which shows these sources): a few lines of plain Python
and torch (no transformers) that hit the same graph break, frame left eager, or recompile
as the models do, with what eager mode returns. This module holds data, not tests (pytest
does not collect it); tests/test_zoo.py checks for each gap that eager mode returns
`expected`, that bytegraph returns the same, and, as an xfail(strict) test, that bytegraph
no longer hits the reason; when a capability lands, that test passes and the gap moves to
FIXED below.

`matches` is a regular expression over the logged "kind: message" of a break, of a frame
run eagerly, or ("recompile: reason") of a recompilation on the second call. The triage
assigns every logged reason of the zoo to the first gap that matches it.
"""

import collections
import contextvars
import dataclasses
import functools
import inspect
import os
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

import bytegraph


@dataclasses.dataclass(frozen=True)
class Gap:
    tag: str  # a short name for tables
    name: str  # the reason, as the triage titles it
    capability: str  # what bytegraph must do instead
    matches: str  # regex over "kind: message" as bytegraph logs it
    function: Callable  # the reproducer
    make_args: Callable[[], tuple]  # fresh arguments for one call
    args_text: str  # the arguments, as a reader would write them
    expected: Callable[[], object]  # what eager mode returns (observed through `observe`)
    observe: Callable = None  # result -> comparable value, where the result is not data
    helpers: tuple = ()  # classes and functions the reproducer uses (shown with it)
    observe_text: str = ""  # what `observe` does, for readers ("result(torch.ones(2))")
    compiled_text: str = ""  # for WRONG_RESULTS: what bytegraph does instead

    @property
    def call_text(self):
        return f"{self.function.__name__}({self.args_text})"

    def run(self, fn=None):
        """Calls the reproducer (or `fn`, e.g. its compiled version) on fresh arguments;
        returns the observed result."""
        result = (fn or self.function)(*self.make_args())
        return self.observe(result) if self.observe else result


def _ones():
    return (torch.ones(4),)


# ---- attribute access on user objects --------------------------------------------------------


class SuperGetattribute:
    """PretrainedConfig's shape: __getattribute__ overridden, ending in super()."""

    def __init__(self):
        self.weight = torch.full((4,), 2.0)

    def __getattribute__(self, key):
        return super().__getattribute__(key)


def super_getattribute(x, config):
    return x * config.weight


class PropertyUnderGetattribute(SuperGetattribute):
    """A property on a class whose __getattribute__ is overridden (config._attn_implementation)."""

    @property
    def implementation(self):
        return "eager"


def property_under_getattribute(x, config):
    return x * 2 if config.implementation == "eager" else x


def getattr_default_on_none(x, cache=None):
    if getattr(cache, "is_compileable", False):
        return x
    return x + 1


class Cache:
    def __init__(self):
        self.keys = None


def attribute_mutation(x, cache):
    cache.keys = x if cache.keys is None else torch.cat([cache.keys, x])
    return cache.keys * 2


# ---- Python constructs -------------------------------------------------------------------------


def import_in_function(x):
    import math

    return x * math.pi


def compiling_flag():
    """transformers' is_torchdynamo_compiling(): an import inside try."""
    try:
        import torch

        return torch.compiler.is_compiling()
    except Exception:
        return False


def import_in_try(x):
    if not compiling_flag() and (x == 0).all():  # a check skipped while compiling
        return None
    return x + 1


def set_literal(x):
    names = {"input_ids", "attention_mask"}
    return x * len(names)


def str_of_type(x):
    representation = str(type(x))
    return x + 1 if representation.startswith("<class 'torch.") else x


def dict_keys_in_comprehension(x):
    tests = {"pt": 1, "np": 2, "mlx": 3}
    preferred = str(type(x))[8:10]  # leaves this frame eager today: the comprehension runs as a frame of its own
    order = [name for name in tests if name != preferred]
    return x * len(order)


def closure_store_after_break(x):
    bytegraph.graph_break()
    preferred = "pt"  # a cell: the comprehension below reads it
    others = [name for name in ("pt", "np") if name != preferred]
    return x * len(others)


def all_callable(x, functions=(torch.sin, torch.cos)):
    if not all(callable(f) for f in functions):
        raise RuntimeError("not callable")
    return functions[0](x) + functions[1](x)


def returns_closure(x):
    scale = x.sum()

    def inner(t):
        return t * scale

    return inner


def returns_closure_and_tensor(x):
    offset = x.shape[0]

    def inner(t):
        return t + offset

    return x * 2, inner


def size_plus_tuple(x, heads):
    return x.view(x.size()[:-1] + (heads, -1))


def type_on_stack_at_break(x):
    return isinstance(x, type(x)) and len(str(type(x))) > 0


# ---- containers and calls ----------------------------------------------------------------------


def kwargs_item_store(x, **kwargs):
    kwargs["scale"] = 2.0
    return x * kwargs["scale"]


def kwargs_pop(x, **kwargs):
    return_dict = kwargs.pop("return_dict", True)
    return x * 2 if return_dict else x


class Registry(collections.abc.MutableMapping):
    """transformers' AttentionInterface: a user mapping with a global default table."""

    _global = {"sdpa": torch.sin}

    def __init__(self):
        self._local = {}

    def __getitem__(self, key):
        return self._local[key] if key in self._local else self._global[key]

    def __setitem__(self, key, value):
        self._local[key] = value

    def __delitem__(self, key):
        del self._local[key]

    def __iter__(self):
        return iter({**self._global, **self._local})

    def __len__(self):
        return len(self._global) + len(self._local)


REGISTRY = Registry()


def user_mapping_subscript(x):
    return REGISTRY["sdpa"](x)


def in_user_mapping(x):
    return x + 1 if "sdpa" in REGISTRY else x - 1


class Output(collections.OrderedDict):
    """transformers' ModelOutput is a dict subclass (a dataclass whose fields are also items)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)


def dict_subclass_argument(out):
    return out["hidden"] * 2


def set_item_of_dict_subclass(out, x):
    out["hidden"] = x * 2
    return out["hidden"] + 1


def make_dict_subclass_output(x):
    return Output(hidden=x * 2)


def _plain_dict(value):
    return dict(value)


class CanRecordRegistry(dict):
    """transformers' _CanRecordRegistry: a dict subclass whose get() goes through super()."""

    def get(self, model):
        return super().get(str(model.__class__)) or {}


CAN_RECORD = CanRecordRegistry()


def bound_slot_on_stack_at_break(x):
    return x * (1 + len(CAN_RECORD.get(x)))


def environ_get(x):
    return x * 2 if os.environ.get("BYTEGRAPH_ZOO_SURELY_UNSET", "0") == "0" else x


CONTEXT = contextvars.ContextVar("collector", default=None)


def context_var(x):
    token = CONTEXT.set("collecting")
    CONTEXT.reset(token)
    return x + 1


GELU_TANH = functools.partial(F.gelu, approximate="tanh")


def partial_call(x):
    return GELU_TANH(x)


def chunk_helper(hidden):
    return hidden * 2


def inspect_signature(x):
    if len(inspect.signature(chunk_helper).parameters) != 1:
        raise ValueError("one input expected")
    return chunk_helper(x)


@torch.no_grad()
def no_grad_helper(x):
    return x * 2


def calls_no_grad_decorated(x):
    return no_grad_helper(x) + 1


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def autograd_function(x):
    return Square.apply(x) + 1


# ---- modules -----------------------------------------------------------------------------------


class Layers(nn.Module):  # one instance (LAYERS): a new module would be a new guard, in torch.compile too
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        for layer in self.layers:
            nn.init.constant_(layer.weight, 0.1)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        for layer in self.layers[:2]:  # transformers: self.layers[: config.num_hidden_layers]
            x = layer(x)
        return x


LAYERS = Layers()


def modulelist_slice(model, x):
    return model(x)


class Skips(nn.Module):
    """A U-Net's up path: zip over a ModuleList and a reversed list of skips."""

    def __init__(self):
        super().__init__()
        self.up = nn.ModuleList([nn.Identity(), nn.Identity()])

    def forward(self, x):
        skips = [x, x * 2]
        for stage, skip in zip(self.up, reversed(skips)):
            x = stage(x + skip)
        return x


SKIPS = Skips()


def zip_reversed(model, x):
    return model(x)


# ---- splitting frames at breaks ----------------------------------------------------------------


def helper_that_breaks(x, **kwargs):
    return x + len(str(type(x)))


def call_in_try(x, **kwargs):
    try:
        return helper_that_breaks(x, **kwargs)
    finally:
        pass


def break_in_loop_after_break(x):
    bytegraph.graph_break()
    for _ in range(2):
        x = x + 1
        bytegraph.graph_break()
    return x


def make_offset(n):
    def inner(t):
        return t + n

    return inner


def apply(fn, x, _):
    return fn(x)


def closure_on_stack_at_break(x):
    return apply(make_offset(1), x, bytegraph.graph_break())


class ConfigBase:
    def __getattribute__(self, key):
        return super().__getattribute__(key)


class TwoLevelConfig(ConfigBase):
    """PretrainedConfig over HeterogeneousConfigMixin: two __getattribute__ overrides chained by super()."""

    def __init__(self):
        self.scale = 2.0

    def __getattribute__(self, key):
        return super().__getattribute__(key)


def pop_with_getattr_default(x, config, **kwargs):
    return_dict = kwargs.pop("return_dict", getattr(config, "return_dict", True))
    return x * config.scale if return_dict else x


def fresh_iterator_on_stack(x):
    items = [x, x * 2]
    for a, b in zip([1.0, 2.0], reversed(items)):  # the break at reversed() leaves its iterator on the stack
        x = x + a * b
    return x


# ---- the table ---------------------------------------------------------------------------------

GAPS = [
    Gap("ContextVar", "ContextVar.set/reset (CompileableContextVar)",
        "Methods of C-implemented objects such as contextvars.ContextVar: replay set/reset after the graph "
        "(or honour torch.compiler.is_compiling() so the library takes its compile path).",
        r"getattr\(ObjectVariable\(_contextvars\.ContextVar\), '(set|reset|get)'\)", context_var, _ones,
        "torch.ones(4)", lambda: torch.full((4,), 2.0)),
    Gap("break-in-resumed-loop", "a break inside a loop of a resume function",
        "Split a resume function again at a break inside one of its loops.",
        r"a break inside a loop of a resume function", break_in_loop_after_break, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 3.0)),
    Gap("closure-on-stack",
        "a closure made by another function on the stack at a break (and_masks(sliding_window_overlay(...)))",
        "Rebuild functions whose closure belongs to another frame (keep the function object as an input of "
        "the code after the break).",
        r"cannot rebuild stack item \d+ is UserFunctionVariable", closure_on_stack_at_break, _ones,
        "torch.ones(4)", lambda: torch.full((4,), 2.0), helpers=(make_offset, apply)),
]

# Programs bytegraph gets wrong today (a result, an exception or a mutation that differs from
# eager mode): the worst bugs, listed first in the triage. `matches` is unused.
WRONG_RESULTS = []

# Gaps whose xfail passed: the capability landed. Kept as regression data (their eager
# behaviour, bytegraph's equality with it and the reason's absence are still tested).
FIXED = [
    Gap("dict-subclass-input", "reading an item of a dict subclass that is a frame's input (ModelOutput)",
        "Frames whose arguments are dict subclasses: guard on the type and the keys, trace their items.",
        r"unsupported_dict: dict subclass input|unsupported_subscript: ObjectVariable\(\w+, L\['",
        dict_subclass_argument, lambda: (Output(hidden=torch.ones(4)),), "Output(hidden=torch.ones(4))",
        lambda: torch.full((4,), 2.0), helpers=(Output,)),
    Gap("dict-subclass-items", "changing the items of a dict subclass from outside the frame (ModelOutput.__setitem__)",
        "Item changes of dict-subclass inputs (through super().__setitem__ too) recorded and written back "
        "after the graph, like plain dicts'.",
        r"returning changes to the items of ObjectVariable|assigning an item of ObjectVariable",
        set_item_of_dict_subclass, lambda: (Output(), torch.ones(4)), "Output(), torch.ones(4)",
        lambda: torch.full((4,), 3.0), helpers=(Output,)),
    Gap("closure-cells-empty",
        "a function made in a compiled frame and returned has empty closure cells (NameError when called)",
        "Frames that return functions made in the frame (transformers' mask functions, sliding_window_overlay) "
        "must hand back their closure cells filled, or run eagerly; today the cell is empty.",
        r"$^", returns_closure, _ones, "torch.ones(4)", lambda: torch.full((2,), 4.0),
        observe=lambda inner: inner(torch.ones(2)), observe_text="result(torch.ones(2))",
        compiled_text="NameError: cannot access free variable 'scale' where it is not associated with a value "
                      "in enclosing scope (the returned function's cell is empty)"),
    Gap("closure-cells-empty-2", "the same, returned beside a tensor, with an int in the cell",
        "As above: the cell's value does not matter (an int read from a shape here).",
        r"$^", returns_closure_and_tensor, _ones, "torch.ones(4)",
        lambda: (torch.full((4,), 2.0), torch.full((2,), 5.0)),
        observe=lambda result: (result[0], result[1](torch.ones(2))),
        observe_text="(result[0], result[1](torch.ones(2)))",
        compiled_text="NameError: cannot access free variable 'offset' where it is not associated with a value "
                      "in enclosing scope"),
    Gap("kwargs-store", "storing into **kwargs (kwargs[key] = value)",
        "Mutations of dicts that outlive the trace (the frame's **kwargs, inputs): recorded and replayed.",
        r"assigning an item of a dict that outlives the trace", kwargs_item_store, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 2.0)),
    Gap("super-getattribute", "super().__getattribute__ in a __getattribute__ override (PretrainedConfig)",
        "Trace `super().__getattribute__(key)` (object's slot wrapper reached through super) and inline "
        "user `__getattribute__` overrides.",
        r"SuperVariable\(.*\)\.__getattribute__ is not a Python function",
        super_getattribute, lambda: (torch.ones(4), SuperGetattribute()), "torch.ones(4), SuperGetattribute()",
        lambda: torch.full((4,), 2.0), helpers=(SuperGetattribute,)),
    Gap("getattribute-property",
        "property read on a class with a __getattribute__ override (config._attn_implementation)",
        "Attribute reads through a user `__getattribute__`: inline it, then properties and descriptors.",
        r"getattr\(ObjectVariable\((?!_contextvars|no_grad|Signature)[^)]*\), '[^']+'\) may run Python code",
        property_under_getattribute, lambda: (torch.ones(4), PropertyUnderGetattribute()),
        "torch.ones(4), PropertyUnderGetattribute()", lambda: torch.full((4,), 2.0),
        helpers=(SuperGetattribute, PropertyUnderGetattribute)),
    Gap("user-mapping-getitem", "subscript and .get() on a user Mapping (AttentionInterface)",
        "Inline `__getitem__` of user classes and collections.abc.Mapping mixin methods (get, __contains__).",
        r"unsupported_subscript: ObjectVariable\(Registry", user_mapping_subscript, _ones, "torch.ones(4)",
        lambda: torch.sin(torch.ones(4)), helpers=(Registry,)),
    Gap("user-contains", "`in` on a user object with __contains__",
        "Inline `__contains__` (and the Mapping mixin's) of user classes.",
        r"`in` on ObjectVariable\((?!set\))", in_user_mapping, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 2.0), helpers=(Registry,)),
    Gap("no_grad-decorator", "calling a function decorated with @torch.no_grad()",
        "Grad-mode decorators (torch.no_grad()/enable_grad() as decorators: their clone() through "
        "`self.__class__()`) traced as context managers.",
        r"getattr\(ObjectVariable\(no_grad\), '__class__'\)", calls_no_grad_decorated, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 3.0), helpers=(no_grad_helper,)),
    Gap("ModelOutput()", "constructing a ModelOutput-like dict subclass",
        "Instantiating user classes (dataclasses, dict subclasses such as ModelOutput) in traced code.",
        r"calling <class '[^']*(Output|ModelOutput)[^']*'>, which bytegraph cannot trace",
        make_dict_subclass_output, _ones, "torch.ones(4)", lambda: {"hidden": torch.full((4,), 2.0)},
        observe=_plain_dict, helpers=(Output,), observe_text="dict(result)"),
    Gap("setattr", "setting attributes of objects and modules (KV cache layers, SwinLayer.shift_size)",
        "Attribute mutations of user objects and modules, recorded in the side-effect log and replayed.",
        r"side_effect: setting attribute", attribute_mutation, lambda: (torch.ones(4), Cache()),
        "torch.ones(4), Cache()", lambda: torch.full((4,), 2.0), helpers=(Cache,)),
    Gap("super-on-stack", "a super() object on the stack at a break",
        "Rebuild super() objects (and other live stack values) in the code after a break.",
        r"cannot rebuild stack item \d+ is SuperVariable", SuperGetattribute.__getattribute__,
        lambda: (SuperGetattribute(), "weight"), "SuperGetattribute(), 'weight'", lambda: torch.full((4,), 2.0),
        helpers=(SuperGetattribute,)),
    Gap("dict-iterator", "iterating a dict (keys) in a comprehension or resume function",
        "Advance iterators over dicts, sets and lists that a frame receives as input (a comprehension's "
        "`.0`, a resume function's stack slot) instead of breaking.",
        r"unsupported_iteration: advancing ObjectVariable\((dict_keyiterator|dict_valueiterator|"
        r"dict_itemiterator|set_iterator|list_iterator|tuple_iterator)",
        dict_keys_in_comprehension, _ones, "torch.ones(4)", lambda: torch.full((4,), 3.0)),
    Gap("IMPORT_NAME", "import statement (IMPORT_NAME) in traced code",
        "IMPORT_NAME/IMPORT_FROM of an already imported module: read sys.modules at trace time, guard on it.",
        r"opcode IMPORT_NAME is not supported", import_in_function, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 3.141592653589793)),
    Gap("BUILD_SET", "set literal (BUILD_SET) and set comprehensions",
        "BUILD_SET, set comprehensions and `in` on sets of constants.",
        r"opcode BUILD_SET is not supported|`in` on ObjectVariable\(set\)", set_literal, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 2.0)),
    Gap("str(type)", "str(...) of a type (infer_framework_from_repr)",
        "`str()`/`repr()` of constants, types and modules folded at trace time; f-strings and str.format.",
        r"calling BuiltinVariable\(str\)", str_of_type, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0)),
    Gap("cell-store", "assigning a cell variable in a resume function",
        "STORE_DEREF to a cell the frame owns (read by a nested function or comprehension) after a break.",
        r"assigning to the closure variable", closure_store_after_break, _ones, "torch.ones(4)",
        lambda: torch.ones(4)),
    Gap("getattr-default", "getattr(obj, name, default) where the attribute is missing",
        "getattr with a default: a missing attribute gives the default instead of a break (also when the "
        "AttributeError comes from a traced __getattribute__).",
        r"constant_fold_raised: AttributeError|attribute_error: .*has no attribute", getattr_default_on_none,
        _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0)),
    Gap("kwargs.pop", "kwargs.pop(key, default)",
        "dict.pop/setdefault/update on the frame's **kwargs, replayed after the graph.",
        r"ConstDictVariable\(.*\)\.pop", kwargs_pop, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0)),
    Gap("import-in-try",
        "an import inside try (is_torchdynamo_compiling) leaves the frame eager; its caller then branches on data",
        "Split frames at breaks inside try/with blocks; an import in try must not hide is_compiling() "
        "from the library (transformers then skips its data-dependent checks).",
        r"IMPORT_NAME at offset \d+ is inside a try block|data_dependent_branch: branching on the value of "
        r"TensorVariable\((all|eq)", import_in_try, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0),
        helpers=(compiling_flag,)),
    Gap("inspect.signature", "inspect.signature(fn).parameters (apply_chunking_to_forward)",
        "inspect.signature of a known function folded at trace time (a constant guarded on the function); "
        "functools.partial instances made in traced code.",
        r"calling <class 'functools\.partial'>|UserDefinedClassVariable\(functools\.partial\)\(\) takes no "
        r"arguments|'parameters'\) may run Python code|ObjectVariable\(Signature\)",
        inspect_signature, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0), helpers=(chunk_helper,)),
    Gap("partial-call", "calling a functools.partial object (GELUTanh)",
        "functools.partial objects called in traced code: inline the call with the bound arguments.",
        r"calling functools\.partial\(|calling ObjectVariable\(functools\.partial", partial_call, _ones,
        "torch.ones(4)", lambda: F.gelu(torch.ones(4), approximate="tanh")),
    Gap("Size+tuple", "torch.Size + tuple of a non-constant int",
        "torch.Size arithmetic (+ with tuples, slicing, comparisons) with ints read from modules or inputs.",
        r"<built-in function add> on ConstantVariable\(torch\.Size", size_plus_tuple,
        lambda: (torch.ones(2, 8), 2), "torch.ones(2, 8), 2", lambda: torch.ones(2, 2, 4)),
    Gap("all/callable", "all(...) / callable(...) over a generator",
        "Builtins over generators and constants: all, any, callable, sorted, reversed.",
        r"calling BuiltinVariable\((all|any|callable)\)", all_callable, _ones, "torch.ones(4)",
        lambda: torch.sin(torch.ones(4)) + torch.cos(torch.ones(4))),
    Gap("zip/reversed", "zip over a ModuleList and reversed(list) (U-Net skips)",
        "reversed() of lists, zip() over modules and lists, iterating the result.",
        r"BuiltinVariable\(reversed\)|zip of ObjectVariable|(iterating over|advancing) ObjectVariable\(zip\)",
        zip_reversed, lambda: (SKIPS, torch.ones(4)), "Skips(), torch.ones(4)", lambda: torch.full((4,), 4.0),
        helpers=(Skips,)),
    Gap("break-in-try", "a break inside try/finally (CALL_FUNCTION_EX in a decorator's try)",
        "Split frames at breaks inside try/except/finally and with blocks (the block is re-entered in the "
        "resume function).",
        r"at offset \d+ is inside a try block or a with statement", call_in_try, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 23.0), helpers=(helper_that_breaks,)),
    Gap("break-at-LOAD_METHOD", "a break while a bound method is being loaded (LOAD_METHOD)",
        "Resume at a break between LOAD_METHOD and its CALL (rebuild the method and self on the stack).",
        r"generated code does not run LOAD_METHOD", kwargs_pop, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 2.0)),
    Gap("break-in-FOR_ITER", "a break in a comprehension's loop (FOR_ITER)",
        "Resume inside a running loop: the generated code must run FOR_ITER over the live iterator.",
        r"generated code does not run FOR_ITER", dict_keys_in_comprehension, _ones, "torch.ones(4)",
        lambda: torch.full((4,), 3.0)),
    Gap("class-on-stack", "a class on the stack at a break (str(type(x)), type(self) in ModelOutput.__post_init__)",
        "Rebuild classes on the stack after a break (load them from where they were read, or keep them as "
        "inputs of the code after the break).",
        r"cannot rebuild stack item \d+ is (ClassVariable|UserDefinedClassVariable)", type_on_stack_at_break,
        _ones, "torch.ones(4)", lambda: True),
    Gap("slot-on-stack", "a bound method of a user object on the stack at a break (super().get(str(...)))",
        "Rebuild bound methods of user objects (and super() objects) on the stack after a break.",
        r"cannot rebuild stack item \d+ is (ObjectSlotVariable|SuperVariable)", bound_slot_on_stack_at_break,
        _ones, "torch.ones(4)", lambda: torch.ones(4), helpers=(CanRecordRegistry,)),
    Gap("identity-guard",
        "identity guards on values made in the call (an iterator, a resume function's stack slot)",
        "Values created inside the compiled region get type/structure guards, not identity guards that fail "
        "on every call.",
        r"recompile: L\['(\.0|___stack\d+)'\]\S* identity changed", fresh_iterator_on_stack, _ones,
        "torch.ones(4)", lambda: torch.full((4,), 5.0)),
    Gap("getattribute-recursion",
        "RecursionError through two chained __getattribute__ overrides (DistilBERT, ALBERT, ViT, DeiT raise)",
        "A frame left eager (here: the break at kwargs.pop) calls config.__getattribute__, which the hook then "
        "compiles on its own: first for a missing attribute (getattr with a default), then for a present one. "
        "The second compiled __getattribute__ re-enters itself until the stack overflows.",
        r"$^", pop_with_getattr_default, lambda: (torch.ones(4), TwoLevelConfig()), "torch.ones(4), TwoLevelConfig()",
        lambda: torch.full((4,), 2.0), helpers=(ConfigBase, TwoLevelConfig),
        compiled_text="RecursionError: maximum recursion depth exceeded, in TwoLevelConfig.__getattribute__ "
                      "(the same happens with bytegraph.compile(TwoLevelConfig.__getattribute__) called with "
                      "'missing' (AttributeError, as in eager mode) and then 'scale')"),
    Gap("environ-get", "os.environ.get of an unset variable (TRANSFORMERS_SDPA_FORCE_GQA)",
        "A KeyError raised and caught inside traced code (Mapping.get over os.environ's __getitem__): trace "
        "the except clause, guard on the variable being unset.",
        r"key_error: KeyError", environ_get, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0)),
    Gap("ModuleList-slice", "slicing a ModuleList (self.layers[:n])",
        "ModuleList/Sequential slicing and indexing in forward.",
        r"UnspecializedNNModuleVariable\(ModuleList.*\)\[ConstantVariable\(slice", modulelist_slice,
        lambda: (LAYERS, torch.ones(2, 4)), "Layers(), torch.ones(2, 4)", lambda: torch.full((2, 4), 0.16),
        helpers=(Layers,)),
    Gap("autograd.Function", "a custom torch.autograd.Function (BLOOM's GeLUFunction)",
        "autograd.Function.apply traced (forward inlined, backward kept) as torch.compile does.",
        r"_are_functorch_transforms_active|setting attribute 'to_save'|L\['ctx'\] identity changed",
        autograd_function, _ones, "torch.ones(4)", lambda: torch.full((4,), 2.0), helpers=(Square,)),
]
