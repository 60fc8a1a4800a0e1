"""Real users' code: graph breaks from minimal repros posted in pytorch/pytorch issues.

Each case transcribes the repro as the user posted it (the issue is named in ``@case``),
changed only where this corpus needs it: CPU instead of CUDA, ``backend="eager"``
unless the issue is about Inductor, the compiled function's calls as the user made
them. None comes from PyTorch's test suite.

Tried and left out (no break or recompile on torch 2.13, or not runnable here):
https://github.com/pytorch/pytorch/issues/141431 (``dataclasses.is_dataclass`` is inlined now),
https://github.com/pytorch/pytorch/issues/163798 (``tolist()`` without capture_scalar_outputs:
torch 2.13 breaks as the issue asked, kept as ``tolist_without_capture``),
https://github.com/pytorch/pytorch/issues/100455 (the repro needs a downloaded tokenizer),
https://github.com/pytorch/pytorch/issues/131561 (``.item()`` returned under capture_scalar_outputs:
no break), https://github.com/pytorch/pytorch/issues/105054 (``len()`` of a NumPy array: traced now),
https://github.com/pytorch/pytorch/issues/119292 (``.item()`` then a branch under capture_scalar_outputs:
no break on torch 2.13).
"""

import logging
import warnings

import numpy as np
import torch
import torch._dynamo
from torch import nn

from . import case

I = "https://github.com/pytorch/pytorch/issues/"


@case(I + "196198")
def item_scale():
    def fn(x):
        scale = x.sum().item()  # BREAK
        return x * scale + 1

    return fn, [(torch.tensor([1.0, 2.0, 4.0], requires_grad=True),)]


@case(I + "163798")
def tolist_without_capture():
    def func(a):
        u0, u1 = a.tolist()  # BREAK
        return a * u0 * u1

    return func, [(torch.tensor([1, 2]),)]


@case(I + "163798 (func2)")
def item_without_capture():
    def func2(a):
        u0 = a.item()  # BREAK
        return a * u0

    return func2, [(torch.tensor([1]),)]


@case(I + "114220")
def boolean_mask_getitem():
    def f(t):
        return t[t > 0.5]  # BREAK

    return f, [(torch.rand(3, 16, 16),)]


@case(I + "165421")
def masked_select_module():
    class MyModel(nn.Module):
        def forward(self, x):
            mask = x.ge(0.5)  # boolean mask
            return x.masked_select(mask)  # BREAK

    model = MyModel().eval()

    def run_once(m):
        with torch.no_grad():
            return m(torch.rand(3, 4, dtype=torch.float32))

    return model, [run_once]


@case(I + "134241")
def boolean_mask_setitem():
    def test(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x = torch.zeros_like(y, dtype=z.dtype)
        x[y] = z[y]  # BREAK
        x = x * 2
        return x

    z = torch.randn(10, 10, requires_grad=True)
    y = torch.randint(0, 2, (10, 10)) == 1
    return test, [(y, z)]


@case(I + "194166")
def masked_batchnorm():
    class MaskedBN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.BatchNorm1d(8)

        def forward(self, h, mask_bool):
            out = h.clone()
            out[mask_bool] = self.norm(h[mask_bool])  # BREAK
            return out

    m = MaskedBN()
    h = torch.randn(64, 8, requires_grad=True)
    mask = torch.rand(64) > 0.3
    return m, [(h, mask)]


@case(I + "99609")
def dict_items_bool_index():
    def func():
        a = {"str": torch.rand([2, 2, 3])}
        t2 = torch.tensor([0, 1], dtype=torch.int64)

        def inner(t):
            for k, v in a.items():
                a[k] = v[t]  # BREAK

        inner(t2 < 1)

    return func, [()]


@case(I + "105266")
def numpy_bool_index():
    def idx(Z, I):
        return Z[I]  # BREAK

    Z = np.arange(12)
    I_ = np.arange(12) % 2 == 0
    return idx, [(Z, I_)]


@case(I + "126722")
def disable_non_recursive():
    def f(x):
        x = x + 1
        x = g(x)  # BREAK
        x = x + 1
        return x

    @torch._dynamo.disable(recursive=False)
    def g(x):
        x = x + 1
        x = h(x)
        x = x + 1
        return x

    def h(x):
        x = x + 1
        torch._dynamo.graph_break()  # BREAK
        x = x + 1
        return x

    return f, [(torch.randn(3, 3),)]


@case(I + "116981 (pull request's example)")
def print_in_loop():
    def foo(x, y):
        z = x * y
        for i in range(10):
            z = z * y
            print(z)  # BREAK
        return z

    a = torch.randn([2, 2])
    b = torch.randn([2, 2])
    return foo, [(a, b)]


