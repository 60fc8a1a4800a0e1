"""The door matrix's fixtures, in one place: workloads, the doors a user runs them through, and
the one fingerprint every door's report is reduced to (tests/test_doors.py, benchmarks/doors.py).

A *workload* is user code as users write it: a namespace of globals (the model, its inputs) and
one expression that calls it (``model(ids)``, ``model(ids).logits``, ``model(**batch)``,
``fn(a0)``). A *door* is one way a user runs that expression under ``torch.compile`` and gets a
report: a ``%%compile`` cell in a real IPython shell with the model a global of the shell's
namespace, ``run_cell`` with a namespace, ``capture()`` around a compiled closure, around a call
of ``torch.compile(model)``, of ``model.compile()``, of a compiled ``forward``, of
``DDP(torch.compile(model))`` and ``torch.compile(DDP(model))`` (gloo, world size 1), of an
FSDP2 ``fully_shard`` model, and out of process a ``TORCH_TRACE`` log read by ``load_trace``
and by the CLI, and a ``torchrun`` job of two ranks through the launcher.

:func:`fingerprint` keeps what a user reads off the report and what must not depend on the door:
the Dynamo graphs (their op counts) and the stages they went through, the graph breaks (kind, the
user's line, where torch stopped), the recompiles, the unrolled loops (file, line, repeats), the
kernels, and the first screen's problems. Every door compiles with the same backend.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Callable, Optional

import torch

import ipycompile
from ipycompile.report.model import MIN_REPEATS

import shells

ROOT = Path(__file__).resolve().parent.parent

#: transformers' families of the matrix: (config class, model class name, extra config).
FAMILIES = ("llama", "mistral", "qwen2", "gemma", "phi3", "gpt2", "gptneox", "opt", "bert")
#: hidden sizes of the matrix.
SIZES = (64, 256)
VOCAB, SEQ = 128, 8
#: layers of the transformers models: the loop detector's minimum, so the stack is found at its threshold
#: (a workload's script, out of process, builds it again from its name: one count for all)
LAYERS = MIN_REPEATS


def hf_config(family: str, hidden: int):
    import transformers as tf

    heads = 4
    common = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=LAYERS,
                  num_attention_heads=heads, vocab_size=VOCAB, max_position_embeddings=64)
    if family in ("llama", "mistral", "qwen2", "phi3"):
        return getattr(tf, {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config",
                            "phi3": "Phi3Config"}[family])(num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
                                                           eos_token_id=2, **common)
    if family == "gemma":
        return tf.GemmaConfig(num_key_value_heads=2, head_dim=hidden // heads, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, **common)
    if family == "gptneox":
        return tf.GPTNeoXConfig(**common)
    if family == "bert":
        return tf.BertConfig(**common)
    if family == "gpt2":
        return tf.GPT2Config(n_embd=hidden, n_layer=LAYERS, n_head=heads, vocab_size=VOCAB, n_positions=64,
                             bos_token_id=1, eos_token_id=2)
    if family == "opt":
        return tf.OPTConfig(hidden_size=hidden, ffn_dim=2 * hidden, num_hidden_layers=LAYERS, num_attention_heads=heads,
                            vocab_size=VOCAB, word_embed_proj_dim=hidden, max_position_embeddings=64, pad_token_id=0,
                            bos_token_id=1, eos_token_id=2)
    raise ValueError(f"unknown family {family!r}")


@dataclasses.dataclass
class Workload:
    """User code: ``build()`` returns the namespace of globals; ``expr`` calls it (``model`` is the
    module that module doors wrap, when there is one)."""

    name: str
    build: Callable[[], dict]
    expr: str
    module: bool = True  # ``model`` in the namespace is an nn.Module that module doors can wrap
    backend: str = "eager"
    calls: int = 1  # how many times the expression is evaluated (recompiles need more than one)
    rebind: Optional[Callable[[dict, int], None]] = None  # between calls: set the globals of call i
    family: str = ""


def hf_workload(family: str, hidden: int = 64, call: str = "ids") -> Workload:
    """A transformers model (tiny config, random weights) called as people call it: ``call`` is
    ``"ids"`` (``model(ids)``), ``"logits"`` (``model(ids).logits``) or ``"batch"`` (``model(**batch)``)."""

    def build() -> dict:
        import transformers as tf

        torch.manual_seed(0)
        cfg = hf_config(family, hidden)
        model = (tf.BertModel(cfg) if family == "bert" else tf.AutoModelForCausalLM.from_config(cfg)).eval()
        ids = torch.randint(3, VOCAB, (1, SEQ))
        batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        return {"torch": torch, "model": model, "ids": ids, "batch": batch}

    expr = {"ids": "model(ids)", "logits": "model(ids).logits" if family != "bert" else "model(ids).last_hidden_state",
            "batch": "model(**batch)"}[call]
    return Workload(f"{family}-{hidden}-{call}", build, expr, family=family)


# -- small models and user functions -------------------------------------------------
class MLP(torch.nn.Module):
    """The quickstart's kind of model: a few Linear + GELU blocks."""

    def __init__(self, width: int = 64, depth: int = 3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU())
                                          for _ in range(depth))
        self.head = torch.nn.Linear(width, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class LoopRNN(torch.nn.Module):
    """tutorials/04_scan_vs_loop's kind of loop: a recurrence over time steps, unrolled by Dynamo."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.cell = torch.nn.Linear(2 * width, width)

    def forward(self, xs):
        h = torch.zeros(xs.shape[1], xs.shape[2])
        for t in range(xs.shape[0]):
            h = torch.tanh(self.cell(torch.cat([xs[t], h], dim=-1)))
        return h


class BreakingNet(torch.nn.Module):
    """tutorials/02_graph_breaks' kind of model: a data-dependent branch on ``.item()`` in forward."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.a, self.b = torch.nn.Linear(width, width), torch.nn.Linear(width, width)

    def forward(self, x):
        y = self.a(x)
        if y.sum().item() > 0:
            y = y * 2
        return self.b(y)


def module_workload(name: str, cls: type, shape: tuple, backend: str = "eager") -> Workload:
    def build() -> dict:
        torch.manual_seed(0)
        return {"torch": torch, "model": cls(), "x": torch.randn(*shape)}

    return Workload(name, build, "model(x)", backend=backend)


def resized_workload() -> Workload:
    """tutorials/03_recompilations' kind: the same module called on a batch of another size (a recompile)."""

    def build() -> dict:
        torch.manual_seed(0)
        return {"torch": torch, "model": MLP(32, 2), "x": torch.randn(4, 32)}

    def rebind(ns: dict, i: int) -> None:
        ns["x"] = torch.randn(4 + 3 * i, 32)

    return Workload("mlp-resized", build, "model(x)", calls=3, rebind=rebind)


#: how many of the doctor corpus's user functions the matrix runs
CORPUS_FUNCTIONS = 12


def corpus_workloads(limit: int = CORPUS_FUNCTIONS) -> list[Workload]:
    """User functions of the doctor's corpus, taken in turn from each module of both parts (the
    first usable case of each module, then the second, ...): the case's function as the global
    ``fn``, its first call's arguments as ``a0, a1, ...``. Usable: compiled with the default
    options (backend eager, no settings, no compile keywords) and called with plain arguments."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from doctor_corpus import PARTS, load  # noqa: E402

    queues = []
    for part in PARTS.values():
        for m in part:
            queues.append([c for c in load((m,)) if c.backend == "eager" and not c.compile_kwargs and not c.config])
    out: list[Workload] = []
    while len(out) < limit and any(queues):
        for q in queues:
            while q and len(out) < limit:
                w = _case_workload(q.pop(0))
                if w is not None:
                    out.append(w)
                    break
    return out


def _case_workload(c) -> Optional[Workload]:
    def build() -> dict:
        torch.manual_seed(0)
        fn, calls = c.make()
        first = calls[0]
        if callable(first) or not isinstance(first, tuple):
            raise _Unusable(c.name)
        ns = {"torch": torch, "fn": fn}
        ns.update({f"a{i}": a for i, a in enumerate(first)})
        ns["_arity"] = len(first)
        return ns

    try:
        ns = build()
    except Exception:  # noqa: BLE001 - a case whose first call is not plain arguments: not a door workload
        return None
    expr = "fn(" + ", ".join(f"a{i}" for i in range(ns["_arity"])) + ")"
    return Workload(f"corpus:{c.name}", build, expr, module=False, backend="eager")


class _Unusable(Exception):
    pass


def _sequential() -> torch.nn.Module:
    """A model that is a ``torch.nn`` container: ``nn.Sequential`` of blocks (torch skips tracing
    torch.nn's own code where it is the frame called)."""
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU()) for _ in range(3)])


