"""`.item()` / `int(t)` whose Python number is needed (a size, an argument), in the user's
code or a library: `torch._dynamo.config.capture_scalar_outputs = True`.

Only where the line torch stopped at shows the conversion and the tensor it converts
provably holds one element (``x.sum().item()``): with the setting, a conversion of a
tensor of several elements (``x.shape[torch.tensor([1, 1])]``, whose index torch turns
into ``.item()``) makes the compile raise instead of break. Where that cannot be told,
no fix is offered (torch's own words are shown)."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion
from ..base import Context, Facts, Rule, explained, path, reset_note, statement_at
from ._scalar import converted, is_item, is_tolist, one_element, scalar_calls, tolist_calls

CONFIG = Fix(settings=[Setting("dynamo", "capture_scalar_outputs", "True")])


def applies(f: Facts) -> bool:
    return is_item(f) or is_tolist(f)


def _holds(f: Facts, ctx: Context) -> bool:
    """The line converts (``.item()``, ``int(t)``, ``float(t)``) only one-element tensors, or
    is a ``.tolist()`` (each element becomes a symbolic number, whatever the count)."""
    p, stmt = statement_at(f.stop, ctx)
    if stmt is None:
        return False
    if is_tolist(f):
        return bool(tolist_calls(stmt, f.stop.lineno))
    calls = scalar_calls(stmt, f.stop.lineno)
    return bool(calls) and all(one_element(p, converted(c)) for c in calls)


def _value_needed(f: Facts, ctx: Context) -> tuple[int, str]:
    """``(line, code)`` of the first use, after the break's line in its function, that needs the Python value
    of the numbers the line makes: a test on them (``if n > 0:``), ``range(n)``, or an index of one
    (``factors[idx]`` for ``idx`` in ``order = t.tolist()``). With the setting they are symbolic numbers with no
    value while tracing, so such a use raises ``GuardOnDataDependentSymNode`` instead of breaking (kornia's
    ``ColorJitter``: ``for idx in order: factors[idx]``). ``(0, "")`` where there is none."""
    p, stmt = statement_at(f.stop, ctx)
    if p is None or stmt is None:
        return 0, ""
    made = {t.id for t in ast.walk(stmt) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    if not made:
        return 0, ""
    fn = next((a for a in p.ancestors(stmt) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    scope = fn if fn is not None else p.tree
    after = stmt.end_lineno or stmt.lineno
    # the elements of a converted list, one step on: `for idx in order:`
    names = set(made) | {t.id for n in ast.walk(scope) if isinstance(n, ast.For) and n.lineno > after
                         and isinstance(n.iter, ast.Name) and n.iter.id in made
                         for t in ast.walk(n.target) if isinstance(t, ast.Name)}

    def reads(node: ast.AST) -> bool:
        return any(isinstance(m, ast.Name) and m.id in names and isinstance(m.ctx, ast.Load) for m in ast.walk(node))

    # another break of the same code after the line: the code after it is a frame of its own, where the numbers
    # come in as Python values (specialised, not symbolic): a use there needs nothing of the setting
    later_breaks = [b.stop.lineno for b in ctx.report.graph_breaks
                    if b.stop.filename == f.stop.filename and b.stop.lineno is not None and b.stop.lineno > after]
    found: list[tuple[int, str]] = []
    for n in ast.walk(scope):
        line = getattr(n, "lineno", 0)
        if line <= after or any(after < b < line for b in later_breaks):
            continue
        test = n.test if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) else None
        if test is not None and reads(test):
            found.append((n.lineno, p.segment(test)))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" and any(map(reads, n.args)):
            found.append((n.lineno, p.segment(n)))
        elif isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Slice) and isinstance(n.slice, ast.Name) \
                and n.slice.id in names:
            found.append((n.lineno, p.segment(n)))
    return min(found) if found else (0, "")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if f.code == "GB0109":  # torch traces `.tolist()` of integer tensors only: no setting changes that
        return explained(
            Kind.CAPTURE_SCALAR_OUTPUTS, "`.tolist()` of a floating-point tensor: no setting keeps it in the graph",
            f"{path(ctx, f)} calls `.tolist()` on a tensor that is not of an integer dtype; torch traces `.tolist()` "
            "of integer tensors only (as symbolic integers, with `capture_scalar_outputs`), so this one breaks the "
            "graph with that setting or without it. Nothing to fix if the break is affordable; otherwise work on the "
            "tensor itself (tensor operations instead of a Python loop over its values), or convert it outside the "
            "compiled function.", f)
    if not _holds(f, ctx):
        return None
    line, use = _value_needed(f, ctx)
    if use:
        where = "in code you cannot edit" if f.in_library else "in your code"
        return explained(
            Kind.CAPTURE_SCALAR_OUTPUTS,
            f"A tensor turned into Python numbers, then `{use}` at line {line} needs their values: "
            "capture_scalar_outputs is not the fix",
            f"{path(ctx, f)} ({where}) turns a tensor into Python numbers (`{f.stop.source_line.strip()}`). torch's "
            "hint, `capture_scalar_outputs`, would trace them as symbolic numbers with no value while tracing; but "
            f"the code then needs a value (`{use}`, line {line}: a test, a range or an index), so with the setting "
            "the compiled call raises (GuardOnDataDependentSymNode) instead of breaking. Nothing to fix if the break "
            "is affordable (the code after it is compiled on its own).", f)
    if f.in_library:
        return Suggestion.of(
            "Let torch keep the library's .item() in the graph: capture_scalar_outputs",
            f"{path(ctx, f)} turns a tensor into a Python number (`{f.stop.source_line.strip()}`), in code you "
            "cannot edit. With this setting torch traces it as a symbolic number and the graph goes on. "
            + reset_note(), CONFIG, Confidence.MEDIUM, Kind.CAPTURE_SCALAR_OUTPUTS)
    return Suggestion.of(
        "Let torch trace the Python number: capture_scalar_outputs",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} turns a tensor into a Python number, and the code uses it as one (a size, an "
        "argument), not only in tensor arithmetic. With this setting torch traces the number symbolically and the "
        "graph goes on; code that branches on the number still breaks. " + reset_note(),
        CONFIG, Confidence.MEDIUM, Kind.CAPTURE_SCALAR_OUTPUTS)


RULE = Rule(Kind.CAPTURE_SCALAR_OUTPUTS, "`.item()` / `int(t)` / `.tolist()` whose Python numbers are needed: "
            "`torch._dynamo.config.capture_scalar_outputs = True`", applies, fix)
