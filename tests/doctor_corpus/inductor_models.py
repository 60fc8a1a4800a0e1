"""Cases from pytorch/pytorch test/inductor: user functions that break under Inductor
(test/inductor/test_cudagraph_trees.py::CudaGraphTreeTests; the tests run them on CUDA with
cudagraphs, here on CPU with the ``inductor`` backend: the breaks are Dynamo's, the same)."""

import torch
import torch._dynamo

from . import case

T = "test/inductor/test_cudagraph_trees.py::CudaGraphTreeTests::"


@case(T + "test_function_compiled_multiple_times", backend="inductor")
def function_compiled_multiple_times():
    def foo(x):
        y = foo2(x)
        y2 = foo2(y)
        return y + y2

    def foo2(x):
        torch._dynamo.graph_break()  # BREAK
        return x * x * x

    ones = torch.ones([4, 4])
    return foo, [(ones,), (ones,), (ones,)]


@case(T + "test_end_recording_early", backend="inductor")
def end_recording_early():
    def foo(x):
        y = x * x * x
        torch._dynamo.graph_break()  # BREAK
        z = x + y
        return z

    return foo, [(torch.ones([4, 4]),)] * 4


@case(T + "test_execution_into_recording", backend="inductor")
def execution_into_recording():
    def foo(x):
        y = x + x

        if y.sum() > 0:  # BREAK
            return y + 10
        else:
            return y - 10

    inp = torch.zeros([4, 4], dtype=torch.float)

    def add_1(f):
        inp.add_(1)
        return f(inp)

    return foo, [(inp,), (inp,), add_1, (inp,)]


@case(T + "test_cached_forward_backward",
      note="backend eager: Inductor draws its own random numbers, so dropout's outputs are comparable only without it")
def cached_forward_backward():
    def foo(x):
        torch.manual_seed(0)  # BREAK
        y = x * 2
        return torch.sin(y) * torch.nn.functional.dropout(x, p=0.4)

    inp = torch.rand([4, 4], requires_grad=True)

    def call(f):
        out = f(inp)
        out.sum().backward()
        return out.detach(), inp.grad

    return foo, [call]


@case(T + "test_forward_backward_not_called (inductor)", backend="inductor")
def forward_backward_not_called():
    def foo(x, y):
        x_out = x * x * x
        torch._dynamo.graph_break()  # BREAK
        y_out = y * y * y
        return x_out, y_out

    def call(f):
        inps = [torch.rand([20, 20], requires_grad=True) for _ in range(2)]
        x_out, y_out = f(inps[0], inps[1])
        x_out.sum().backward()
        return x_out.detach(), y_out.detach()

    return foo, [call] * 3
