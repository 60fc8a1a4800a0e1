"""A NumPy function torch cannot trace that has a torch equivalent: the torch call."""

from __future__ import annotations

import ast
from typing import Callable, Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import dotted, stmt_replacement
from ...source import Parsed
from ..base import Context, Facts, Rule, statement_at
from ._calls import is_numpy, numpy_call, numpy_function


def _as_tensor(expr: str) -> str:
    return expr if expr.startswith("torch.") else f"torch.as_tensor({expr})"


#: NumPy functions Dynamo cannot trace (torch 2.13) whose torch equivalent gives the same values and dtype.
#: ``{args}`` are the call's arguments with ``a.numpy()`` written as ``a``.
NUMPY_TO_TORCH: dict[str, Callable[[list[str], dict[str, str]], Optional[str]]] = {
    # np.digitize(x, bins) puts x in bin i with bins[i-1] <= x < bins[i]: torch.bucketize(..., right=True)
    "digitize": lambda a, kw: (f"torch.bucketize({a[0]}, {_as_tensor(a[1])}, right=True)"
                               if len(a) == 2 and not kw else None),
}


def applies(f: Facts) -> bool:
    return is_numpy(f) and not f.in_library and numpy_function(f) in NUMPY_TO_TORCH


def _strip_numpy(p: Parsed, node: ast.expr) -> str:
    """``a.numpy()`` -> ``a``; anything else as written."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" and not node.args:
        return p.segment(node.func.value)
    return p.segment(node)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    fn = numpy_function(f)
    p, stmt = statement_at(f.stop, ctx)
    call = numpy_call(stmt, fn) if stmt is not None else None
    if call is None:
        return None
    args = [_strip_numpy(p, a) for a in call.args]
    kw = {k.arg: _strip_numpy(p, k.value) for k in call.keywords if k.arg}
    torch_call = NUMPY_TO_TORCH[fn](args, kw)
    if torch_call is None:
        return None
    # torch.from_numpy(np.f(...)) / torch.as_tensor(np.f(...)): the wrapper goes too
    outer = p.parents.get(call)
    target = outer if (isinstance(outer, ast.Call) and dotted(outer.func) in
                       ("torch.from_numpy", "torch.as_tensor", "torch.tensor") and len(outer.args) == 1) else call
    code = stmt_replacement(p, stmt, [(target, torch_call)])
    return Suggestion.of(
        f"Use the torch equivalent of np.{fn} at {ctx.where(f.stop)}",
        f"torch traces most NumPy calls as torch code, but not `np.{fn}`, so the graph breaks there. "
        f"`{torch_call.split('(')[0]}` computes the same on tensors (same values and dtype) and stays in the graph.",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno, code), Confidence.HIGH, Kind.NUMPY_TO_TORCH)


RULE = Rule(Kind.NUMPY_TO_TORCH, "a NumPy function torch cannot trace that has a torch equivalent: the torch call",
            applies, fix)
