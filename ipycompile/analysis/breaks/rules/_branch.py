"""What the data-dependent-branch rules share: recognising the break, the user's `if`
statement torch stopped at, and its condition written for tensors."""

from __future__ import annotations

import ast
from typing import Optional

from ...source import Parsed
from ..base import Context, Facts, parsed_at


def is_branch(f: Facts) -> bool:
    return f.code in ("GB0170", "GB0035") or f.kind.startswith("Data-dependent branching")


def if_at(f: Facts, ctx: Context) -> Optional[tuple[Parsed, ast.If]]:
    """The ``if`` whose test holds the line torch stopped at, in the kept source."""
    p = parsed_at(f.stop, ctx)
    if p is None:
        return None
    node = next((s for s in reversed(p.statements_at(f.stop.lineno)) if isinstance(s, ast.If)
                 and s.test.lineno <= f.stop.lineno <= (s.test.end_lineno or s.test.lineno)), None)
    return (p, node) if node is not None else None


def condition(p: Parsed, test: ast.expr) -> str:
    """The condition as a tensor expression: Python's ``and``/``or``/``not`` on tensors become ``&``/``|``/``~``."""
    if isinstance(test, ast.BoolOp):
        op = " & " if isinstance(test.op, ast.And) else " | "
        return op.join(f"({condition(p, v)})" for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return f"~({condition(p, test.operand)})"
    return p.segment(test)
