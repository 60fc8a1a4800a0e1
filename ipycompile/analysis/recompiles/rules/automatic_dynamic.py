"""The recompile rule ``automatic_dynamic``: a size torch made dynamic by itself after one recompile (a value no code of the user's can mark): nothing to fix."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import Reason
from ..words import shown
from ..base import answer, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch = r.change
    if not (ch.kind == "size" and dynamic_after and not r.retyped) or r.guard.origin == "library":
        return None  # a library's value: library_value says whose it is
    return answer(
        Kind.AUTOMATIC_DYNAMIC, f"torch made dim {ch.dim} of {shown(r)} dynamic after this one recompile",
        f"The size of dim {ch.dim} of {shown(r)} changed, and torch made that dimension dynamic in the new "
        "version by itself (automatic dynamic shapes): other sizes reuse it, so this recompile happens once. "
        "Nothing to fix. To save even this one, mark the dimension dynamic before the first call where the "
        "tensor is an input you pass (`torch._dynamo.mark_dynamic(t, dim)`); a tensor made inside the compiled "
        "code (a value torch carries across a graph break) cannot be marked, and needs nothing.")


RULE = RecompileRule(Kind.AUTOMATIC_DYNAMIC, "a size torch made dynamic by itself after one recompile (a value no "
                     "code of the user's can mark): nothing to fix", fix)
