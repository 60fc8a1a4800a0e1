"""Real torch.compile workloads, captured once per test process and shared.

Each ``run_<name>()`` compiles and runs something under ``ipycompile.capture()``
and returns the capture; :func:`captured` caches them so every test module
reuses the same compiles (the first Inductor compile in a process costs
10-25 s on CPU). Lines the tests check are found by their ``# <-`` markers.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import numpy as np
import torch

from ipycompile.run import fresh_inductor_cache

import ipycompile


@contextlib.contextmanager
def fresh_cache():
    """Fresh, temporary Inductor caches (``ipycompile.run.fresh_inductor_cache``), entered after
    Inductor's CPU check has run. The check (which vector instructions the C++ compiler and this CPU
    support) runs once per process and builds its test programs into the cache in use then: first
    inside a fresh cache it costs 6 CPU-s of the C++ compiler, in the suite's cache it is found
    built. ``%%compile --fresh`` and sweeps pay it before their fresh caches (the one-time start-up
    compile); a test that enters fresh caches itself does it here."""
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.pick_vec_isa()
    with fresh_inductor_cache():
        yield


def line_of(marker: str) -> int:
    """Line number, in this file, of the line ending with ``# <- marker``."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"# <- {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


FILE = __file__


def _fresh() -> None:
    torch._dynamo.reset()


# -- graph breaks --------------------------------------------------------------
def data_dependent_if(x):
    y = x * 2
    if y.sum() > 0:  # <- ddif
        return y + 1
    return y - 1


def helper_with_if(x):
    if x.mean() > 0:  # <- helper-if
        return x.cos()
    return x.sin()


def calls_helper(x):
    y = x + 1
    z = helper_with_if(y)  # <- calls-helper
    return z * 2


def uses_print(x):
    y = x + 1
    print("ipycompile test print")  # <- print
    return y * 2


def uses_item(x):
    return x * x.sum().item()  # <- item


def uses_tolist(x):
    positive = (x > 0).int().tolist()  # <- tolist
    return x * len([i for i in positive if i])


def uses_numpy(x):
    # np.sin would be traced (torch._numpy); np.unique has a data-dependent shape
    return torch.from_numpy(np.unique(x.numpy())) + 1  # <- numpy


def body_with_break(x):
    if x.sum() > 0:  # <- loop-site
        return x * 0.5
    return x


def loop_calling_break(x):
    for _ in range(3):
        x = body_with_break(x) + 1
    return x


BREAKERS = {
    "ddif": data_dependent_if,
    "helper": calls_helper,
    "print": uses_print,
    "item": uses_item,
    "tolist": uses_tolist,
    "numpy": uses_numpy,
    "loop": loop_calling_break,
}


def run_break(name: str):
    _fresh()
    fn = torch.compile(BREAKERS[name], backend="eager")
    with ipycompile.capture() as cap:
        fn(torch.randn(8))
    return cap


# -- recompiles ----------------------------------------------------------------
def scaled(x, n: int):
    return x * n + 1


def run_recompiles():
    _fresh()
    fn = torch.compile(scaled, backend="eager", dynamic=False)
    with ipycompile.capture() as cap:
        fn(torch.randn(8), 2)
        fn(torch.randn(16), 2)  # shape change
        fn(torch.randn(8, dtype=torch.float64), 2)  # dtype change
        fn(torch.randn(8), 3)  # a changed Python int
    return cap


def run_recompile_limit():
    _fresh()
    fn = torch.compile(scaled, backend="eager")
    old = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 2
    try:
        with ipycompile.capture() as cap:
            for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
                fn(torch.ones(4, dtype=dtype), 2)
    finally:
        torch._dynamo.config.recompile_limit = old
    return cap


# -- control flow --------------------------------------------------------------
# The public associative_scan needs CUDA for combine_mode="pointwise" and is
# inlined into plain ops for "generic"; the op itself gives the HOP on CPU.
from torch._higher_order_ops.associative_scan import associative_scan_op  # noqa: E402
from torch._higher_order_ops.map import map as hop_map  # noqa: E402
from torch._higher_order_ops.scan import scan  # noqa: E402
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402


def _combine(carry, x):
    nxt = carry + x
    nxt = torch.cond(nxt.sum() > 0, lambda a: a * 2, lambda a: a - 1, (nxt,))
    return nxt, nxt.clone()


def control_flow(xs):
    a = torch.cond(xs.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (xs,))

    def cond_fn(i, v):
        return i < 3

    def body_fn(i, v):
        return i + 1, torch.cond(v.sum() > 0, lambda q: q * 2, lambda q: q + 1, (v,))

    _, w = while_loop(cond_fn, body_fn, (torch.tensor(0), a))
    carry, ys = scan(_combine, torch.zeros(xs.shape[1]), xs)
    m = hop_map(lambda t: t * 2, xs)
    (s,) = associative_scan_op(lambda p, q: [p + q], [xs], ())
    return w.sum() + carry.sum() + ys.sum() + m.sum() + s.sum()


def run_control_flow():
    _fresh()
    fn = torch.compile(control_flow, backend="eager", fullgraph=True)
    with ipycompile.capture() as cap:
        fn(torch.randn(5, 4))
    return cap


# -- Inductor on CPU -----------------------------------------------------------
class TinyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc1(x))
        return torch.relu(self.fc2(h)).sum(dim=-1)


def run_inductor():
    """Inference, fresh Inductor caches, then the same again from the caches."""
    torch.manual_seed(0)
    model = TinyMLP()
    x = torch.randn(4, 16)
    caps = []
    with fresh_cache(), torch.no_grad():
        for _ in range(2):
            _fresh()
            fn = torch.compile(model)
            with ipycompile.capture() as cap:
                fn(x)
            caps.append(cap)
    cap, cap.warm = caps[0], caps[1]
    return cap


def run_inductor_training():
    _fresh()
    torch.manual_seed(0)
    model = TinyMLP()
    fn = torch.compile(model)
    with fresh_cache(), ipycompile.capture() as cap:
        fn(torch.randn(4, 16)).sum().backward()
    return cap


# -- failures ------------------------------------------------------------------
def fullgraph_break(x):
    if x.sum() > 0:  # <- fullgraph
        return x
    return -x


def run_fullgraph_failure():
    _fresh()
    fn = torch.compile(fullgraph_break, backend="eager", fullgraph=True)
    with ipycompile.capture() as cap:
        try:
            fn(torch.randn(3))
        except Exception as exc:  # torch raises Unsupported; the report must still exist
            cap.error = exc
    return cap


@functools.cache
def captured(name: str):
    """The capture of one workload, computed once per process."""
    if name.startswith("break:"):
        return run_break(name.split(":", 1)[1])
    return globals()[f"run_{name}"]()
