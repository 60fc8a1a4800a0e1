"""A dimension marked dynamic (``mark_dynamic``, ``Dim.DYNAMIC``) that the code makes a constant
(``if x.shape[0] == 3:``): torch refuses the compile with a ConstraintViolationError. Mark it with
``maybe_mark_dynamic`` (dynamic where the code allows it), or keep the code off the size's value."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained



def applies(f: Facts) -> bool:
    return f.kind.startswith("Constraints violated") and bool(f.said.marked_source)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    x, dim, value = f.said.marked_source, f.said.marked_dim, f.said.marked_value
    line = f.stop.source_line.strip()
    at = f"`{line}` at {ctx.where(f.stop)}" if line else f"the code at {ctx.where(f.stop)}"
    return explained(
        Kind.MAYBE_MARK_DYNAMIC, f"dim {dim} of `{x}` is marked dynamic, but the code makes it a constant ({value})",
        f"Dim {dim} of `{x}` was marked dynamic (`torch._dynamo.mark_dynamic({x}, {dim})`, or `Dim.DYNAMIC`), which "
        f"promises that no code depends on its value; {at} does (it specialised the size to {value}), so torch "
        f"refuses to compile. Where the mark is made, use `torch._dynamo.maybe_mark_dynamic({x}, {dim})` instead: "
        "the dimension stays dynamic where the code allows it and is specialised where it does not (no error), "
        "or remove the mark. If the size really varies, keep the code off its value (no `if` on it).", f)


RULE = Rule(Kind.MAYBE_MARK_DYNAMIC, "a dimension marked dynamic that the code specialises (ConstraintViolationError): "
            "maybe_mark_dynamic instead of mark_dynamic, or no mark", applies, fix)
