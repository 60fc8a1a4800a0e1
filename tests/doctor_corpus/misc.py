"""Cases from pytorch/pytorch test/dynamo/test_misc.py (MiscTests; in later revisions split
into test/dynamo/_test_misc_part*.py).

Tried and left out (no recompile on torch 2.13: the size is dynamic after one change):
test_python_slice (f2 over ``input.shape[2:]``), test_cond_side_effects (a nonlocal
set before ``cond``), test_closure_write_across_functions, test_typing_union_and_optional, test_is_compiling, test_runtime_assert_replacement,
test_inspect_signature_bind_non_user_function, test_new_with_int_list, test_grad_none,
test_nn_module_getattribute_graph_break and test_nn_module_getattribute (a module with its own
``__getattribute__`` runs without a logged break), test_update_locals_and_stack_uses_shared_cache.
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



@case(T + "test_map_side_effects")
def map_side_effects():
    from functorch.experimental.control_flow import map

    class Module(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.tensor(1)

        def forward(self, xs):
            def body(x):
                self.w += 1  # BREAK
                return x

            return map(body, xs)

    return Module(), [(torch.randn(3, 2),)]


@case(T + "test_duplicate_graph_break_log")
def duplicate_graph_break_log():
    def f1(a, b):
        f2(a, b)

    def f2(a, b):
        c = a + b
        print("break")  # BREAK
        return a + b + c

    return f1, [(torch.randn(10), torch.randn(10))]


@case(T + "test_cond_side_effect_in_one_branches",
      note="the test (test_higher_order_ops.py) expects UncapturedHigherOrderOpError; dynamic=True as there")
def cond_side_effect_in_one_branches():
    from functorch.experimental import control_flow

    z = [torch.ones(4, 4)]

    class Foo(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()

        def forward(self, y, x):
            def true_fn(x):
                z.append(x)  # BREAK
                z.append(x)
                z.pop()
                return x.sum() + z[-1].sum()

            def false_fn(x):
                return x.sum() - z[0].sum()

            return control_flow.cond(y, true_fn, false_fn, [x])

    return Foo(), [(torch.tensor(True), torch.tensor(5))]


@case(T + "test_check_assert_error_at_runtime_when_predicate_true_and_message_has_closure")
def check_message_has_closure():
    def f(x):
        torch._check(x.shape[0] > 3, lambda: f"{x.shape[0]} is not greater than 3")  # BREAK
        return x + 1

    def call(f_):
        x = torch.randn(4)
        torch._dynamo.maybe_mark_dynamic(x, 0)
        return f_(x)

    return f, [call]


@case(T + "test_config_obj", config={"specialize_float": True})
def config_obj():
    class Cfg:
        def __init__(self) -> None:
            self.val = 0.5
            self.count = 3

    def fn(x, cfg):
        for i in range(cfg.count):
            x = x + cfg.val
        return x

    cfg1 = Cfg()
    cfg1.val = 1.0
    cfg2 = Cfg()

    def count_1(f):
        cfg2.count = 1
        return f(torch.zeros(1), cfg2)

    def val_2(f):
        cfg2.val = 2.0
        return f(torch.zeros(1), cfg2)

    return fn, [lambda f: f(torch.zeros(1), cfg1), lambda f: f(torch.zeros(1), cfg2), count_1, val_2]


@case(T + "test_config_getattr_default")
def config_getattr_default():
    class Cfg:
        def __init__(self) -> None:
            self.val = 0.5
            self.count = 10

    def fn(x, cfg):
        if getattr(cfg, "just_add_7", False):
            return x + 7
        for i in range(cfg.count):
            x = x + cfg.val
        return x

    cfg1 = Cfg()
    v = torch.zeros(1)

    def set_7(value):
        def call(f):
            cfg1.just_add_7 = value
            return f(v, cfg1)

        return call

    return fn, [(v, cfg1), set_7(True), set_7(False)]


@case(T + "test_size_input")
def size_input():
    def fn(x, s):
        a, b = s
        return x + (a - b)

    v = torch.zeros(10, 20)
    # One recompile per differing input type
    return fn, [(v, v.size()), (v, (10, 20)), (v, [10, 20])]


@case(T + "test_cell_output2")
def cell_output2():
    from torch._dynamo.testing import unsupported

    out = None

    def fn(a, b):
        nonlocal out
        c = unsupported(a, b)  # BREAK
        out = a + b * 10 + c

    v = torch.Tensor([100])
    return fn, [(v, v)]


@case(T + "test_is_tensor2")
def is_tensor2():
    def fn(x):
        if torch.is_tensor(x):
            return x + 1
        else:
            return torch.ones([2, 3])

    return fn, [({"input": torch.rand(2, 3)},), (torch.rand(2, 3),)]


@case(T + "test_assert (fn1)")
def assert_fn1():
    def fn1(x):
        assert x.shape != x.shape  # noqa: S101  # BREAK

    def call(f):
        try:
            f(torch.randn(10))
        except AssertionError:
            return "AssertionError"

    return fn1, [call]


@case(T + "test_torch_size_tensor_index_non_scalar")
def torch_size_tensor_index_non_scalar():
    def fn(x):
        idx = torch.tensor([1, 1])
        try:
            dim_size = x.shape[idx]  # BREAK
            return x * dim_size
        except TypeError:
            return x.sum()

    return fn, [(torch.randn(2, 3, 4),)]


@case(T + "test_torch_seed")
def torch_seed():
    import sys

    def fn(x):
        attention_seed = int(torch.seed() % sys.maxsize)
        torch.manual_seed(attention_seed)  # BREAK
        return (x,)

    return fn, [(torch.randn(10, requires_grad=True),)]


@case(T + "test_if_cond_user_defined_object")
def if_cond_user_defined_object():
    # obj.__bool__ is not existed
    class A:  # noqa: B903
        def __init__(self, x):
            self.x = x

    # obj.__bool__ is function and returns bool type
    class B:
        def __init__(self, x):
            self.x = x

        def __bool__(self):
            return self.x > 0

    # obj.__bool__ is non-function
    class C:
        def __init__(self, x):
            self.x = x
            self.__bool__ = False

    def fn(x, obj):
        if not obj:
            return x + 1
        else:
            return x - 1

    x = torch.rand(4)
    return fn, [(x, obj) for obj in [A(0.5), B(0.5), B(-0.5), C(0.5), B(-0.5), B(0.5)]]


@case(T + "test_if_cond_user_defined_object2")
def if_cond_user_defined_object2():
    # obj.__bool__ is function and returns non-bool type
    class MyObj:
        def __init__(self, x):
            self.x = x

        def __bool__(self):
            self.x = 1.2
            return self.x

    def fn(a, obj):
        if not obj:  # BREAK (__bool__ returned a float)
            return a + obj.x
        else:
            return a - obj.x

    def call(f):
        try:
            return f(torch.rand(4), MyObj(0.5))
        except TypeError as e:
            return str(e)

    return fn, [call]


@case(T + "test_unpack_tensor_shape_mismatch (f1)")
def unpack_tensor_shape_mismatch():
    def f1(x):
        a, b = x  # BREAK
        return torch.sin(a + b)

    def call(x):
        def run(f):
            try:
                return f(x)
            except Exception as e:  # noqa: BLE001 - eager raises ValueError, the test expects AssertionError
                return type(e).__name__

        return run

    return f1, [call(torch.tensor(2.0)), call(torch.tensor([2.0]))]


@case(T + "test_torch_generator_set_state")
def torch_generator_set_state():
    def fn():
        default_state = torch.default_generator.get_state()  # BREAK
        x = torch.rand([2, 3])
        if default_state.dtype != "float32":
            x = x * 2
        torch._dynamo.graph_break()  # BREAK
        torch.default_generator.set_state(default_state)  # BREAK
        y = torch.rand([2, 3])
        return x, y

    return fn, [()]


@case(T + "test_guard_failure_fn")
def guard_failure_fn():
    def fn(x, y, k):
        x = x + 1
        y = y + 1
        return x * y * k

    x = torch.tensor([0.5, 0.5])
    y = torch.tensor([1.0, 1.0])
    x2 = torch.tensor([0.5, 0.5, 1.0])
    y2 = torch.tensor([0.5, 0.5, 0.5])
    return fn, [(x, y, 3), (x2, y2, 5)]


@case(T + "test_scalar_tensor_is_equivalent_to_int_list_argument")
def scalar_tensor_is_equivalent_to_int_list_argument():
    class MyModel(torch.nn.Module):
        def forward(self, input):
            permute = torch.tensor([0, 2, 1])
            x = input.permute(*permute)  # BREAK
            return x

    return MyModel(), [(torch.randn(2, 3, 4),)]


@case(T + "test_dynamic_one_hot")
def dynamic_one_hot():
    def fn(x):
        x = x + 1
        # graph break from data-dependent output shape
        x = torch.nn.functional.one_hot(x)  # BREAK
        x = x + 1
        return x

    return fn, [(torch.arange(20) % 4,)]


@case(T + "test_reconstruct_set_across_graph_break")
def reconstruct_set_across_graph_break():
    def foo(x, y):
        setty = set()
        for t in x:
            setty.add(t)
        print("Break!")  # BREAK
        return y * len(setty)  # BREAK (the resumed frame wraps the set of tensors)

    x = torch.randn(10, 10)
    y = torch.randn(2, 2)
    return foo, [([x, x, x, x, y], y)]


@case(T + "test_set_aliasing_recompiles")
def set_aliasing_recompiles():
    g1 = torch.randn(10)
    g2 = torch.randn(10)
    g3 = torch.randn(10)
    g4 = torch.randn(10)

    def foo(a, b, c):
        myset = {g1, a, b, c}
        return a + len(myset)

    return foo, [(g2, g3, g4), (g1, g3, g4), (g2, g2, g4)]



@case(T + "test_dataclass_fields (obj2, guard failure)")
def dataclass_fields():
    import dataclasses

    @dataclasses.dataclass
    class MyDataClass:
        a: torch.Tensor
        b: torch.Tensor = None
        c: torch.Tensor = None
        d: torch.Tensor = None
        e: torch.Tensor = None

    def fn(obj):
        class_fields = dataclasses.fields(obj)
        assert len(class_fields)  # noqa: S101
        assert all(field.default is None for field in class_fields[1:])  # noqa: S101
        other_fields_are_none = all(
            getattr(obj, field.name) is None for field in class_fields[1:]
        )
        assert not other_fields_are_none  # noqa: S101

        if not hasattr(obj, "a"):
            return -1
        if hasattr(obj, "z"):
            return -2

        total = getattr(obj, class_fields[0].name)
        for field in class_fields[1:]:
            v = getattr(obj, field.name)
            if v is not None:
                total += v

        return total

    obj2 = MyDataClass(torch.randn(10), e=torch.randn(10))

    def guard_failure(f):
        obj2.z = True
        return f(obj2)

    return fn, [lambda f: f(obj2).clone(), guard_failure]


@case(T + "test_numpy_ndarray_graph_break")
def numpy_ndarray_graph_break():
    import numpy as np

    def fn(x):
        a = x.numpy()
        b = a.real
        torch._dynamo.graph_break()  # BREAK
        c = np.multiply(b, 2.0)
        return c

    return fn, [(torch.randn(3),) for _ in range(10)]


@case(T + "test_numpy_ndarray_graph_break_with_multiple_outputs")
def numpy_ndarray_graph_break_with_multiple_outputs():
    import numpy as np

    def fn(x, y):
        a = x.numpy()
        b = y.numpy()
        torch._dynamo.graph_break()  # BREAK
        return np.add(a, 1), np.add(b, 1)

    return fn, [(torch.randn([1, 3]), torch.randn([1, 3])) for _ in range(10)]


@case(T + "test_tensor_interacts_with_numpy_ndarray")
def tensor_interacts_with_numpy_ndarray():
    import numpy as np

    def fn(x, y):
        a = x.numpy()
        b = y.numpy()
        c = np.ones_like(a)
        d = np.ones_like(b)
        torch._dynamo.graph_break()  # BREAK
        return np.add(a, c), np.add(b, d)

    return fn, [(torch.randn([1, 3]), torch.randn([1, 3])) for _ in range(10)]


@case(T + "test_numpy_array_of_arrays")
def numpy_array_of_arrays():
    import numpy as np

    def fn(x, y):
        return np.array([x, y])

    return fn, [(np.float64(1), np.float64(2)), (np.arange(2), np.arange(2) + 2)]


@case(T + "test_side_effects_codegen_update_mutated (f1)")
def side_effects_codegen_update_mutated_f1():
    # codegen to update mutated variables with side effect
    # should after stack value's codegen
    def f1(x):
        alist = [x]
        alist.append(x + 1)
        alist[0].sum().item()  # graph break  # BREAK
        res = alist.pop()
        res.sum().item()  # graph break  # BREAK
        return res

    return f1, [(torch.rand([2, 3]),)]


@case(T + "test_side_effects_codegen_update_mutated (f2)")
def side_effects_codegen_update_mutated_f2():
    def f2(a, b):
        d = {"a": a + 1, "b": b + 2}
        x = d.pop("b")
        x.sum().item()  # graph break  # BREAK
        y = d["a"] + x
        y.sum().item()  # graph break  # BREAK
        d["c"] = y
        return d

    return f2, [(torch.rand([5, 6]), torch.rand([5, 6]))]


@case(T + "test_tensor_types")
def tensor_types():
    def fn(dtype, tensor_type):
        x = torch.empty(4, dtype=dtype)
        assert isinstance(x, tensor_type)  # noqa: S101

    return fn, [(torch.float32, torch.FloatTensor), (torch.float64, torch.DoubleTensor),
                (torch.float16, torch.HalfTensor), (torch.bfloat16, torch.BFloat16Tensor)]


@case(T + "test_item_changes_new_shape", config={"capture_scalar_outputs": True})
def item_changes_new_shape():
    class MyMod(torch.nn.Module):
        def forward(self, x):
            z = torch.max(x)
            return z.int().item()

    x = torch.tensor([[10.6763, 11.7445, -2.2369]])
    return MyMod(), [(x,), (torch.tensor([[11 - 5, 11 + 50], [11 + 5, 11 - 50]]),)]



@case(T + "test_unhandled_exception_in_dynamo")
def unhandled_exception_in_dynamo():
    # traceback.format_exc() approximates an unhandled exception
    def f(a):
        a += 1
        raise RuntimeError("smoge")  # BREAK
        return a

    def call(f_):
        try:
            f_(torch.ones(2))
        except RuntimeError as e:
            return str(e)

    return f, [call]


@case(T + "test_nested_sequential_try_with_graph_break (n=0)")
def nested_sequential_try_with_graph_break():
    def fn(x, n):
        with torch.set_grad_enabled(True):
            with torch.set_grad_enabled(False):
                x = x + 1
                torch._dynamo.graph_break()  # BREAK
            try:
                with torch.set_grad_enabled(False):
                    x = x + 1
                    if n == 0:
                        torch._dynamo.graph_break()  # BREAK
            except:  # noqa: E722
                pass
            with torch.set_grad_enabled(False):
                x = x + 1
                torch._dynamo.graph_break()
            x = x + 1
        return x

    return fn, [(torch.ones(1), 0)]


@case(T + "test_nested_sequential_try_with_graph_break (n=1)")
def nested_sequential_try_with_graph_break_1():
    def fn(x, n):
        with torch.set_grad_enabled(True):
            with torch.set_grad_enabled(False):
                x = x + 1
                torch._dynamo.graph_break()  # BREAK
            try:
                with torch.set_grad_enabled(False):
                    x = x + 1
                    if n == 0:
                        torch._dynamo.graph_break()
            except:  # noqa: E722
                pass
            with torch.set_grad_enabled(False):
                x = x + 1
                torch._dynamo.graph_break()  # BREAK
            x = x + 1
        return x

    return fn, [(torch.ones(1), 1)]


@case(T + "test_ordered_dict_alias_reconstruct")
def ordered_dict_alias_reconstruct():
    import collections

    od = collections.OrderedDict

    def fn():
        d1 = dict()  # noqa: C408
        d1["a"] = 1
        d2 = od(d1)
        d2["b"] = 2
        torch._dynamo.graph_break()  # BREAK
        if isinstance(d2, od):
            return d2["a"] + d2["b"]
        else:
            return 0

    return fn, [()]


@case(T + "test_raise_guard_full_constraint")
def raise_guard_full_constraint():
    def my_dyn_fn(x):
        if x.shape[0] == 3:  # BREAK
            return x.sin()
        return x.cos()

    def call(f):
        y = torch.randn([3, 3, 3])
        torch._dynamo.mark_dynamic(y, 0)
        return f(y)  # the test expects ConstraintViolationError

    return my_dyn_fn, [call]


@case(T + "test_float_speculation_log_divergence")
def float_speculation_log_divergence():
    import torch.nn.functional as F

    def fn(x, y, z):
        a = F.interpolate(x, scale_factor=z, mode="bilinear", align_corners=False)
        b = F.interpolate(y, scale_factor=z, mode="bilinear", align_corners=False)
        return a * b

    y = torch.randn(3, 3, 3, 4)
    return fn, [(y, y, 1.0), (y, y, 2.0)]


@case(T + "test_step_unsupported")
def step_unsupported():
    def fn(x):
        x = x + 1 + 2
        torch._dynamo.step_unsupported()  # BREAK
        return x + 4

    return fn, [(torch.ones(3),)]


@case(T + "test_step_unsupported_empty_checkpoint")
def step_unsupported_empty_checkpoint():
    def fn(x):
        torch._dynamo.step_unsupported()  # BREAK
        return x + 1

    return fn, [(torch.ones(3),)]
