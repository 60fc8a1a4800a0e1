"""Issue 41, part 2: "nothing compiled is the first problem".

``torch.compile(DDP(model))`` with a ``torch.nn`` container as the model compiles nothing: DDP's
forward breaks (its logger call, then ``_inside_ddp_forward``, a function torch skips), the rest
of DDP's forward runs eagerly, and the ``nn.Sequential`` it wraps is torch's own code, where
Dynamo never starts a frame: compile ids, no graph, no kernel. Each door is tested with real
compiles (backend "eager"): a ``%%compile`` cell in a real IPython shell with the DDP model a
notebook global, ``ipycompile.capture()`` around the compiled call, and a TORCH_TRACE log written
by a subprocess, read by ``ipycompile.load_trace`` and ``python -m ipycompile report``. The fix
the report gives, ``DDP(torch.compile(model))``, is applied for real on the same gloo group and
compiles graphs with the same outputs. A process group of world size 1 (gloo, a FileStore) is
enough to reproduce it.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from IPython.utils.capture import capture_output
from torch.nn.parallel import DistributedDataParallel as DDP

import ipycompile
from ipycompile.views import html as html_view
from ipycompile.views.first_screen import problems
from ipycompile.views.widget import ReportWidget
from ipycompile.views.viewmodel import header

import shells

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    """A gloo process group of world size 1 in this process (FileStore), torn down after."""
    made = not dist.is_initialized()
    if made:
        store = dist.FileStore(str(tmp_path_factory.mktemp("gloo") / "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield
    if made:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ip(group):
    with shells.loaded() as shell:
        shell.run_cell("import torch")
        yield shell


def sequential() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def cell(ip, source: str) -> ipycompile.CompileReport:
    with capture_output():
        res = ip.run_cell(source, store_history=True)
    assert res.error_in_exec is None, res.error_in_exec
    return ipycompile.history()["report"].iloc[-1]


def graphs(r) -> int:
    return sum(1 for g in r.graphs if g.stage == "dynamo")


def assert_ddp_nothing_compiled(r) -> None:
    """Item 1 says nothing compiled, names DDP's forward and the reason, and gives the fix."""
    assert graphs(r) == 0 and r.compiles and not r.kernels
    first = problems(r)[0]
    assert first.kind == "eager_run", [p.title for p in problems(r)]
    assert first.title.startswith("Nothing was compiled") and "DistributedDataParallel's forward" in first.title
    assert "`_pre_forward`" in first.cost and "torch/nn/parallel/distributed.py" in first.cost, first.cost
    assert "Unsupported method call" in first.cost and "GB0156" in first.cost, first.cost
    assert "DDP(torch.compile(model))" in first.fix and "DDP(torch.compile(model))" in first.fix_code
    assert first.confidence == "high"
    assert r.eager_run.kind == "nothing" and r.eager_run.wrapper == "ddp"
    assert r.eager_run.frame.function == "_pre_forward"
    # "by design, nothing to fix" is not said: nothing of the model compiled
    text = str(r)
    assert "by design" not in text
    chips = [c.text for c in header(r)]
    assert "0 graphs: nothing was compiled; the model ran eagerly" in chips, chips
    assert text.index("Nothing was compiled") < text.index("Graph break:")
    # the HTML page and the widget render the same view model: the same first item, first
    page = html_view.render_html(r)
    kinds = re.findall(r'class="prob[^"]*" data-kind="([^"]+)"', page)
    assert kinds and kinds[0] == "eager_run", kinds
    assert page.index("Nothing was compiled") < page.index("Graph break:")
    assert "DDP(torch.compile(model))" in page
    widget = ReportWidget(r)
    assert widget.view_model.problems[0].kind == "eager_run"
    assert "Nothing was compiled" in widget.first.value


