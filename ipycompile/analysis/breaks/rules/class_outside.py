"""A `class` statement inside compiled code (GB8977, `__build_class__`): define the class
once, outside the compiled function."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB8977" or f.kind.startswith("Invalid call to __build_class__")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return explained(
        Kind.CLASS_OUTSIDE, "A class is defined inside the compiled code",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} defines a class while the code is compiled; torch "
        "cannot trace the making of a class, so the graph breaks there. Move the `class` statement out of the "
        "compiled function (to the module, or the cell, level) and use it from there: the class is made once, "
        "and the compiled code only uses it.", f)


RULE = Rule(Kind.CLASS_OUTSIDE, "a `class` statement inside compiled code: define the class outside", applies, fix, user_code=True)
