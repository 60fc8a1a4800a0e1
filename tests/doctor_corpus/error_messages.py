"""Cases from pytorch/pytorch test/dynamo/test_error_messages.py (ErrorMessagesTest).

The tests compile with ``fullgraph=True`` and check torch's message; here the same user
functions run without ``fullgraph``, so each message becomes a graph break.

No longer a break on torch 2.13 (left out): test_class_property (a module attribute of
type ``module``), test_reconstruction_failure (returning a bound method of a local class).
"""

import unittest

import torch
import torch._dynamo

from . import case

T = "test/dynamo/test_error_messages.py::ErrorMessagesTest::"


class GenericCtxMgr:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        pass


@case(T + "test_dynamic_shape_operator_no_meta_kernel", config={"capture_dynamic_output_shape_ops": True})
def dynamic_shape_operator_no_meta_kernel():
    def fn():
        return torch.linalg.lstsq(torch.rand(10, 10), torch.rand(10, 10))  # BREAK

    return fn, [()]


@case(T + "test_dynamic_shape_operator_no_meta_kernel", note="without the test's capture_dynamic_output_shape_ops=True")
def dynamic_shape_operator_lstsq_default():
    def fn():
        return torch.linalg.lstsq(torch.rand(10, 10), torch.rand(10, 10))  # BREAK

    return fn, [()]


@case(T + "test_data_dependent_operator2", config={"capture_scalar_outputs": True})
def data_dependent_operator2():
    def fn(x):
        return torch.equal(x, x)  # BREAK

    return fn, [(torch.ones(3),)]


@case(T + "test_sort_with_nonconstant_keys")
def sort_with_nonconstant_keys():
    lst = [
        torch.tensor(4),
        torch.tensor(1),
        torch.tensor(2),
        torch.tensor(3),
    ]

    def fn(lst):
        return sorted(lst)  # BREAK

    return fn, [(lst,)]


@case(T + "test_super_call_method")
def super_call_method():
    def fn(it):
        return [x + 1 for x in it]  # BREAK

    return fn, [lambda f: f(zip(range(5), range(10)))]


@case(T + "test_dict_items_input")
def dict_items_input():
    def fn(x, items):
        it = iter(items)  # BREAK
        return next(it), x.sin()  # BREAK

    x = torch.randn(3)
    dct = {"a": 3, "b": 3}
    return fn, [lambda f: f(x, dct.items())]


@case(T + "test_super_call_function")
def super_call_function():
    def fn(it):
        return [x + 1 for x in it()]  # BREAK

    return fn, [lambda f: f(zip(range(5), range(10)))]


@case(T + "test_unsupported_context")
def unsupported_context():
    def fn(obj):
        with obj:  # BREAK
            return 1

    return fn, [(3,)]


@case(T + "test_unsupported_builtin")
def unsupported_builtin():
    def fn():
        print("abc")  # BREAK

    return fn, [()]


@case(T + "test_skipfile_call")
def skipfile_call():
    def fn():
        return unittest.skip("test")  # BREAK

    return fn, [()]


@case(T + "test_skipfile_dynamo_call")
def skipfile_dynamo_call():
    def fn():
        torch._dynamo.disable()  # BREAK

    return fn, [()]


@case(T + "test_skipfile_inline")
def skipfile_inline():
    class Foo:
        fn = unittest.skip

    def fn():
        Foo().fn()  # BREAK

    return fn, [()]


@case(T + "test_dynamo_graph_break_fn")
def dynamo_graph_break_fn():
    def fn():
        torch._dynamo.graph_break()  # BREAK

    return fn, [()]


@case(T + "test_dynamo_graph_break_fn_with_msg")
def dynamo_graph_break_fn_with_msg():
    def fn():
        torch._dynamo.graph_break(msg="test graph break")  # BREAK

    return fn, [()]


@case(T + "test_warnings")
def warnings_warn():
    import warnings

    def fn():
        warnings.warn("test")  # BREAK

    return fn, [()]


@case(T + "test_observed_exception")
def observed_exception():
    def fn():
        raise RuntimeError("test")  # BREAK

    def call(f):
        try:
            f()
        except RuntimeError as e:
            return str(e)

    return fn, [call]


@case(T + "test_uninitialized_module")
def uninitialized_module():
    class Foo(torch.nn.Module):
        def __init__(self):
            pass

    def fn(mod):
        return mod(1)  # BREAK

    def call(f):
        try:
            f(Foo())
        except Exception as e:  # noqa: BLE001 - eager raises too
            return type(e).__name__

    return fn, [call]


@case(T + "test_generic_ctx_mgr_graph_break_fullgraph_false")
def generic_ctx_mgr_graph_break():
    def fn():
        with GenericCtxMgr():
            with GenericCtxMgr():
                pass
            with GenericCtxMgr():
                with GenericCtxMgr():
                    pass
                torch._dynamo.graph_break()  # BREAK

    return fn, [()]


