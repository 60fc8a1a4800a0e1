"""Re-running an unchanged cell: the diagnosis of the compiled code that ran.

An unchanged ``%%compile`` cell reuses its compiled function, so torch compiles
nothing and the run's own capture is empty. :func:`diagnosis_for` gives such a run
the report of the run that compiled the code (its compiles, graphs, breaks,
recompiles, kernels and the doctor's findings), marked with
``CompileReport.reused_from``, with this run's profile and trace statistics.
"""

from __future__ import annotations

import dataclasses
from typing import Hashable, Optional

from ..report import CompileReport

#: compiled-cell key -> (the last report that compiled something for it, that run's name)
_origins: dict[Hashable, tuple[CompileReport, str]] = {}


def remember(key: Hashable, report: CompileReport, name: str) -> None:
    """Keep ``report`` as the diagnosis of the compiled code of ``key``, when it compiled something."""
    if not report.compiled_nothing:
        _origins[key] = (report, name)


def diagnosis_for(key: Hashable, report: CompileReport) -> CompileReport:
    """``report`` (which compiled nothing) with the diagnosis of the run that compiled ``key``'s
    code, or ``report`` itself when there is none (or when it compiled something)."""
    origin: Optional[tuple[CompileReport, str]] = _origins.get(key)
    if origin is None or not report.compiled_nothing or report.reused_from:
        return report
    source, name = origin
    return dataclasses.replace(
        source,
        profile=report.profile,
        stats=report.stats,
        sources={**source.sources, **report.sources},
        torch_version=report.torch_version or source.torch_version,
        reused_from=name,
    )


def forget() -> None:
    _origins.clear()
