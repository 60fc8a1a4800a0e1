"""A fix for each graph break and failure, written against the user's own code.

:func:`suggest_break_fixes` is a doctor pass (see :mod:`..doctor`): it sets
``GraphBreak.suggestion`` and ``Failure.suggestion`` from what torch said (the break
kind, its developer context: read by capture, carried by the report) and the user's
source the report kept (``CompileReport.source_context``). A suggestion fits where the
break is: a rewrite of the user's own lines when the break is in the user's code; a
setting, or a named, importable callable, when it is in a library the user cannot edit.
A break no rule fits gets torch's own explanation and hints, and says that no specific
fix is known (``kind == "unknown"``).

The rules are modules of :mod:`.rules`, listed once in :data:`.rules.RULES`; the
table of kinds, :data:`KINDS`, is derived from that list. Each kind is proven by a test
that applies the fix and shows the break gone with the same outputs
(tests/test_doctor_breaks.py).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Optional

from ...report.model import Failure, GraphBreak, Kind, Suggestion
from ..source import Sources
from .base import Context, Facts, Rule, unknown
from .rules import RULES

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["suggest_break_fixes", "suggest_for_break", "suggest_for_failure", "KINDS", "RULES", "Rule"]

#: Every kind of suggestion this pass makes, with what it means: one per rule, and ``unknown``.
KINDS: dict[str, str] = {
    **{str(r.kind): r.doc for r in RULES},
    str(Kind.UNKNOWN): "a kind the doctor does not know: torch's own explanation and hints, no specific fix",
}


def suggest_break_fixes(report: "CompileReport") -> "CompileReport":
    """The doctor pass: ``report`` with a :class:`Suggestion` on every graph break and
    failure (a new report; ``report`` is unchanged)."""
    ctx = Context(report, Sources(report))
    breaks = [dataclasses.replace(b, suggestion=_guarded(lambda b=b: suggest_for_break(b, ctx), Facts.of_break(b, ctx)))
              for b in report.graph_breaks]
    failures = []
    for f in report.failures:
        if _is_recompile_limit(f):  # recompiles are diagnosed by their own pass
            failures.append(dataclasses.replace(f))
            continue
        failures.append(dataclasses.replace(f, suggestion=_guarded(lambda f=f: suggest_for_failure(f, ctx),
                                                                   Facts.of_failure(f, ctx))))
    return dataclasses.replace(report, graph_breaks=breaks, failures=failures)


def suggest_for_break(b: GraphBreak, ctx: Context) -> Suggestion:
    """The suggestion for one graph break."""
    return suggest(Facts.of_break(b, ctx), ctx)


def suggest_for_failure(f: Failure, ctx: Context) -> Suggestion:
    """The suggestion for one failed compile (e.g. a higher-order-op error, a break under fullgraph)."""
    return suggest(Facts.of_failure(f, ctx), ctx)


def suggest(facts: Facts, ctx: Context) -> Suggestion:
    """The first rule that applies and whose fix holds in the user's code; else torch's words."""
    for rule in RULES:
        if rule.applies(facts):
            s = rule.fix(facts, ctx)
            if s is not None:
                return s
    return unknown(facts)


def _guarded(make: Callable[[], Suggestion], facts: Optional[Facts]) -> Suggestion:
    try:
        s = make()
    except Exception:  # noqa: BLE001 - a fix we cannot build falls back to torch's words
        s = None
    return s if s is not None else unknown(facts)


def _is_recompile_limit(f: Failure) -> bool:
    return f.limit_hit or f.gb_code == "GB0039"  # capture decides it (reports saved before: GB0039 is the limit's code)
