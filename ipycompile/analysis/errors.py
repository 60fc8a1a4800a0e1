"""The doctor's own errors: every exception a pass or rule catches is counted in the report
(``report.stats``, under ``doctor:<pass or rule>``), so that its details say an answer is missing.
Its own module so that the passes (``recompiles``, ``semantics.py``, ``breaks``) count their
errors without importing the doctor that runs them."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["PREFIX", "noted", "doctor_errors"]

#: the prefix of the doctor's own errors in ``report.stats`` (``parse_errors`` counts, ``errors`` lines)
PREFIX = "doctor:"


def noted(report: "CompileReport", where: str, errors: "list[BaseException] | list[tuple[str, BaseException]]") -> "CompileReport":
    """``report`` with each of ``errors`` counted under ``doctor:<where>`` (a new report; the stats copied):
    every exception the doctor catches is counted, so that the report's details say an answer is missing."""
    if not errors:
        return report
    counts, lines = dict(report.stats.parse_errors), list(report.stats.errors)
    for e in errors:
        at, exc = e if isinstance(e, tuple) else (where, e)
        name = f"{PREFIX}{at}"
        counts[name] = counts.get(name, 0) + 1
        lines.append(f"{name}: {type(exc).__name__}: {exc}")
    return dataclasses.replace(report, stats=dataclasses.replace(report.stats, parse_errors=counts, errors=lines))


def doctor_errors(report: "CompileReport") -> list[str]:
    """The doctor's own errors in ``report`` (``doctor:<pass or rule>: Type: message``), each a missing answer."""
    return [e for e in report.stats.errors if e.startswith(PREFIX)]
