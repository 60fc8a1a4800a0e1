"""The recompile rule ``contiguous``: a tensor's strides change: pass it contiguous."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Rebind, Suggestion
from ..reading import Reason
from ..base import RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if not (ch.kind == "stride" and r.nameable):
        return None
    return Suggestion.of(
        f"contiguous: pass `{x}` in one memory layout",
        f"`{x}` arrived with another memory layout (a transposed or sliced view). Make it contiguous where "
        "it is made (or where it is passed), so every call sees the same strides.",
        Fix(rebinds=[Rebind(x, "contiguous", "before the call")]),
        Confidence.HIGH, Kind.CONTIGUOUS,
    )


RULE = RecompileRule(Kind.CONTIGUOUS, "a tensor's strides change: pass it contiguous", fix)
