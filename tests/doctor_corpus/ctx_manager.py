"""Cases from pytorch/pytorch test/dynamo/test_ctx_manager.py (CtxManagerTests)."""

import contextlib

import torch
import torch._dynamo

from . import case

T = "test/dynamo/test_ctx_manager.py::CtxManagerTests::"


class CustomizedCtxManager:
    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, exc_type, exc_value, traceback):
        torch._C._set_grad_enabled(self.prev)


@case(T + "test_grad_mode_guard")
def grad_mode_guard():
    def fn(a, b):
        prev_grad = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        a = a + 1
        a.tolist()  # graph break  # BREAK
        ret = a + b
        torch.set_grad_enabled(prev_grad)
        return ret

    a = torch.randn([3, 4])
    b = torch.randn([3, 4])
    return fn, [(a, b)] * 10


@case(T + "test_nested_grad_mode_graph_break")
def nested_grad_mode_graph_break():
    def fn(x):
        before = torch.is_grad_enabled()
        with torch.set_grad_enabled(False):
            torch._dynamo.graph_break()  # BREAK
            with torch.set_grad_enabled(True):
                x = torch.mul(x, 5)
                torch._dynamo.graph_break()  # BREAK
                x = torch.sqrt(x)
                assert torch.is_grad_enabled()
            assert not torch.is_grad_enabled()
        assert torch.is_grad_enabled() == before
        return x

    a = torch.randn([3, 4])
    return fn, [(a,)] * 10


@case(T + "test_torch_profiler")
def torch_profiler():
    # wrap torch.profiler.* as NullContextVariable and do nothing
    def fn(x):
        y = x**2
        with torch.profiler.profile():
            y = y + 2
            with torch.profiler.record_function("my_function"):
                z = y**3
                z.tolist()  # graph break  # BREAK
                z = z + 1
        return z

    return fn, [(torch.randn((2, 2), requires_grad=True),)]


@case(T + "test_autograd_profiler")
def autograd_profiler():
    # wrap torch.autograd.profiler.* as NullContextVariable and do nothing
    def fn(x):
        y = x**2
        with torch.autograd.profiler.profile():
            y = y + 2
            with torch.autograd.profiler.record_function("my_function"):
                z = y**3
                z.tolist()  # graph break  # BREAK
                z = z + 1
        return z

    return fn, [(torch.randn((2, 2), requires_grad=True),)]


@case(T + "test_nested_generic_context_manager_with_graph_break (CustomizedCtxManager)")
def nested_generic_context_manager_with_graph_break():
    Ctx = CustomizedCtxManager

    def fn(x):
        with Ctx(True):
            x = x + 1
            if torch.is_grad_enabled():
                x = x * 2
            with Ctx(False):
                if torch.is_grad_enabled():
                    x = x - 3
                torch._dynamo.graph_break()  # BREAK
                x = x * 1.5
            x = torch.relu(x)
        return x - 1

    x = torch.rand(2, 3)

    def no_grad(f):
        with torch.no_grad():
            return f(x)

    return fn, [no_grad]


@case(T + "test_graph_break_inlining_grad")
def graph_break_inlining_grad():
    def gn(z):
        with torch.no_grad():
            torch._dynamo.graph_break()  # BREAK
            return torch.sin(z)

    def fn(x, y, z):
        a = torch.mm(x, y)
        z = gn(z)
        return a

    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    z = torch.randn(4)

    def call(f):
        out = f(x, y, z)
        out.sum().backward()
        return out.detach()

    return fn, [call]


@case(T + "test_graph_break_inlining_autocast (cpu)")
def graph_break_inlining_autocast():
    device = "cpu"

    def gn(x, y):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            z = torch.mm(x, y)
            torch._dynamo.graph_break()  # BREAK
            return torch.sin(z)

    def fn(x, y):
        z = torch.mm(x, y)
        z = z + gn(x, y)
        return z

    return fn, [(torch.rand(3, 3), torch.rand(3, 3))]


@case(T + "test_disable_saved_tensors_hooks_graph_break")
def disable_saved_tensors_hooks_graph_break():
    def fn(x):
        with torch.autograd.graph.disable_saved_tensors_hooks(
            "This is not supported"
        ):
            y = x + 1
            torch._dynamo.graph_break()  # BREAK
            return y * 2

    return fn, [(torch.randn(()),)]


@case(T + "test_inactive_context_graph_break_local")
def inactive_context_graph_break_local():
    def fn(x):
        x = x + 1
        ctx = torch.set_grad_enabled(True)
        torch._dynamo.graph_break()  # BREAK
        with ctx:
            x = x + 1
        return x

    return fn, [(torch.zeros(10, requires_grad=False),)]


@case(T + "test_inactive_context_graph_break_local_nullctx")
def inactive_context_graph_break_local_nullctx():
    # test with context manager that results in None target_values
    def fn(x):
        x = x + 1
        ctx = contextlib.nullcontext()
        torch._dynamo.graph_break()  # BREAK
        with ctx:
            x = x + 1
        return x

    return fn, [(torch.zeros(10, requires_grad=False),)]


@case(T + "test_inactive_context_graph_break_local_nullctx2")
def inactive_context_graph_break_local_nullctx2():
    # test with nullcontext where graph break happens
    # in an inlined function that returns something
    def gn():
        torch._dynamo.graph_break()  # BREAK
        return [0, 1, 2]

    def fn(x):
        x = x + 1
        ctx = contextlib.nullcontext()
        lst = gn()
        with ctx:
            x = x + lst[1]
        return x

    return fn, [(torch.zeros(10, requires_grad=False),)]


@case(T + "test_inactive_context_graph_break_stack")
def inactive_context_graph_break_stack():
    def gn(ctx):
        torch._dynamo.graph_break()  # BREAK
        return ctx

    def fn(x):
        x = x + 1
        ctx = gn(torch.set_grad_enabled(True))
        # we expect a graph break on next line as well
        with ctx:  # BREAK
            x = x + 1
        return x

    return fn, [(torch.zeros(10, requires_grad=False),)]


@case(T + "test_inactive_context_graph_break_stack2")
def inactive_context_graph_break_stack2():
    def gn(x, ctx, y, z, dummy):
        with ctx:
            return x * y * z

    def fn(x):
        x = x + 1
        x = gn(x, torch.set_grad_enabled(True), 2, 3, torch._dynamo.graph_break())  # BREAK
        return x

    return fn, [(torch.zeros(10, requires_grad=False),)]
