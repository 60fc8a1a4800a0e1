"""A call torch cannot trace that does not use the tensors (a timer, a process id) and
whose result is not used: move it out of the compiled code."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import commented_out, uses_after
from ..base import Context, Facts, Rule
from ._calls import in_with_items, is_unsupported_call, user_call, uses_values


def applies(f: Facts) -> bool:
    return is_unsupported_call(f) and not f.in_library


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    found = user_call(f, ctx)
    if found is None:
        return None
    p, stmt, call, full = found
    if in_with_items(stmt, call) or uses_values(call):
        return None
    unused = isinstance(stmt, ast.Expr) or (
        isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) and not uses_after(p, stmt, t.id) for t in stmt.targets))
    if not unused:
        return None
    text = p.segment(stmt).replace("\n", " ")
    return Suggestion(
        f"Move `{p.segment(call)}` out of the compiled code",
        f"`{text}` at {ctx.where(f.stop)} calls `{full}`, which torch cannot trace, and it does not use your "
        "tensors: call it before or after the compiled code instead of inside it.",
        commented_out(p, stmt, "moved: call it outside the compiled code"), Confidence.HIGH, Kind.MOVE_OUT,
        f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)


RULE = Rule(Kind.MOVE_OUT, "a call that does not use the tensors (a timer, a process id): move it out of the compiled code",
            applies, fix)
