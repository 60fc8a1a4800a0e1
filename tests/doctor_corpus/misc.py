"""Cases from pytorch/pytorch test/dynamo/test_misc.py (MiscTests; in later revisions split
into test/dynamo/_test_misc_part*.py).

Tried and left out (no recompile on torch 2.13: the size is dynamic after one change):
test_python_slice (f2 over ``input.shape[2:]``).
"""

import torch
import torch._dynamo
from torch._dynamo import graph_break

from . import case

T = "test/dynamo/test_misc.py::MiscTests::"


@case(T + "test_nested_disable_decorator")
def nested_disable_decorator():
    @torch._dynamo.disable()
    def fn1(x):
        return torch.sin(x) * 10

    def fn2(x):
        x = x + 1
        x = x + 1
        x = fn1(x)  # graph break  # BREAK
        x = x + 1
        x = x + 1
        return x

    return fn2, [(torch.randn(4, 5),)]


@case(T + "test_graph_break")
def graph_break_fn():
    def fn(x):
        x = torch.cos(x)
        x = torch.cos(x)
        torch._dynamo.graph_break()  # BREAK
        x = torch.cos(x)
        x = torch.cos(x)
        graph_break()  # BREAK
        x = torch.cos(x)
        x = torch.cos(x)
        return x

    return fn, [(torch.randn(4, 5),)]


@case(T + "test_grad")
def grad():
    def fn(a, b):
        out = a * b
        out.sum().backward()  # BREAK
        real_out = torch.sigmoid(a.grad + b)
        return real_out

    def call(f):
        inps = [torch.ones(4, requires_grad=True), torch.full((4,), 2.0, requires_grad=True)]
        return f(*inps)

    return fn, [call]


@case(T + "test_autograd_profiler_enabled")
def autograd_profiler_enabled():
    def fn(x):
        if torch.autograd._profiler_enabled():
            return x + 1
        else:
            return x - 1

    x = torch.randn((2, 2), requires_grad=True)

    def profiled(f):
        with torch.autograd.profiler.profile():
            return f(x)

    return fn, [(x,), profiled]

