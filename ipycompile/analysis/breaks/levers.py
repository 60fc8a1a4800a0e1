"""A break in library code with no answer (torch's words, a change to code the user does not own, a branch
inside a library): say so plainly, and give the levers the user always has, each only where the report
shows it applies. A break with torch's words only becomes :data:`Kind.NO_LEVER`; a rule's own words
(``library_code``, ``branch_in_library``) are kept, the levers added to them.

1. A smaller region: the library's modules on the way to each break are read from the report's frames and
   the kept source of their calls (``self.model(...)`` then ``decoder_layer(...)`` looping over
   ``self.layers``: ``model.model.layers[i]``). A submodule of a module on this break's way that another
   break's way enters and this one does not (its parent holds the break, it does not) compiles without it.
2. ``torch.compiler.disable`` around the user's own call into the library: the compiled code then stops
   there by design (a break only: a recompile's guard is not removed by it).
3. The library's version, where its kept source on the way to the break checks one.

Nothing is named that is not in the user's source or the report's frames and kept source.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Optional

from ...report.model import Confidence, GraphBreak, Kind, Suggestion
from ...report.owners import Owner
from .base import Context, statement_at

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["module_path", "with_levers", "NO_ANSWER"]

#: the kinds that leave the user without a lever today: torch's words, a change to code they do not own
NO_ANSWER = (Kind.UNKNOWN, Kind.LIBRARY_CODE, Kind.BRANCH_IN_LIBRARY)

#: a library's own check of a version in its source (transformers' ``is_torch_greater_or_equal("2.5")``,
#: ``version.parse(torch.__version__)``, ``is_torch_flex_attn_available()``)
_VERSION = re.compile(r"(\w*is_\w*(?:version|greater_or_equal|less_than)\w*|\bversion\.parse\b|__version__)")


#: the functions of decorators and torch's module call between a module's call and its ``forward``
_WRAPPERS = ("wrapper", "wrapped_func", "forward_with_checkpointing", "inner", "_call_impl", "_wrapped_call_impl",
             "decorate_context", "_fn")


def _module_call(stack, i: int) -> bool:
    """Frame ``i`` calls an ``nn.Module``: the next frame past decorators and torch's ``Module.__call__`` is a
    ``forward`` (torch does not always keep ``_wrapped_call_impl`` in the stack it reports)."""
    nxt = next((f for f in stack[i + 1:] if f.function not in _WRAPPERS), None)
    return nxt is not None and nxt.function == "forward"


def _callee(call: ast.Call, scope: ast.AST, p) -> Optional[str]:
    """``call``'s module as a path from ``self`` (``.model``, ``.layers[i]``), or the user's own expression
    (``model``) where it is not ``self``'s; None where the source does not say."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return "." + f.attr
    if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name) \
            and f.value.value.id == "self":
        return f".{f.value.attr}[i]"
    if isinstance(f, ast.Name):
        for n in ast.walk(scope):  # ``for layer in self.layers[: n]:`` then ``layer(...)``
            if not isinstance(n, ast.For):
                continue
            it, target = n.iter, n.target
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args \
                    and isinstance(target, ast.Tuple) and len(target.elts) == 2:  # ``for i, layer in enumerate(...)``
                it, target = it.args[0], target.elts[1]
            if isinstance(target, ast.Name) and target.id == f.id:
                it = it.value if isinstance(it, ast.Subscript) else it
                if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == "self":
                    return f".{it.attr}[i]"
        return None
    return None


def _calls_in(stmt: ast.AST) -> list[ast.Call]:
    return sorted((n for n in ast.walk(stmt) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset))


def module_path(b: GraphBreak, ctx: Context) -> list[str]:
    """The modules on the way from the user's call to ``b``, outermost first, as the user names them
    (``["model", "model.model", "model.model.layers[i]"]``); ``[]`` where the user's call is not read."""
    stack = b.user_stack
    mine = max((i for i, f in enumerate(stack) if (f.filename, f.lineno) == (b.frame.filename, b.frame.lineno)),
               default=-1)
    if mine < 0 or not _module_call(stack, mine):
        return []
    p, stmt = statement_at(b.frame, ctx)
    if stmt is None:
        return []
    root = next((p.segment(c.func) for c in _calls_in(stmt)
                 if isinstance(c.func, (ast.Name, ast.Attribute)) and not p.segment(c.func).startswith("torch.")), None)
    if root is None or not re.fullmatch(r"[A-Za-z_][\w.]*", root):
        return []
    out = [root]
    for i in range(mine + 1, len(stack)):
        f = stack[i]
        if ctx.report.owner(f.filename) is not Owner.LIBRARY or f.function in _WRAPPERS or not _module_call(stack, i):
            continue
        fp, at = statement_at(f, ctx)
        if fp is None or at is None:
            break
        scope = fp.scope_of(at)
        names = [n for n in (_callee(c, scope, fp) for c in _calls_in(at)) if n]
        if len(names) != 1:
            break
        out.append(out[-1] + names[0])
    return out