def test_ddp_of_a_sequential_in_a_compile_cell_says_nothing_compiled_and_its_fix_compiles(ip):
    """The user's door: the DDP model a notebook global, a %%compile cell calling it. Then the fix
    the report gives, applied for real: DDP(torch.compile(model)) compiles graphs, the same outputs."""
    torch._dynamo.reset()
    model = sequential()
    ip.user_ns.update(ddp=DDP(model), x=torch.randn(4, 8))
    r = cell(ip, "%%compile --backend eager --runs 1 --verify-fixes\nout = ddp(x)\nout")
    assert_ddp_nothing_compiled(r)
    first = problems(r)[0]
    assert first.where.endswith("line 2") and first.code == "out = ddp(x)"
    # --verify-fixes applied it for real on a copy of `ddp`: the module compiled, then wrapped
    check = r.eager_run.suggestion.check
    assert check is not None and check.status == "verified", check
    assert "graph(s) compiled where the unfixed cell compiled none" in check.reason and check.max_abs_diff == 0
    assert "verified on your cell" in first.check
    expected = model(ip.user_ns["x"])
    assert torch.equal(ip.user_ns["out"], expected)

    # the fix, for real: compile the module, then wrap it
    ip.user_ns["fixed"] = DDP(torch.compile(copy.deepcopy(model), backend="eager"))
    fixed = cell(ip, "%%compile --backend eager --runs 1\nout2 = fixed(x)\nout2")
    assert graphs(fixed) >= 1 and fixed.eager_run is None
    assert all(p.kind != "eager_run" for p in problems(fixed))
    assert "nothing was compiled" not in str(fixed)
    torch.testing.assert_close(ip.user_ns["out2"], expected)


def test_compiling_a_sequential_in_place_compiles_nothing_so_it_is_not_the_fix_offered(group):
    """Why the answer is DDP(torch.compile(model)) and not `model.compile()` before wrapping: on this
    torch, compiling an nn.Sequential in place compiles `Module._call_impl`, torch's own code, where
    Dynamo starts no frame, and its layers are torch's too: nothing compiles, with DDP or without."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = sequential()
    model.compile(backend="eager")
    with ipycompile.capture() as cap:
        DDP(model)(torch.randn(4, 8))
    # torch's own counter is the evidence: 0 graphs on torch 2.13 (and 2.11); torch 2.14 compiles it
    assert graphs(cap.report) == counters["stats"]["unique_graphs"]
    if torch.__version__ < "2.14":
        assert graphs(cap.report) == 0
    assert "model.compile()" not in problems(cap.report)[0].fix_code if problems(cap.report) else True


def test_compile_of_ddp_under_capture_says_nothing_compiled_and_the_fix_compiles(group):
    """torch.compile(DDP(Sequential)) called inside ``ipycompile.capture()``: 4 compile ids, no graph;
    DDP(torch.compile(model)) under the same capture compiles one graph with the same outputs."""
    torch._dynamo.reset()
    model = sequential()
    compiled = torch.compile(DDP(model), backend="eager")
    x = torch.randn(4, 8)
    with ipycompile.capture() as cap:
        out = compiled(x)
    assert_ddp_nothing_compiled(cap.report)
    torch._dynamo.reset()
    fixed = DDP(torch.compile(copy.deepcopy(model), backend="eager"))
    with ipycompile.capture() as cap2:
        out2 = fixed(x)
    assert graphs(cap2.report) == 1 and cap2.report.eager_run is None and not problems(cap2.report)
    torch.testing.assert_close(out2, out)
    torch.testing.assert_close(out, model(x))


def test_a_function_under_compiler_disable_compiles_nothing_and_is_named(ip):
    torch._dynamo.reset()
    ip.run_cell("@torch.compiler.disable\ndef slow_part(t):\n    return t.sin() * 2\n")
    ip.user_ns["x"] = torch.randn(4, 8)
    r = cell(ip, "%%compile --backend eager --runs 1\ny = slow_part(x)\ny")
    first = problems(r)[0]
    assert first.kind == "eager_run" and first.title.startswith("Nothing was compiled"), first.title
    assert "torch.compiler.disable" in first.title
    assert "`slow_part`" in first.fix and "remove" in first.fix and first.fix_code == ""
    assert r.eager_run.wrapper == "disable" and first.code == "y = slow_part(x)"


def test_a_module_whose_forward_is_disabled_compiles_nothing_and_is_named(group):
    """`torch._dynamo.disable` on a module's forward, the module compiled: Dynamo skips inlining it
    (GB0099) and compiles nothing; item 1 names the disabled forward and what torch documents."""

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        @torch._dynamo.disable
        def forward(self, t):
            return torch.relu(self.lin(t))

    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(Frozen(), backend="eager")(torch.randn(2, 8))
    r = cap.report
    first = problems(r)[0]
    assert graphs(r) == 0 and first.kind == "eager_run" and first.title.startswith("Nothing was compiled"), first
    assert r.eager_run.wrapper == "disable" and "`Frozen.forward`" in first.fix, first.fix
    assert "torch documents `torch.compiler.disable`" in r.eager_run.suggestion.explanation


def test_fsdp2_of_a_sequential_compiles_nothing_and_its_fix_compiles(group):
    """torch.compile of a module FSDP2 sharded (fully_shard, a CPU mesh of one rank): torch stops in
    FSDP's own code and compiles nothing; the fix given, fully_shard(torch.compile(model)), applied for
    real compiles one graph with the same outputs."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (1,))
    model = sequential()
    x = torch.randn(4, 8)
    expected = model(x)
    sharded = copy.deepcopy(model)
    fully_shard(sharded, mesh=mesh)
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        out = torch.compile(sharded, backend="eager")(x)
    r = cap.report
    first = problems(r)[0]
    assert graphs(r) == 0 and first.kind == "eager_run" and r.eager_run.wrapper == "fsdp", first
    assert "in FSDP's code" in first.title and "fully_shard(torch.compile(model))" in first.fix
    assert "model = torch.compile(model)\nfully_shard(model)" in first.fix_code
    torch._dynamo.reset()
    fixed = torch.compile(copy.deepcopy(model), backend="eager")
    fully_shard(fixed, mesh=mesh)
    with ipycompile.capture() as cap2:
        out2 = fixed(x)
    assert graphs(cap2.report) == 1 and cap2.report.eager_run is None
    torch.testing.assert_close(out2, expected)
    torch.testing.assert_close(out, expected)