def tutorial_workloads() -> list[Workload]:
    return [module_workload("tutorial:mlp", MLP, (8, 64)),
            module_workload("tutorial:sequential", _sequential, (4, 32)),
            module_workload("tutorial:mlp-inductor", MLP, (8, 64), backend="inductor"),
            module_workload("tutorial:rnn-loop", LoopRNN, (12, 2, 16)),
            module_workload("tutorial:item-branch", BreakingNet, (4, 32), backend="aot_eager"),
            resized_workload()]


# -- the fingerprint --------------------------------------------------------------------
#: the first screen's problems that depend on the code and torch, not on measurement
STRUCTURAL = ("eager_run", "semantics", "failure", "graph_break", "recompile", "unrolled_loop")


def _base(path: str) -> str:
    """A place as the user reads it, whatever the door: library files from their package down
    (``transformers/models/llama/modeling_llama.py``), others by name."""
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    return p.rsplit("/", 1)[-1]


def _title(p) -> str:
    """A problem's title without the compiled function's name, which is the door's (``cell``,
    ``<lambda>``, ``forward``): "recompiled 1 time: Size of dim 0 of `x` went 4 → 7"."""
    return p.title.split(" ", 1)[1] if p.kind == "recompile" and " recompiled " in p.title else p.title


def fingerprint(r) -> dict:
    """What must not depend on the door (see the module docstring), as plain JSON."""
    from ipycompile.views.first_screen import problems, stop, user_line

    dyn = [g for g in r.graphs if g.stage == "dynamo"]
    breaks = set()
    for b in r.graph_breaks:
        u, s = user_line(r, b), stop(b)
        breaks.add((b.gb_type or b.reason.split(":")[0][:60], _base(u.filename), u.lineno, _base(s.filename), s.lineno))
    return {
        "graphs": sorted(g.op_count for g in dyn),
        "stages": sorted({g.stage for g in r.graphs}),
        "breaks": sorted(list(b) for b in breaks),
        "recompiles": len(r.recompiles),
        "loops": sorted([_base(u.filename), u.lineno, u.repeats] for u in r.unrolled_loops),
        "kernels": len(r.kernels),
        "problems": [p.kind for p in problems(r) if p.kind in STRUCTURAL],
        "first": next((_title(p) for p in problems(r) if p.kind in STRUCTURAL), ""),
    }


