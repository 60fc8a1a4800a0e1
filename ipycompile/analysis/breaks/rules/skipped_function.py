"""A call to a function torch skips (GB0007, GB0008: the standard library, `unittest`, parts of
torch) that no rewrite of ours moves out: say which, and the two ways on."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained
from ._calls import callee, is_unsupported_call


def applies(f: Facts) -> bool:
    return is_unsupported_call(f) and f.code in ("GB0007", "GB0008")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    name, full = callee(f)
    fn = f"`{full}`" if full else "a function torch skips"
    return explained(
        Kind.SKIPPED_FUNCTION, f"torch does not trace into {fn}",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls {fn}, which torch deliberately does not "
        "trace (its module is on torch's skip list), so the graph breaks at the call. Call it outside the "
        "compiled code where you can (before the call, passing its result in); if it only works on tensors and "
        f"you need it inside, `@torch._dynamo.dont_skip_tracing` on {'`' + name + '`' if name else 'it'} makes "
        "torch try to trace it (more breaks may follow).", f)


RULE = Rule(Kind.SKIPPED_FUNCTION, "a call to a function torch skips (stdlib, unittest): call it outside, or "
            "`dont_skip_tracing`", applies, fix)
