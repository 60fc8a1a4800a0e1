"""`print` or `logging.<level>` of tensors and constants: torch can call it after the
graph (`torch._dynamo.config.reorderable_logging_functions`)."""

from __future__ import annotations

import re
from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion, UserFrame
from ..base import Context, Facts, Rule, path, reset_note
from ._print import is_print, reorderable

_LOG_FN = re.compile(r"\blogging\.(?P<fn>debug|info|warning|warn|error|critical|exception|log)\s*\(")


def _logging_call_frame(f: Facts) -> Optional[UserFrame]:
    """The frame whose line calls ``logging.<level>(...)``: where torch stopped, or the
    user's line when torch stopped inside the logging module itself."""
    for fr in (f.stop, f.user):
        if _LOG_FN.search(fr.source_line or ""):
            return fr
    return None


def applies(f: Facts) -> bool:
    return (is_print(f) and reorderable(f)) or _logging_call_frame(f) is not None


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if is_print(f) and reorderable(f):
        return Suggestion.of(
            "Let torch print after the graph: reorderable_logging_functions",
            f"`{f.stop.source_line.strip()}` at {path(ctx, f)} prints tensors and constants only; torch can move the "
            "print to after the graph, with the values it had, instead of breaking the graph. The line prints after "
            "the compiled code's other effects. Or remove the print from the compiled code. " + reset_note(),
            Fix(settings=[Setting("dynamo", "reorderable_logging_functions", "print", "add")]), Confidence.HIGH,
            Kind.REORDERABLE_LOGGING_FUNCTIONS)
    fr = _logging_call_frame(f)
    if fr is None:
        return None
    fn = _LOG_FN.search(fr.source_line).group("fn")
    return Suggestion.of(
        f"Let torch log after the graph: reorderable_logging_functions.add(logging.{fn})",
        f"`{fr.source_line.strip()}` at {ctx.where(fr)} logs through the logging module, which torch cannot trace. "
        f"When its arguments are tensors and constants, torch can move the call to after the graph instead. Or "
        "remove it from the compiled code. " + reset_note(),
        Fix(imports=["import logging", "import torch"],
            settings=[Setting("dynamo", "reorderable_logging_functions", f"logging.{fn}", "add")]),
        Confidence.MEDIUM, Kind.REORDERABLE_LOGGING_FUNCTIONS)


RULE = Rule(Kind.REORDERABLE_LOGGING_FUNCTIONS, "`print` / `logging.<level>` of tensors and constants: "
            "`torch._dynamo.config.reorderable_logging_functions`", applies, fix)
