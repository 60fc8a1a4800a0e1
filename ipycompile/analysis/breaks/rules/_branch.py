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


def is_python_test(node: ast.expr) -> bool:
    """A test on Python values, not on a tensor's data: ``m is None``, ``m is not None``,
    ``isinstance(m, T)``, ``hasattr(o, "a")``, ``callable(f)``, or a constant. Torch decides
    these while it traces; they cannot become tensor operands (``None & t`` raises)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Compare):
        return all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return is_python_test(node.operand)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
        "isinstance", "hasattr", "callable")


def split_guard(test: ast.expr) -> tuple[list[ast.expr], Optional[ast.expr]]:
    """``(guards, tensor test)`` of an ``if``'s test: ``m is not None and (m == 0).any()`` is
    the guard ``m is not None`` (Python, left as an ``if``) and the tensor test ``(m == 0).any()``.
    The guards are the leading Python tests of an ``and``; the tensor test is None when a Python
    test stands anywhere else (``(m == 0).any() or m is None``: no tensor expression computes it)."""
    values = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    guards = []
    for v in values:
        if not is_python_test(v):
            break
        guards.append(v)
    rest = values[len(guards):]
    if not rest or any(_has_python_test(v) for v in rest):
        return guards, None
    if len(rest) == 1:
        return guards, rest[0]
    return guards, ast.BoolOp(ast.And(), rest)


def _has_python_test(node: ast.expr) -> bool:
    if is_python_test(node):
        return True
    if isinstance(node, ast.BoolOp):
        return any(_has_python_test(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _has_python_test(node.operand)
    return False


def condition(p: Parsed, test: ast.expr) -> str:
    """The condition as a tensor expression: Python's ``and``/``or``/``not`` on tensors become
    ``&``/``|``/``~``. Only for a test with no Python test in it (see :func:`split_guard`)."""
    if isinstance(test, ast.BoolOp):
        op = " & " if isinstance(test.op, ast.And) else " | "
        return op.join(f"({condition(p, v)})" for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return f"~({condition(p, test.operand)})"
    return p.segment(test)
