"""`print` of values torch cannot hold back until after the graph (a shape, an object):
take it out of the compiled code."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, commented_out
from ..base import Context, Facts, Rule, statement_at
from ._print import REORDERABLE, arg_types, is_print


def applies(f: Facts) -> bool:
    return is_print(f) and not f.in_library


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    p, stmt = statement_at(f.stop, ctx)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and call_name(stmt.value) == "print"):
        return None
    text = p.segment(stmt).replace("\n", " ")
    code = commented_out(p, stmt, "print this after the compiled code returns")
    odd = [t for t in arg_types(f) if t not in REORDERABLE]
    return Suggestion.of(
        f"Remove the print at {ctx.where(f.stop)} from the compiled code",
        f"`{text}` prints a value torch cannot hold back until after the graph"
        + (f" ({', '.join(odd)})" if odd else "") + ", so the graph breaks there. Print it outside the compiled "
        "code (after the call returns, from its result), or print only tensors and constants, which "
        "`torch._dynamo.config.reorderable_logging_functions.add(print)` lets torch move after the graph.",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, code), Confidence.HIGH, Kind.REMOVE_PRINT)


RULE = Rule(Kind.REMOVE_PRINT, "`print` of values torch cannot reorder: remove it from the compiled code", applies, fix)
