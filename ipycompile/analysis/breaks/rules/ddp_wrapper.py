"""A break inside DistributedDataParallel's own ``forward`` wrapper: Dynamo stops in DDP's
bookkeeping (``_pre_forward``'s logger call, GB0156) and at the context manager it marks
as skipped (``_inside_ddp_forward``, GB0007) by design. It then compiles the wrapped
module's ``forward`` on its own, with DDP's optimizer splitting that graph at gradient
buckets. Nothing in the user's code causes it, and nothing there removes it."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
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
