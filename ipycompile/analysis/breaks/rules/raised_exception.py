"""An exception raised in compiled code with no handler there (GB0088, "Observed
exception"): torch stops compiling and the exception goes on as in eager."""

from __future__ import annotations

import re
from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained

_RAISED = re.compile(r"raised exception (?P<exc>\w+)\((?P<args>.*)\)\s*$", re.S)


def applies(f: Facts) -> bool:
    return f.code == "GB0088" or f.kind.startswith("Observed exception")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    m = _RAISED.search(f.context.strip())
    exc = f"`{m.group('exc')}({m.group('args')})`" if m else "an exception"
    return explained(
        Kind.RAISED_EXCEPTION, f"The compiled code raises {exc}",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} raises {exc}, and nothing inside the compiled "
        "function catches it: torch stops the graph there and lets the exception go on, as it would without "
        "compiling. Nothing to fix when raising is the intended error path (the caller catches it). If the "
        "exception is not meant (a TypeError from `__bool__`, a ValueError from unpacking a tensor of the wrong "
        "size), the code raises the same without torch.compile: fix it there first.", f)


RULE = Rule(Kind.RAISED_EXCEPTION, "an exception raised in compiled code and not caught there: expected on an error path; "
            "else fix it in eager", applies, fix)
