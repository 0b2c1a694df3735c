"""The benchmarked models: the seed examples, small hand-written networks, and real
architectures from `transformers` built from tiny configs with random weights (no downloads).

Each entry is a `BenchModel`; `make()` returns a fresh `(callable, args, kwargs)` so that a
benchmark can build a model once per measurement without sharing compiled state.
"""

import dataclasses
import importlib.util
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from bytegraph.examples import Net, foo2  # the seeds' model and the notebook's foo2


@dataclasses.dataclass(frozen=True)
class BenchModel:
    name: str
    group: str  # "seed", "basic" or "transformers"
    make: Callable[[], tuple]  # () -> (callable, args tuple, kwargs dict)
    description: str = ""


# ---- small hand-written networks --------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, dim=64, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        for layer in self.layers:
            x = F.gelu(layer(x))
        return self.head(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class TransformerEncoder(nn.Module):
    """Two nn.TransformerEncoderLayer blocks over token embeddings (d_model 64)."""

    def __init__(self, vocab=256, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        return self.norm(self.encoder(self.embed(ids)))


class LSTMTagger(nn.Module):
    """Token embeddings, a 2-layer nn.LSTM, and a per-token linear head."""

    def __init__(self, vocab=256, dim=64, layers=2, tags=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=layers, batch_first=True)
        self.head = nn.Linear(dim, tags)

    def forward(self, ids):
        hidden, _ = self.lstm(self.embed(ids))
        return self.head(hidden)


class _DoubleConv(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, padding=1)
        self.norm1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1)
        self.norm2 = nn.BatchNorm2d(outputs)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(x)))


class UNet(nn.Module):
    """A small U-Net: two down stages, a bottleneck, two up stages with skip connections
    (torch.cat) and F.interpolate upsampling; per-pixel class logits."""

    def __init__(self, channels=3, width=8, classes=4):
        super().__init__()
        self.down = nn.ModuleList([_DoubleConv(channels, width), _DoubleConv(width, 2 * width)])
        self.bottleneck = _DoubleConv(2 * width, 4 * width)
        self.up = nn.ModuleList([_DoubleConv(6 * width, 2 * width), _DoubleConv(3 * width, width)])
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        skips = []
        for stage in self.down:
            x = stage(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for stage, skip in zip(self.up, reversed(skips)):
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = stage(torch.cat([x, skip], dim=1))
        return self.head(x)


def _ids(batch=2, length=16, vocab=256):
    return torch.randint(0, vocab, (batch, length))


def _module(model, *args, **kwargs):
    return model.eval(), args, kwargs


# ---- transformers: tiny configs, random weights -----------------------------------------

_TINY = dict(vocab_size=256)


def without_dropout(config):
    """The config with every dropout and drop-path probability set to 0: a training step is
    then deterministic, so compiled and eager gradients can be compared exactly."""
    for key, value in config.to_dict().items():
        if isinstance(value, float) and ("drop" in key):
            setattr(config, key, 0.0)
    return config


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0,
                        use_cache=False, **_TINY)
    return _module(GPT2Model(without_dropout(config)), _ids())


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
                        max_position_embeddings=64, **_TINY)
    return _module(BertModel(without_dropout(config)), _ids())


def _llama():
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                         intermediate_size=128, max_position_embeddings=64, use_cache=False, **_TINY)
    return _module(LlamaModel(without_dropout(config)), _ids())


def _t5():
    from transformers import T5Config, T5Model

    config = T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_kv=16, num_heads=4, d_ff=128,
                      use_cache=False, **_TINY)
    return _module(T5Model(without_dropout(config)), input_ids=_ids(), decoder_input_ids=_ids(length=8))


def _resnet():
    from transformers import ResNetConfig, ResNetModel

    config = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], layer_type="basic")
    return _module(ResNetModel(without_dropout(config)), torch.randn(2, 3, 32, 32))


def _vit():
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(image_size=32, patch_size=8, num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                       intermediate_size=128)
    return _module(ViTModel(without_dropout(config)), torch.randn(2, 3, 32, 32))


SEED_MODELS = [
    BenchModel("Net", "seed", lambda: _module(Net(), torch.randn(4, 128)), "seed: Linear(128,10)+relu"),
    BenchModel("foo2", "seed", lambda: (foo2, (torch.randn(10), torch.randn(10)), {}),
               "seed: two branches on tensor values"),
]

BASIC_MODELS = [
    BenchModel("MLP", "basic", lambda: _module(MLP(), torch.randn(8, 64)), "4x Linear(64)+gelu, head"),
    BenchModel("CNN", "basic", lambda: _module(SmallCNN(), torch.randn(2, 3, 32, 32)), "2x conv-bn-relu-pool, head"),
    BenchModel("TransformerEncoder", "basic", lambda: _module(TransformerEncoder(), _ids()),
               "nn.TransformerEncoder, 2 layers, d=64"),
]

TRANSFORMERS_MODELS = [
    BenchModel("GPT-2", "transformers", _gpt2, "GPT2Model, 2 layers, d=64"),
    BenchModel("BERT", "transformers", _bert, "BertModel, 2 layers, d=64"),
    BenchModel("Llama", "transformers", _llama, "LlamaModel, 2 layers, d=64, GQA 4/2"),
    BenchModel("T5", "transformers", _t5, "T5Model, 2+2 layers, d=64"),
    BenchModel("ResNet", "transformers", _resnet, "ResNetModel (basic blocks), 3 stages"),
    BenchModel("ViT", "transformers", _vit, "ViTModel, 2 layers, d=64, 32x32 images"),
]


def have_transformers():
    return importlib.util.find_spec("transformers") is not None


def select(include_transformers=True, names=None):
    """The models to run: all of them, less transformers' when asked or not installed."""
    models = SEED_MODELS + BASIC_MODELS
    if include_transformers and have_transformers():
        models = models + TRANSFORMERS_MODELS
    if names:
        wanted = set(names)
        models = [m for m in models if m.name in wanted]
    return models