@case(T + "test_load_build_class")
def load_build_class():
    def fn():
        class Foo:  # BREAK
            pass

        return Foo

    return fn, [()]


@case(T + "test_reconstruction_failure_gb")
def reconstruction_failure_gb():
    class Foo:
        def meth(self):
            return 0

    def fn():
        f = Foo().meth
        torch._dynamo.graph_break()  # BREAK
        return f

    return fn, [()]


@case(T + "test_faketensor_nyi")
def faketensor_nyi():
    op_name = "mylib::error_messages_faketensor"
    if not hasattr(torch.ops.mylib, "error_messages_faketensor"):

        @torch.library.custom_op(op_name, mutates_args=())
        def foo(x: torch.Tensor) -> torch.Tensor:
            return x.sin()

        @foo.register_fake
        def _(x):
            raise NotImplementedError

    def fn(x):
        return torch.ops.mylib.error_messages_faketensor(x)  # BREAK

    return fn, [(torch.randn(3),)]


@case(T + "test_data_dependent_branching_gb")
def data_dependent_branching_gb():
    def fn(x):
        if x.sum() > 0:  # BREAK
            return x.sin()
        return x.cos()

    return fn, [(torch.randn(3),)]


@case(T + "test_assert_failure_in_generic_ctx_mgr")
def assert_failure_in_generic_ctx_mgr():
    def fn(x):
        with GenericCtxMgr():
            assert x is None  # BREAK

    def call(f):
        try:
            f(torch.randn(3))
        except AssertionError:
            return "AssertionError"

    return fn, [call]


@case(T + "test_no_internal_compiler_stacktrace")
def no_internal_compiler_stacktrace():
    def fn():
        gn()

    def gn():
        torch._dynamo.graph_break()  # BREAK

    return fn, [()]


@case(T + "test_graph_break_in_loop")
def graph_break_in_loop():
    def fn(x):
        for i in range(2):
            torch._dynamo.graph_break()  # BREAK
        return x + 1

    return fn, [(torch.ones(3),)]


@case(T + "test_graph_break_in_loop (gn)")
def graph_break_in_loop_branch():
    def gn(x):
        for i in range(2):
            if x.sum() > 0:  # BREAK
                x = x + 1
            else:
                x = x + 2
        return x + 4

    return gn, [(torch.ones(3),)]


@case(T + "test_skip_frame_in_loop_message")
def skip_frame_in_loop_message():
    def fn(x):
        for i in range(2):
            with GenericCtxMgr():
                if x.sum() > 0:  # BREAK
                    x = x + 1
        return x

    return fn, [(torch.randn(3),)]


@case(T + "test_nested_compile_user_frames")
def nested_compile_user_frames():
    def fn(x):
        gn(x + 1)

    def gn(x):
        hn(x + 1)

    def hn(x):
        torch._dynamo.graph_break()  # 0  # BREAK
        torch._dynamo.graph_break()  # 1  # BREAK

    return fn, [(torch.randn(3),)]


@case(T + "test_latest_bytecode_to_graph_break")
def latest_bytecode_to_graph_break():
    def fn(x):
        y = x + 1
        z = x + y
        torch._dynamo.graph_break()  # BREAK
        return z

    return fn, [(torch.ones(3),)]


@case(T + "test_graph_break_traceback_above_dynamo_shows_user_code (f1)")
def traceback_above_dynamo_f1():
    def f1(x):
        torch._dynamo.graph_break()  # 0  # BREAK
        torch._dynamo.graph_break()  # 1  # BREAK
        torch._dynamo.graph_break()  # BREAK

    return f1, [(torch.randn(3),)]


@case(T + "test_graph_break_traceback_above_dynamo_shows_user_code (f2)")
def traceback_above_dynamo_f2():
    def f2(x):
        if x.sum() > 0:  # 0  # BREAK
            x = x + 1
        if x.sum() > 0:  # 1  # BREAK
            x = x + 1
        if x.sum() > 0:  # BREAK
            x = x + 1

    return f2, [(torch.ones(3),)]


@case(T + "test_graph_break_traceback_above_dynamo_shows_user_code (f3)")
def traceback_above_dynamo_f3():
    class Foo:
        def __setattr__(self, name, value):
            torch._dynamo.graph_break()

    def f3(x):
        Foo().attr = x  # 0  # BREAK
        Foo().attr = x  # 1  # BREAK
        Foo().attr = x  # BREAK

    return f3, [(torch.randn(3),)]


@case(T + "test_step_graph_break")
def step_graph_break():
    def fn(x):
        x = x + 1
        x = x + 2
        torch._dynamo.step_unsupported()  # BREAK
        return x + 4

    return fn, [(torch.ones(3),)]
