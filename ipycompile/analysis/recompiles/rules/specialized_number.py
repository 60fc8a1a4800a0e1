"""The recompile rule ``specialized_number``: a Python number the code needs as a number changes: dynamic=None/True, or one version per value."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import is_number, Reason
from ..words import shown
from ..base import answer, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    if not is_number(r):
        return None
    how = ("torch made it dynamic after this recompile: later values reuse that version"
           if dynamic_after else "the new version is specialised again (dynamic=False, or automatic dynamic "
           "shapes off, or a value torch must know), so each new value compiles once more")
    return answer(
        Kind.SPECIALIZED_NUMBER, f"each value of {shown(r)} is a compiled version",
        f"torch treats a Python number as a constant of the graph; {how}. If the value changes from call to "
        "call, compile with the default `dynamic=None` (automatic dynamic: one recompile, then a symbol) or "
        "`dynamic=True`; if the code needs the value itself (a size, a loop count, a branch), each value is "
        "a version of its own: keep the set of values small, or pass it as a 0-d tensor where it only feeds "
        "tensor arithmetic.")


RULE = RecompileRule(Kind.SPECIALIZED_NUMBER, "a Python number the code needs as a number changes: dynamic=None/True, or "
                     "one version per value", fix)
