"""A side effect inside a cond/scan/map body (an append, an attribute or item set):
return the value as an extra output and apply the change after the call."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, dotted, returns
from ..base import Context, Facts, Rule, parsed_at

_MUTATION_CALLS = {"append", "extend", "add", "update", "insert", "add_", "copy_"}


def applies(f: Facts) -> bool:
    return f.code in ("GB0067", "GB4413") or f.kind.startswith(("HOP: Unsafe side effect", "HOP: Non-nullified side effect"))


def _target_of(stmt: ast.stmt) -> ast.AST:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        return stmt.value.func.value
    if isinstance(stmt, ast.Assign):
        return stmt.targets[0]
    if isinstance(stmt, ast.AugAssign):
        return stmt.target
    return stmt


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    frames = [fr for fr in reversed(f.stack or [f.user]) if not ctx.library(fr.filename)]
    for fr in frames:
        p = parsed_at(fr, ctx)
        stmt = p.innermost_statement(fr.lineno) if p is not None else None
        fn = p.scope_of(stmt) if stmt is not None else None
        if not isinstance(fn, ast.FunctionDef):
            continue
        value = None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and call_name(stmt.value) in _MUTATION_CALLS \
                and stmt.value.args:
            value = stmt.value.args[-1]
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)):
            value = stmt.value
        if value is None:
            continue
        rets = returns(fn)
        if len(rets) != 1:
            continue
        ret = rets[0]
        kept = [s for s in fn.body if s is not stmt and s is not ret]
        ret_src = p.segment(ret.value)
        if isinstance(ret.value, ast.Tuple) and not ret_src.startswith("("):
            ret_src = f"({ret_src})"
        head = p.segment(fn).split("\n")[0]
        lines = [head] + [textwrap.indent(p.block_text([s]), "    ") for s in kept]
        lines.append(f"    return {ret_src}, {p.segment(value)}  # the value, returned instead of stored")
        effect = p.segment(stmt).replace("\n", " ")
        lines += ["# the other branch (or body) returns a value of the same shape and dtype in that place;",
                  "# after the call, apply the change outside:",
                  f"#     out, value = <the call>;  {effect.replace(p.segment(value), 'value')}"]
        return Suggestion(
            f"Return the value instead of changing `{dotted(_target_of(stmt))}` inside `{fn.name}`",
            f"`{effect}` ({ctx.report.where(p.filename, stmt.lineno)}, in `{fn.name}`) changes something that "
            "lives outside the body of a higher-order op (cond, scan, map), which torch does not allow: the body "
            "must be a pure function of its inputs. Return the value as an extra output and apply the change "
            "after the call.",
            "\n".join(lines), Confidence.MEDIUM, Kind.HOP_RETURN_VALUE)
    return None


RULE = Rule(Kind.HOP_RETURN_VALUE, "a side effect inside a cond/scan/map body: return the value and apply the change outside",
            applies, fix)
