"""An explicit `torch._dynamo.graph_break()` (GB0025) or `step_unsupported()` (GB4636, GB0275) in the
user's code: the break is asked for; without the call the graph goes on (it computes nothing). A call whose value
is used (`f(x, torch._dynamo.graph_break())`, an argument) becomes `None`, the value it returns, in a statement on
one line; elsewhere no rewrite."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, commented_out
from ..base import Context, Facts, Rule, statement_at, user_lines


_CALLS = {"graph_break": "an explicit graph break", "step_unsupported": "an explicit step_unsupported"}


def applies(f: Facts) -> bool:
    return (f.code in ("GB0025", "GB4636", "GB0275")
            or f.kind.startswith(("Call to `torch._dynamo.graph_break()`", "Call to `torch._dynamo.step_unsupported()`",
                                  "torch._dynamo.step_unsupported() with empty checkpoint"))) \
        and not f.in_library


def _as_value(f: Facts, ctx: Context) -> Optional[Suggestion]:
    """The call used as a value inside a one-line statement: the call replaced by ``None`` (what it returns)."""
    p, stmt = statement_at(f.stop, ctx)
    if stmt is None or stmt.lineno != stmt.end_lineno or isinstance(stmt, (ast.Expr, ast.FunctionDef, ast.ClassDef)):
        return None
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and call_name(n) == "graph_break"]
    if len(calls) != 1:
        return None
    text, call = p.segment(stmt), p.segment(calls[0])
    if text.count(call) != 1:
        return None
    return Suggestion.of(
        f"Remove the explicit graph break at {ctx.where(f.stop)}",
        f"`{call}` in `{text}` asks torch to end the graph there and returns `None`, the value this line passes on: "
        "torch compiles the code before and after it as separate graphs. Put `None` in its place and the graph goes "
        "on with the same values, unless the break is there on purpose (to keep something out of the graph, or to "
        "debug).",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno, text.replace(call, "None")), Confidence.HIGH, Kind.REMOVE_GRAPH_BREAK)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    p, stmt = statement_at(f.stop, ctx)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and call_name(stmt.value) in _CALLS):
        return _as_value(f, ctx)
    lines = user_lines(ctx, f)
    reached = ""
    if len(lines) > 1 or (lines and lines[0] != ctx.where(f.stop)):
        reached = f" It is reached from {', '.join(lines)}: removing it removes the break at each of them."
    return Suggestion.of(
        f"Remove the explicit graph break at {ctx.where(f.stop)}",
        f"`{p.segment(stmt)}` asks torch to end the graph there (it computes nothing): torch compiles the code "
        "before and after it as separate graphs." + reached + " Remove the call and the graph goes on, unless "
        "the break is there on purpose (to keep something out of the graph, or to debug).",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, commented_out(p, stmt, f"removed: {_CALLS[call_name(stmt.value)]}")), Confidence.HIGH, Kind.REMOVE_GRAPH_BREAK)


RULE = Rule(Kind.REMOVE_GRAPH_BREAK, "an explicit `torch._dynamo.graph_break()` in the user's code: remove the call "
            "(every user line that reaches it listed)", applies, fix)
