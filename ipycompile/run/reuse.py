"""Re-running an unchanged cell: the diagnosis of the compiled code that ran.

An unchanged ``%%compile`` cell reuses its compiled function, so torch compiles
nothing and the run's own capture is empty. :func:`diagnosis_for` gives such a run
the report of the run that compiled the code (its compiles, graphs, breaks,
recompiles, kernels and the doctor's findings), marked with
``CompileReport.reused_from``, with this run's profile and trace statistics.

When an unchanged cell recompiles instead (a guard failed), the guards that failed
belong to compiles of earlier runs; :func:`with_earlier_guards` adds them, so the
doctor shows the failed guard beside the new one.
"""

from __future__ import annotations

import dataclasses
from typing import Hashable, Optional

from ..analysis.recompiles import explain_recompiles
from ..report import CompileId, CompileReport, GuardSet

#: compiled-cell key -> (the last report that compiled something for it, that run's name)
_origins: dict[Hashable, tuple[CompileReport, str]] = {}
#: compiled-cell key -> the guards of every compile of it seen so far
_guards: dict[Hashable, dict[CompileId, GuardSet]] = {}


def remember(key: Hashable, report: CompileReport, name: str) -> None:
    """Keep ``report`` as the diagnosis of the compiled code of ``key``, when it compiled something."""
    if not report.compiled_nothing:
        _origins[key] = (report, name)
        _guards.setdefault(key, {}).update({g.compile_id: g for g in report.guards})


def with_earlier_guards(key: Hashable, report: CompileReport) -> CompileReport:
    """``report`` with the guards of the earlier compiles its recompiles failed (compiled by
    earlier runs of the same cell), and the recompiles explained again with them."""
    known = _guards.get(key, {})
    have = {g.compile_id for g in report.guards}
    missing = [cid for rc in report.recompiles for cid in rc.failed_compile_ids if cid not in have and cid in known]
    if not missing:
        return report
    return explain_recompiles(report, earlier=[known[cid] for cid in dict.fromkeys(missing)])


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


def kernels_for(key: Hashable) -> list:
    """The kernels of the compiled code of ``key`` (from the run that compiled it), to charge a
    reusing run's profiled kernel time to."""
    origin = _origins.get(key)
    return list(origin[0].kernels) if origin is not None else []


def forget(key: Optional[Hashable] = None) -> None:
    """Forget every cell's diagnosis, or only ``key``'s (its compiled cell was let go)."""
    if key is None:
        _origins.clear()
        _guards.clear()
    else:
        _origins.pop(key, None)
        _guards.pop(key, None)
