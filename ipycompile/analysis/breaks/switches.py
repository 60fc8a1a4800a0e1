"""A library's own switch, passed by the user's call, under which the library code that breaks runs:
the lever the user has on code they do not own.

A break stops in a library (transformers, ...); the user's call passes a keyword set to a constant
(``model(ids, output_attentions=True)``, ``use_cache=True``). Reading the library's functions the call
passes through (the report keeps them: ``source_context``), the line on the way to the break sits under
a condition (``if``/``while``/a conditional expression) that reads that switch: the parameter of that
name, a value the function computes from it (``recordable_keys = {...: kwargs.get(f"output_{k}")}`` then
``collected = ...recordable_keys...``), an attribute of that name (``self.config.output_attentions``), or a
lookup by its name (``kwargs.get("output_attentions")``). Then the break happens only because of the
switch: calling without it is a lever, written against the user's own line, labelled "to try" (what the
switch adds to the outputs is then missing). No such condition seen: nothing is said.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING, Optional

from ...report.fix import rewrite
from ...report.model import Confidence, GraphBreak, Kind, Suggestion, UserFrame
from ...report.owners import Owner
from .base import Context, statement_at

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["Switch", "library_switch", "with_switches"]


@dataclasses.dataclass(frozen=True)
class Switch:
    name: str  # "output_attentions"
    value: bool  # what the user's call passes
    call: ast.keyword  # the keyword in the user's call
    where: UserFrame  # the library line whose condition reads it
    test: str  # that condition, as the library writes it


def _switches(b: GraphBreak, ctx: Context) -> tuple[Optional[ast.stmt], dict[str, ast.keyword]]:
    """The user's statement at the break's own line, and its calls' keywords set to a bool constant."""
    if ctx.report.owner(b.frame.filename) is not Owner.USER:
        return None, {}
    _, stmt = statement_at(b.frame, ctx)
    if stmt is None:
        return None, {}
    out = {k.arg: k for n in ast.walk(stmt) if isinstance(n, ast.Call) for k in n.keywords
           if k.arg and isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool)}
    return stmt, out


def _names_key(node: ast.AST, name: str) -> bool:
    """``node`` is the switch's name as a string, or an f-string that can spell it (``f"output_{k}"``)."""
    if isinstance(node, ast.Constant) and node.value == name:
        return True
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        if not parts or not any(isinstance(v, ast.FormattedValue) for v in node.values):
            return False
        first, last = node.values[0], node.values[-1]
        return ((not isinstance(first, ast.Constant) or name.startswith(first.value))
                and (not isinstance(last, ast.Constant) or name.endswith(last.value))
                and all(p in name for p in parts))
    return False


def _reads(expr: ast.AST, name: str, tainted: set[str]) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and (n.id == name or n.id in tainted):
            return True
        if isinstance(n, ast.Attribute) and n.attr == name:
            return True
        if isinstance(n, ast.Call) and n.args and _names_key(n.args[0], name):  # kwargs.get("x"), getattr(c, "x")
            return True
        if isinstance(n, ast.Subscript) and _names_key(n.slice, name):  # kwargs["x"]
            return True
    return False


def _tainted(fn: ast.AST, name: str) -> set[str]:
    """The names ``fn`` computes from the switch (to a fixed point)."""
    out: set[str] = set()
    assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            if not _reads(a.value, name, out):
                continue
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            for t in targets:
                for m in ast.walk(t):
                    if isinstance(m, ast.Name) and m.id not in out:
                        out.add(m.id)
                        changed = True
    return out


def library_switch(b: GraphBreak, ctx: Context) -> Optional[Switch]:
    """The switch of the user's call under which the library code on the way to ``b`` runs, if one is seen."""
    stmt, switches = _switches(b, ctx)
    if not switches:
        return None
    stack = b.user_stack
    mine = max((i for i, f in enumerate(stack) if (f.filename, f.lineno) == (b.frame.filename, b.frame.lineno)), default=-1)
    if mine < 0:
        return None
    for f in stack[mine + 1:]:
        if ctx.report.owner(f.filename) is not Owner.LIBRARY or f.lineno is None:
            continue
        p, at = statement_at(f, ctx)
        if p is None or at is None:
            continue
        fn = p.scope_of(at)
        for anc in p.ancestors(at):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                break
            test = anc.test if isinstance(anc, (ast.If, ast.While, ast.IfExp)) else None
            if test is None:
                continue
            for name, kw in switches.items():
                if _reads(test, name, _tainted(fn, name)):
                    line = UserFrame(f.filename, getattr(anc, "lineno", f.lineno), f.function, p.line(anc.lineno).strip())
                    return Switch(name, bool(kw.value.value), kw, line, p.segment(test))
    return None


def _lever(b: GraphBreak, ctx: Context, sw: Switch) -> Suggestion:
    p, stmt = statement_at(b.frame, ctx)
    code, lines = "", (None, None)
    if p is not None and stmt is not None:
        text = p.segment(stmt)
        old = p.segment(sw.call)
        new = f"{sw.name}={not sw.value}"
        if text.count(old) == 1:
            code, lines = text.replace(old, new), (stmt.lineno, stmt.end_lineno or stmt.lineno)
    user = f"`{b.frame.source_line.strip()}` at {ctx.where(b.frame)}" if b.frame.source_line else ctx.where(b.frame)
    return Suggestion(
        f"`{sw.name}={not sw.value}` in your call: the library code that breaks runs only for "
        f"`{sw.name}={sw.value}`",
        f"{user} passes `{sw.name}={sw.value}`. On the way to this break the library tests it: `{sw.test}` at "
        f"{ctx.where(sw.where)}{' in ' + sw.where.function if sw.where.function else ''}, and the code that breaks "
        f"runs under that condition. It is the library's code, not yours, so the lever you have is its switch: call "
        f"with `{sw.name}={not sw.value}` in the compiled code (the outputs then lack what `{sw.name}` adds), and "
        "make the calls that need it without compiling (`with torch.compiler.set_stance(\"force_eager\"):` around "
        "them). Unverified on your cell: to try; compare the breaks and the outputs.",
        code, Confidence.LOW, Kind.LIBRARY_SWITCH, b.frame.filename if code else "", *lines,
        fix=rewrite(b.frame.filename, *lines, code) if code else None)


def with_switches(report: "CompileReport", ctx: Context) -> "CompileReport":
    """``report`` with the library switch's lever on each break in library code where one is seen: the answer
    where the rules had none (or torch's words only), else added to their words (a rule's own answer, such as
    a warm-up call before compiling, keeps the outputs; the switch drops what it adds)."""
    out = []
    for b in report.graph_breaks:
        s = b.suggestion
        sw = library_switch(b, ctx) if ctx.library(b.stop.filename) else None
        if sw is None:
            out.append(b)
            continue
        lever = _lever(b, ctx, sw)
        if s is None or s.kind in ("unknown", "library_code"):
            if s is not None and s.explanation:
                lever = dataclasses.replace(lever, explanation=lever.explanation + "\n\nWhat the break is: " + s.title
                                            + ". " + s.explanation)
            out.append(dataclasses.replace(b, suggestion=lever))
        else:
            out.append(dataclasses.replace(b, suggestion=dataclasses.replace(
                s, explanation=s.explanation + "\n\nAnother lever: " + lever.title + ". "
                + lever.explanation)))
    return dataclasses.replace(report, graph_breaks=out)
