"""`copy.deepcopy` of a tensor in the user's code: the tensor's own `.clone()`."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, stmt_replacement
from ..base import Context, Facts, Rule, statement_at


def applies(f: Facts) -> bool:
    return f.code in ("GB4198", "GB0179") or "deepcopy" in f.kind


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    # torch stops inside the standard library's copy.py; the call to rewrite is the user's line,
    # and only when that line copies the tensor itself: a deepcopy of a module or a list reaches
    # the tensor through more of copy.py's frames, and has no `.clone()`
    at = f.user if f.in_library else f.stop
    if ctx.library(at.filename):
        return None
    if f.in_library and not (len(f.stack) >= 2 and (f.stack[-2].filename, f.stack[-2].lineno) == (at.filename, at.lineno)):
        return None
    p, stmt = statement_at(at, ctx)
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and call_name(n) == "deepcopy"
             and len(n.args) == 1 and not n.keywords] if stmt is not None else []
    if len(calls) != 1:
        return None
    arg = calls[0].args[0]
    src = p.segment(arg)
    if not isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        src = f"({src})"
    code = stmt_replacement(p, stmt, [(calls[0], f"{src}.clone()")])
    return Suggestion.of(
        f"Copy the tensor with `.clone()` at {ctx.where(at)}",
        f"`{p.segment(stmt)}` deep-copies a tensor, which torch does not trace. `.clone()` makes the "
        "same copy as one op of the graph. (It stays connected to autograd, where a deep copy is a new leaf: "
        "write `.detach().clone()` if gradients must not flow through the copy.)",
        rewrite(at.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, code), Confidence.HIGH, Kind.TENSOR_CLONE)


RULE = Rule(Kind.TENSOR_CLONE, "`copy.deepcopy` of a tensor in the user's code: the tensor's own `.clone()`", applies, fix)
