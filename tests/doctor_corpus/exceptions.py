"""Cases from pytorch/pytorch test/dynamo/test_exceptions.py (ExceptionTests).

Most of this file compiles with ``fullgraph=True`` (exceptions are traced); the cases
are the tests whose user code still breaks without ``fullgraph`` on torch 2.13.
Tried and left out (no break on torch 2.13): test_exception_with_another_exception2
(a bare ``raise`` re-raising), test_atrribute_error (a missing attribute in ``try``).
"""

import torch
import torch._dynamo

from . import case

T = "test/dynamo/test_exceptions.py::ExceptionTests::"


@case(T + "test_nn_reraise")
def nn_reraise():
    class M(torch.nn.Module):
        def forward(self, x):
            raise ValueError("woof")  # BREAK
            return x + 2

    m = M()
    m.register_forward_pre_hook(lambda m, go: None)

    def call(f):
        try:
            f(torch.randn(3))
        except ValueError as e:
            return str(e)

    return (lambda x: m(x)), [call]
