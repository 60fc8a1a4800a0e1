"""`loss.backward()` in compiled code: the normal end of the forward graph; what compiling
the whole step takes (`torch._dynamo.config.trace_autograd_ops`)."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, uses_after
from ..base import Context, Facts, Rule, path, reset_note, statement_at


def applies(f: Facts) -> bool:
    return f.code == "GB0123" or f.kind.startswith("Unsupported Tensor.backward() call")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    code = "torch._dynamo.config.trace_autograd_ops = True"
    keep = ""
    p, stmt = (None, None) if f.in_library else statement_at(f.stop, ctx)
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and call_name(stmt.value) == "backward"
            and isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name)):
        loss = stmt.value.func.value.id
        scope = p.scope_of(stmt)
        kept = isinstance(scope, ast.Module) or any(
            isinstance(p.parents.get(u), ast.Return) or isinstance(p.parents.get(u), ast.Tuple)
            for u in uses_after(p, stmt, loss))
        if kept:  # a cell's names live on in the notebook: a loss whose graph backward consumed cannot
            keep = (f"\n# {ctx.where(f.stop)}: `{loss}` outlives the compiled code, so drop its graph after backward\n"
                    f"{p.segment(stmt)}\n{loss} = {loss}.detach()")
            code += keep
    return Suggestion(
        "loss.backward() ends the forward graph: the normal boundary of a training step",
        f"`{f.stop.source_line.strip()}` at {path(ctx, f)} runs the backward pass. This break is expected: the "
        "forward before it is one graph, and torch already compiles its backward (AOTAutograd) when it runs; the "
        "optimizer step after it is another graph. Nothing here needs fixing unless you want the whole step in "
        "one graph. For that, torch 2.13 traces backward() itself when "
        "torch._dynamo.config.trace_autograd_ops is True (as autograd.grad and gradient accumulation)"
        + (", and a tensor that outlives the compiled code (a name a %%compile cell assigns is kept in the "
           "notebook; a returned one) must not hold the graph backward used: detach it after backward" if keep else "")
        + ". Compiled autograd (torch._dynamo.config.compiled_autograd = True) also compiles the backward pass "
        "with its hooks. " + reset_note(),
        code, Confidence.MEDIUM, Kind.TRACE_AUTOGRAD_OPS)


RULE = Rule(Kind.TRACE_AUTOGRAD_OPS, "`loss.backward()` in compiled code: the normal end of the forward graph; what "
            "compiling the whole step takes", applies, fix)
