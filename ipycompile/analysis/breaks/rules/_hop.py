"""What the higher-order-op rules share: the user's scan/cond/map call that failed, and
the body functions it was given."""

from __future__ import annotations

import ast
from typing import Optional

from ...rewrite import call_name
from ...source import Parsed
from ..base import Context, Facts, parsed_at

#: the higher-order ops, and which positional arguments are body functions
HOPS = {"cond": (1, 2), "scan": (0,), "map": (0,), "while_loop": (1,), "associative_scan": (0,), "fori_loop": (2,)}


def hop_call(f: Facts, ctx: Context) -> Optional[tuple[Parsed, ast.Call, str, object]]:
    """The user's scan/cond/map call that failed: from the innermost user frame outwards."""
    frames = [fr for fr in reversed(f.stack or [f.user]) if not ctx.library(fr.filename)] or [f.user]
    for fr in frames:
        p = parsed_at(fr, ctx)
        stmt = p.innermost_statement(fr.lineno) if p is not None else None
        if stmt is None:
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and call_name(n) in HOPS:
                return p, n, call_name(n), fr
    return None


def body_defs(f: Facts, ctx: Context) -> list[tuple[Parsed, ast.FunctionDef, str]]:
    """The ``def`` of each body function the failed call was given, with the op's name."""
    found = hop_call(f, ctx)
    if found is None:
        return []
    p, call, op, fr = found
    out = []
    for i in HOPS[op]:
        if i < len(call.args) and isinstance(call.args[i], ast.Name):
            d = ctx.src.find_def(fr.filename, call.args[i].id, before=call.lineno)
            if d is not None:
                out.append((d[0], d[1], op))
    return out
