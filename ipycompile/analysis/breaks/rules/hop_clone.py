"""A scan/cond/map/while_loop body that returns an input, or one tensor twice: `.clone()`
the alias (torch requires new tensors as a higher-order op's outputs)."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import params, returns, stmt_replacement, stores
from ..base import Context, Facts, Rule
from ._hop import body_defs



def applies(f: Facts) -> bool:
    return f.code == "GB0040" or f.kind.startswith("Encountered aliasing during higher order op tracing")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    defs = body_defs(f, ctx)
    changes = []
    for p, fn, op in defs:
        inputs = set(params(fn)) - set(stores(fn.body))  # a parameter assigned again is no longer the input
        for r in returns(fn):
            elts = list(r.value.elts) if isinstance(r.value, ast.Tuple) else [r.value]
            seen: set[str] = set()
            swaps = []
            for e in elts:
                if isinstance(e, ast.Name) and (e.id in seen or e.id in inputs):
                    swaps.append((e, f"{e.id}.clone()"))
                if isinstance(e, ast.Name):
                    seen.add(e.id)
            if swaps:
                changes.append((p, r, stmt_replacement(p, r, swaps), fn.name))
    if not changes:
        return None
    a = f.said
    how = (f"{a.aliasing} aliasing (`{a.aliased_nodes[0]}` and `{a.aliased_nodes[1]}`)"
           if a.aliasing and len(a.aliased_nodes) == 2 else "aliasing")
    op = defs[0][2]
    if len(changes) == 1:
        p, r, code, fn = changes[0]
        return Suggestion.of(
            f"Return a copy: `{code}` in `{fn}`",
            f"torch found {how} in the body of `{op}`: `{p.segment(r)}` (in `{fn}`, {ctx.report.where(p.filename, r.lineno)}) "
            "returns an input, or one tensor twice. The outputs of a higher-order op must be new tensors: "
            "`.clone()` the repeated or passed-through one (a cheap copy torch can often remove).",
            rewrite(p.filename, r.lineno, r.end_lineno or r.lineno, code), Confidence.HIGH, Kind.HOP_CLONE)
    lines = [f"# in {fn}, {ctx.report.where(p.filename, r.lineno)}:\n{code}" for p, r, code, fn in changes]
    return Suggestion(
        f"Return copies in the bodies of `{op}`",
        f"torch found {how} in the body of `{op}`: these returns pass an input through, or return one tensor "
        "twice. The outputs of a higher-order op must be new tensors: `.clone()` the repeated or passed-through ones.",
        "\n".join(lines), Confidence.HIGH, Kind.HOP_CLONE)


RULE = Rule(Kind.HOP_CLONE, "a scan/cond/map/while_loop body returning an input or one tensor twice: `.clone()` the alias",
            applies, fix)
