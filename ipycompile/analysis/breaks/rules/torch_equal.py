"""`torch.equal(a, b)` (GB0033, aten.equal): a Python bool that depends on the values, which
torch cannot know while it traces. Keep the comparison a tensor."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return (f.code == "GB0033" or f.kind.startswith("Data dependent operator")) and "aten.equal" in f.context


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return explained(
        Kind.TORCH_EQUAL, "torch.equal returns a Python bool that depends on the data",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} asks whether two tensors are equal, as a Python "
        "bool: torch cannot know the answer while it traces, so the graph breaks there. Keep the answer a tensor: "
        "`(a == b).all()` is a 0-dim bool tensor (for tensors of the same shape), which the graph keeps; use it in "
        "tensor code (`torch.where(same, x, y)`) rather than in an `if`. Where the code needs a Python bool, the "
        "break is where the value leaves the graph: compute it outside the compiled code.", f)


RULE = Rule(Kind.TORCH_EQUAL, "`torch.equal` (a data-dependent Python bool): keep it a tensor, `(a == b).all()`",
            applies, fix, user_code=True)