# -- the doors -----------------------------------------------------------------------------
def _calls(w: Workload, ns: dict, call: Callable[[], Any]) -> Any:
    out = None
    for i in range(w.calls):
        if w.rebind is not None and i:
            w.rebind(ns, i)
        out = call()
    return out


def _captured(w: Workload, ns: dict, compiled_expr: Callable[[dict], Callable[[], Any]]):
    torch._dynamo.reset()
    f = compiled_expr(ns)
    with ipycompile.capture() as cap:
        _calls(w, ns, f)
    return cap.report


def door_closure(w: Workload, ns: dict):
    """``capture()`` around a compiled closure: ``torch.compile(lambda: <expr>)``."""
    return _captured(w, ns, lambda ns: torch.compile(eval("lambda: " + w.expr, ns), backend=w.backend))


def _with(w: Workload, ns: dict, name: str, wrapped) -> Callable[[], Any]:
    """The user's expression evaluated with ``name`` (``model``, ``fn``) bound to ``wrapped`` and every other
    global as ``ns`` holds it at the call (a workload's ``rebind`` changes them between calls)."""
    scope = dict(ns, **{name: wrapped})

    def call():
        scope.update({k: v for k, v in ns.items() if k != name})
        return eval(w.expr, scope)

    return call


def _with_model(w: Workload, ns: dict, wrapped) -> Callable[[], Any]:
    return _with(w, ns, "model", wrapped)


