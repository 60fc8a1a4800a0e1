"""torch.cond branches that return different structures: make them return the same."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import returns
from ..base import Context, Facts, Rule
from ._hop import body_defs


def applies(f: Facts) -> bool:
    return "Unmatched output spec from torch.cond branches" in f.text or f.code == "GB0319"


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    defs = body_defs(f, ctx)
    if len(defs) < 2:
        return None
    shapes = []
    for p, fn, op in defs:
        rets = returns(fn)
        if not rets:
            return None
        r = rets[-1]
        n = len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1
        shapes.append((p, fn, r, n))
    desc = "; ".join(f"`{fn.name}` returns {n} value{'s' if n != 1 else ''} (`{p.segment(r.value)}`)" for p, fn, r, n in shapes)
    code = "\n".join(f"# {fn.name}, {ctx.report.where(p.filename, r.lineno)}:\n{p.segment(r)}" for p, fn, r, n in shapes)
    return Suggestion(
        "Make both branches of torch.cond return the same structure",
        f"torch.cond needs its branches to return the same structure: the same number of tensors, nested the "
        f"same way, with the same shapes and dtypes. Here {desc}. Return the same outputs from both "
        "(compute the missing value in the other branch too, or drop the extra one).",
        code, Confidence.MEDIUM, Kind.HOP_MATCH_STRUCTURE)


RULE = Rule(Kind.HOP_MATCH_STRUCTURE, "torch.cond branches returning different structures: make them match", applies, fix)
