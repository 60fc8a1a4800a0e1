"""The user's line torch quoted, read for what a rule needs: whether the changed value is a loop count
(``range(n)``), only an operand of arithmetic, an index or a condition, and whether an expression reads a
tensor's size. The line is parsed with :mod:`ast`; torch's text is not read here."""

from __future__ import annotations

import ast
from typing import Optional

from .reading import Reason


def parse_line(code: str) -> Optional[ast.AST]:
    """One line of the user's code, parsed (a block's header with ``pass`` under it: on a line of
    its own, so that a comment closing the header does not swallow it); None if it is not Python."""
    for text in (code.strip() or "_", code.strip() + "\n pass"):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


def as_read(r: Reason) -> str:
    """The name the line torch quoted reads the value by: the last attribute of its path
    (``self.scale`` reads ``fn.scale``), else the path's name (``k``)."""
    path = r.change.subject if r.closure_of else (r.src or r.change.subject)
    return path.replace("]", "").replace("[", ".").rsplit(".", 1)[-1]


def in_range(r: Reason) -> bool:
    """The user's line torch quoted passes ``r``'s value to ``range(...)`` (a loop count)."""
    name = as_read(r)
    tree = parse_line(r.code)
    if not name or tree is None:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range"
               and any(isinstance(x, (ast.Name, ast.Attribute)) and (getattr(x, "id", None) == name or getattr(x, "attr", None) == name)
                       for a in n.args for x in ast.walk(a))
               for n in ast.walk(tree))


def only_in_arithmetic(r: Reason) -> bool:
    """In the user's line torch quoted, ``r``'s input is only an operand of arithmetic with
    something that is not a plain number (where a 0-d tensor gives the same result)."""
    tree = parse_line(r.code)
    if tree is None:
        return False
    x = as_read(r)
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    uses = [n for n in ast.walk(tree) if (isinstance(n, ast.Name) and n.id == x) or (isinstance(n, ast.Attribute)
            and n.attr == x) and not isinstance(parents.get(n), ast.Attribute)]
    if not uses:
        return False
    for u in uses:
        parent = parents.get(u)
        if not isinstance(parent, ast.BinOp):
            return False
        other = parent.right if parent.left is u else parent.left
        if isinstance(other, ast.Constant):
            return False
    return True


def needs_the_int(r: Reason) -> tuple[str, str]:
    """How the user's line torch quoted uses ``r``'s int where torch must know its value whatever the settings
    (``self.stages[self._pos]``: an index that picks a Python object; ``range(self.n)``: a loop count; a
    condition): ``(the use's code, what it is)``; ``("", "")`` where no such use is seen."""
    tree = parse_line(r.code)
    if tree is None:
        return "", ""
    x = as_read(r)

    def reads(node: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id == x) or (isinstance(n, ast.Attribute) and n.attr == x)
                   for n in ast.walk(node))

    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and reads(n.slice):
            return ast.unparse(n), "an index, which picks an item"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" and any(reads(a) for a in n.args):
            return ast.unparse(n), "a loop count"
        if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) and reads(n.test):
            return ast.unparse(n.test), "a condition"
        if isinstance(n, ast.Compare) and reads(n):
            return ast.unparse(n), "a comparison"
    return "", ""


def reads_size(expr: ast.AST, name: str, dim: int) -> bool:
    """``expr`` reads dim ``dim`` of ``name``'s size: ``name.shape[dim]``, ``name.size(dim)``,
    ``name.size()[dim]``, ``len(name)`` for dim 0."""
    def of(n: ast.AST, attr: str) -> bool:
        return isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name) and n.value.id == name

    for n in ast.walk(expr):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == dim and (
                of(n.value, "shape") or (isinstance(n.value, ast.Call) and of(n.value.func, "size") and not n.value.args)):
            return True
        if isinstance(n, ast.Call) and of(n.func, "size") and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) \
                and n.args[0].value == dim:
            return True
        if dim == 0 and isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args \
                and isinstance(n.args[0], ast.Name) and n.args[0].id == name:
            return True
    return False