def door_compiled_module(w: Workload, ns: dict):
    """``capture()`` around calls of ``torch.compile(model)``, or of ``torch.compile(fn)``."""
    if not w.module:
        return _captured(w, ns, lambda ns: _with_fn(w, ns, torch.compile(ns["fn"], backend=w.backend)))
    return _captured(w, ns, lambda ns: _with_model(w, ns, torch.compile(ns["model"], backend=w.backend)))


def _with_fn(w: Workload, ns: dict, compiled) -> Callable[[], Any]:
    return _with(w, ns, "fn", compiled)


def door_module_compile(w: Workload, ns: dict):
    """``model.compile()`` then calls of the model itself."""
    model = ns["model"]
    model.compile(backend=w.backend)
    try:
        return _captured(w, ns, lambda ns: (lambda: eval(w.expr, ns)))
    finally:
        model._compiled_call_impl = None


def door_compiled_forward(w: Workload, ns: dict):
    """``model.forward = torch.compile(model.forward)`` then calls of the model."""
    model = ns["model"]
    model.forward = torch.compile(model.forward, backend=w.backend)
    try:
        return _captured(w, ns, lambda ns: (lambda: eval(w.expr, ns)))
    finally:
        del model.forward


def run_cell_source(w: Workload) -> str:
    return f"out = {w.expr}\n"


def door_run_cell(w: Workload, ns: dict):
    """``ipycompile.run_cell(source, namespace)``: the cell run as ``%%compile`` would."""
    torch._dynamo.reset()
    ipycompile.reset()
    reports = []
    for i in range(w.calls):
        if w.rebind is not None and i:
            w.rebind(ns, i)
        reports.append(ipycompile.run_cell(run_cell_source(w), ns, backend=w.backend, runs=1, record=False).report)
    return _merged(reports)


def _merged(reports: list):
    """A cell run several times is several reports; a re-run's report also shows the compiles it
    reused. Their union by compile id is what one capture around all the calls sees."""
    if len(reports) == 1:
        return reports[0]
    graphs, recompiles = {}, {}
    for rep in reports:
        graphs.update({(str(g.compile_id), g.stage): g for g in rep.graphs})
        recompiles.update({str(rc.compile_id): rc for rc in rep.recompiles})
    return dataclasses.replace(reports[-1], graphs=list(graphs.values()), recompiles=list(recompiles.values()))


#: the IPython shell the cell door runs in when a test module holds one open (else it opens one)
SHELL = None


def door_cell(w: Workload, ns: dict, ip=None):
    """A ``%%compile`` cell in a real IPython shell, the model a global of the shell's namespace."""
    from IPython.utils.capture import capture_output

    ip = ip or SHELL
    torch._dynamo.reset()
    ipycompile.reset()
    own = ip is None
    cm = shells.loaded() if own else contextlib.nullcontext(ip)  # the test process's one shell (tests/shells.py)
    reports = []
    with cm as shell:
        added = [k for k in ns if k not in shell.user_ns]
        shell.user_ns.update(ns)
        try:
            for i in range(w.calls):
                if w.rebind is not None and i:
                    w.rebind(shell.user_ns, i)
                with capture_output():
                    res = shell.run_cell(f"%%compile --backend {w.backend} --runs 1 -o _door_report\n"
                                         + run_cell_source(w), store_history=True)
                if res.error_in_exec is not None:
                    raise res.error_in_exec
                reports.append(shell.user_ns["_door_report"])
        finally:
            for k in added + ["_door_report", "out"]:
                shell.user_ns.pop(k, None)
    return _merged(reports)


