"""`t.requires_grad = ...` inside the compiled code (GB0206): AOTAutograd cannot turn a tensor into a
leaf that needs gradients, or stop tracking one, in the middle of a graph. Set it before the call, and
use `.detach()` (or `torch.no_grad()`) where part of the work must not track gradients."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB0206" or f.kind.startswith("setattr() on Tensor.requires_grad")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    line = f.stop.source_line.strip()
    return explained(
        Kind.REQUIRES_GRAD_INSIDE, "requires_grad is changed inside the compiled code",
        f"`{line}` at {ctx.where(f.stop)} changes whether a tensor needs gradients while torch traces: AOTAutograd "
        "cannot make a tensor a leaf that needs gradients, or stop tracking one, in the middle of a graph, so the "
        "graph breaks there and the line runs uncompiled. Set it before calling the compiled code (on an input: "
        "`t.requires_grad_(True)` before the call; on a tensor you make: `requires_grad=True` where it is made, "
        "outside), and where part of the work must not track gradients, compute that part from `t.detach()` or "
        "under `with torch.no_grad():` (both are traced) rather than switching `requires_grad` back and forth.", f)


RULE = Rule(Kind.REQUIRES_GRAD_INSIDE, "`t.requires_grad = ...` inside compiled code (GB0206): set it before the "
            "call; `.detach()` / `torch.no_grad()` for the part that must not track gradients", applies, fix,
            user_code=True)