def test_most_calls_run_eagerly_is_said(group):
    """Two of three blocks under torch.compiler.disable: a graph compiles (the third block), but most
    of the model's calls ran eagerly, and item 1 says so, naming the disabled calls."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, t):
            return torch.relu(self.lin(t))

    class Disabled(Block):
        @torch.compiler.disable
        def forward(self, t):
            return torch.relu(self.lin(t))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = Disabled(), Disabled(), Block()

        def forward(self, t):
            t = self.a(t)
            t = self.b(t)
            return self.c(t)

    torch._dynamo.reset()
    net = Net()
    with ipycompile.capture() as cap:
        torch.compile(net, backend="eager")(torch.randn(2, 8))
    r = cap.report
    assert graphs(r) >= 1
    first = problems(r)[0]
    assert first.kind == "eager_run" and first.title.startswith("Most of the code ran eagerly"), first.title
    assert r.eager_run.kind == "mostly" and len(r.eager_run.eager) == 2, r.eager_run
    assert "most of the code ran eagerly" in " ".join(c.text for c in header(r))


def test_a_normal_model_has_no_such_problem(group):
    """No false positive: a model that compiles, one with a break whose both sides compile, and a DDP
    of a model whose own forward compiles (DDP's wrapper breaks stay "by design")."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, t):
            return torch.relu(self.lin(t))

    def breaks(t):
        t = t + 1
        print("between", end="")
        return t * 2

    torch._dynamo.reset()
    x = torch.randn(2, 8)
    with ipycompile.capture() as cap:
        torch.compile(Net(), backend="eager")(x)
        torch.compile(breaks, backend="eager")(x)
    r = cap.report
    assert graphs(r) == 3 and r.eager_run is None
    assert all(p.kind != "eager_run" for p in problems(r))
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(DDP(Net()), backend="eager")(x)
    r = cap.report
    assert graphs(r) >= 1 and r.eager_run is None, r.eager_run
    ddp = [b for b in r.graph_breaks if b.suggestion is not None and b.suggestion.kind == "ddp_wrapper"]
    assert ddp and all("by design" in b.suggestion.title for b in ddp)


SCRIPT = """
import os, sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo", store=dist.FileStore(sys.argv[1], 1), rank=0, world_size=1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
compiled = torch.compile(DDP(model), backend="eager")
compiled(torch.randn(4, 8)).sum().backward()
dist.destroy_process_group()
"""


def test_a_torch_trace_log_of_the_ddp_job_says_it_too(tmp_path):
    """The same records from a TORCH_TRACE log: load_trace and the CLI's summary put it first."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(SCRIPT))
    logs = tmp_path / "trace"
    env = {**os.environ, "TORCH_TRACE": str(logs), "OMP_NUM_THREADS": "1"}
    env.pop("TORCH_LOGS", None)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "store")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = logs.iterdir()
    r = ipycompile.load_trace(log)
    assert_ddp_nothing_compiled(r)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cli = subprocess.run([sys.executable, "-m", "ipycompile", "report", "--no-progress", str(logs)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr[-3000:]
    out = cli.stdout
    assert "1. Nothing was compiled" in out and "DDP(torch.compile(model))" in out, out[:3000]
    assert "0 graphs: nothing was compiled; the model ran eagerly" in out
    assert out.index("Nothing was compiled") < out.index("Graph break:")


def test_compiled_code_from_the_cache_is_not_called_eager(ip):
    """No false "the model ran eagerly": the fixed DDP(torch.compile(model)) compiled in one cell, then
    called from another cell, whose own frame breaks at DDP's forward and whose module's compiled code
    comes from Dynamo's cache (torch logs no such call): the report says no graph was compiled in this
    run, that cached compiled code ran, and not that the model ran eagerly."""
    torch._dynamo.reset()
    model = sequential()
    ip.user_ns.update(warm=DDP(torch.compile(model, backend="eager")), x=torch.randn(4, 8))
    first = cell(ip, "%%compile --backend eager --runs 1\nw1 = warm(x)\nw1")
    assert graphs(first) == 1 and first.eager_run is None
    again = cell(ip, "%%compile --backend eager --runs 1\nw2 = warm(x)\nw2")
    assert graphs(again) == 0 and again.ran_cached_code and again.graphs_before
    run = again.eager_run
    assert run is not None and run.cached and run.title.startswith("No graph was compiled in this run"), run
    assert "ran eagerly" not in run.title and run.suggestion.confidence == "low"
    chips = [c.text for c in header(again)]
    assert not any("nothing was compiled" in c for c in chips), chips
    # a function with a break, compiled as frames of its own in one cell, called from another
    ip.run_cell("def noisy(t):\n    t = t.sin()\n    print('', end='')\n    return t.cos()\n")
    assert graphs(cell(ip, "%%compile --backend eager --runs 1\nn1 = noisy(x)\nn1")) == 2
    nested = cell(ip, "%%compile --backend eager --runs 1\nn2 = noisy(x)\nn2")
    assert graphs(nested) == 0 and nested.ran_cached_code and nested.eager_run.cached, nested.eager_run
    # ... but the cached code DDP's forward runs (contextlib's frames, no graph) is no such doubt: a new
    # DDP of a Sequential in the same warm session still says nothing was compiled
    ip.user_ns["cold"] = DDP(sequential())
    cold = cell(ip, "%%compile --backend eager --runs 1\nc1 = cold(x)\nc1")
    assert cold.graphs_before and not cold.ran_cached_code
    assert_ddp_nothing_compiled(cold)
