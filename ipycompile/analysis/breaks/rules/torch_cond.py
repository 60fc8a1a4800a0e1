"""A data-dependent `if` in the user's code: a `torch.cond` rewrite built from the
condition and the names the branches assign (both branches in the graph, one picked
when it runs)."""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import defined_before, free_name, loads, ordered, stores, taken_names, uses_after, walk_scope
from ...source import Parsed
from ..base import Context, Facts, Rule
from ._branch import condition, if_at, is_branch, split_guard

_IF_LINE = re.compile(r"^\s*(?:el)?if\s+(?P<cond>.+?):\s*(?:#.*)?$")


def applies(f: Facts) -> bool:
    return is_branch(f) and not f.in_library


def _has_return(stmts) -> bool:
    return any(isinstance(n, ast.Return) for n in walk_scope(stmts))


def _tensor_test(test: ast.expr) -> bool:
    """The test is a tensor expression torch.cond can take as its predicate (no Python test in it:
    ``m is not None and (m == 0).any()`` is not; see ``_branch.split_guard``)."""
    guards, tensor_test = split_guard(test)
    return not guards and tensor_test is not None


def _not_tensors(stmts) -> bool:
    """A branch assigns or returns a value that is not a tensor (``None``, a string): torch.cond's
    branches must return tensors of the same shapes and dtypes."""
    for n in walk_scope(stmts):
        value = n.value if isinstance(n, (ast.Assign, ast.Return)) else None
        if isinstance(value, ast.Constant) and not isinstance(value.value, (int, float, bool)):
            return True
    return False


def _rewrite(f: Facts, ctx: Context, p: Parsed, node: ast.If) -> Optional[Suggestion]:
    if not _tensor_test(node.test) or _not_tensors(node.body + node.orelse):
        return None
    body, orelse = node.body, node.orelse
    if len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif: one cond per level would nest data-dependent ifs
        return from_line(f, ctx, note="The `elif` chain needs one torch.cond per level (nested in the false branch).")
    both_return = bool(body) and isinstance(body[-1], ast.Return) and bool(orelse) and isinstance(orelse[-1], ast.Return)
    if not both_return and (_has_return(body) or _has_return(orelse)):
        return from_line(f, ctx, note="A branch returns early: torch.cond needs both branches to return (or neither).")
    before = set(defined_before(p, node))
    taken = taken_names(p)
    t_name, f_name = free_name("true_fn", taken), free_name("false_fn", taken)
    side_effects = [n for n in walk_scope(body + orelse)
                    if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store)]
    side_effects += [s for s in walk_scope(body + orelse) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
    if both_return:
        outputs: list[str] = []
        operands = [n for n in loads(body + orelse) if n in before and n != "self"]
    else:
        t_stores, f_stores = stores(body), stores(orelse)
        assigned = ordered(t_stores + f_stores)
        used_after = [n for n in assigned if uses_after(p, node, n)]
        outputs = used_after or assigned
        if not outputs:
            return None
        one_sided = [n for n in outputs if n not in t_stores or n not in f_stores]
        if any(n not in before for n in one_sided):
            return from_line(f, ctx, note=f"`{[n for n in one_sided if n not in before][0]}` is assigned in one branch only and has no value before the `if`.")
        operands = [n for n in ordered(loads(body + orelse) + one_sided) if n in before and n != "self"]

    def branch(name: str, stmts: list[ast.stmt], assigned: list[str]) -> str:
        lines = [f"def {name}({', '.join(operands)}):"]
        inner = p.block_text(stmts) if stmts else ""
        if inner:
            lines += textwrap.indent(inner, "    ").split("\n")
        if not both_return:
            outs = [n if n in assigned else f"{n}.clone()" for n in outputs]  # an input returned as is would alias
            lines.append(f"    return {', '.join(outs)}")
        return "\n".join(lines)

    ops = "(" + ", ".join(operands) + ("," if len(operands) == 1 else "") + ")"
    call = f"torch.cond({condition(p, node.test)}, {t_name}, {f_name}, {ops})"
    tail = f"return {call}" if both_return else f"{', '.join(outputs)} = {call}"
    code = "\n".join([branch(t_name, body, stores(body)), branch(f_name, orelse, stores(orelse)), tail])
    last = node.end_lineno or node.lineno
    what = ("both branches return" if both_return else
            f"the branches assign {', '.join(f'`{n}`' for n in outputs)}, which torch.cond returns")
    explanation = (
        f"`if {p.segment(node.test)}:` decides on a tensor's value, which torch cannot know while it traces, so "
        f"the graph breaks there. torch.cond puts both branches in the graph and picks one when it runs: {what}. "
        f"Lines {node.lineno}-{last} become the code below; the operands are the values the branches read "
        f"({', '.join(f'`{o}`' for o in operands) or 'none'}). Both branches must return tensors of the same "
        "shapes and dtypes.")
    confidence = Confidence.MEDIUM
    if side_effects:
        confidence = Confidence.LOW
        explanation += (" A branch changes state outside itself (an attribute, an item, a call for its effect): "
                        "torch.cond does not allow that; return the value instead and apply it after the call.")
    return Suggestion.of(f"Rewrite the branch at {ctx.where(f.stop)} with torch.cond", explanation,
                         rewrite(f.stop.filename, node.lineno, last, code), confidence, Kind.TORCH_COND)


def from_line(f: Facts, ctx: Context, note: str = "") -> Optional[Suggestion]:
    """Only the break's line is known (a trace file, a report without kept source): a skeleton."""
    m = _IF_LINE.match(f.stop.source_line or "")
    if not m:
        return None
    cond = m.group("cond")
    try:
        if not _tensor_test(ast.parse(cond, mode="eval").body):
            return None
    except SyntaxError:
        return None
    code = "\n".join([
        "def true_fn(...):   # the statements of the `if` branch, returning the values they assign",
        "    ...",
        "def false_fn(...):  # the statements of the `else` branch, returning the same values",
        "    ...",
        f"... = torch.cond({cond}, true_fn, false_fn, (...,))",
    ])
    return Suggestion(
        f"Rewrite the branch at {ctx.where(f.stop)} with torch.cond",
        f"`if {cond}:` decides on a tensor's value, which torch cannot know while it traces, so the graph breaks "
        "there. torch.cond puts both branches in the graph and picks one when it runs; the branches become "
        "functions of the tensors they read, returning tensors of the same shapes and dtypes. "
        + (note + " " if note else "")
        + "(The report kept only this line, so the branches are left for you to fill in.)",
        code, Confidence.LOW, Kind.TORCH_COND)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    found = if_at(f, ctx)
    if found is None:
        return from_line(f, ctx)
    return _rewrite(f, ctx, *found)


RULE = Rule(Kind.TORCH_COND, "a data-dependent `if` in the user's code: a `torch.cond` rewrite built from the condition "
            "and the names the branches assign", applies, fix)
