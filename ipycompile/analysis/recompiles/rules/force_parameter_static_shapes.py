"""The recompile rule ``force_parameter_static_shapes``: an nn.Parameter's size changes: force_parameter_static_shapes = False (torch's own advice), then mark_dynamic."""

from __future__ import annotations

from typing import Optional

from ....report.model import Fix, Kind, Mark, Setting, Suggestion
from ..reading import Reason, simple
from ..words import shown
from ..base import answer, BEFORE, marks_of, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch = r.change
    if not (ch.kind in ("size", "size_0_1") and r.parameter and ch.dim is not None):
        return None
    marks = [(x, d) for x, d in marks_of(r) if simple(x)]
    code = Fix(settings=[Setting("dynamo", "force_parameter_static_shapes", "False", comment=BEFORE)],
               marks=[Mark("mark_dynamic", x, d, "and, for one version of all sizes") for x, d in marks])
    return answer(
        Kind.FORCE_PARAMETER_STATIC_SHAPES, f"{shown(r)} is an nn.Parameter, whose sizes torch keeps static",
        f"The size of dim {ch.dim} of {shown(r)} changes between calls, and it is an nn.Parameter: "
        "torch keeps the shapes of parameters static (torch._dynamo.config.force_parameter_static_shapes, True "
        "by default), so every new size compiles again, and mark_dynamic or dynamic=True on it is ignored. As "
        "torch's own message says, set force_parameter_static_shapes to False: torch then makes the size dynamic "
        "after one recompile, and with mark_dynamic before the first call, compiles once for all sizes.",
        code)


RULE = RecompileRule(Kind.FORCE_PARAMETER_STATIC_SHAPES, "an nn.Parameter's size changes: "
                     "force_parameter_static_shapes = False (torch's own advice), then mark_dynamic",
                     fix)
