"""Real users' code: recompiles from minimal repros posted in pytorch/pytorch issues (and
two other projects that compile small functions: vLLM, SGLang).

Each case transcribes the repro as posted (the issue is named in ``@case``): CPU
instead of CUDA, ``backend="eager"`` unless the issue is about Inductor, the calls as
the user made them. None comes from PyTorch's test suite.

Tried and left out: https://github.com/pytorch/pytorch/issues/110803 (the post has the
profiler report, not the code), https://github.com/pytorch/pytorch/issues/100977 (no code
posted), https://github.com/pytorch/pytorch/issues/144787 (needs a TorchDispatchMode and
``error_on_recompile``; the recompile is torch's own mode guard). No recompile on torch 2.13:
https://github.com/pytorch/pytorch/issues/149405 (a float under ``dynamic=True``),
https://github.com/pytorch/pytorch/issues/123810 (``torch.full`` from a shape under ``dynamic=True``),
https://github.com/pytorch/pytorch/issues/134954 (a new ``nn.Module`` instance per call),
https://github.com/pytorch/pytorch/issues/132986 (``eval()``/``train()`` on a compiled ``Linear``).
https://github.com/pytorch/pytorch/issues/131975 runs under ``eager`` (the issue used Inductor;
the recompile is Dynamo's guard, whatever the backend).
"""

import torch
import torch._dynamo
import torch.nn as nn
from torch import Tensor

from . import case

I = "https://github.com/pytorch/pytorch/issues/"


@case(I + "136915")
def int_from_closure():
    def f(x):
        def g(y):
            return y + x
        return g

    def h(x, g):
        return g(x)

    return h, [(torch.randn(5), f(i)) for i in range(10)]


@case("https://github.com/vllm-project/vllm/issues/8821")
def int_argument_values():
    def f(x, i):
        return (x + i) * i

    x = torch.randn(5, 5)
    return f, [(x, 1), (x, 2), (x, 3)]


@case("https://github.com/pytorch/torchdynamo/issues/1940", config={"recompile_limit": 2})
def int_of_tensor_recompile_limit():
    def fn(box):
        w = int(box[2] + box[0])  # BREAK
        h = int(box[3] - box[1])  # BREAK
        return w + h

    torch.manual_seed(0)
    args = [torch.randint(0, 10000, size=(4,), dtype=torch.int64) for _ in range(10)]
    return fn, [(arg,) for arg in args]


@case(I + "131975")
def requires_grad_under_no_grad():
    def f(a, b):
        return (a + b).clip(0)

    a = torch.randn(64, 64)
    b = torch.randn(64, 64)

    def run(f_):
        with torch.no_grad():
            r1 = f_(a, b)
            a.requires_grad_(True)
            r2 = f_(a, b)
        a.requires_grad_(False)
        return r1, r2

    return f, [run]


@case(I + "139476")
def param_requires_grad_toggled():
    def adjust_model(model):
        to_freeze = model.num_iter % 2 == 0
        if to_freeze:
            for param in model.layer2.parameters():
                param.requires_grad = False
        else:
            for param in model.layer2.parameters():
                param.requires_grad = True

    class MyModule(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super(MyModule, self).__init__()

            self.layer1 = nn.Linear(hidden_size, hidden_size)
            self.layer2 = nn.Linear(hidden_size, hidden_size)

            self.num_iter = 0

        def forward(self, x):
            x = self.layer2(x + self.layer1.bias)

            self.num_iter += 1
            return x

    torch.manual_seed(0)
    input_size = 16
    hidden_size = 16
    output_size = 1
    num_samples = 32
    features = torch.randn(num_samples, input_size)
    model = MyModule(input_size, hidden_size, output_size)

    def step(m):
        adjust_model(model)
        out = m(features)
        out.sum().backward()
        return out, [p.grad for p in model.parameters()]

    return model, [step, step, step]


@case(I + "152588 (pull request's example)")
def module_attribute_replaced():
    class Foo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.attr = torch.randn(4)

        def forward(self, x, y):
            return self.lin(x) + self.attr + y

    foo = Foo()

    def third(fn):
        fn.lin = torch.nn.Linear(8, 4)
        fn.attr = torch.randn(4)
        return fn(torch.randn(9, 8), torch.randn(4))

    return foo, [(torch.randn(7, 4), torch.randn(4)), (torch.randn(8, 4), torch.randn(4)), third]


@case("https://github.com/sgl-project/sglang/pull/24307 (vLLM's get_masked_input_and_mask)", dynamic=True)
def masked_input_batch_one_then_more():
    def get_masked_input_and_mask(
        input_: torch.Tensor,
        org_vocab_start_index: int,
        org_vocab_end_index: int,
        num_org_vocab_padding: int,
        added_vocab_start_index: int,
        added_vocab_end_index: int,
    ):
        org_vocab_mask = (input_ >= org_vocab_start_index) & (input_ < org_vocab_end_index)
        added_vocab_mask = (input_ >= added_vocab_start_index) & (input_ < added_vocab_end_index)
        added_offset = added_vocab_start_index - (org_vocab_end_index - org_vocab_start_index) - num_org_vocab_padding
        valid_offset = (org_vocab_start_index * org_vocab_mask) + (added_offset * added_vocab_mask)
        vocab_mask = org_vocab_mask | added_vocab_mask
        input_ = vocab_mask * (input_ - valid_offset)
        return input_, ~vocab_mask

    return get_masked_input_and_mask, [(torch.randint(0, 64, (bs,)), 0, 32, 0, 64, 64) for bs in (1, 4, 7)]


@case(I + "113290", backend="aot_eager")
def requires_grad_set_inside():
    def fn(x, s):
        x.requires_grad = True  # BREAK
        y = x * 2
        x.requires_grad = False  # BREAK
        z = x * 3 * s * y
        return x, y, z

    x = torch.ones(3)
    s = torch.ones(3, requires_grad=True)
    return fn, [(x, s)]
