"""Cases from pytorch/pytorch test/dynamo/test_nested_graph_breaks.py (the class name is not
recorded here; the test names are). The tests use module-level functions (``global f1``);
here they are closures."""

import torch
import torch._dynamo

from . import case

T = "test/dynamo/test_nested_graph_breaks.py::"


@case(T + "test_nested_step_unsupported")
def nested_step_unsupported():
    def f1(x):
        return x + 1

    def f2(x):
        x = x + 2
        torch._dynamo.step_unsupported()  # BREAK
        return f1(x) + 4

    def f3(x):
        x = x + 8
        return f2(x) + 16

    return f3, [(torch.zeros(3),)]


@case(T + "test_ctx_manager_nested_step_graph_break")
def ctx_manager_nested_step_graph_break():
    def f1(x):
        x = x + 1
        torch._dynamo.step_unsupported()  # BREAK
        return x + 2

    def f2(x):
        x = x + 4
        with torch.no_grad():
            x = f1(x)
        return x + 8

    return f2, [(torch.zeros(3),)]
