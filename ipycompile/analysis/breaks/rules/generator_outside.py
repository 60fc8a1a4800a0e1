"""`torch.Generator` methods inside compiled code (GB7650): seed and draw outside."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB7650" or f.kind.startswith("torch.Generator method")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    method = f.context.strip().rsplit(".", 1)[-1] if f.context.strip().startswith("torch.Generator.") else ""
    return explained(
        Kind.GENERATOR_OUTSIDE, f"A torch.Generator method{f' (`{method}`)' if method else ''} inside compiled code",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls a method of a `torch.Generator`, which torch "
        "cannot trace (a fundamental limit, torch says), and a Generator passed to a random op breaks the graph "
        "too. Seed outside the compiled code and draw from the global generator inside it (`torch.manual_seed(s)` "
        "before the call; `torch.randn(...)` without `generator=`), or make the random tensors outside and pass "
        "them in.", f)


RULE = Rule(Kind.GENERATOR_OUTSIDE, "`torch.Generator` methods in compiled code: seed (or draw) outside", applies, fix, user_code=True)
