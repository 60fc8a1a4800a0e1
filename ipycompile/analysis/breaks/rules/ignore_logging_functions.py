"""A `logging.Logger` method called in compiled code (the user's or a library's): the
exact bound method for `torch._dynamo.config.ignore_logging_functions`."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion
from ..base import Context, Facts, Rule, path, reset_note



def applies(f: Facts) -> bool:
    return f.code == "GB0291" or bool(f.said.logger_method)


def _torch_before(version: str, limit: tuple[int, int]) -> bool:
    parts = (version or "").split(".")[:2]  # "2.13.0+cpu" (the report's torch version, not torch's text)
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        return False
    return (int(parts[0]), int(parts[1])) < limit


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    d = f.said
    if not d.logger_method:
        return None
    name, method = d.logger_name, d.logger_method
    logger = "logging.getLogger()" if d.logger_class == "RootLogger" else f'logging.getLogger("{name}")'
    said = f" (“{d.logger_message}”)" if d.logger_message else ""
    code = Fix(imports=["import logging", "import torch"],
               settings=[Setting("dynamo", "ignore_logging_functions", f"{logger}.{method}", "add")])
    if f.in_library:
        head = (f"{path(ctx, f)} calls `{method}` on the logger '{name}'{said}: library code you cannot edit. "
                "torch cannot trace a logging call, so the graph breaks there.")
        title = f"Ignore the library's `{name}` logger call `{method}` in compiled code"
    else:
        head = (f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls `{method}` on the logger '{name}'{said}; "
                "torch cannot trace a logging call, so the graph breaks there. Or move the call out of the compiled code.")
        title = f"Ignore the `{name}` logger's `{method}` in compiled code"
    old_torch = ""
    if _torch_before(ctx.report.torch_version, (2, 13)):
        old_torch = (" On torch 2.11 (seen on 2.11.0) torch then fails to log its compile metrics while the set "
                     "holds a callable (its config logging cannot serialize it): the code compiles without the break, "
                     "but a report of it lacks those compiles' times and statuses.")
    return Suggestion.of(
        title,
        head + f" Adding `{logger}.{method}` (exactly this logger's method) to "
        "torch._dynamo.config.ignore_logging_functions makes the call a no-op in compiled code: the message is "
        "not logged from compiled code (it still is when the code runs uncompiled). " + reset_note() + old_torch,
        code, Confidence.HIGH, Kind.IGNORE_LOGGING_FUNCTIONS)


RULE = Rule(Kind.IGNORE_LOGGING_FUNCTIONS, "a `logging.Logger` method (in the user's code or a library): the exact bound "
            "method for `torch._dynamo.config.ignore_logging_functions`", applies, fix)
