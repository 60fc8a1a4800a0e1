"""A data-dependent `if` in the user's code whose branches compute elementwise
expressions of the same tensors: one `torch.where` (both sides computed, no branch)."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, defined_before, dotted
from ...source import Parsed
from ..base import Context, Facts, Rule
from ._branch import condition, if_at, is_branch, split_guard

TORCH_MODULES = {"torch", "F", "nn", "np", "numpy", "math", "functools", "operator", "logging", "os", "time", "sys"}
_ELEMENTWISE = {
    "abs", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sigmoid", "relu", "relu6",
    "gelu", "silu", "mish", "softplus", "elu", "selu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish", "clamp",
    "clip", "clamp_min", "clamp_max", "nan_to_num", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac",
    "reciprocal", "square", "pow", "maximum", "minimum", "fmax", "fmin", "lerp", "erf", "erfc", "erfinv", "add", "sub",
    "mul", "div", "true_divide", "float", "double", "half", "bfloat16", "logical_not", "isnan", "isinf", "isfinite",
}
#: Reductions that, called with no dimension, give a 0-dim tensor: they broadcast like a number.
SCALAR_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "norm", "std", "var", "prod", "median", "abs"}


def applies(f: Facts) -> bool:
    return is_branch(f) and not f.in_library


def is_elementwise(node: ast.AST) -> bool:
    """A tensor expression torch.where can take as a branch: elementwise arithmetic of names,
    numbers and attributes. Not ``None``, a string, a tuple or a shape change."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool))
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):  # self.scale, cfg.eps: a value, not a shape change
        return isinstance(node.value, (ast.Name, ast.Attribute)) and node.attr not in ("T", "mT", "H", "shape")
    if isinstance(node, ast.BinOp):
        return not isinstance(node.op, ast.MatMult) and is_elementwise(node.left) and is_elementwise(node.right)
    if isinstance(node, ast.UnaryOp):
        return is_elementwise(node.operand)
    if isinstance(node, ast.Compare):
        return (not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops)
                and is_elementwise(node.left) and all(is_elementwise(c) for c in node.comparators))
    if (isinstance(node, ast.Call) and call_name(node) in SCALAR_REDUCTIONS and isinstance(node.func, ast.Attribute)
            and not node.args and not node.keywords and is_elementwise(node.func.value)):
        return True  # y.max(): a 0-dim tensor, which broadcasts like a number
    if isinstance(node, ast.Call) and call_name(node) in _ELEMENTWISE:
        f = node.func
        target_ok = (not isinstance(f, ast.Attribute) or is_elementwise(f.value)
                     or dotted(f.value) in TORCH_MODULES | {"torch.nn.functional", "torch.special"})
        return target_ok and all(is_elementwise(a) for a in node.args) and all(is_elementwise(k.value) for k in node.keywords)
    return False


def _tensor_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in TORCH_MODULES}


def _single_assign(stmts) -> Optional[tuple[str, ast.expr]]:
    if len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and len(stmts[0].targets) == 1 and isinstance(stmts[0].targets[0], ast.Name):
        return stmts[0].targets[0].id, stmts[0].value
    return None


def _single_return(stmts) -> Optional[ast.expr]:
    if len(stmts) == 1 and isinstance(stmts[0], ast.Return) and stmts[0].value is not None:
        return stmts[0].value
    return None


def _next_return(p: Parsed, node: ast.If) -> Optional[ast.Return]:
    """``if c: return a`` with no ``else``: the ``return b`` right after it, the other branch."""
    parent = p.parents.get(node)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and node in block:
            i = block.index(node)
            after = block[i + 1] if i + 1 < len(block) else None
            return after if isinstance(after, ast.Return) and after.value is not None else None
    return None


def _rewrite(p: Parsed, node: ast.If) -> Optional[tuple[str, int]]:
    """The line that replaces the ``if`` (under the ``if`` of its Python guards, when its test
    starts with some: ``if m is not None and (m == 0).any():``), and the last line it replaces.
    None when a branch is not a tensor expression torch.where can combine."""
    last = node.end_lineno or node.lineno
    guards, tensor_test = split_guard(node.test)
    if tensor_test is None:
        return None
    cond = condition(p, tensor_test)
    a = _single_assign(node.body)
    if a is not None:
        target, yes = a
        if node.orelse:
            b = _single_assign(node.orelse)
            if b is None or b[0] != target:
                return None
            no, no_src = b[1], p.segment(b[1])
        else:
            if target not in defined_before(p, node):
                return None
            no, no_src = ast.Name(target, ast.Load()), target
        if not (is_elementwise(yes) and is_elementwise(no)):
            return None
        ny, nn_ = _tensor_names(yes), _tensor_names(no)
        if ny and nn_ and not (ny & nn_):  # different tensors: shapes may differ
            return None
        line = f"{target} = torch.where({cond}, {p.segment(yes)}, {no_src})"
        if not guards:
            return line, last
        # `if g and c: t = a else: t = b` is `if g: t = where(c, a, b) else: t = b`
        code = f"if {' and '.join(p.segment(g) for g in guards)}:\n    {line}"
        if node.orelse:
            code += f"\nelse:\n    {target} = {no_src}"
        return code, last
    if guards:  # a return under a guard: not one line
        return None
    yes, no = _single_return(node.body), _single_return(node.orelse)
    if yes is not None and not node.orelse:  # `if c: return a` then `return b`
        after = _next_return(p, node)
        if after is not None:
            no, last = after.value, after.end_lineno or after.lineno
    if yes is None or no is None:
        return None
    if not (is_elementwise(yes) and is_elementwise(no)) or isinstance(yes, ast.Tuple) or isinstance(no, ast.Tuple):
        return None
    ny, nn_ = _tensor_names(yes), _tensor_names(no)
    if ny and nn_ and not (ny & nn_):  # different tensors: shapes may differ
        return None
    return f"return torch.where({cond}, {p.segment(yes)}, {p.segment(no)})", last


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    found = if_at(f, ctx)
    if found is None:
        return None
    p, node = found
    found_rewrite = _rewrite(p, node)
    if found_rewrite is None:
        return None
    code, last = found_rewrite
    return Suggestion.of(
        f"Replace the branch at {ctx.where(f.stop)} with torch.where",
        f"`if {p.segment(node.test)}:` decides on a tensor's value, which torch cannot know while it traces, so the "
        "graph breaks there. Both branches compute elementwise expressions of the same tensors: compute both and "
        "let torch.where pick, with no branch on the data (lines "
        f"{node.lineno}-{last} become the code below" + ("; the tests on Python values stay an `if`, which torch "
        "decides while it traces" if code.startswith("if ") else "") + "). Both sides are evaluated: an expression that is invalid for the "
        "values not picked (log of a negative number) gives inf/nan there, harmless in the output but not in "
        "gradients; torch.cond evaluates only one branch.",
        rewrite(f.stop.filename, node.lineno, last, code), Confidence.HIGH, Kind.TORCH_WHERE)


RULE = Rule(Kind.TORCH_WHERE, "a data-dependent `if` whose branches are elementwise expressions: one `torch.where`",
            applies, fix)
