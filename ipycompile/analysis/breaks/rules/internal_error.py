"""A compile that failed inside Dynamo itself: torch raised an error that is not one of its
own kinds (``AsPythonConstantNotImplementedError``, an ``AttributeError`` in its code) and
handed it to the user's call as ``InternalTorchDynamoError`` (capture decides this:
``Failure.raised_as``). The code is not at fault and no setting of ours is known to help:
the answer says what failed, where, in torch's words, and what the user can do: keep the
line torch failed on out of the compiled code, and report the bug."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.raised_as == "InternalTorchDynamoError"


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    line = f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)}" if f.stop.source_line.strip() else ctx.where(f.stop)
    said = f.text.strip().splitlines()[0] if f.text.strip() else ""
    return explained(
        Kind.INTERNAL_ERROR, f"torch.compile failed inside Dynamo at {ctx.where(f.stop)}: an internal error, "
                             "raised into your call",
        f"While tracing {line}, Dynamo failed with {f.failure_type}" + (f" (torch: \"{said}\")" if said else "")
        + ", which is not an error torch expects to raise: it reaches your call as InternalTorchDynamoError and "
        "nothing was compiled. This is a limitation or a bug of torch.compile, not of your code, and no setting is "
        "known to avoid it. What you can do: compute that line's value outside the compiled function and pass it "
        "in, or keep the function it is in uncompiled (`torch.compiler.disable`); and report it to PyTorch "
        "(https://github.com/pytorch/pytorch/issues) with the code.", f)


RULE = Rule(Kind.INTERNAL_ERROR, "a compile that failed inside Dynamo (InternalTorchDynamoError): torch's words, where, "
            "and how to keep that line out of the compiled code", applies, fix)
