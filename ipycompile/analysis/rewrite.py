"""Reading and rewriting the user's code with :mod:`ast`: the toolkit the doctor's
rules write their fixes with.

Names a scope binds and reads, what is defined before a statement and used after it,
and the source of a statement with some of its nodes replaced (the user's own text,
comments and spacing kept). Pure functions of a :class:`~.source.Parsed` span.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Iterable, Optional

from .source import Parsed

__all__ = [
    "walk_scope", "ordered", "stores", "loads", "scope_body", "params", "defined_before", "uses_after",
    "stmt_replacement", "commented_out", "call_name", "dotted", "free_name", "taken_names", "returns",
]


def walk_scope(nodes: Iterable[ast.AST]) -> list[ast.AST]:
    """Every node under ``nodes``, not descending into nested functions, lambdas or classes."""
    out: list[ast.AST] = []
    todo = list(nodes)
    while todo:
        n = todo.pop(0)
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def ordered(names: Iterable[str]) -> list[str]:
    """``names`` without repeats, in first-seen order."""
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def _names(stmts, ctx: type) -> list[str]:
    nodes = sorted((n for n in walk_scope(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)),
                   key=lambda n: (n.lineno, n.col_offset))
    return ordered(n.id for n in nodes)


def stores(stmts) -> list[str]:
    """The names ``stmts`` assign, in order."""
    return _names(stmts, ast.Store)


def loads(stmts) -> list[str]:
    """The names ``stmts`` read, in order."""
    return _names(stmts, ast.Load)


def scope_body(p: Parsed, node: ast.AST) -> tuple[ast.AST, list[ast.stmt]]:
    """The function (or module) holding ``node``, and its body."""
    scope = p.scope_of(node)
    body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return scope, body


def params(scope: ast.AST) -> list[str]:
    """The parameter names of a function (none for a module)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return []
    a = scope.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names


def defined_before(p: Parsed, node: ast.stmt) -> list[str]:
    """Names bound in ``node``'s scope before it: parameters, assignments, imports, defs."""
    scope, body = scope_body(p, node)
    names = params(scope)
    for stmt in body:
        for n in walk_scope([stmt]):
            if getattr(n, "lineno", 10**9) >= node.lineno:
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.append(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not scope:
                names.append(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names += [(a.asname or a.name).split(".")[0] for a in n.names]
    return ordered(names)


def uses_after(p: Parsed, node: ast.stmt, name: str) -> list[ast.Name]:
    """The reads of ``name`` in ``node``'s scope after ``node`` ends."""
    _, body = scope_body(p, node)
    end = node.end_lineno or node.lineno
    return [n for n in walk_scope(body) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and n.lineno > end]


def stmt_replacement(p: Parsed, stmt: ast.stmt, swaps: list[tuple[ast.AST, str]], keep_comment: bool = True) -> str:
    """The source of ``stmt`` (dedented) with each node of ``swaps`` replaced by its text;
    without its trailing comment when ``keep_comment`` is False (a comment about what changed)."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    text_lines = p.text.split("\n")[first - 1 : last]
    if not keep_comment:
        end = stmt.end_col_offset or 0
        text_lines[-1] = _char_slice(text_lines[-1], 0, end)
    for node, new in sorted(swaps, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True):
        i, j = node.lineno - first, (node.end_lineno or node.lineno) - first
        line_i, line_j = text_lines[i], text_lines[j]
        merged = _char_slice(line_i, 0, node.col_offset) + new + _char_slice(line_j, node.end_col_offset, None)
        text_lines[i : j + 1] = [merged]
    return textwrap.dedent("\n".join(text_lines)).strip("\n")


def commented_out(p: Parsed, stmt: ast.stmt, note: str) -> str:
    """``stmt`` turned into a comment (``# <stmt>  (<note>)``), with ``pass`` before it when it
    is the only statement of its block (a block cannot be empty)."""
    parent = p.parents.get(stmt)
    alone = any(getattr(parent, fld, None) == [stmt] for fld in ("body", "orelse", "finalbody"))
    text = p.segment(stmt).replace("\n", " ")
    return ("pass  " if alone else "") + f"# {text}  ({note})"


def _char_slice(line: str, start: Optional[int], end: Optional[int]) -> str:
    """``line`` sliced by ast's UTF-8 byte offsets."""
    raw = line.encode("utf-8")
    return raw[start:end].decode("utf-8")


def call_name(call: ast.Call) -> str:
    """``f`` for ``f(...)`` and ``a.b.f(...)``; "" for anything else."""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def dotted(node: ast.AST) -> str:
    """The source of ``node`` as ast writes it ("" when it cannot)."""
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


def taken_names(p: Parsed) -> set[str]:
    """Every name the span uses or defines: a new name must be none of these."""
    return ({n.id for n in ast.walk(p.tree) if isinstance(n, ast.Name)}
            | {d.name for d in ast.walk(p.tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))})


def free_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken``."""
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def returns(fn: ast.AST) -> list[ast.Return]:
    """The ``return <value>`` statements of a function (not of functions nested in it)."""
    return [n for n in walk_scope(getattr(fn, "body", [])) if isinstance(n, ast.Return) and n.value is not None]
