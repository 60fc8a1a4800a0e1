"""The doctor: the passes that turn what torch did into what to change.

Each pass is ``(CompileReport) -> CompileReport`` and returns a new report with its
findings in the report's doctor fields (``GraphBreak.suggestion``,
``Failure.suggestion``, ``Recompile.explanation`` / ``.suggestion``,
``CompileReport.unrolled_loops``); a pass never edits the report it is given. A pass
that fails leaves the report as it was and is noted in ``report.stats``; inside a pass each
rule and each item is guarded on its own and every exception is counted there too
(``doctor:<where>`` in ``stats.parse_errors`` / ``stats.errors``, :func:`doctor_errors`), shown in the
report's details: a diagnosis must never cost the user the report, nor one rule's failure the other answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

from .errors import PREFIX, doctor_errors, noted  # noqa: E402,F401  (the doctor's own errors, counted)

#: The passes, in order. Each module of ``ipycompile.analysis`` that diagnoses
#: something adds its pass here.
PASSES: list[Callable[["CompileReport"], "CompileReport"]] = []


def diagnose(report: "CompileReport") -> "CompileReport":
    """``report`` with every pass applied (a new report; ``report`` is unchanged). A pass that raises leaves the
    report as it was; inside a pass, each rule and each item (a recompile, a break) is guarded on its own, so one
    failure loses one answer, never the others: every failure is counted (:func:`noted`, :func:`doctor_errors`)."""
    for p in PASSES:
        try:
            report = p(report)
        except Exception as exc:  # noqa: BLE001 - a broken pass must not lose the report
            report = noted(report, getattr(p, "__name__", str(p)), [exc])
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