#: the script of the out-of-process doors: builds the workload by name, compiles the module (or the
#: function), and calls it as the in-process doors do
_JOB = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [{tests!r}, {root!r}]
    import torch
    import doors
    w = doors.workload_by_name({name!r})
    ns = w.build()
    rank = int(os.environ.get("RANK", "0"))
    if "RANK" in os.environ:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    key = "model" if w.module else "fn"
    ns[key] = torch.compile(ns[key], backend=w.backend)
    for i in range(w.calls):
        if w.rebind is not None and i:
            w.rebind(ns, i)
        eval(w.expr, ns)
    if "RANK" in os.environ:
        dist.destroy_process_group()
""")


def _job_script(w: Workload, where: Path) -> Path:
    script = where / "job.py"
    script.write_text(_JOB.format(tests=str(ROOT / "tests"), root=str(ROOT), name=w.name))
    return script


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"  # as in process (see through())
    return env


#: the TORCH_TRACE log a workload's script wrote, by workload name: the TORCH_TRACE and CLI doors read
#: the same log (one run of the script for both), kept in a folder removed when the process exits
_TRACE_LOGS: dict[str, Path] = {}


def _torch_trace_log(w: Workload) -> Path:
    """The log of ``w``'s script run with ``TORCH_TRACE=dir`` (torch writes it), run once per process."""
    if w.name not in _TRACE_LOGS:
        import atexit
        import shutil

        d = Path(tempfile.mkdtemp(prefix="ipyc-doors-trace-"))
        atexit.register(shutil.rmtree, d, True)
        env = _env()
        env["TORCH_TRACE"] = str(d / "trace")
        subprocess.run([sys.executable, str(_job_script(w, d))], env=env, check=True, capture_output=True,
                       timeout=600)
        (_TRACE_LOGS[w.name],) = sorted((d / "trace").iterdir())
    return _TRACE_LOGS[w.name]


def door_torch_trace(w: Workload, ns: dict | None = None, *, cli: bool = False):
    """A script run with ``TORCH_TRACE=dir`` (torch writes the log), then ``ipycompile.load_trace``
    (or, with ``cli``, ``python -m ipycompile report LOG --json``) on that log."""
    log = _torch_trace_log(w)
    if not cli:
        return ipycompile.load_trace(log)
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, "-m", "ipycompile", "report", str(log), "--json", str(Path(d) / "r.json")],
                             env=_env(), capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        from ipycompile.report import CompileReport

        return CompileReport.from_json((Path(d) / "r.json").read_text())


def door_torchrun(w: Workload, ns: dict | None = None, ranks: int = 2):
    """``python -m ipycompile torchrun --nproc-per-node 2 job.py``: the launcher's rank logs; rank 0's report."""
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        out = subprocess.run([sys.executable, "-m", "ipycompile", "torchrun", "--trace-dir", str(d / "logs"),
                              "-o", str(d / "job.html"), "--standalone", "--nproc-per-node", str(ranks),
                              str(_job_script(w, d))],
                             env=_env(), capture_output=True, text=True, timeout=600, cwd=d)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        reports = ipycompile.load_trace(d / "logs")
        return reports.report(0) if hasattr(reports, "report") else reports[0]


@contextlib.contextmanager
def gloo():
    """A gloo process group of world size 1 in this process for the block, destroyed after it when the
    block made it (a group left behind would change what later code in the process sees: its trace
    events carry a rank, its logs are rank files)."""
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    fd, path = tempfile.mkstemp(prefix="ipyc-doors-pg-")
    os.close(fd)
    os.unlink(path)
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
        with contextlib.suppress(OSError):
            os.unlink(path)


