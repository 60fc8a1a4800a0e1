"""Torch compiled nothing, or ran most of the user's code eagerly: the doctor pass that says so first.

A graph break costs a graph; a run in which torch compiled no graph at all costs the whole
point of ``torch.compile``, and every break's own answer can look harmless on its own
(``torch.compile(DistributedDataParallel(model))``: both breaks are in DDP's wrapper, "by
design", and the model DDP wraps runs eagerly because DDP's forward did). :func:`find_eager_run`
is a doctor pass (see :mod:`.doctor`): it reads the report's records (the compiles and their
graphs, ``Compile.graph_op_count``, the frames torch skipped or ran without compiling, the
graph breaks and what torch's words name, read by capture) and fills
``CompileReport.eager_run`` (:class:`~ipycompile.report.EagerRun`), which the views show
before anything else (``views/first_screen.py``). It reads no torch text itself.

The kinds, :data:`KINDS`:

- ``nothing``: torch entered frames and gave up (a graph break, a skipped frame, a frame run
  without compiling) and compiled no graph with an operation in it. A capture in which torch
  entered no frame at all is ``nothing`` (wrapper ``"none"``) only where capture heard that no
  compiled code could have run either: Dynamo held no graph when it opened
  (``graphs_before is False``) and ran none from its cache; otherwise it says nothing here
  (compiled code reused from an earlier run looks the same in torch's trace). Where Dynamo ran code
  from its cache during the capture while it held graphs compiled before it opened
  (``CompileReport.ran_cached_code`` and ``graphs_before``, heard by capture), those graphs may
  have run: the answer then says "no graph was compiled in this run", not that the model ran
  eagerly (``EagerRun.cached``), and its fix is given at low confidence.
- ``mostly``: graphs were compiled, but more of the user's functions (or calls) ran eagerly
  than compiled: frames of the user's code torch ran without compiling (a break in a loop), and
  calls of functions under ``torch.compiler.disable`` / ``torch._dynamo.disable``. Frames of
  torch's or another library's code do not count (DDP's own wrapper frames, ``contextlib``),
  nor frames that hold no tensor operation (nothing there to compile).

The answer names the frame where torch gave up (where Dynamo stopped, the user's line that led
there, torch's words and break code) and the fix that compiles the user's model:

- DDP (``wrapper == "ddp"``): compile the module, then wrap it, ``DDP(torch.compile(model))``;
  DDP's optimizer then splits the one graph at its gradient buckets. Checked on a real gloo
  group in ``tests/test_nothing_compiled.py`` (graphs compiled, outputs equal), and on the
  user's own cell by ``--verify-fixes`` (``run/verify.py``). ``model.compile()`` in place is
  not offered: it compiles ``Module._call_impl``, torch's code, where Dynamo starts no frame,
  so on torch 2.13 an ``nn.Sequential`` of torch's layers compiled so compiles nothing (tested).
- FSDP2 (``"fsdp"``): ``torch.compile`` of a module ``fully_shard`` sharded stops in FSDP's
  own code (GB0007, a function torch skips); compile the module (or each block) first, then
  shard it, ``fully_shard(torch.compile(model))`` (:data:`FSDP_FIX`; torchtitan compiles each
  block, then shards it); tested on a gloo group of one rank: one graph, the same outputs.
- ``torch.compiler.disable`` (``"disable"``): torch documents it as running the function
  uncompiled; remove it from the function (or from the module's forward) to compile it.
- otherwise (``"skipped"``, ``""``): the break's own answer, when the doctor has one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from ..report.model import Confidence, EagerRun, Kind, Suggestion, UserFrame
from ..report.owners import Owner
from ..report.text import plural

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport
    from ..report.model import GraphBreak

__all__ = ["find_eager_run", "KINDS", "compiled_compile_ids", "cached_graphs_may_have_run", "DDP_FIX", "FSDP_FIX"]

#: Every kind this pass recognises, with what it means.
KINDS: dict[str, str] = {
    "nothing": "torch gave up on every frame it entered and compiled no graph: the code ran eagerly",
    "mostly": "graphs were compiled, but most of the user's functions (or calls) ran eagerly",
}

#: The suggestion kinds this pass writes (``Suggestion.kind``).
SUGGESTION_KINDS: dict[str, str] = {
    str(Kind.COMPILE_INNER_MODULE): "torch.compile(DDP(model)) (or of a module FSDP2 sharded) compiled nothing: "
                                    "compile the module, then wrap it, DDP(torch.compile(model)) / "
                                    "fully_shard(torch.compile(model))",
    str(Kind.NOTHING_COMPILED): "torch compiled nothing (or little) of the run: where it gave up and what torch "
                                "documents for it, in words",
}

#: Where torch entered no frame at all and no compiled code ran (``kind == "nothing"``, ``wrapper == "none"``).
NO_FRAME_TITLE = "Nothing was compiled: torch entered no frame and no compiled code ran"
NO_FRAME_WORDS = ("torch compiled nothing in this run and ran no code it had compiled before (Dynamo held no "
                  "graph when the run began): everything ran eagerly. Dynamo starts a frame only where a "
                  "function compiled with torch.compile is called; it never starts one in torch's own code, so "
                  "`model.compile()` of a module whose forward is torch's (an `nn.Sequential`, an `nn.Linear`) "
                  "compiles nothing on torch 2.13, while `torch.compile(model)` compiles it.")

#: The fix for ``torch.compile(DistributedDataParallel(model))``, as code.
DDP_FIX = ("# compile the module, then wrap it (not torch.compile(DDP(model))):\n"
           "ddp_model = DDP(torch.compile(model))")

#: The fix for ``torch.compile`` of a module sharded with FSDP2's ``fully_shard``, as code.
FSDP_FIX = ("# compile the module (or each block), then shard it:\n"
            "model = torch.compile(model)\n"
            "fully_shard(model)")

_DDP_FILE = "torch/nn/parallel/distributed.py"
_FSDP_DIRS = ("torch/distributed/fsdp/", "torch/distributed/_composable/")


def compiled_compile_ids(r: "CompileReport") -> set:
    """The compiles that produced a graph with an operation in it (a Dynamo graph in the report,
    or ``graph_op_count`` above zero in torch's metrics)."""
    out = {g.compile_id for g in r.graphs if g.stage == "dynamo" and g.compile_id is not None}
    return out | {c.compile_id for c in r.compiles if (c.graph_op_count or 0) > 0}


def cached_graphs_may_have_run(r: "CompileReport") -> bool:
    """Dynamo ran code from its cache during the capture while it held graphs compiled before it
    opened (heard by capture): graphs this report does not show may have run."""
    return r.ran_cached_code and r.graphs_before is not False


def _short(qualname: str) -> str:
    """A function's name as the user reads it: ``Frozen.forward`` of ``test.<locals>.Frozen.forward``."""
    return ".".join(qualname.rsplit("<locals>.", 1)[-1].split(".")[-2:])


def _path(filename: str) -> str:
    return filename.replace("\\", "/")


def _wrapper(b: "GraphBreak") -> str:
    s = b.stop
    kind = str(b.suggestion.kind) if b.suggestion is not None else ""
    if kind == str(Kind.DDP_WRAPPER) or _path(s.filename).endswith(_DDP_FILE) or \
            b.said.callee_qualname.startswith("DistributedDataParallel"):
        return "ddp"
    if any(d in _path(s.filename) for d in _FSDP_DIRS) or "FSDP" in b.said.callee_qualname:
        return "fsdp"
    if kind == str(Kind.COMPILER_DISABLE) or b.said.operator == "torch.compiler.disable":
        return "disable"
    if kind == str(Kind.SKIPPED_FUNCTION) or b.gb_code == "GB0007":
        return "skipped"
    return ""


def _order(b: "GraphBreak") -> tuple:
    c = b.compile_id
    return (c.frame_id, c.frame_compile_id) if c is not None else (1 << 30, 0)


def _user(r: "CompileReport", filename: str) -> bool:
    return bool(filename) and r.owner(filename) in (Owner.USER, Owner.UNKNOWN)


def _eager_and_compiled(r: "CompileReport", compiled_ids: set) -> tuple[list[str], list[str]]:
    """The user's functions that compiled a graph, and the user's functions (or calls) that ran
    eagerly: frames torch ran without compiling, calls of disabled functions."""
    compiled: list[str] = []
    for c in r.compiles:
        if c.compile_id in compiled_ids and _user(r, c.filename):
            name = c.user_function or "?"
            if name not in compiled:
                compiled.append(name)
    eager: list[str] = []
    for c in r.ran_without_compiling:
        if _user(r, c.filename):
            name = f"{c.user_function or '?'} (run without compiling)"
            if name not in eager and (c.user_function or "?") not in compiled:
                eager.append(name)
    for b in r.graph_breaks:
        if _wrapper(b) == "disable":
            line = b.frame if b.frame.filename else b.stop
            fn = _short(b.said.function) or "a disabled function"
            name = f"{fn} (disabled, called at {r.where(line.filename, line.lineno)})"
            if name not in eager:
                eager.append(name)
    return eager, compiled


def _where(r: "CompileReport", f: UserFrame) -> str:
    return r.where(f.filename, f.lineno) if f.filename else "?"


def _gave_up(r: "CompileReport", b: "Optional[GraphBreak]") -> tuple[str, str]:
    """Where torch gave up, and torch's reason, in words."""
    if b is None:
        skipped = [c for c in r.compiles if c.fail_type or c.status in ("skipped", "failed")]
        c = skipped[0] if skipped else r.compiles[0]
        why = c.fail_reason.strip().splitlines()[0] if c.fail_reason.strip() else c.status
        return f"`{c.user_function or '?'}` ({r.where(c.filename, c.first_line)})", why
    s = b.stop
    said = f"`{s.function}` at {_where(r, s)}" if s.function else _where(r, s)
    code = f" [{b.gb_code}]" if b.gb_code else ""
    line = f": `{s.source_line.strip()}`" if s.source_line.strip() else ""
    return said + line, f"{b.reason}{code}"


def _suggestion(r: "CompileReport", wrapper: str, b: "Optional[GraphBreak]", nothing: bool) -> Optional[Suggestion]:
    if wrapper == "ddp":
        return Suggestion(
            "compile the module, then wrap it: DDP(torch.compile(model))",
            "`torch.compile(DistributedDataParallel(model))` starts compiling at DDP's own `forward`, whose "
            "bookkeeping torch does not trace (it breaks in `_pre_forward` and at `_inside_ddp_forward`, a function "
            "it marks as skipped); the module DDP wraps is then called from DDP's forward running eagerly, and, "
            "unless its `forward` is your own code torch starts a frame at, it is never compiled (a `torch.nn` "
            "container such as `nn.Sequential` is torch's code). Compile the module and wrap the compiled module: "
            "`DDP(torch.compile(model))`. (`model.compile()`, in place, compiles the module's `_call_impl`, torch's "
            "own code, where Dynamo starts no frame: it compiles your own `forward` methods but, on torch 2.13, "
            "nothing of an `nn.Sequential` of torch's layers; `torch.compile(model)` compiles the whole call.) "
            "DDP's optimizer then splits the one graph at its gradient buckets, so each bucket's all-reduce still "
            "overlaps the backward (`torch._dynamo.config.optimize_ddp`).",
            DDP_FIX, Confidence.HIGH, Kind.COMPILE_INNER_MODULE)
    if wrapper == "fsdp":
        return Suggestion(
            "FSDP2: compile the module (or each block), then shard it: fully_shard(torch.compile(model))",
            "torch stopped in FSDP2's own code (a function torch marks as skipped, run by the hooks `fully_shard` "
            "puts on the module), so `torch.compile` of the sharded module compiled nothing of it. Compile the "
            "module first and shard the compiled module: FSDP's hooks then run around the compiled forward, as "
            "torchtitan does for each transformer block (`torch.compile(block)`, then `fully_shard(block)`). "
            "Checked on a gloo group of one rank with an `nn.Sequential`: one graph, the same outputs.",
            FSDP_FIX, Confidence.MEDIUM, Kind.COMPILE_INNER_MODULE)
    if wrapper == "disable":
        fn = _short(b.said.function) if b is not None else ""
        name = f"`{fn}`" if fn else "the function"
        return Suggestion(
            f"{name} is under torch.compiler.disable: remove it to compile {name}",
            f"torch documents `torch.compiler.disable` (and `torch._dynamo.disable`) as running the function "
            f"uncompiled, with the graph broken at each call: {name} ran eagerly"
            + (", and nothing else was left to compile. " if nothing else ". ")
            + f"Remove the decorator (or the `disable(...)` wrap, on a module's `forward` too) from {name} to compile "
            "it; keep it only where torch cannot trace that code (a `torch.library.custom_op` keeps such code in the "
            "graph as one opaque op).", "", Confidence.MEDIUM, Kind.NOTHING_COMPILED)
    if b is not None and b.suggestion is not None and str(b.suggestion.kind) not in ("unknown", ""):
        s = b.suggestion
        return dataclasses.replace(s, title=f"the break where torch gave up: {s.title}")
    return None


def find_eager_run(report: "CompileReport") -> "CompileReport":
    """The doctor pass: ``report`` with :attr:`~ipycompile.report.CompileReport.eager_run` set
    when torch compiled nothing, or ran most of the user's code eagerly (a new report)."""
    r = report
    if not r.compiles and not r.reused_from and r.graphs_before is False and not r.ran_cached_code:
        # torch entered no frame, Dynamo held no graph when the capture opened and ran none from its
        # cache: no compiled code ran at all (model.compile() of a torch.nn container: tested)
        return dataclasses.replace(r, eager_run=EagerRun("nothing", NO_FRAME_TITLE, NO_FRAME_WORDS, "none"))
    if not r.compiles or r.reused_from:
        return dataclasses.replace(r, eager_run=None)
    compiled_ids = compiled_compile_ids(r)
    breaks = sorted(r.graph_breaks, key=_order)
    skipped = [c for c in r.compiles if c.fail_type and c.status != "failed"]
    gave_up = bool(breaks) or bool(skipped)
    if not gave_up:
        return dataclasses.replace(r, eager_run=None)
    eager, compiled = _eager_and_compiled(r, compiled_ids)
    nothing = not compiled_ids
    if not nothing and not (eager and len(eager) > len(compiled)):
        return dataclasses.replace(r, eager_run=None)
    wrappers = [(_wrapper(b), b) for b in breaks]
    # the wrapper that explains it: DDP or FSDP first (they hold the model), then a disabled call, then the first break
    pick = next(((w, b) for key in ("ddp", "fsdp", "disable") for w, b in wrappers if w == key), None)
    if pick is None:
        pick = wrappers[0] if wrappers else ("skipped" if skipped else "", None)
    wrapper, b = pick  # for DDP, its first break (by compile id): DDP's forward, in the first frame torch entered
    where, why = _gave_up(r, b)
    frames = len(r.compiles)
    graphs = len(compiled_ids)
    kernels = len(r.kernels)
    cached = nothing and cached_graphs_may_have_run(r)
    if nothing:
        what = {"ddp": "in DistributedDataParallel's forward", "fsdp": "in FSDP's code",
                "disable": "at a function under torch.compiler.disable"}.get(wrapper, "")
        if cached:
            title = ("No graph was compiled in this run: torch gave up" + (f" {what}" if what else "")
                     + " (compiled code from its cache ran too)")
            words = (f"torch entered {plural(frames, 'frame')} and compiled {plural(graphs, 'graph')} in this run, "
                     f"and gave up at {where}: {why}. It also ran code it had compiled before this run, which may "
                     "hold graphs (torch logs no such call): run with `--fresh` (or after `torch._dynamo.reset()`) "
                     "to see whether your model compiles.")
        else:
            title = ("Nothing was compiled: torch gave up" + (f" {what}" if what else "")
                     + " and the model ran eagerly")
            words = (f"torch entered {plural(frames, 'frame')} and compiled {plural(graphs, 'graph')} "
                     f"({plural(kernels, 'kernel')}): every frame ran eagerly. It gave up at {where}: {why}.")
    else:
        title = (f"Most of the code ran eagerly: {len(eager)} of {len(eager) + len(compiled)} of your functions "
                 "or calls were not compiled")
        words = (f"torch compiled {plural(graphs, 'graph')} ({', '.join(compiled) or 'none of your functions'}), "
                 f"but ran eagerly: {'; '.join(eager)}. It gave up at {where}: {why}.")
    if wrapper == "ddp" and nothing and not cached:
        words += (" DDP's forward runs its bookkeeping outside the graph on purpose; the module it wraps ran "
                  "inside it, eagerly, and torch compiled no frame of it.")
    user_line = UserFrame()
    if b is not None:
        user_line = b.frame if b.frame.filename else b.stop
    suggestion = _suggestion(r, wrapper, b, nothing)
    if cached and suggestion is not None:
        suggestion = dataclasses.replace(suggestion, confidence=Confidence.LOW)
    run = EagerRun("nothing" if nothing else "mostly", title, words, wrapper,
                   b.stop if b is not None else UserFrame(), user_line,
                   b.reason if b is not None else why, b.gb_code if b is not None else "",
                   b.compile_id if b is not None else None, graphs, frames, eager, compiled,
                   suggestion, cached)
    return dataclasses.replace(r, eager_run=run)
