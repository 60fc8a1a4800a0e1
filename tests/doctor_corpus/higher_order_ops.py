"""Cases from pytorch/pytorch test/dynamo/test_higher_order_ops.py (HigherOrderOpTests,
ActivationCheckpointingTests; in later revisions test/dynamo/_higher_order_ops_test_*.py).

Tried and left out (no break on torch 2.13: the body's output is now supported):
test_fallback_on_python_primitives_output, test_fallback_on_nested_tuple_output,
test_fallback_on_output_with_dict.
"""

import torch
import torch._dynamo
import torch.utils.checkpoint
from torch._higher_order_ops.wrap import wrap

from . import case

T = "test/dynamo/test_higher_order_ops.py::HigherOrderOpTests::"
A = "test/dynamo/test_higher_order_ops.py::ActivationCheckpointingTests::"

global_var = torch.randn(3)
global_num = 3.14


@case(T + "test_capture_global_num_adds_guard")
def capture_global_num_adds_guard():
    def f(x):
        return wrap(lambda x: x + global_num, x)

    def change(f_):
        global global_num
        old, global_num = global_num, 2.71
        try:
            return f_(torch.zeros([]))
        finally:
            global_num = old

    return f, [(torch.zeros([]),), change]


@case(T + "test_fallback_on_graph_break_simple")
def fallback_on_graph_break_simple():
    def inner(x):
        y = x.sin()
        torch._dynamo.graph_break()  # BREAK
        z = y.sin()
        return z

    def f(x):
        return wrap(inner, x)

    return f, [(torch.randn([]),)]


@case(T + "test_fallback_on_graph_break_complicated")
def fallback_on_graph_break_complicated():
    def inner(x):
        y = x.sin()
        y = y * global_var
        torch._dynamo.graph_break()  # BREAK
        z = y.sin()
        return z

    def f(x):
        x = x.clone()
        result = wrap(inner, x)
        return result.clone()

    return f, [(torch.randn([]),)]


@case(A + "test_fallback")
def checkpoint_fallback():
    def gn(x, y):
        torch._dynamo.graph_break()  # BREAK
        return torch.sigmoid(torch.matmul(x, y))

    def fn(x, y):
        return torch.cos(torch.utils.checkpoint.checkpoint(gn, torch.sin(x), y, use_reentrant=False))

    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    return fn, [lambda f: f(x, y).detach()]
