"""What the `.item()` rules share: recognising the break, and the conversions to a Python
number on the user's line."""

from __future__ import annotations

import ast

from ...source import Parsed
from ..base import Facts


def is_item(f: Facts) -> bool:
    return f.code == "GB0124" or f.kind.startswith("Unsupported Tensor.item() call")


def is_tolist(f: Facts) -> bool:
    return f.code == "GB0109" or f.kind.startswith("Tensor.tolist()")


def scalar_calls(stmt: ast.stmt, lineno: int) -> list[ast.Call]:
    """The ``t.item()``, ``int(t)``, ``float(t)`` of ``stmt`` that span ``lineno``, outermost only."""
    calls = []
    for n in ast.walk(stmt):
        if not isinstance(n, ast.Call) or not (n.lineno <= lineno <= (n.end_lineno or n.lineno)):
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr == "item" and not n.args and not n.keywords:
            calls.append(n)
        elif (isinstance(n.func, ast.Name) and n.func.id in ("int", "float") and len(n.args) == 1 and not n.keywords
              and not isinstance(n.args[0], ast.Constant)):
            calls.append(n)
    # the outermost only: int(x.sum().item()) is one conversion
    return [c for c in calls if not any(c is not o and c in ast.walk(o) for o in calls)]


def arith_use(p: Parsed, node: ast.AST) -> bool:
    """``node`` is an operand of arithmetic with something that is not a plain number
    (``x * n``, not ``0.1 * n``: that would turn a Python number into a tensor)."""
    parent = p.parents.get(node)
    if isinstance(parent, ast.UnaryOp):
        return arith_use(p, parent)
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is node else parent.left
        return not isinstance(other, ast.Constant)
    return isinstance(parent, ast.AugAssign) and parent.value is node
