"""What the `.item()` rules share: recognising the break, and the conversions to a Python
number on the user's line."""

from __future__ import annotations

import ast

from ...source import Parsed
from ..base import Facts


def is_item(f: Facts) -> bool:
    return f.code == "GB0124" or f.kind.startswith("Unsupported Tensor.item() call")


def is_tolist(f: Facts) -> bool:
    """``.tolist()``: GB0109, or (torch 2.13) a data-dependent operator break on the
    ``aten._local_scalar_dense`` each element's conversion calls."""
    return (f.code == "GB0109" or f.kind.startswith("Tensor.tolist()")
            or ((f.code == "GB0033" or f.kind.startswith("Data dependent operator")) and "_local_scalar_dense" in f.context))


def tolist_calls(stmt: ast.stmt, lineno: int) -> list[ast.Call]:
    """The ``t.tolist()`` calls of ``stmt`` that span ``lineno``."""
    return [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "tolist" and not n.args and not n.keywords
            and n.lineno <= lineno <= (n.end_lineno or n.lineno)]


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
    """``node`` is an operand of arithmetic with something that is not a Python number
    (``x * n``, not ``0.1 * n``, ``w + h`` of two ``int(t)`` or ``total += n`` of a ``total = 0.0``:
    with a number on the other side the result was a Python number, and keeping ``node`` a
    tensor would make it a tensor: what the code returns or accumulates would change)."""
    parent = p.parents.get(node)
    if isinstance(parent, ast.UnaryOp):
        return arith_use(p, parent)
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is node else parent.left
        return not python_number(p, other)
    return isinstance(parent, ast.AugAssign) and parent.value is node and not python_number(p, parent.target)


#: Calls whose value is a Python number (the conversions torch breaks on, and the builtins that count).
_NUMBER_CALLS = {"int", "float", "len", "round", "abs", "min", "max", "sum"}


def python_number(p: Parsed, node: ast.AST, depth: int = 0) -> bool:
    """Whether ``node`` is, by the code alone, a Python number: a numeric constant, a conversion
    (``int(t)``, ``float(t)``, ``t.item()``, ``len(xs)``), arithmetic of those, or a name last
    assigned one of those (in the same scope, before ``node``). False when the code cannot
    tell (a parameter, an attribute, a tensor expression)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex))  # a bool is an int
    if isinstance(node, ast.UnaryOp):
        return python_number(p, node.operand, depth + 1)
    if isinstance(node, ast.BinOp):
        return python_number(p, node.left, depth + 1) and python_number(p, node.right, depth + 1)
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "item" and not node.args and not node.keywords:
            return True
        if isinstance(f, ast.Attribute) and (f.attr in ("numel", "dim", "ndimension", "nelement", "element_size")
                                             or f.attr == "size" and len(node.args) == 1):
            return True  # a tensor's count of elements, of dimensions, one dimension's size
        if isinstance(f, ast.Name) and f.id in ("int", "float", "len"):
            return True
        if isinstance(f, ast.Name) and f.id in _NUMBER_CALLS and node.args:
            return all(python_number(p, a, depth + 1) for a in node.args)
        return False
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and not isinstance(node.slice, ast.Slice):
        return True  # t.shape[0]
    if isinstance(node, ast.Name):
        return _assigned_number(p, node, depth)
    return False


def _assigned_number(p: Parsed, name: ast.Name, depth: int) -> bool:
    """``name`` was last assigned, before this use and in the same scope, a Python number."""
    from ...rewrite import scope_body, walk_scope

    _, body = scope_body(p, name)
    assigns = [n for n in walk_scope(body) if isinstance(n, ast.Assign) and n.lineno < name.lineno
               and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name.id]
    if not assigns:
        return False
    return python_number(p, max(assigns, key=lambda a: a.lineno).value, depth + 1)


#: Tensor methods (and torch functions) that, called on a tensor with no dimension, give one element.
_FULL_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "norm", "std", "var", "prod", "median", "all", "any",
                    "argmax", "argmin", "count_nonzero", "nansum", "nanmean", "logsumexp", "dot", "vdot", "trace"}
#: Calls that keep the number of elements of their (first) tensor argument.
_SAME_NUMEL = {"abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "float", "double",
               "long", "int", "half", "bfloat16", "round", "floor", "ceil", "clamp", "clip", "detach", "clone", "cpu",
               "squeeze", "flatten", "reshape", "view", "contiguous", "to", "pow", "square", "reciprocal", "sign"}


def one_element(p: Parsed, node: ast.AST, depth: int = 0) -> bool:
    """Whether the tensor ``node`` computes provably holds one element (what ``.item()`` and
    ``int(t)`` need): a full reduction (``x.sum()``, ``torch.max(x)``), a one-number
    ``torch.tensor(3)``, arithmetic of those with numbers, a name assigned one of those.
    False when it cannot be told from the code (``x[i]``, a parameter, ``torch.tensor([1, 1])``)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool))
    if isinstance(node, ast.UnaryOp):
        return one_element(p, node.operand, depth + 1)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return one_element(p, node.left, depth + 1) and one_element(p, node.right, depth + 1)
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        module = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("torch", "np", "numpy")
        if name == "tensor" and module and len(node.args) == 1:
            a = node.args[0]
            return (isinstance(a, ast.Constant) and isinstance(a.value, (int, float, bool))) or (
                isinstance(a, (ast.List, ast.Tuple)) and len(a.elts) == 1 and isinstance(a.elts[0], ast.Constant))
        if name in _FULL_REDUCTIONS:
            if module:  # torch.sum(x): no dim argument
                return len(node.args) == 1 and not node.keywords
            return isinstance(f, ast.Attribute) and not node.args and not node.keywords
        if name in _SAME_NUMEL:
            if module:
                return bool(node.args) and one_element(p, node.args[0], depth + 1)
            if isinstance(f, ast.Attribute):
                return one_element(p, f.value, depth + 1)
        return False
    if isinstance(node, ast.Name):
        return _assigned_one_element(p, node, depth)
    return False


def _assigned_one_element(p: Parsed, name: ast.Name, depth: int) -> bool:
    """``name`` was last assigned, before this use and in the same scope, a one-element value."""
    from ...rewrite import scope_body, walk_scope

    _, body = scope_body(p, name)
    assigns = [n for n in walk_scope(body) if isinstance(n, ast.Assign) and n.lineno < name.lineno
               and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name.id]
    others = [n for n in walk_scope(body) if isinstance(n, (ast.AugAssign, ast.For, ast.With)) and n.lineno < name.lineno]
    if not assigns or any(name.id in {t.id for t in ast.walk(o) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
                          for o in others):
        return False
    return one_element(p, max(assigns, key=lambda a: a.lineno).value, depth + 1)


def converted(call: ast.Call) -> ast.AST:
    """The tensor a ``t.item()`` / ``int(t)`` / ``float(t.item())`` converts."""
    if isinstance(call.func, ast.Attribute):  # .item()
        return call.func.value
    arg = call.args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "item" and not arg.args:
        return arg.func.value
    return arg
