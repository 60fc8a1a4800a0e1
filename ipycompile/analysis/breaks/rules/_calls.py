"""What the rules about untraceable calls share: recognising the break, the callee torch
names, and the user's call of it."""

from __future__ import annotations

import ast
from typing import Optional

from ...rewrite import call_name, dotted
from ...source import Parsed
from ..base import Context, Facts, statement_at



def is_unsupported_call(f: Facts) -> bool:
    return (f.code in ("GB0007", "GB0008", "GB0009", "GB0059", "GB0213")
            or f.kind.startswith(("Attempted to call function marked as skipped", "Attempted to inline function marked as skipped",
                                  "Failed to trace builtin operator")))


def is_numpy(f: Facts) -> bool:
    return f.code == "GB0294" or f.kind.startswith("attempted to trace numpy function unsupported")


def numpy_function(f: Facts) -> str:
    """The NumPy function torch could not trace ("digitize"), or ""."""
    return f.said.numpy_function


def numpy_call(stmt: ast.stmt, fn: str) -> Optional[ast.Call]:
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == fn \
                and dotted(n.func.value) in ("np", "numpy"):
            return n
    return None


def callee(f: Facts) -> tuple[str, str]:
    """``(name, full name)`` of the function torch could not call: ("perf_counter", "time.perf_counter")."""
    if f.said.callee_qualname:
        return f.said.callee_qualname.split(".")[-1], f"{f.said.callee_module}.{f.said.callee_qualname}"
    return f.said.builtin, f.said.builtin


def is_method(f: Facts) -> bool:
    """torch named a method of a class (``module: torch.optim.adam, qualname: Adam.step``), not a function:
    a call that works on its object."""
    q = f.said.callee_qualname
    return "." in q and "<locals>" not in q


def user_call(f: Facts, ctx: Context) -> Optional[tuple[Parsed, ast.stmt, ast.Call, str]]:
    """The user's statement and call of the callee torch names, with its full name: an
    unsupported call in the user's code, else None."""
    if not is_unsupported_call(f):
        return None
    return callee_call(f, ctx)


def callee_call(f: Facts, ctx: Context) -> Optional[tuple[Parsed, ast.stmt, ast.Call, str]]:
    """The user's statement and call of the callee torch names, whatever the break (torch 2.14
    names the API called in breaks of their own, e.g. GB0377 for ``torch.compiler.disable()``)."""
    if f.in_library:
        return None
    name, full = callee(f)
    if not name:
        return None
    p, stmt = statement_at(f.stop, ctx)
    if stmt is None:
        return None
    call = next((n for n in ast.walk(stmt) if isinstance(n, ast.Call) and call_name(n) == name), None)
    return (p, stmt, call, full) if call is not None else None


def in_with_items(stmt: ast.stmt, call: ast.Call) -> bool:
    """``with open(...):``: the call is the context manager's expression."""
    return isinstance(stmt, ast.With) and any(call in ast.walk(i.context_expr) for i in stmt.items)


def uses_values(call: ast.Call) -> bool:
    return any(not isinstance(a, ast.Constant) for a in [*call.args, *(k.value for k in call.keywords)])


def in_your_call(f: Facts, ctx: Context) -> str:
    """`` inside your call `m(x)` at In [3], line 2`` for a break in library code that the user's own call
    reached, else ""."""
    if f.user.filename and not ctx.library(f.user.filename):
        return f" inside your call `{f.user.source_line.strip()}` at {ctx.where(f.user)}"
    return ""
