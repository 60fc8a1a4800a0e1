"""An unsupported context manager in the user's code: run the `with` outside the compiled
code and compile its body."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion, UserFrame
from ...rewrite import defined_before, free_name, loads, stores, taken_names, uses_after
from ...source import Parsed
from ..base import Context, Facts, Rule, parsed_at
from ._calls import in_with_items, is_unsupported_call, user_call


def _is_context_manager(f: Facts) -> bool:
    # torch 2.14 enters a context manager made outside the compiled code by inlining its `__enter__`,
    # which it skips (GB0008 on `set_grad_enabled.__enter__`) where 2.13 said "Unsupported context manager"
    return (f.code in ("GB0142", "GB0221", "GB0274") or f.kind.startswith("Unsupported context manager")
            or f.stop.function in ("__enter__", "__exit__") or f.said.inline_skipped_name in ("__enter__", "__exit__"))


def applies(f: Facts) -> bool:
    return _is_context_manager(f) or is_unsupported_call(f)  # `with open(...)`: the call is in the `with` line


def _with_statement(f: Facts, ctx: Context) -> Optional[tuple[Parsed, ast.With, UserFrame]]:
    frames = [f.stop] + [fr for fr in reversed(f.stack) if fr is not f.stop]
    for fr in frames:
        if ctx.library(fr.filename):
            continue
        p = parsed_at(fr, ctx)
        if p is None:
            continue
        for s in reversed(p.statements_at(fr.lineno)):
            if isinstance(s, ast.With) and s.lineno <= fr.lineno <= (s.items[-1].context_expr.end_lineno or s.lineno):
                return p, s, fr
    return None


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if not _is_context_manager(f):
        found = user_call(f, ctx)
        if found is None or not in_with_items(found[1], found[2]):
            return None
    found = _with_statement(f, ctx)
    if found is None:
        return None
    p, w, fr = found
    before = set(defined_before(p, w))
    operands = [n for n in loads(w.body) if n in before and n != "self"]
    assigned = stores(w.body)
    used_after = [n for n in assigned if uses_after(p, w, n)]
    outputs = used_after or assigned
    scope = p.scope_of(w)
    base = scope.name if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else "cell"
    name = free_name(f"{base}_body", taken_names(p))
    items = ", ".join(p.segment(i) for i in w.items)
    body = textwrap.indent(p.block_text(w.body), "    ")
    lines = ["@torch.compile", f"def {name}({', '.join(operands)}):", body]
    if outputs:
        lines.append(f"    return {', '.join(outputs)}")
    call = f"{name}({', '.join(operands)})"
    lines += [f"with {items}:", f"    {', '.join(outputs) + ' = ' if outputs else ''}{call}"]
    return Suggestion(
        f"Run the `with` at {ctx.where(fr)} outside the compiled code; compile its body",
        f"`with {items}:` enters a context manager torch cannot trace ({f.kind}), so torch gives up on "
        "that code. Keep the `with` in plain Python (a cell without %%compile, or outside the function you "
        f"compile) and compile what its block computes, `{name}`.",
        "\n".join(lines), Confidence.MEDIUM, Kind.WITH_OUTSIDE)


RULE = Rule(Kind.WITH_OUTSIDE, "an unsupported context manager in the user's code: run the `with` outside, compile its body",
            applies, fix)
