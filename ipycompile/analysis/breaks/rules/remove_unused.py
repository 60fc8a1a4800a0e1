"""A `.tolist()` (or `.item()`) whose value is never used (GB0109, GB0124): remove the
statement; it computes nothing the code reads."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import commented_out
from ..base import Context, Facts, Rule, statement_at
from ._scalar import is_item, is_tolist


def applies(f: Facts) -> bool:
    return (is_tolist(f) or is_item(f)) and not f.in_library


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    p, stmt = statement_at(f.stop, ctx)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr in ("tolist", "item") and not stmt.value.args):
        return None
    return Suggestion.of(
        f"Remove the unused `.{stmt.value.func.attr}()` at {ctx.where(f.stop)}",
        f"`{p.segment(stmt)}` copies a tensor into Python and throws the result away; torch cannot trace the "
        "copy, so the graph breaks there for nothing. Remove the line.",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, commented_out(p, stmt, "removed: its value was not used")), Confidence.HIGH, Kind.REMOVE_UNUSED)


RULE = Rule(Kind.REMOVE_UNUSED, "a `.tolist()` / `.item()` whose value is not used: remove the statement", applies, fix)