def door_ddp_compiled_inside(w: Workload, ns: dict):
    """``DDP(torch.compile(model))``: DDP around the compiled module (torch's documented way)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    with gloo():
        return _captured(w, ns, lambda ns: _with_model(w, ns, DDP(torch.compile(ns["model"], backend=w.backend))))


def door_ddp_compiled_outside(w: Workload, ns: dict):
    """``torch.compile(DDP(model))``."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    with gloo():
        return _captured(w, ns, lambda ns: _with_model(w, ns, torch.compile(DDP(ns["model"]), backend=w.backend)))


def door_fsdp2(w: Workload, ns: dict):
    """FSDP2: ``fully_shard`` each layer and the model (world size 1), then ``torch.compile(model)``."""
    from torch.distributed.fsdp import fully_shard

    def wrap(ns):
        model = copy.deepcopy(ns["model"])
        for m in model.modules():
            if isinstance(m, torch.nn.ModuleList):
                for layer in m:
                    fully_shard(layer)
        fully_shard(model)
        return _with_model(w, ns, torch.compile(model, backend=w.backend))

    with gloo():
        return _captured(w, ns, wrap)


#: every door, by name: (function, which workloads it takes: "any" or "module")
DOORS: dict[str, tuple[Callable, str]] = {
    "cell": (door_cell, "any"),
    "run_cell": (door_run_cell, "any"),
    "closure": (door_closure, "any"),
    "compiled": (door_compiled_module, "any"),
    "module.compile": (door_module_compile, "module"),
    "compiled forward": (door_compiled_forward, "module"),
    "DDP(compile)": (door_ddp_compiled_inside, "module"),
    "compile(DDP)": (door_ddp_compiled_outside, "module"),
    "FSDP2": (door_fsdp2, "module"),
    "TORCH_TRACE": (door_torch_trace, "any"),
    "CLI": (lambda w, ns: door_torch_trace(w, ns, cli=True), "any"),
    "torchrun": (door_torchrun, "any"),
}


def all_workloads() -> list[Workload]:
    out = [hf_workload(f, h, call) for f in FAMILIES for h in SIZES for call in ("ids",)]
    out += [hf_workload(f, 64, call) for f in FAMILIES for call in ("logits", "batch")]
    return out + tutorial_workloads() + corpus_workloads()


def workload_by_name(name: str) -> Workload:
    if name.startswith("corpus:"):
        return next(w for w in corpus_workloads() if w.name == name)
    if name.startswith("tutorial:") or name == "mlp-resized":
        return next(w for w in tutorial_workloads() if w.name == name)
    family, hidden, call = name.split("-")
    return hf_workload(family, int(hidden), call)


def through(door: str, w: Workload, **kw) -> dict:
    """The fingerprint of workload ``w`` through ``door`` (a fresh namespace each time). Inductor's FX
    graph cache is off in every door, in process and out: a cache hit skips the passes whose graphs
    torch logs (``before_post_grad``), so whichever door missed first would list a stage the others
    do not."""
    fn, takes = DOORS[door]
    if takes == "module" and not w.module:
        raise ValueError(f"{door} takes a module; {w.name} is a function")
    ns = w.build()
    with torch._inductor.config.patch(fx_graph_cache=False):
        return fingerprint(fn(w, ns, **kw))


def line_of(place: str, lineno: int) -> str:
    """The source line of a fingerprint's place (a library file from its package down)."""
    import importlib.util

    top = place.split("/", 1)[0]
    spec = importlib.util.find_spec(top)
    base = Path(spec.origin).parent.parent if spec and spec.origin else ROOT / "tests"
    path = base / place if "/" in place else ROOT / "tests" / place
    return path.read_text().splitlines()[lineno - 1]


def diff(a: dict, b: dict) -> dict:
    """The fields where two fingerprints differ: {field: (a's, b's)}."""
    return {k: (a[k], b[k]) for k in a if a[k] != b.get(k)}


def dump(path: Path, results: dict) -> None:
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
