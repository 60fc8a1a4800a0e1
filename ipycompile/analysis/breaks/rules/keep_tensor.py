"""`.item()`, `int(t)`, `float(t)` or `.tolist()` whose value only feeds tensor code:
drop the conversion and keep the value a (0-dim) tensor."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, stmt_replacement, uses_after
from ...source import Parsed
from ..base import Context, Facts, Rule, statement_at
from ._scalar import arith_use, is_item, is_tolist, scalar_calls


def applies(f: Facts) -> bool:
    return (is_item(f) or is_tolist(f)) and not f.in_library


def _tensor_form(p: Parsed, call: ast.Call) -> str:
    """``x.sum().item()`` -> ``x.sum()``; ``int(e)`` -> ``e.long()``; ``float(e)`` -> ``e.double()``."""
    if isinstance(call.func, ast.Attribute):  # .item()
        return p.segment(call.func.value)
    arg = call.args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "item":
        arg = arg.func.value
    src = p.segment(arg)
    if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
        src = f"({src})"
    return src + (".long()" if call.func.id == "int" else ".double()")


def _item(f: Facts, ctx: Context) -> Optional[Suggestion]:
    p, stmt = statement_at(f.stop, ctx)
    calls = scalar_calls(stmt, f.stop.lineno) if stmt is not None else []
    if not calls:
        return None
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and len(calls) == 1 and stmt.value is calls[0]):
        uses = uses_after(p, stmt, stmt.targets[0].id)
        keep = bool(uses) and all(arith_use(p, u) for u in uses)
        what = f"`{stmt.targets[0].id}` is only used in arithmetic with tensors"
    else:
        keep = all(arith_use(p, c) for c in calls)
        what = "the value is an operand of tensor arithmetic"
    if not keep:
        return None
    code = stmt_replacement(p, stmt, [(c, _tensor_form(p, c)) for c in calls], keep_comment=False)
    return Suggestion.of(
        f"Keep the value at {ctx.where(f.stop)} a tensor",
        f"`{f.stop.source_line.strip()}` turns a tensor into a Python number, which torch cannot trace (the graph breaks and "
        f"the value goes to the CPU). {what[0].upper() + what[1:]}, where a 0-dim tensor gives the same "
        "result: drop the conversion and the graph goes on.",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, code), Confidence.HIGH, Kind.KEEP_TENSOR)


def _tolist(f: Facts, ctx: Context) -> Optional[Suggestion]:
    p, stmt = statement_at(f.stop, ctx)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr == "tolist" and not stmt.value.args):
        return None
    name = stmt.targets[0].id
    uses = uses_after(p, stmt, name)

    def ok(u: ast.Name) -> bool:
        parent = p.parents.get(u)
        if isinstance(parent, ast.Call) and call_name(parent) in ("len", "sum") and u in parent.args:
            return True
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is u:
            return True
        return isinstance(parent, ast.Subscript) and parent.value is u or arith_use(p, u)

    if not uses or not all(ok(u) for u in uses):
        return None
    code = stmt_replacement(p, stmt, [(stmt.value, p.segment(stmt.value.func.value))], keep_comment=False)
    return Suggestion.of(
        f"Keep `{name}` a tensor at {ctx.where(f.stop)}",
        f"`{f.stop.source_line.strip()}` copies a tensor into a Python list, which torch cannot trace. `{name}` is only "
        "measured, indexed, iterated or used in arithmetic, and a tensor does all of that: keep the tensor (its "
        "items are 0-dim tensors instead of Python numbers).",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, code), Confidence.HIGH, Kind.KEEP_TENSOR)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return _item(f, ctx) if is_item(f) else _tolist(f, ctx)


RULE = Rule(Kind.KEEP_TENSOR, "`.item()`, `int(t)`, `float(t)` or `.tolist()` whose value only feeds tensor code: "
            "keep it a tensor", applies, fix)
