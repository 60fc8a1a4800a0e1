"""Cases from pytorch/pytorch test/dynamo/test_reorder_logs.py (IgnoreLogsTests, ReorderLogsTests).

Where a test sets ``reorderable_logging_functions`` / ``ignore_logger_methods`` to show the
break gone, the case runs without it (the break the setting removes) unless it is marked
with the test's config.
"""

import logging
import warnings

import torch
import torch._dynamo

from . import case

I = "test/dynamo/test_reorder_logs.py::IgnoreLogsTests::"
T = "test/dynamo/test_reorder_logs.py::ReorderLogsTests::"

logger = logging.getLogger(__name__)


def f_info(x):
    x = x + x
    logger.info("moo")  # BREAK
    x = x * x
    return x


def f_isEnabledFor(x):
    x = x + x
    if logger.isEnabledFor(logging.INFO):  # BREAK
        logger.info("moo")
    x = x * x
    return x


@case(I + "test_ignore_logger (None, f_info)")
def ignore_logger_info():
    return f_info, [(torch.randn(3, 3),)]


@case(I + "test_ignore_logger (None, f_isEnabledFor)")
def ignore_logger_is_enabled_for():
    return f_isEnabledFor, [(torch.randn(3, 3),)]


@case(T + "test_dont_reorder_print")
def dont_reorder_print():
    def f(x):
        x = x + x
        print("moo")  # BREAK
        x = x * x
        return x

    return f, [(torch.randn(3, 3),)]


@case(T + "test_reorder_print", note="without the test's reorderable_logging_functions={print}")
def reorder_print():
    def f(x):
        print("moo")  # BREAK
        x1 = x + x
        print(x1)  # BREAK
        x2 = x1 * x1
        print(1, 2, 3)  # BREAK
        x3 = x2 + x2
        return (x1, x3)

    return f, [(torch.ones(3, 3),)]


@case(T + "test_reorder_warnings", note="without the test's reorderable_logging_functions={warnings.warn}")
def reorder_warnings():
    def f(x):
        x1 = x + x
        warnings.warn("moo")  # BREAK
        x2 = x1 * x1
        warnings.warn(f"{x2}")  # BREAK
        x3 = x2 + x2
        return x3

    def call(f_):
        with warnings.catch_warnings(record=True):
            return f_(torch.ones(3, 3))

    return f, [call]


@case(T + "test_reorder_print_graph_break", config={"reorderable_logging_functions": {print}})
def reorder_print_graph_break():
    def f(x):
        x1 = x + x
        print(f"res: {x1}")
        x2 = x1 * x1
        torch._dynamo.graph_break()  # BREAK
        x3 = x2 + x2
        print(1, 2, 3)
        return x3

    return f, [(torch.ones(3, 3),)]


@case(T + "test_reorder_custom_log_fn", note="custom_log is made per case; the test's config names it")
def reorder_custom_log_fn():
    custom_logs = []

    def custom_log(s: str):
        torch._dynamo.graph_break()
        custom_logs.append(s)

    def f(x):
        custom_log("moo")  # BREAK
        x1 = x + x
        custom_log(f"{x1}")  # BREAK
        return x + x

    return f, [(torch.ones(3, 3),)]


@case(T + "test_constant_mutation", config={"reorderable_logging_functions": {print}})
def constant_mutation():
    def f(x):
        alist = [x]
        alist.append(x + 1)
        print(alist[-1])
        alist[0].sum().item()  # graph break  # BREAK
        res = alist.pop()
        print(alist[-1])
        res.sum().item()  # graph break  # BREAK
        return res

    return f, [(torch.tensor([1]),)]
