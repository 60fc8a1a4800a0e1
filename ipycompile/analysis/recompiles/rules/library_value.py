"""The recompile rule ``library_value``: a value a library's call passes changes: a setting or the library's switch."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import Reason
from ..words import shown
from ..base import answer, DYNAMIC, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A value a library's call passes (a decoder layer called by the model's own ``forward``)."""
    g, ch = r.guard, r.change
    if g.origin != "library":
        return None
    if ch.kind == "size" and dynamic_after:
        return answer(Kind.LIBRARY_VALUE, "a size library code passes changed; torch made it dynamic after this one recompile",
                      f"What changed ({shown(r)}) is made and passed by library code: no line of yours makes it, so "
                      "no code of yours can mark it. Torch made the size dynamic in the new version by itself (automatic "
                      "dynamic shapes): other sizes reuse it, so this recompile happens once. Nothing to fix.")
    if ch.kind in ("size", "size_0_1") and r.sizes_0_1:
        return answer(Kind.LIBRARY_VALUE, "sizes library code passes change, one of them to or from 1: dynamic=True "
                      "would not remove these recompiles",
                      f"What changed ({shown(r)}) is made and passed by library code: no line of yours makes it, so no "
                      f"code of yours can mark it. Among this function's recompiles, {r.sizes_0_1}: torch always "
                      "specialises sizes 0 and 1, and `dynamic=True` (or `mark_dynamic`) specialise them too, so "
                      "compiling with `dynamic=True` would leave these recompiles. Only an unbacked size "
                      "(`torch._dynamo.decorators.mark_unbacked`) serves 1 and other sizes in one version, and it is "
                      "marked on the tensor, which the library makes. Nothing in your code removes them; they are "
                      "few (each size torch has not made dynamic compiles once, then is reused): look for the "
                      "library's own switch for fixed sizes if they matter.")
    size = ch.kind == "size" and not dynamic_after
    return answer(Kind.LIBRARY_VALUE, "what changed is passed by library code, not by a line of yours",
                  f"What changed ({shown(r)}) is passed to the compiled code by a library's own call: no line of "
                  "yours makes it, so no code of yours can mark or convert it. "
                  + ("Compiling with `dynamic=True` makes its sizes dynamic from the first call. " if size else "")
                  + "Look for the library's own switch for this, or compile the library's outer module once, so "
                  "that its calls are traced instead of entered anew.",
                  DYNAMIC if size else None)


RULE = RecompileRule(Kind.LIBRARY_VALUE, "a value a library's call passes changes: a setting or the library's switch",
                     fix)