def _region(b: GraphBreak, mine: list[str], paths: list[list[str]]) -> str:
    """A submodule that another break's way enters from a module on ``b``'s way, and ``b``'s does not."""
    best = ""
    for other in paths:
        for j in range(1, len(other)):
            cand = other[j]
            if other[j - 1] in mine and cand not in mine and (not best or len(cand) < len(best)):
                best = cand
    return best


def _version_check(b: GraphBreak, ctx: Context) -> str:
    """The library's version check on the way to ``b``: ``"`line` at file:n"``; "" where none is kept."""
    for f in reversed(b.user_stack):
        if ctx.report.owner(f.filename) is not Owner.LIBRARY:
            continue
        p, at = statement_at(f, ctx)
        if p is None or at is None:
            continue
        for anc in [at, *p.ancestors(at)]:
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            test = getattr(anc, "test", None)
            if isinstance(anc, (ast.If, ast.While, ast.IfExp)) and test is not None and _VERSION.search(p.segment(test)):
                return f"`{p.segment(test)}` at {ctx.report.where(f.filename, anc.lineno)}"
    return ""


def _answer(b: GraphBreak, ctx: Context, paths: list[list[str]]) -> Suggestion:
    s = b.suggestion
    mine = module_path(b, ctx)
    where = ctx.where(b.stop) + (f" in {b.stop.function}" if b.stop.function else "")
    inside = f" inside `{mine[-1]}`" if len(mine) > 1 else ""
    user = f"`{b.frame.source_line.strip()}` ({ctx.where(b.frame)})" if b.frame.source_line else ctx.where(b.frame)
    words = [f"torch stops at {where}{inside}, in library code, reached from your line {user}. Nothing in your "
             "code changes that library code, and no switch of your call is seen to guard it; what you can do:"]
    levers = []
    region = _region(b, mine, paths)
    if region:
        levers.append(f"Compile a smaller region: `{region}` (each of them, where it is a list of layers) does not "
                      f"contain this break, while `{mine[-2] if len(mine) > 1 else mine[0]}` does. Compile it "
                      f"alone (`.compile()` on it) and call `{mine[0]}` without compiling it: this break then runs "
                      "as ordinary Python between compiled regions.")
    p, stmt = statement_at(b.frame, ctx)
    if mine and p is not None and stmt is not None:
        call = next((c for c in _calls_in(stmt) if p.segment(c.func) == mine[0]), None)
        if call is not None:
            levers.append(f"Stop the compiled code at your call by design: `torch.compiler.disable({mine[0]})(...)` "
                          f"in place of `{mine[0]}(...)` on your line. The library then runs uncompiled, and what "
                          "your compiled code does around that line stays compiled.")
    version = _version_check(b, ctx)
    if version:
        levers.append(f"The library's version: on the way to this break it checks its version ({version}); "
                      "another version may take a path without this break.")
    if not levers:
        words.append("- none that the report shows: keep the library call outside the compiled code, or report "
                     "the break to the library's maintainers.")
    words += [f"- {x}" for x in levers]
    if s is not None and s.kind != Kind.UNKNOWN:  # a rule's own words (a branch in a library): kept, levers added
        return dataclasses.replace(s, explanation=s.explanation + "\n\nThe levers you have:\n"
                                   + "\n".join(words[1:]))
    if s is not None and s.explanation:
        said = [x for x in s.explanation.split("\n\n") if not x.startswith("ipycompile knows no")]
        words.append("What the break is: " + "\n\n".join(said))
    return Suggestion(f"No lever in your code: the break is in library code ({ctx.where(b.stop)})",
                      "\n\n".join(words), "", Confidence.LOW, Kind.NO_LEVER)


def with_levers(report: "CompileReport", ctx: Context) -> "CompileReport":
    """``report`` with :data:`Kind.NO_LEVER` answers for breaks in library code that have none of their own."""
    todo = [i for i, b in enumerate(report.graph_breaks)
            if ctx.library(b.stop.filename) and (b.suggestion is None or (b.suggestion.kind in NO_ANSWER
                                                                          and not b.suggestion.code))]
    if not todo:
        return report
    paths = [module_path(b, ctx) for b in report.graph_breaks]
    out = list(report.graph_breaks)
    for i in todo:
        out[i] = dataclasses.replace(out[i], suggestion=_answer(out[i], ctx, paths))
    return dataclasses.replace(report, graph_breaks=out)
