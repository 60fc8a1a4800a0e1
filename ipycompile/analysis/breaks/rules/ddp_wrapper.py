"""A break inside DistributedDataParallel's own ``forward`` wrapper: Dynamo stops in DDP's
bookkeeping (``_pre_forward``'s logger call, GB0156) and at the context manager it marks
as skipped (``_inside_ddp_forward``, GB0007) by design. It then compiles the wrapped
module's ``forward`` on its own, with DDP's optimizer splitting that graph at gradient
buckets. Nothing in the user's code causes it, and nothing there removes it.

"By design" only where something of the model compiled: where the report holds no compiled graph
(the module DDP wraps is torch's own code, an ``nn.Sequential``, which Dynamo never starts a frame
at), the break is where torch gave up on the whole model, and the answer is the fix that compiles
it, ``DDP(torch.compile(model))`` (``analysis/eager_run.py`` says it first)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ....report.model import Kind, Suggestion
from ...eager_run import DDP_FIX, cached_graphs_may_have_run, compiled_compile_ids
from ..base import Context, Facts, Rule, explained

#: DDP's forward path in torch/nn/parallel/distributed.py
_DDP_FUNCTIONS = frozenset({"forward", "_pre_forward", "_run_ddp_forward", "_inside_ddp_forward", "_post_forward"})


def _in_ddp(filename: str, function: str) -> bool:
    return filename.replace("\\", "/").endswith("torch/nn/parallel/distributed.py") and function in _DDP_FUNCTIONS


def applies(f: Facts) -> bool:
    if "DistributedDataParallel._inside_ddp_forward" in f.explanation or "_inside_ddp_forward" in f.context:
        return True
    return _in_ddp(f.stop.filename, f.stop.function) or any(
        _in_ddp(fr.filename, fr.function) for fr in f.stack[-2:])  # DDP's frames right above where Dynamo stopped


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if not compiled_compile_ids(ctx.report) and not cached_graphs_may_have_run(ctx.report):
        s = explained(
            Kind.DDP_WRAPPER, "DistributedDataParallel's forward: torch gave up here and compiled nothing of "
            "your model; compile the module, then wrap it: DDP(torch.compile(model))",
            f"Dynamo stopped in DDP's wrapper (`{f.stop.function or '?'}` at {ctx.where(f.stop)}), reached from "
            f"{ctx.where(f.user)}, and this run compiled no graph: DDP's forward ran eagerly, and the module it "
            "wraps ran inside it without compiling. Compile the module and wrap the compiled module, "
            "`DDP(torch.compile(model))`: the first item of the report says so.", f)
        return dataclasses.replace(s, code=DDP_FIX)
    return explained(
        Kind.DDP_WRAPPER, "inside DistributedDataParallel's own forward: by design, nothing to fix",
        f"Dynamo stopped in DDP's wrapper (`{f.stop.function or '?'}` at {ctx.where(f.stop)}), reached from "
        f"{ctx.where(f.user)}: DDP's forward runs its bookkeeping outside the graph on purpose, and Dynamo then "
        "compiles your module's `forward` as a graph of its own (split at gradient buckets by DDP's optimizer, so "
        "each bucket's all-reduce overlaps the backward; the report lists those splits). These breaks come with "
        "every `torch.compile(DistributedDataParallel(model))`; nothing in your code causes them, and no change "
        "to it removes them.", f)


RULE = Rule(Kind.DDP_WRAPPER, "a break inside DistributedDataParallel's own forward wrapper: by design; your "
            "module's forward compiles as its own graph", applies, fix)
