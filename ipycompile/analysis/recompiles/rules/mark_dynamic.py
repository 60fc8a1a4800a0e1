"""The recompile rule ``mark_dynamic``: a tensor's size changes: mark the dimension dynamic before the first call."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Mark, Suggestion
from ..reading import Reason, simple
from ..words import shown
from ..base import BEFORE, DYNAMIC, marks_of, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    marks = marks_of(r)
    if (ch.kind == "size" and ch.dim is not None and not r.nameable and r.guard.origin == "argument"
            and not dynamic_after and not r.retyped and not r.sizes_0_1):  # an expression in the call (`f(torch.ones(n, 2))`): no name
        return Suggestion.of(
            f"mark_dynamic: dim {ch.dim} of {shown(r)} varies: mark it where it is made, or compile with dynamic=True",
            f"The size of dim {ch.dim} of {shown(r)} changes between calls, and the new version is static too, so "
            "every new size is another compile. No name in your call holds the tensor: give it one and mark it "
            f"before the first call (`torch._dynamo.mark_dynamic(t, {ch.dim})`), or compile with `dynamic=True`, "
            "which makes every size dynamic from the first call.",
            DYNAMIC, Confidence.HIGH, Kind.MARK_DYNAMIC)
    if not (ch.kind == "size" and ch.dim is not None and all(simple(m) for m, _ in marks)) or r.retyped:
        return None
    when = ("torch made the size dynamic by itself after this change, at the cost of this recompile"
            if dynamic_after else "the new version is static too, so every new size is another compile")
    others = [f"dim {d} of `{m}`" for m, d in marks if (m, d) != (x, ch.dim)]
    also = (f" Its size changes together with {', '.join(others)}: mark them all, or torch finds the sizes equal "
            "and refuses the mark (ConstraintViolationError)." if others else "")
    return Suggestion.of(
        f"mark_dynamic: say that dim {ch.dim} of `{x}` varies, before the first call",
        f"The size of dim {ch.dim} of `{x}` changes between calls; {when}. Marking the dimension dynamic "
        "before the first call compiles one version for all sizes (>= 2). `dynamic=True` does the same "
        "for every dimension of every input, where no size is ever 0 or 1 and no setting of torch's "
        "(`automatic_dynamic_shapes_mark_as`) changes how automatic dynamic sizes are marked." + also,
        Fix(marks=[Mark("mark_dynamic", m, d, BEFORE) for m, d in marks]),
        Confidence.HIGH, Kind.MARK_DYNAMIC,
    )


RULE = RecompileRule(Kind.MARK_DYNAMIC, "a tensor's size changes: mark the dimension dynamic before the first call", fix)
