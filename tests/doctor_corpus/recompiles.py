"""Cases from pytorch/pytorch test/dynamo/test_recompiles.py (RecompileTests) and
test/dynamo/test_recompile_ux.py (RecompileUxTests, RecompileLimitKwargTests).

The tests count frames with ``CompileCounter``; here the same functions and calls run
under the ``eager`` backend with the ``torch._dynamo.config`` settings the tests patch.
"""

import torch
import torch._dynamo

from . import case

R = "test/dynamo/test_recompiles.py::RecompileTests::"
U = "test/dynamo/test_recompile_ux.py::RecompileUxTests::"
K = "test/dynamo/test_recompile_ux.py::RecompileLimitKwargTests::"


def _sizes(*ns, width=None):
    return [(torch.randn([n]), torch.randn([n])) for n in ns]


@case(R + "test_automatic_dynamic_reduce_recompiles")
def automatic_dynamic_reduce_recompiles():
    def foo(x, y):
        return x * y

    return foo, _sizes(2, 3, 4, 4, 5, 5, 6)


@case(R + "test_automatic_dynamic_reduce_recompiles (dynamic=False)", dynamic=False)
def automatic_dynamic_reduce_recompiles_static():
    def foo(x, y):
        return x * y

    return foo, _sizes(2, 3, 4, 4, 5, 5, 6)


@case(R + "test_automatic_dynamic_reduce_recompiles (run_without_automatic)",
      config={"automatic_dynamic_shapes": False, "assume_static_by_default": True})
def automatic_dynamic_reduce_recompiles_without_automatic():
    def foo(x, y):
        return x * y

    return foo, _sizes(2, 3, 4, 4, 5, 5, 6)


@case(R + "test_recompiles_true_false_flop", config={"assume_static_by_default": True})
def recompiles_true_false_flop():
    def foo(x, y):
        if x:
            return y * 2
        else:
            return y * y

    return foo, [(True, torch.randn([2])), (False, torch.randn([2])), (True, torch.randn([3])),
                 (True, torch.randn([4])), (True, torch.randn([5]))]


@case(R + "test_automatic_dynamic_tensor_scalar_change")
def automatic_dynamic_tensor_scalar_change():
    def foo(x, y):
        return x * y

    return foo, [(torch.randn([2]), torch.randn([2])), (torch.randn([3]), 3), (torch.randn([4]), torch.randn([4])),
                 (torch.randn([5]), 4), (torch.randn([6]), torch.randn([6]))]


@case(R + "test_aliasing_guard_failures")
def aliasing_guard_failures():
    def foo(a, b, c):
        a.add_(b)
        return c + 1

    x = torch.randn([3])
    y = torch.randn([3])
    z = torch.randn([3])

    def aliased(f):
        x_clone = x.clone().detach()
        return f(x_clone, y.clone().detach(), x_clone)

    return foo, [lambda f: f(x.clone().detach(), y.clone().detach(), z.clone().detach()),
                 lambda f: f(z.clone().detach(), y.clone().detach(), x.clone().detach()),
                 aliased]


@case(R + "test_aliasing_guard_failures_with_globals")
def aliasing_guard_failures_with_globals():
    g = {"g1": torch.randn([3]), "g2": torch.randn([3])}
    g1 = g["g1"]
    g2 = g["g2"]

    def foo(a):
        a.add_(g1)
        return g2 + 1

    z = torch.randn([3])
    return foo, [lambda f: f(z.clone().detach()), lambda f: f(g1)]


@case(R + "test_dynamic_shape_parameter_recompile (run_dynamic_comp_default_param)",
      config={"force_parameter_static_shapes": True, "automatic_dynamic_shapes": True, "assume_static_by_default": True})
def dynamic_shape_parameter_recompile():
    w = torch.nn.Parameter(torch.randn(3, 2))

    def foo(x):
        return x @ w

    return foo, [(torch.nn.Parameter(torch.randn(n, 3)),) for n in (1, 10, 11, 15, 15)]


