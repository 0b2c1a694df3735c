"""A program written for torch.compile, as tutorials and transformers use it; it knows nothing
of bytegraph. `python -m bytegraph run tests/programs/torch_compile_tour.py --steps 3` runs it
compiled by bytegraph (tests/test_run_command.py)."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


def bar(x, y):
    return torch.tanh(x) * y


@torch.compile(backend="aot_eager")
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        # transformers' is_torchdynamo_compiling(): a compile-friendly path under torch.compile.
        if not torch.compiler.is_compiling():
            assert x.dim() == 2, "checked eagerly only"
        return F.relu(self.lin(x))


@torch.compiler.disable
def log_value(value):
    return float(value)


def train_step(model, optimizer, x, target):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
    return log_value(loss.detach())


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=32,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    print(f"steps={args.steps}")
    torch.manual_seed(0)
    x, y = torch.randn(10, 10), torch.randn(10, 10)

    opt_foo1 = torch.compile(foo, backend="eager")
    print(f"torch.compile(fn): same={torch.allclose(opt_foo1(x, y), foo(x, y))}")
    print(f"@torch.compile: same={torch.allclose(opt_foo2(x, y), foo(x, y))}")

    model = MLP()
    opt_model = torch.compile(model, backend="eager", dynamic=False)
    inp = torch.randn(4, 16)
    print(f"torch.compile(module): same={torch.allclose(opt_model(inp), model(inp))}")

    method_model = MLP()
    reference = method_model(inp)
    method_model.compile(backend="eager")
    print(f"module.compile(): same={torch.allclose(method_model(inp), reference)}")

    optimized = torch._dynamo.optimize("eager")(bar)
    print(f"torch._dynamo.optimize: same={torch.allclose(optimized(x, y), bar(x, y))}")

    # Training: the compiled model's parameters are the model's own.
    train_model = MLP()
    eager_model = MLP()
    eager_model.load_state_dict(train_model.state_dict())
    compiled_train = torch.compile(train_model, backend="eager")
    opt_a = torch.optim.SGD(train_model.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    target = torch.randn(4, 16)
    losses = [(train_step(compiled_train, opt_a, inp, target), train_step(eager_model, opt_b, inp, target))
              for _ in range(args.steps)]
    print(f"training: same={all(abs(a - b) < 1e-6 for a, b in losses)} losses={[round(a, 4) for a, _ in losses]}")

    # transformers: a model's forward compiled in place, as generation utilities do.
    gpt2 = tiny_gpt2()
    ids = torch.randint(0, 100, (1, 8))
    with torch.no_grad():
        expected = gpt2(ids).logits
        gpt2.forward = torch.compile(gpt2.forward, backend="eager")
        print(f"transformers GPT2: same={torch.allclose(gpt2(ids).logits, expected, atol=1e-5)}")

    torch._dynamo.reset()
    print("done")


if __name__ == "__main__":
    main()
