"""A compile that failed inside Dynamo itself, the error torch's and not the code's:

- an error that is not one of torch's own kinds (``AsPythonConstantNotImplementedError``,
  an ``AttributeError`` in its code), handed to the user's call as
  ``InternalTorchDynamoError`` (capture decides this: ``Failure.raised_as``);
- an ``AssertionError`` raised by Dynamo's own check (``Failure.raised_by_torch``: the
  innermost frame of torch's traceback is torch's) on a line of the user's that has no
  ``assert`` and calls nothing (``a, b = x`` on a 0-d tensor: "Can't unpack scalar
  tensors."): without torch.compile that line cannot raise an AssertionError, so the
  compiled call's result (the exception it raises) differs from eager's.

The code is not at fault for the first, and no setting of ours is known to help: the answer
says what failed, where, in torch's words, and what the user can do: keep the line torch
failed on out of the compiled code, and report the bug."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained, statement_at


def applies(f: Facts) -> bool:
    return f.raised_as == "InternalTorchDynamoError" or (f.failure_type == "AssertionError" and f.raised_by_torch)


def _cannot_assert(f: Facts, ctx: Context) -> bool:
    """The user's line torch failed on has no ``assert`` and calls nothing (so without
    torch.compile it cannot raise an AssertionError)."""
    if f.in_library:
        return False
    _, stmt = statement_at(f.stop, ctx)
    return stmt is not None and not any(isinstance(n, (ast.Assert, ast.Call, ast.Raise)) for n in ast.walk(stmt))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    line = f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)}" if f.stop.source_line.strip() else ctx.where(f.stop)
    said = f.text.strip().splitlines()[0] if f.text.strip() else ""
    torch_said = f" (torch: \"{said}\")" if said else ""
    if f.raised_as != "InternalTorchDynamoError":
        if not _cannot_assert(f, ctx):
            return None
        return explained(
            Kind.INTERNAL_ERROR, f"The compiled call's result differs from eager's: torch raised its own AssertionError "
                                 f"at {ctx.where(f.stop)}",
            f"While tracing {line}, a check of Dynamo's failed{torch_said} and it raised AssertionError into your call. "
            "The line has no `assert` and calls nothing, so without torch.compile it cannot raise an AssertionError: "
            "it runs, or raises Python's own error for the same value (a TypeError or ValueError), and code that "
            "catches that error sees another one here. Fix what torch names in your code (the value's type or shape "
            "at that line), or compute that line outside the compiled function.", f)
    return explained(
        Kind.INTERNAL_ERROR, f"torch.compile failed inside Dynamo at {ctx.where(f.stop)}: an internal error, "
                             "raised into your call",
        f"While tracing {line}, Dynamo failed with {f.failure_type}{torch_said}, which is not an error torch expects "
        "to raise: it reaches your call as InternalTorchDynamoError and nothing was compiled. This is a limitation or "
        "a bug of torch.compile, not of your code, and no setting is known to avoid it. What you can do: compute that "
        "line's value outside the compiled function and pass it in, or keep the function it is in uncompiled "
        "(`torch.compiler.disable`); and report it to PyTorch (https://github.com/pytorch/pytorch/issues) with the "
        "code.", f)


RULE = Rule(Kind.INTERNAL_ERROR, "a compile that failed inside Dynamo (InternalTorchDynamoError, or an AssertionError of "
            "torch's own on a line that cannot assert): torch's words, where, and what to change", applies, fix)
