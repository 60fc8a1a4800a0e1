"""A value torch cannot rebuild after a graph break (GB0092, reconstruction failure): a bound
method or object made inside the compiled code and live across the break."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB0092" or f.kind.startswith("Reconstruction failure")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return explained(
        Kind.RECONSTRUCTION, "torch cannot carry a value across the graph break",
        f"At {ctx.where(f.stop)} torch had to hand a value it made while tracing (a bound method, an object built "
        "in the compiled code) back to Python, at a return or at another graph break, and cannot rebuild it, so "
        "it runs the frame without compiling. Create that value outside the compiled code and pass it in, or do "
        "not return it from the compiled code; where another graph break comes first, remove that too.", f)


RULE = Rule(Kind.RECONSTRUCTION, "a value torch cannot rebuild across a graph break: remove the break, or make the "
            "value outside", applies, fix, user_code=True)
