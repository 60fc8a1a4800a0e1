"""A call torch cannot trace that does not use the tensors (a timer, a process id, a seed)
and whose result is not used: move it out of the compiled code, and say where.

Not for a method of an object (``opt.step()``, ``sched.step()``: torch names a qualname
``Adam.step``): it works on its object, so "it does not use your tensors" cannot be told,
and commenting it out removes the work. Not for a call whose place matters and cannot be
kept: a seed (``torch.manual_seed``) goes before the compiled code, since the random numbers
drawn after it come from it; where random numbers are drawn before it in the same code,
neither place keeps them, and no fix is offered. Not when an assignment of the call's value
is all the compiled code does (``def debug(): start = time.time()``): moving it out would
leave a compiled function with no work (its work removed, not fixed); nor when the call itself is
all the compiled code does (``def fn(): torch._dynamo.disable()``): the rewrite would leave the compiled
function empty, so what it did is no longer compiled but gone from it. Only a call whose effect is
output (``warnings.warn(...)``, ``print``, a log call) still moves there, its output kept outside."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.fix import rewrite
from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import call_name, commented_out, scope_body, uses_after, walk_scope
from ..base import Context, Facts, Rule
from ._calls import in_with_items, is_method, is_unsupported_call, user_call, uses_values

#: Calls that set the state random numbers are drawn from.
SEEDS = {"manual_seed", "seed", "manual_seed_all", "set_rng_state", "set_state", "setstate"}
#: Calls that draw random numbers.
DRAWS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "normal_",
         "uniform_", "bernoulli", "bernoulli_", "multinomial", "dropout", "random_", "exponential_", "choice",
         "random", "shuffle", "sample", "permutation"}
#: Calls whose only effect is output: moved out, the output is the same, wherever the call is made.
OUTPUT_ONLY = {"warn", "print", "debug", "info", "warning", "error", "critical", "exception", "log"}


def applies(f: Facts) -> bool:
    return is_unsupported_call(f) and not f.in_library


def _place(p, stmt: ast.stmt, name: str) -> Optional[str]:
    """Where the moved call goes: "before" or "after" the compiled code, with why; None when
    neither keeps the results (a seed after random draws), or when assigning the call's value is
    all the compiled code does (``def debug(): start = time.time()``: moving it out leaves nothing)."""
    _, body = scope_body(p, stmt)
    top = next((s for s in body if s is stmt or stmt in walk_scope([s])), stmt)
    i = body.index(top) if top in body else 0
    before, after = body[:i], body[i + 1:]
    rest = [s for s in before + after if not _inert(s)]
    if not rest and not isinstance(top, ast.Expr):
        return None  # its value was all the code computed: moving the call out leaves nothing (the work removed)
    if not rest and name not in OUTPUT_ONLY:
        return None  # the call is all the compiled code does: moving it out leaves an empty function
    if name in SEEDS:
        draws = [n for n in walk_scope(before) if isinstance(n, ast.Call) and call_name(n) in DRAWS]
        if draws:
            return None
        return ("before the compiled code: it seeds the random numbers the code after it draws (called after "
                "the compiled code, they would come from another state and change)")
    if not before:
        return "before the compiled code, where it ran first"
    if not after:
        return "after the compiled code, where it ran last"
    return "before the compiled code (it uses none of your values, so its place changes none of your results)"


def _inert(s: ast.stmt) -> bool:
    """``pass``, a docstring, ``...``: a statement that does no work."""
    return isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    found = user_call(f, ctx)
    if found is None or is_method(f):
        return None
    p, stmt, call, full = found
    if in_with_items(stmt, call) or uses_values(call):
        return None
    unused = isinstance(stmt, ast.Expr) or (
        isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) and not uses_after(p, stmt, t.id) for t in stmt.targets))
    if not unused:
        return None
    where = _place(p, stmt, call_name(call))
    if where is None:
        return None
    text = p.segment(stmt).replace("\n", " ")
    return Suggestion.of(
        f"Move `{p.segment(call)}` out of the compiled code",
        f"`{text}` at {ctx.where(f.stop)} calls `{full}`, which torch cannot trace, and it does not use your "
        f"tensors: call it {where}.",
        rewrite(f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno,
                commented_out(p, stmt, "moved: call it outside the compiled code"), moved=text),
        Confidence.HIGH, Kind.MOVE_OUT)


RULE = Rule(Kind.MOVE_OUT, "a function call that does not use the tensors (a timer, a process id, a seed): move it "
            "out of the compiled code, before or after as its place requires", applies, fix)
