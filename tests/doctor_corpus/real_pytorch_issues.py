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
no break on torch 2.13), https://github.com/pytorch/pytorch/issues/155841 (an ``lru_cache`` method:
traced on torch 2.13), https://github.com/pytorch/pytorch/issues/105052 (``astype(int)`` on a NumPy
array: traced on torch 2.13).
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




# -- functools caches, copies, generators, classes, randomness, time ---------------------------------
z = 0  # https://github.com/pytorch/pytorch/issues/146598: the user's global, bumped by a cached function


@case(I + "146598")
def functools_cache_global():
    from functools import cache

    global z
    z = 0

    @cache
    def cached_fn(x):
        global z

        z = z + 1
        return x + 1

    def test(t):
        cached_fn(1)
        return t + z

    return test, [(torch.ones(2),), (torch.ones(2),), (torch.ones(2),)]


@case(I + "183900", fullgraph=True)
def full_with_parameter_fill_value():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fill_value = nn.Parameter(torch.tensor(2.5))

        def forward(self, x):
            return torch.full(  # BREAK
                (x.shape[0], x.shape[1], 2),
                fill_value=self.fill_value,
                dtype=x.dtype,
                device=x.device,
            )

    return M(), [(torch.randn(3, 4),)]


@case("https://github.com/pytorch/torchdynamo/issues/1172")
def deepcopy_tensor():
    import copy

    def foo(x):
        y = torch.randn_like(x)
        z = copy.deepcopy(y)  # BREAK
        return z + 1

    return foo, [(torch.ones(4),)]


@case(I + "198190")
def generator_returned():
    def make(x):
        def gen():
            yield x * 1
            yield x * 2
            return "done"
        return gen()

    def consume(f):
        it = f(torch.ones(2))
        return [type(it).__name__, *list(it)]

    return make, [consume]


@case(I + "101154")
def reformer_attention_seed():
    import sys

    class MyModel(nn.Module):

        def __init__(self):
            super(MyModel, self).__init__()
            self.linear = torch.nn.Linear(5, 5)
            self.dropout = torch.nn.Dropout()

        def _init_attention_seed(self):
            """
            This function sets a new seed for the attention layer to make dropout deterministic for both forward calls: 1
            normal forward call and 1 forward call in backward to recalculate activations.
            """

            # randomize seeds
            # use cuda generator if available
            if hasattr(torch.cuda, "default_generators") and len(torch.cuda.default_generators) > 0:
                # GPU
                device_idx = torch.cuda.current_device()
                self.attention_seed = torch.cuda.default_generators[device_idx].seed()
            else:
                # CPU
                self.attention_seed = int(torch.seed() % sys.maxsize)

            torch.manual_seed(self.attention_seed)  # BREAK

        def forward(self, x):
            self._init_attention_seed()
            return self.dropout(self.linear(x))

    return MyModel(), [(torch.randn(5, 5),)]


@case("https://github.com/thuml/depyf/issues/29 (without the user's fn1 helper, not posted)", dynamic=True)
def depyf_toy_example():
    def toy_example(a, b):
        y = np.zeros((10, ))
        x = a / (torch.abs(a) + 1)
        if b.sum() < 0:  # BREAK
            b = b * -1
            b = torch.pow(b, 2)
        else:
            b = b * 2
            b = torch.pow(b, 2)
        return x * b, y

    return toy_example, [(torch.randn(10), torch.randn(10)) for _ in range(3)]


@case(I + "128942")
def class_defined_inside():
    def toy_example(inp):
        class A:  # BREAK
            def __init__():
                pass

            def something():
                pass
        return inp + 2

    return toy_example, [(torch.arange(2),)]


@case(I + "161562", fullgraph=True)
def set_fullgraph_false_class():
    def fn(x):
        y = x + 10

        with torch._dynamo.set_fullgraph(False):  # BREAK
            class Foo:
                def __init__(self, x):
                    self.x = x

        f = Foo(x)
        return f.x - y

    return fn, [(torch.tensor([1.0]),)]


@case(I + "137068")
def time_time_in_function():
    import time

    def debug():
        start_time = time.time()  # BREAK

    return debug, [()]


@case(I + "145446", fullgraph=True)
def random_random_fullgraph():
    import random

    def fn(x):
        return x + random.random()  # BREAK

    return fn, [(torch.ones(5, 5),)]


@case("https://github.com/pytorch/pytorch/pull/133725 (a random output used as a seed)")
def random_seeded_random():
    import random

    def fn(x):
        seed = random.randint(0, 100)
        rand = random.Random(seed)  # BREAK
        return x + rand.randrange(10)

    return fn, [(torch.ones(1),)]


@case(I + "118334 (an autograd.Function defined in torch: nested tensors' ViewNestedFromBuffer)", backend="aot_eager", dynamic=True)
def torch_autograd_function_skipped():
    from torch.nested._internal.nested_tensor import ViewNestedFromBuffer

    def fn(values, offsets):
        return ViewNestedFromBuffer.apply(values.cos(), offsets).sin()

    values = torch.rand((12, 8), requires_grad=True)
    offsets = torch.tensor([0, 1, 2, 5, 8, 9, 12])
    return fn, [(values, offsets)]


@case(I + "95425 (LayerDrop as transformers' BART/Wav2Vec2 encoders wrote it: random.uniform per layer)")
def layerdrop_python_random():
    import random

    class LayerDropEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.layerdrop = 0.5

        def forward(self, x):
            for layer in self.layers:
                dropout_probability = random.uniform(0, 1)
                if self.training and (dropout_probability < self.layerdrop):
                    continue
                x = layer(x)
            return x

    enc = LayerDropEncoder().train()

    def call(m):
        random.seed(0)
        return m(torch.ones(2, 4))

    return enc, [call, call]
