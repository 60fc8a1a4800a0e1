"""An exception raised in compiled code with no handler there (GB0088, "Observed
exception"): torch stops compiling and the exception goes on.

Whether the code raises the same without torch.compile is said only where the report
shows it: the line torch stopped at is the user's own ``raise`` of that exception. An
exception raised while torch traced a value (``x.data_ptr() % 16`` raises a TypeError
inside Dynamo and not in eager) is torch's, not the code's: then the answer says that
torch does not tell, and how to find out."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Kind, Suggestion
from ...rewrite import call_name
from ..base import Context, Facts, Rule, explained, statement_at



def applies(f: Facts) -> bool:
    return f.code == "GB0088" or f.kind.startswith("Observed exception")


def raised(f: Facts) -> tuple[str, str]:
    """``(type, args)`` of the exception torch names in its context ("" where it names none)."""
    return f.said.raised_type, f.said.raised_args


def users_own_raise(f: Facts, ctx: Context, exc: str) -> bool:
    """The line torch stopped at is a ``raise`` of ``exc`` in the user's own code: the
    evidence that the code raises it without torch.compile too."""
    if f.in_library or not exc:
        return False
    _, stmt = statement_at(f.stop, ctx)
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    e = stmt.exc
    name = call_name(e) if isinstance(e, ast.Call) else (e.id if isinstance(e, ast.Name) else
                                                        e.attr if isinstance(e, ast.Attribute) else "")
    return name == exc


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    exc_type, args = raised(f)
    exc = f"`{exc_type}({args})`" if exc_type else "an exception"
    line = f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)}"
    if users_own_raise(f, ctx, exc_type):
        return explained(
            Kind.RAISED_EXCEPTION, f"The compiled code raises {exc}",
            f"{line} raises {exc} (your own `raise`), and nothing inside the compiled function catches it: torch "
            "stops the graph there and lets the exception go on, as the code does without torch.compile. Nothing "
            "to fix when raising is the intended error path (the caller catches it); if it is not meant, fix it in "
            "the code without torch.compile first.", f)
    return explained(
        Kind.RAISED_EXCEPTION, f"torch raised {exc} while tracing {ctx.where(f.stop)}",
        f"{line} raised {exc} while torch traced it, and nothing inside the compiled function catches it, so "
        "torch stops the graph there. The line is not a `raise` of it in your code: the exception may be "
        "torch's own, raised by its model of a value (a `data_ptr()`, a storage, an object torch does not "
        "trace) where the code without torch.compile raises nothing, or the code's. torch does not say which: "
        "run the code without torch.compile to tell. If it runs there, this break is torch's, and the "
        "expression on that line is what to keep out of the compiled code (compute it outside and pass it "
        "in).", f)


RULE = Rule(Kind.RAISED_EXCEPTION, "an exception raised in compiled code and not caught there: the user's own "
            "`raise` (expected on an error path) or one torch raised while tracing (then torch does not say whether "
            "the code raises it without torch.compile)", applies, fix)
