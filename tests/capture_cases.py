"""Functions and modules that bytegraph must capture whole: one graph each.

Each case is (name, make) where make() returns (callable, args). Shared by the end-to-end
capture tests and the benchmarks' smoke tests.
"""

import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from bytegraph.examples import Net  # noqa: F401  (the seed model, one of the cases)

SCALE = 3.0


def _t(*shape):
    return torch.randn(*shape)


def helper_double(x):
    return x * 2


def helper_affine(x, w, b=1.0):
    return x * w + b


def helper_kwargs(x, *, shift=0.5, **extra):
    return x + shift + extra.get("bonus", 0.0)


def helper_varargs(*xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


# ---- plain functions --------------------------------------------------------------------


def f_add(a, b):
    return a + b


def f_seed_sum(a, b):
    a0 = 0
    a1 = 1
    a2 = 2
    a3 = a0 + a1 + a2
    return a + b + a3, a.sum() > a3


def f_chain_methods(x):
    return x.relu().sum(dim=1).neg().exp()


def f_inplace_intermediate(x):
    y = x.clone()
    y.add_(1.0)
    y.mul_(2)
    return y


def f_torch_functions(x):
    return torch.tanh(torch.sigmoid(x) + torch.cos(x))


def f_functional(x):
    return F.softmax(F.gelu(x), dim=-1)


def f_view_size(x):
    return x.view(x.size(0), -1)


def f_shape_folding(x):
    n = x.shape[0] * x.dim()
    return x.reshape(n // x.dim(), -1) + x.numel()


def f_cat_list(a, b):
    return torch.cat([a, b, a * 2], dim=0)


def f_stack_comprehension(x):
    return torch.stack([x * i for i in range(3)])


def f_dict_comprehension(x):
    d = {k: x + v for k, v in zip(("a", "b"), (1.0, 2.0))}
    return d["a"] * d["b"]


def f_tuple_return(x):
    return x + 1, x - 1, 7


def f_dict_return(x):
    return {"double": x * 2, "label": "ok", "n": 3}


def f_list_return(x):
    return [x, x.sin()]


def f_loop_python_int(x):
    for i in range(4):
        x = x * 0.5 + i
    return x


def f_while_loop(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    return x


def f_if_python_constant(x, flag=True):
    if flag:
        return x + 1
    return x - 1


def f_inline_helper(x):
    return helper_double(x) + helper_affine(x, 3.0)


def f_inline_kwargs(x):
    return helper_kwargs(x, shift=2.0, bonus=1.0)


def f_inline_varargs(x, y):
    return helper_varargs(x, y, x)


def f_closure(x):
    k = 2.5

    def inner(y):
        return y * k

    return inner(x) + inner(1.0)


def f_lambda(x):
    g = lambda t: t.abs() + 1  # noqa: E731
    return g(x)


def f_star_args(*args):
    return args[0] * args[1]


def f_star_kwargs(x, **kwargs):
    return x * kwargs["scale"]


def f_global_constant(x):
    return x * SCALE


def f_math_on_constants(x):
    return x * math.sqrt(16.0) + math.pi


def f_operator_module(x):
    return operator.add(x, operator.mul(2, 3))


def f_builtins(x):
    n = len([1, 2, 3])
    m = max(2, 5)
    k = min(abs(-3), 10)
    return x * n + m - k


def f_isinstance(x):
    if isinstance(x, torch.Tensor):
        return x + 1
    return x


def f_getattr_hasattr(x):
    if hasattr(x, "shape"):
        return getattr(x, "T") * 2
    return x


def f_enumerate(x):
    out = x
    for i, v in enumerate([1.0, 2.0, 3.0]):
        out = out + v * i
    return out


def f_slicing(x):
    return x[1:, :2] * x[0, None, :2]


def f_indexing_ellipsis(x):
    return x[..., 0] + x[None][0, :, :, -1]


def f_comparisons(x, y):
    return (x > y).float() + (x == y).float() * 2


def f_unary(x):
    return -x + (+x) + (~(x > 0)).float()


def f_power_div(x):
    return x**2 / (x.abs() + 1) // 1 % 3


def f_matmul(a, b):
    return a @ b


def f_where(x):
    return torch.where(x > 0, x, torch.zeros_like(x))


def f_dtype_device(x):
    y = torch.ones(x.shape, dtype=x.dtype, device=x.device)
    return x + y


def f_to_dtype(x):
    return x.to(torch.float64).sum()


def f_unpack(x):
    a, b = x.chunk(2)
    first, *rest = [a, b, a]
    return first + rest[0] + rest[1]


def f_split_loop(x):
    total = 0
    for part in x.split(1):
        total = total + part.sum()
    return total


def f_string_format(x):
    name = f"{'scale'}_{2}"
    return x * len(name)


def f_none_default(x, bias=None):
    if bias is None:
        return x * 2
    return x + bias


def f_nested_tuple_args(pair):
    a, b = pair
    return a * b


def f_dict_arg(d):
    return d["x"] + d["y"]


def f_list_arg(xs):
    return xs[0] + xs[-1]


def f_min_max_tensors(x):
    return torch.maximum(x, x * 0.5) - torch.clamp(x, -0.5, 0.5)


def f_reductions(x):
    return x.mean() + x.std() + x.max() + x.amin()


def f_softmax_attention(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    return w @ v


def f_new_tensors(x):
    return x + torch.arange(4.0) + torch.zeros(4) + torch.full((4,), 2.0)


def f_list_mutation_local(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    acc.extend([x])
    return sum(acc[1:], x)


def f_contains(x):
    keys = ("a", "b")
    if "a" in keys and "z" not in keys:
        return x + 1
    return x


def f_chained_compare(x):
    n = 3
    if 0 < n < 5:
        return x * n
    return x


def f_bool_ops(x):
    a, b = True, False
    return x * (a and not b) + x * (a or b)


def f_tensor_attrs(x):
    return x * x.ndim + x.size(1) + int(x.requires_grad) + (1 if x.is_floating_point() else 0)


def f_default_tensor_arg(x, bias=torch.ones(3)):
    return x + bias


def f_nested_helpers(x):
    def outer(y):
        def inner(z):
            return z.exp()

        return inner(y) - 1

    return outer(x) * 2


def f_tuple_unpack_swap(a, b):
    a, b = b, a
    return a - b


def f_dict_items_loop(x):
    scales = {"a": 1.0, "b": 2.0}
    for name, value in scales.items():
        x = x * value if name == "a" else x + value
    return x


def f_range_len_loop(xs):
    out = xs[0]
    for i in range(1, len(xs)):
        out = out * xs[i]
    return out


def f_einsum_permute(a, b):
    return torch.einsum("ij,jk->ik", a, b).permute(1, 0).contiguous()


def f_masked_fill(x):
    return x.masked_fill(x < 0, 0.0).cumsum(0)


def f_layer_norm_functional(x):
    return F.layer_norm(x, (x.shape[-1],)) + F.dropout(x, p=0.5, training=False)


# ---- modules ----------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)
        self.act = nn.GELU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        x = self.pool(x).flatten(1)
        return self.head(x)


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.norm = nn.LayerNorm(16)
        self.drop = nn.Dropout(0.3)

    def forward(self, ids):
        return self.drop(self.norm(self.emb(ids)))


class SequentialNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh())

    def forward(self, x):
        return self.body(x)


class ModuleListNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = x + torch.relu(layer(x))
        return x


class ModuleDictNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})

    def forward(self, x):
        return self.heads["a"](x) - self.heads["b"](x)


class ParamNet(nn.Module):
    """Parameters and buffers read directly in a user forward."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, 6))
        self.register_buffer("offset", torch.ones(6))

    def forward(self, x):
        return x @ self.weight + self.offset


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.lin(x))


class NestedUserModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block(8)
        self.b = Block(8)

    def forward(self, x):
        return self.b(self.a(x))


class HelperMethodNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def scale(self, x, factor):
        return x * factor

    def forward(self, x):
        return self.scale(self.lin(x), 0.5)


class AttentionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


class EncoderNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


class ConvTransposeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 2, 2, stride=2)
        self.norm = nn.GroupNorm(1, 2)

    def forward(self, x):
        return torch.sigmoid(self.norm(self.up(x)))


class RNNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 8, batch_first=True)

    def forward(self, x):
        out, h = self.rnn(x)
        return out.sum() + h.sum()


class ResidualMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(8) for _ in range(2)])
        self.out = nn.Linear(8, 1)

    def forward(self, x, scale: float = 1.0):
        for i, block in enumerate(self.blocks):
            x = block(x) * scale + i
        return self.out(x).squeeze(-1)


def _eval(module):
    return module.eval()


FUNCTION_CASES = [
    ("add", lambda: (f_add, (_t(3), _t(3)))),
    ("seed_sum", lambda: (f_seed_sum, (_t(2, 3), _t(2, 3)))),
    ("chain_methods", lambda: (f_chain_methods, (_t(3, 4),))),
    ("inplace_intermediate", lambda: (f_inplace_intermediate, (_t(4),))),
    ("torch_functions", lambda: (f_torch_functions, (_t(4),))),
    ("functional", lambda: (f_functional, (_t(2, 5),))),
    ("view_size", lambda: (f_view_size, (_t(2, 3, 4),))),
    ("shape_folding", lambda: (f_shape_folding, (_t(4, 6),))),
    ("cat_list", lambda: (f_cat_list, (_t(2, 3), _t(2, 3)))),
    ("stack_comprehension", lambda: (f_stack_comprehension, (_t(3),))),
    ("dict_comprehension", lambda: (f_dict_comprehension, (_t(3),))),
    ("tuple_return", lambda: (f_tuple_return, (_t(3),))),
    ("dict_return", lambda: (f_dict_return, (_t(3),))),
    ("list_return", lambda: (f_list_return, (_t(3),))),
    ("loop_python_int", lambda: (f_loop_python_int, (_t(3),))),
    ("while_loop", lambda: (f_while_loop, (_t(3),))),
    ("if_python_constant", lambda: (f_if_python_constant, (_t(3),))),
    ("inline_helper", lambda: (f_inline_helper, (_t(3),))),
    ("inline_kwargs", lambda: (f_inline_kwargs, (_t(3),))),
    ("inline_varargs", lambda: (f_inline_varargs, (_t(3), _t(3)))),
    ("closure", lambda: (f_closure, (_t(3),))),
    ("lambda", lambda: (f_lambda, (_t(3),))),
    ("star_args", lambda: (f_star_args, (_t(3), _t(3)))),
    ("star_kwargs", lambda: (lambda x: f_star_kwargs(x, scale=2.0), (_t(3),))),
    ("global_constant", lambda: (f_global_constant, (_t(3),))),
    ("math_on_constants", lambda: (f_math_on_constants, (_t(3),))),
    ("operator_module", lambda: (f_operator_module, (_t(3),))),
    ("builtins", lambda: (f_builtins, (_t(3),))),
    ("isinstance", lambda: (f_isinstance, (_t(3),))),
    ("getattr_hasattr", lambda: (f_getattr_hasattr, (_t(2, 3),))),
    ("enumerate", lambda: (f_enumerate, (_t(3),))),
    ("slicing", lambda: (f_slicing, (_t(3, 4),))),
    ("indexing_ellipsis", lambda: (f_indexing_ellipsis, (_t(2, 3, 4),))),
    ("comparisons", lambda: (f_comparisons, (_t(4), _t(4)))),
    ("unary", lambda: (f_unary, (_t(4),))),
    ("power_div", lambda: (f_power_div, (_t(4),))),
    ("matmul", lambda: (f_matmul, (_t(3, 4), _t(4, 2)))),
    ("where", lambda: (f_where, (_t(5),))),
    ("dtype_device", lambda: (f_dtype_device, (_t(2, 2),))),
    ("to_dtype", lambda: (f_to_dtype, (_t(3),))),
    ("unpack", lambda: (f_unpack, (_t(4, 2),))),
    ("split_loop", lambda: (f_split_loop, (_t(3, 2),))),
    ("string_format", lambda: (f_string_format, (_t(3),))),
    ("none_default", lambda: (f_none_default, (_t(3),))),
    ("nested_tuple_args", lambda: (f_nested_tuple_args, ((_t(3), _t(3)),))),
    ("dict_arg", lambda: (f_dict_arg, ({"x": _t(3), "y": _t(3)},))),
    ("list_arg", lambda: (f_list_arg, ([_t(3), _t(3), _t(3)],))),
    ("min_max_tensors", lambda: (f_min_max_tensors, (_t(4),))),
    ("reductions", lambda: (f_reductions, (_t(4, 4),))),
    ("softmax_attention", lambda: (f_softmax_attention, (_t(2, 4, 8), _t(2, 4, 8), _t(2, 4, 8)))),
    ("new_tensors", lambda: (f_new_tensors, (_t(4),))),
    ("list_mutation_local", lambda: (f_list_mutation_local, (_t(3),))),
    ("contains", lambda: (f_contains, (_t(3),))),
    ("chained_compare", lambda: (f_chained_compare, (_t(3),))),
    ("bool_ops", lambda: (f_bool_ops, (_t(3),))),
    ("tensor_attrs", lambda: (f_tensor_attrs, (_t(2, 3),))),
    ("default_tensor_arg", lambda: (f_default_tensor_arg, (_t(3),))),
    ("nested_helpers", lambda: (f_nested_helpers, (_t(3),))),
    ("tuple_unpack_swap", lambda: (f_tuple_unpack_swap, (_t(3), _t(3)))),
    ("dict_items_loop", lambda: (f_dict_items_loop, (_t(3),))),
    ("range_len_loop", lambda: (f_range_len_loop, ([_t(3), _t(3), _t(3)],))),
    ("einsum_permute", lambda: (f_einsum_permute, (_t(2, 3), _t(3, 4)))),
    ("masked_fill", lambda: (f_masked_fill, (_t(5),))),
    ("layer_norm_functional", lambda: (f_layer_norm_functional, (_t(2, 6),))),
]

MODULE_CASES = [
    ("Net", lambda: (Net(), (_t(2, 128),))),
    ("MLP", lambda: (MLP(), (_t(4, 16),))),
    ("CNN_eval", lambda: (_eval(CNN()), (_t(2, 3, 16, 16),))),
    ("CNN_train", lambda: (CNN(), (_t(2, 3, 16, 16),))),
    ("Embedder_eval", lambda: (_eval(Embedder()), (torch.randint(0, 50, (2, 7)),))),
    ("SequentialNet", lambda: (SequentialNet(), (_t(3, 8),))),
    ("Sequential_direct", lambda: (nn.Sequential(nn.Linear(8, 4), nn.ReLU()), (_t(2, 8),))),
    ("ModuleListNet", lambda: (ModuleListNet(), (_t(2, 8),))),
    ("ModuleDictNet", lambda: (ModuleDictNet(), (_t(2, 4),))),
    ("ParamNet", lambda: (ParamNet(), (_t(3, 6),))),
    ("NestedUserModules", lambda: (NestedUserModules(), (_t(2, 8),))),
    ("HelperMethodNet", lambda: (HelperMethodNet(), (_t(2, 4),))),
    ("AttentionNet_eval", lambda: (_eval(AttentionNet()), (_t(2, 5, 16),))),
    ("EncoderNet_eval", lambda: (_eval(EncoderNet()), (_t(2, 5, 16),))),
    ("ConvTransposeNet", lambda: (ConvTransposeNet(), (_t(1, 4, 4, 4),))),
    ("RNNNet", lambda: (RNNNet(), (_t(2, 5, 8),))),
    ("ResidualMLP", lambda: (ResidualMLP(), (_t(3, 8),))),
    ("Linear_leaf", lambda: (nn.Linear(4, 3), (_t(2, 4),))),
]

ALL_CASES = FUNCTION_CASES + MODULE_CASES