@case(R + "test_simple_module_recompile")
def simple_module_recompile():
    class SimpleDropout(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dropout = torch.nn.Dropout(0.5)
            self.linear = torch.nn.Linear(10, 1)

        def forward(self, x):
            return self.dropout(self.linear(x))

    model = SimpleDropout()
    x = torch.randn(10)

    def eval_call(m):
        model.eval()
        return m(x)

    def train_call(m):
        model.train()
        return m(x).shape

    return model, [eval_call, train_call, eval_call, train_call]


@case(R + "test_no_recursive_compile_after_cache_limit_hit", config={"recompile_limit": 2}, dynamic=False)  # the test patches cache_size_limit, recompile_limit's old name
def no_recursive_compile_after_cache_limit_hit():
    def f(x, n):
        x = x + n
        return g(x, n)

    def g(x, n):
        x = x + n
        return h(x, n)

    def h(x, n):
        return x + n

    return f, [(torch.ones(3), i) for i in range(10)]


@case(R + "test_automatic_dynamic_on_closed_ints")
def automatic_dynamic_on_closed_ints():
    def f(x):
        def g(y):
            return y + x

        return g

    def h(x, g):
        return g(x)

    return h, [(torch.randn(5), f(i)) for i in range(10)]


@case(R + "test_run_mode_after_cache_limit_hit", config={"recompile_limit": 2}, dynamic=False)  # the test patches cache_size_limit, recompile_limit's old name
def run_mode_after_cache_limit_hit():
    def f(x, n):
        x = x + n
        if torch._dynamo.is_compiling():
            x = x + 1
        return g(x, n)

    def g(x, n):
        x = x + n
        if torch._dynamo.is_compiling():
            x = x + 2
        return x

    return f, [(torch.ones(3), n) for n in (0, 1, 2, 3, 0, 1)]


@case(R + "test_automatic_dynamic_shapes_mark_as_unbacked", config={"automatic_dynamic_shapes_mark_as": "unbacked"})
def automatic_dynamic_shapes_mark_as_unbacked():
    def f(x):
        return x * x

    return f, [(torch.randn(n),) for n in (3, 2, 1, 0)]


@case(U + "test_loop_torture", config={"recompile_limit": 1})
def loop_torture():
    def loop_torture(input, iters):
        out = input
        # randint itself causes one graph break
        for _ in range(iters):
            out += input
        return out

    return loop_torture, [lambda f, i=i: f(torch.randn(3), torch.tensor(i)) for i in (5, 9, 17)]


@case(U + "test_dynamic_input", config={"automatic_dynamic_shapes": False, "recompile_limit": 2})
def dynamic_input():
    def model(input):
        return input + input

    return model, [(torch.randn((bsz, 3, 4)),) for bsz in (7, 300, 12, 999)]


def _verbose_tensor_check(missed):
    def func(a):
        # Warning: choose a function here whose meta implementation lives
        # entirely in C++.  If you do a Python one, Dynamo will dive into
        # torch._refs which is OK but it will muddy up the warnings
        return torch.add(a, 4)

    a = torch.rand(3, 4, 5)
    return func, [(a,), (missed(a),)]


@case(U + "test_verbose_tensor_check (size)")
def verbose_tensor_check_size():
    return _verbose_tensor_check(lambda a: a[0:2, :, :])


@case(U + "test_verbose_tensor_check (stride)")
def verbose_tensor_check_stride():
    return _verbose_tensor_check(lambda a: a.clone().as_strided((3, 4, 5), stride=(1, 3, 12)))


@case(U + "test_verbose_tensor_check (rank)")
def verbose_tensor_check_rank():
    return _verbose_tensor_check(lambda a: a[0, :, :])


@case(U + "test_verbose_tensor_check (dispatch key set: meta)")
def verbose_tensor_check_meta():
    return _verbose_tensor_check(lambda a: a.to("meta"))


@case(U + "test_verbose_tensor_check (dtype)")
def verbose_tensor_check_dtype():
    return _verbose_tensor_check(lambda a: a.to(torch.float16))


@case(U + "test_verbose_tensor_check (requires_grad)")
def verbose_tensor_check_requires_grad():
    def grad(a):
        a_grad = a.clone()
        a_grad.requires_grad = True
        return a_grad

    return _verbose_tensor_check(grad)


@case(U + "test_mismatched_type")
def mismatched_type():
    a = torch.rand(3, 4, 5)
    b = torch.rand(3, 4, 5)

    def func(a, b):
        return a + b

    return func, [(a, b), (a, 1)]


@case(U + "test_mismatched_tensor_type")
def mismatched_tensor_type():
    a = torch.rand(3, 4, 5)
    b_parameter = torch.nn.Parameter(torch.rand(3, 4, 5))
    b_tensor = torch.rand(3, 4, 5)

    def func(a, b):
        return a + b

    return func, [lambda f: f(a, b_parameter).detach(), (a, b_tensor)]


@case(U + "test_fail_on_recompile_limit_hit", config={"recompile_limit": 1},
      note="without fail_on_recompile_limit_hit: the second call runs eagerly instead of raising")
def recompile_limit_hit_bool():
    def func(b, a):
        if a:
            return b * 2
        else:
            return b + 1

    return func, [(torch.randn(5), True), (torch.randn(5), False)]


@case(U + "test_multiple_guard_fails", config={"recompile_limit": 32}, dynamic=False)
def multiple_guard_fails():
    def f(x):
        return torch.relu(x)

    return f, [(torch.randn(8 + i),) for i in range(5)]


@case(U + "test_multiple_guard_fails_report_all", config={"recompile_limit": 32}, dynamic=False)
def multiple_guard_fails_report_all():
    def f(x):
        return torch.ones(len(x), x[-1])

    return f, [([4, 5, 6],), ([7, 8],), ([9],)]


@case(K + "test_recompile_limit_basic", recompile_limit=2)
def recompile_limit_basic():
    def f(x, y):
        return x + y

    return f, [(torch.randn(3, dtype=d), torch.randn(3, dtype=d)) for d in (torch.float32, torch.float64, torch.float16)]


@case(K + "test_recompile_limit_none_uses_global")
def recompile_limit_none_uses_global():
    def f(x, y):
        return x + y

    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int16,
              torch.int8, torch.uint8, torch.complex64]
    return f, [(torch.ones(3, dtype=d), torch.ones(3, dtype=d)) for d in dtypes]


@case(K + "test_recompile_limit_resume_function_auto_dynamic", recompile_limit=2,
      config={"automatic_dynamic_shapes": True})
def recompile_limit_resume_function_auto_dynamic():
    y_holder = {"tensor": torch.randn(4, 8, 2)}

    def f(x):
        x.sin()
        print("graph break")  # BREAK
        return y_holder["tensor"].cos()

    def call(shape):
        def run(opt_f):
            y_holder["tensor"] = torch.randn(*shape)
            return opt_f(torch.randn(4, 8, 2))

        return run

    return f, [call((4, 8, 2)), call((5, 8, 2)), call((5, 9, 2))]
