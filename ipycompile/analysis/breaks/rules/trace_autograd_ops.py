"""`loss.backward()` in compiled code: the normal end of the forward graph; what compiling
the whole step takes (`torch._dynamo.config.trace_autograd_ops`)."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion
from ...rewrite import call_name, scope_body, uses_after, walk_scope
from ..base import Context, Facts, Rule, path, reset_note, statement_at


def applies(f: Facts) -> bool:
    return is_backward(f) or is_grad(f)


def is_backward(f: Facts) -> bool:
    return f.code == "GB0123" or f.kind.startswith("Unsupported Tensor.backward() call")


#: the setting alone, as a record (code with more than it is not one to apply as it stands)
SETTING = Fix(settings=[Setting("dynamo", "trace_autograd_ops", "True")])


def is_grad(f: Facts) -> bool:
    """``torch.autograd.grad`` with ``trace_autograd_ops`` off (GB9186)."""
    return f.code == "GB9186" or f.kind.startswith("using `torch.autograd.grad`")


def _grad_fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    """``torch.autograd.grad(loss, w)``: the setting, and the output detached after the call where
    it outlives the compiled code (torch refuses to return a tensor whose graph grad consumed)."""
    code = "torch._dynamo.config.trace_autograd_ops = True"
    p, stmt = (None, None) if f.in_library else statement_at(f.stop, ctx)
    grad = next((n for n in ast.walk(stmt) if isinstance(n, ast.Call) and call_name(n) == "grad"), None) \
        if stmt is not None else None
    if grad is None or len(grad.args) < 2 or not isinstance(grad.args[1], (ast.Name, ast.Attribute, ast.List, ast.Tuple)):
        # torch traces grad() of tensors or a list of them; `inputs=model.parameters()` (a generator) is not
        # one (GB6663): the setting alone moves the break, and no rewrite is checked here
        return None
    if isinstance(grad.args[0], ast.Name) and isinstance(stmt, ast.Assign):
        out = grad.args[0].id
        scope = p.scope_of(stmt)
        kept = isinstance(scope, ast.Module) or any(
            isinstance(p.parents.get(u), (ast.Return, ast.Tuple)) for u in uses_after(p, stmt, out))
        if kept:
            code += (f"\n# {ctx.where(f.stop)}: `{out}` outlives the compiled code, so drop its graph after grad\n"
                     f"{p.segment(stmt)}\n{out} = {out}.detach()")
    return Suggestion(
        "Let torch trace torch.autograd.grad: trace_autograd_ops",
        f"`{f.stop.source_line.strip()}` at {path(ctx, f)} computes gradients with torch.autograd.grad, which torch "
        "2.13 traces into the graph when torch._dynamo.config.trace_autograd_ops is True (torch's own hint). A "
        "tensor that outlives the compiled code (a name a %%compile cell assigns is kept in the notebook; a "
        "returned one) must not hold the graph grad used: detach it after the call. " + reset_note(),
        code, Confidence.MEDIUM, Kind.TRACE_AUTOGRAD_OPS, fix=SETTING if code == SETTING.code else None)


def _grads_read_after(p, stmt: ast.stmt) -> str:
    """The first code after ``stmt`` (a ``backward()``) in its scope that reads the gradients it computes (an
    optimizer's ``step()``, ``clip_grad_norm_``, a ``.grad``), as its source; "" where none does."""
    _, body = scope_body(p, stmt)
    end = stmt.end_lineno or stmt.lineno
    for n in walk_scope(body):
        if getattr(n, "lineno", 0) <= end:
            continue
        if isinstance(n, ast.Call) and (call_name(n) == "step" or "clip_grad" in call_name(n)):
            return ast.unparse(n)
        if isinstance(n, ast.Attribute) and n.attr == "grad" and isinstance(n.ctx, ast.Load):
            return ast.unparse(n)
    return ""


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if is_grad(f):
        return _grad_fix(f, ctx)
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
        read = _grads_read_after(p, stmt)
        if read:  # a silent change: traced, the code after backward may not see its gradients
            keep = (f" Not as code here: `{read}` after it, in the same compiled code, reads the gradients, and with "
                    "the setting torch (2.13 and 2.14, tried) can leave that line without them: the optimizer step "
                    "then leaves the weights as they were, silently (seen with a `zero_grad()` between the forward "
                    "and backward(), and in a GPyTorch training step). Keep this break (it is the normal boundary "
                    "of a training step); to try the setting anyway, compare the weights after a few steps with "
                    "eager's")
            code = ""
        elif kept:  # a cell's names live on in the notebook: a loss whose graph backward consumed cannot
            # outlive the compiled code (torch breaks the graph there instead, GB4927), so the setting alone is
            # no fix, and the setting with a line of the user's rewritten is not one fix that applies as one:
            # the way is in words, at the user's line
            keep = (f" Here `{loss}` outlives the compiled code, so the setting alone only moves the break (torch "
                    f"refuses to return a tensor whose graph backward consumed): with the setting, add "
                    f"`{loss} = {loss}.detach()` after `{p.segment(stmt).strip()}` ({ctx.where(f.stop)})")
            code = ""
    return Suggestion(
        "loss.backward() ends the forward graph: the normal boundary of a training step",
        f"`{f.stop.source_line.strip()}` at {path(ctx, f)} runs the backward pass. This break is expected: the "
        "forward before it is one graph, and torch already compiles its backward (AOTAutograd) when it runs; the "
        "optimizer step after it is another graph. Nothing here needs fixing unless you want the whole step in "
        "one graph. For that, torch 2.13 traces backward() itself when "
        "torch._dynamo.config.trace_autograd_ops is True (as autograd.grad and gradient accumulation)"
        + ("." + keep if keep else "")
        + ". Compiled autograd (torch._dynamo.config.compiled_autograd = True) also compiles the backward pass "
        "with its hooks. " + reset_note(),
        code, Confidence.MEDIUM, Kind.TRACE_AUTOGRAD_OPS, fix=SETTING if code == SETTING.code else None)


RULE = Rule(Kind.TRACE_AUTOGRAD_OPS, "`loss.backward()` in compiled code: the normal end of the forward graph; what "
            "compiling the whole step takes; `torch.autograd.grad`: `trace_autograd_ops = True`", applies, fix)
