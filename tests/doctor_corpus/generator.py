"""Cases from pytorch/pytorch test/dynamo/test_generator.py (GeneratorTests).

The tests' ``setUp`` turns on ``enable_faithful_generator_behavior`` (torch 2.13's
default), ``enable_trace_load_build_class`` and ``enable_trace_unittest``; the cases
run with the same settings (:data:`G`).
"""

import torch
import torch._dynamo

from . import case

T = "test/dynamo/test_generator.py::GeneratorTests::"
G = {"enable_faithful_generator_behavior": True, "enable_trace_load_build_class": True, "enable_trace_unittest": True}


@case(T + "test_graph_break_in_generator", config=G)
def graph_break_in_generator():
    def whoo():
        yield 1
        torch._dynamo.graph_break()  # BREAK
        yield 2

    def fn(t):
        gen = whoo()
        s = next(gen)
        s += next(gen)
        return t + s

    return fn, [(torch.randn(2),)]


@case(T + "test_graph_break_in_generator_2", config=G)
def graph_break_in_generator_2():
    def whoo(x):
        yield x.sin()
        torch._dynamo.graph_break()  # BREAK
        yield x.cos()

    def call_whoo(x):
        gen = whoo(x)
        sin = next(gen)
        cos = next(gen)
        return sin, cos

    def fn(t):
        sin, cos = call_whoo(t)
        return sin + cos

    return fn, [(torch.randn(2),)]


@case(T + "test_reconstruct_generator_with_dict_mutation", config=G)
def reconstruct_generator_with_dict_mutation():
    def whoo(t, d):
        d[2] = t  # BREAK (the generator's mutation)
        yield t.sin()
        yield t.cos()
        d[3] = t + 1
        yield t.tan()

    def fn(t, d):
        gen = whoo(t, d)
        next(gen)
        return t.sin(), whoo(t, d)

    t = torch.randn(2)
    return fn, [lambda f: f(t, {1: t})[0]]


@case(T + "test_reconstruct_generator_with_object_mutation", config=G)
def reconstruct_generator_with_object_mutation():
    class Counter:
        def __init__(self):
            self.x = 0

        def incr(self):
            self.x += 1  # BREAK (the generator's mutation)

    def whoo(t, c):
        c.incr()
        yield t.sin()
        yield t.cos()
        c.incr()
        yield t.tan()

    def fn(t, c):
        gen = whoo(t, c)
        next(gen)
        return t.sin(), gen

    t = torch.randn(2)
    return fn, [lambda f: f(t, Counter())[0]]


@case(T + "test_graph_break_and_reconstruct_generator", config=G)
def graph_break_and_reconstruct_generator():
    def whoo(t):
        yield t.sin()
        yield t.cos()
        yield t.tan()

    def g(t):
        torch._dynamo.graph_break()  # BREAK

    def fn(t):
        gen = whoo(t)
        next(gen)
        g(t)
        return t.sin(), list(gen)

    return fn, [(torch.randn(2),)]


@case(T + "test_graph_break_in_generator_while_reconstructing", config=G)
def graph_break_in_generator_while_reconstructing():
    def whoo():
        yield 1
        torch._dynamo.graph_break()  # BREAK
        yield 2

    def fn(t):
        gen = whoo()
        s = next(gen)
        torch._dynamo.graph_break()  # BREAK
        s += next(gen)
        return t + s

    return fn, [(torch.randn(2),)]


@case(T + "test_generator_as_argument", config=G)
def generator_as_argument():
    # The inline tracer needs to be kept in sync if an already advanced generator
    # is given to a compiled function.
    def whoo():
        yield 1
        yield 2
        yield 3

    def fn(t, ctx):
        return t + next(ctx)  # BREAK

    def call(f):
        ctx = whoo()
        next(ctx)
        return f(torch.ones(2), ctx)

    return fn, [call]


@case(T + "test_generator_as_argument_2", config=G)
def generator_as_argument_2():
    def whoo(x):
        yield x.sin()
        yield x.cos()

    def fn(t, ctx):
        return t + next(ctx)  # BREAK

    def call(f):
        t = torch.ones(2)
        ctx = whoo(t)
        next(ctx)
        return f(t, ctx)

    return fn, [call]


@case(T + "test_generator_as_argument_4", config=G)
def generator_as_argument_4():
    def whoo(x):
        yield x.sin()
        yield x.cos()

    def fn(t, ctx):
        return t + next(ctx)  # BREAK

    def call(f):
        t = torch.ones(2)
        return f(t, whoo(t))

    return fn, [call]
