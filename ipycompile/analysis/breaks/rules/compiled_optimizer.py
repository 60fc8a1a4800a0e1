"""A break in torch's optimizer or LR scheduler (``torch/optim/``): the deliberate
``torch._dynamo.graph_break()`` around ``Optimizer.step`` (``_use_grad``), or
``opt.step()`` skipped because an LR scheduler wrapped it (``lr_scheduler.py`` is
force-skipped). The work must stay: the answer is torch's compiled-optimizer guidance,
never moving or deleting the call."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ....report.owners import in_torch_package
from ..base import Context, Facts, Rule, path
from ._calls import callee, is_unsupported_call


def _in_optim(filename: str) -> bool:
    return in_torch_package(filename, "optim")


def _skipped_step(f: Facts) -> bool:
    """``opt.step()`` (or another method of a torch optimizer or scheduler) that torch skipped."""
    _, full = callee(f)
    return is_unsupported_call(f) and full.startswith("torch.optim.")


def applies(f: Facts) -> bool:
    return (f.in_library and _in_optim(f.stop.filename)) or _skipped_step(f)


RECIPE = (
    "torch's compiled-optimizer recipe (its tutorials on compiling the optimizer, not verified on this code): "
    "compile a function that only steps the optimizer, apart from the forward and backward,\n\n"
    "    @torch.compile(fullgraph=False)\n    def opt_step():\n        opt.step()\n\n"
    "and, where an LR scheduler changes the learning rate, give the optimizer the rate as a tensor "
    "(`torch.optim.Adam(params, lr=torch.tensor(0.01))`): a Python float is a constant of the compiled step, "
    "so every new value recompiles it.")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if _skipped_step(f):
        _, full = callee(f)
        scheduled = "lr_scheduler" in f.context
        why = (" An LR scheduler wrapped the optimizer's `step` when it was made, and torch skips the scheduler's "
               "code (lr_scheduler.py is force-skipped), so" if scheduled else " torch skips it, so")
        return Suggestion(
            "The optimizer's step runs uncompiled here: keep the call",
            f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls `{full}`.{why} the call runs as plain "
            "Python from the compiled code: the parameters are still updated, the graph breaks around it. Do not "
            "move or delete the call: it is the training step's work. " + RECIPE,
            "", Confidence.LOW, Kind.COMPILED_OPTIMIZER)
    return Suggestion(
        "torch's optimizer breaks the graph around its step on purpose",
        f"{path(ctx, f)} is torch's optimizer code: `Optimizer.step` calls `torch._dynamo.graph_break()` before and "
        "after the update on purpose (so that the update is compiled as a graph of its own, without autograd, and "
        "updates the parameters in place). The step is compiled; nothing in your code causes this, and the call "
        "must stay. " + RECIPE,
        "", Confidence.MEDIUM, Kind.COMPILED_OPTIMIZER)


RULE = Rule(Kind.COMPILED_OPTIMIZER, "a break in torch's optimizer or LR scheduler (its deliberate graph_break around "
            "`step`, a step a scheduler wrapped): keep the call; torch's compiled-optimizer guidance", applies, fix)
