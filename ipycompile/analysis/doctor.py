"""The doctor: the passes that turn what torch did into what to change.

Each pass is ``(CompileReport) -> CompileReport`` and returns a new report with its
findings in the report's doctor fields (``GraphBreak.suggestion``,
``Failure.suggestion``, ``Recompile.explanation`` / ``.suggestion``,
``CompileReport.unrolled_loops``); a pass never edits the report it is given. A pass
that fails leaves the report as it was and is noted in ``report.stats``: a
diagnosis must never cost the user the report.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

#: The passes, in order. Each module of ``ipycompile.analysis`` that diagnoses
#: something adds its pass here.
PASSES: list[Callable[["CompileReport"], "CompileReport"]] = []


def diagnose(report: "CompileReport") -> "CompileReport":
    """``report`` with every pass applied (a new report; ``report`` is unchanged)."""
    for p in PASSES:
        try:
            report = p(report)
        except Exception as exc:  # noqa: BLE001 - a broken pass must not lose the report
            name = f"doctor:{getattr(p, '__name__', p)}"
            stats = dataclasses.replace(
                report.stats,
                parse_errors={**report.stats.parse_errors, name: report.stats.parse_errors.get(name, 0) + 1},
                errors=[*report.stats.errors, f"{name}: {type(exc).__name__}: {exc}"],
            )
            report = dataclasses.replace(report, stats=stats)
    return report


# -- the passes: one line each ------------------------------------------------------
from .breaks import suggest_break_fixes  # noqa: E402  (a pass module may use this module's helpers)
from .eager_run import find_eager_run  # noqa: E402
from .loops import find_unrolled_loops  # noqa: E402
from .recompiles import explain_recompiles  # noqa: E402
from .semantics import find_eager_differences  # noqa: E402

PASSES.append(suggest_break_fixes)
PASSES.append(explain_recompiles)
PASSES.append(find_unrolled_loops)
PASSES.append(find_eager_differences)
PASSES.append(find_eager_run)  # after the breaks' answers: it reads them
