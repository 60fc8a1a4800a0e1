"""Guards on sizes: what the traced code asked of a symbolic size, read into a tree.

The one home of torch's symbolic-shape text. While compiling a version with dynamic sizes,
torch logs each guard it adds on its symbols (``guard_added_fast``: the expression as sympy
prints it, and the user stack where the traced code asked it) and each symbol it makes
(``create_symbol``: the symbol, the input's size it stands for, the value it saw)::

    s81 >= 8                                   # kv_length >= local_attention_size
    -s81 > -7                                  # a slice's bound
    Ne(((s69//8))*((s87//8)), 16)              # num_patches == num_positions, taken False
    Eq(s12, 7)                                 # a size torch specialised (range(x.shape[0]))
    L['args'][1].size()[1]                     # the source of a symbol

:func:`parse_shape_expr` reads an expression into the JSON-able tree of
:class:`~ipycompile.report.ShapeGuard` (``["ge", ["sym", "s81"], ["num", 8]]``), which the
report evaluates (:meth:`ShapeGuard.holds`) and shows in the user's names
(:meth:`ShapeGuard.render`) without reading text again; :func:`parse_symbol_source` reads a
symbol's source into the readable path its guards share (``args[1]``, dim 1).

Pure functions of text; they never raise (an expression of no known form reads as None).
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from .guards import guard_path

__all__ = ["parse_shape_expr", "parse_symbol_source", "symbols_of", "SYMBOL"]

#: A symbol of torch's shape environment: backed sizes and ints (``s81``), unbacked (``u3``).
SYMBOL = re.compile(r"^[su]\d+$")

_BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow",
        ast.Div: "div", ast.BitAnd: "and", ast.BitOr: "or"}
_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
#: sympy's and torch's functions as printed, by the tree's operator
_CALLS = {"Eq": "eq", "Ne": "ne", "Lt": "lt", "Le": "le", "Gt": "gt", "Ge": "ge", "StrictLessThan": "lt",
          "LessThan": "le", "StrictGreaterThan": "gt", "GreaterThan": "ge", "Mod": "mod", "PythonMod": "mod",
          "FloorDiv": "floordiv", "Max": "max", "Min": "min", "Abs": "abs", "And": "and", "Or": "or", "Not": "not",
          "CeilDiv": "ceildiv", "CleanDiv": "floordiv", "IntTrueDiv": "div", "PowByNatural": "pow"}
_MAX_DEPTH = 40
_MAX_LEN = 4000


def parse_shape_expr(text: Optional[str]) -> Optional[list]:
    """The tree of a guard expression as torch printed it, or None for one of no known form."""
    if not isinstance(text, str) or not text.strip() or len(text) > _MAX_LEN:
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
        return _tree(node, 0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _Unknown):
        return None


class _Unknown(Exception):
    pass


def _tree(n: ast.AST, depth: int) -> list:
    if depth > _MAX_DEPTH:
        raise _Unknown
    d = depth + 1
    if isinstance(n, ast.Name):
        if SYMBOL.match(n.id):
            return ["sym", n.id]
        if n.id in ("True", "False", "true", "false"):
            return ["bool", n.id.lower() == "true"]
        raise _Unknown
    if isinstance(n, ast.Constant) and isinstance(n.value, bool):
        return ["bool", n.value]
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return ["num", n.value]
    if isinstance(n, ast.UnaryOp):
        op = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "not"}.get(type(n.op))
        if op is None:
            raise _Unknown
        inner = _tree(n.operand, d)
        if op == "neg" and inner[0] == "num":
            return ["num", -inner[1]]
        return inner if op == "pos" else [op, inner]
    if isinstance(n, ast.BinOp):
        op = _BIN.get(type(n.op))
        if op is None:
            raise _Unknown
        return [op, _tree(n.left, d), _tree(n.right, d)]
    if isinstance(n, ast.BoolOp):
        return ["and" if isinstance(n.op, ast.And) else "or", *(_tree(v, d) for v in n.values)]
    if isinstance(n, ast.Compare):
        parts, left = [], _tree(n.left, d)
        for op, right in zip(n.ops, n.comparators):
            name = _CMP.get(type(op))
            if name is None:
                raise _Unknown
            r = _tree(right, d)
            parts.append([name, left, r])
            left = r
        return parts[0] if len(parts) == 1 else ["and", *parts]
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
        op = _CALLS.get(n.func.id)
        if op is None:
            raise _Unknown
        return [op, *(_tree(a, d) for a in n.args)]
    raise _Unknown


_SIZE_SOURCE = re.compile(r"^(?P<src>.+)\.(?P<what>size|stride)\(\)\[(?P<dim>\d+)\]$")
_OFFSET_SOURCE = re.compile(r"^(?P<src>.+)\.storage_offset\(\)$")


def parse_symbol_source(source: Any) -> tuple[str, str, Optional[int]]:
    """``(kind, path, dim)`` of a symbol's source: ``("size", "args[1]", 1)`` for
    ``L['args'][1].size()[1]``, ``("stride", ...)``, ``("int", "n", None)`` for ``L['n']``;
    ``("", "", None)`` for none."""
    s = str(source or "").strip()
    if not s:
        return "", "", None
    m = _SIZE_SOURCE.match(s)
    if m:
        return m.group("what"), guard_path(m.group("src")), int(m.group("dim"))
    if _OFFSET_SOURCE.match(s):
        return "storage_offset", guard_path(_OFFSET_SOURCE.match(s).group("src")), None
    return "int", guard_path(s), None


def symbols_of(tree: Any) -> set[str]:
    """The symbols a tree of :func:`parse_shape_expr` reads."""
    out: set[str] = set()
    stack = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, list) and t:
            if t[0] == "sym" and len(t) == 2:
                out.add(str(t[1]))
            else:
                stack.extend(t[1:])
    return out
