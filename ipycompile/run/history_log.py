"""The run history: one row per profiled run, as a pandas DataFrame (its plots are
:mod:`ipycompile.views.plots`)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Optional

from ..report import CompileReport

if TYPE_CHECKING:
    import pandas as pd

_ROWS: list[dict[str, Any]] = []

#: The history's columns. pandas shows the first and the last ten of a wide table and
#: hides the middle behind "...": the columns a reader looks at first stand at the ends.
COLUMNS = (
    "run",
    "execution_count",
    "label",
    "mode",
    "backend",
    "status",
    "compile_s",
    "run_median_s",
    "graph_breaks",
    "recompiles",
    # the middle: details (shown when pandas shows every column, and always in df[...])
    "options",
    "error",
    "compile_wall_s",
    "run_iqr_s",
    "device_median_s",
    "latency_median_s",
    "runs",
    "peak_device_bytes_compile",
    "peak_device_bytes_run",
    "peak_host_bytes_compile",
    "peak_host_bytes_run",
    "eager_run_median_s",
    "speedup_low",
    "speedup_high",
    "caches",
    # the end
    "graphs",
    "kernels",
    "peak_device_bytes",
    "peak_host_bytes",
    "peak_host_added_bytes",
    "speedup",
    "break_even_calls",
    "noisy",
    "report",
)


def row_of(report: CompileReport, *, execution_count: Optional[int] = None) -> dict[str, Any]:
    p = report.profile
    e = p.eager if p else None
    full = report
    if report.reused_from:  # a row counts what this run compiled: nothing (the report holds an earlier run's)
        report = CompileReport(profile=p, torch_version=report.torch_version)
    status = _status(report)
    return {
        "execution_count": execution_count,
        "label": p.settings.label if p else "",
        "mode": p.settings.mode if p else "",
        "backend": p.settings.backend if p else "",
        "options": json.dumps(p.settings.options, sort_keys=True, default=repr) if p and p.settings.options else "",
        "status": status,
        "error": _error_text(report),
        "compile_s": p.first_call.compile_s if p else None,
        "compile_wall_s": p.first_call.compile_wall_s if p else None,
        "run_median_s": p.steady.run_median_s if p else None,
        "run_iqr_s": p.steady.run_iqr_s if p else None,
        "device_median_s": p.steady.device_median_s if p else None,
        "latency_median_s": p.steady.latency_median_s if p else None,
        "runs": p.steady.runs if p else 0,
        "peak_device_bytes": p.peak_device_bytes if p else None,
        "peak_device_bytes_compile": p.first_call.peak_device_bytes if p else None,
        "peak_device_bytes_run": p.steady.peak_device_bytes if p else None,
        "peak_host_bytes": p.peak_host_bytes if p else None,
        "peak_host_bytes_compile": p.first_call.peak_host_bytes if p else None,
        "peak_host_bytes_run": p.steady.peak_host_bytes if p else None,
        "peak_host_added_bytes": p.peak_host_added_bytes if p else None,  # the cell's own, over the RSS before it
        "graphs": sum(1 for g in report.graphs if g.stage == "dynamo"),
        "graph_breaks": report.graph_break_count,
        "recompiles": len(report.recompiles),
        "kernels": len(report.kernels),
        "eager_run_median_s": e.run_median_s if e else None,
        "speedup": e.speedup if e else None,
        "break_even_calls": e.break_even_calls if e else None,
        "speedup_low": e.speedup_ci95[0] if e and e.speedup_ci95 else None,
        "speedup_high": e.speedup_ci95[1] if e and e.speedup_ci95 else None,
        # what was noisy ("run time", "speedup vs eager", ...); "" when the run was quiet
        "noisy": "; ".join(n.split(":", 1)[0] for n in p.noise) if p else "",
        "caches": ", ".join(f"{k} {v}" for k, v in p.caches.items()) if p else "",
        "report": full,
    }


def _status(report: CompileReport) -> str:
    """ok; failed (a compile failed, also when that failure is what the cell raised, as
    under fullgraph); error (the cell's code raised something else)."""
    p = report.profile
    if p and p.error:
        raised = p.error.split(":", 1)[0]
        return "failed" if any(f.type == raised for f in report.failures) else "error"
    return "failed" if report.failures else "ok"


def _error_text(report: CompileReport) -> str:
    """Why a run failed: the user's exception, else the first compile failure; empty when it did not."""
    p = report.profile
    if p and p.error:
        return p.error
    if report.failures:
        f = report.failures[0]
        return f"{f.type}: {f.message}".strip(": ")
    return ""


def record(report: CompileReport, *, execution_count: Optional[int] = None, **extra: Any) -> dict[str, Any]:
    """Append a run to the history; ``extra`` become columns of their own (e.g. sweep parameters)."""
    row = {"run": len(_ROWS) + 1, **row_of(report, execution_count=execution_count), **extra}
    _ROWS.append(row)
    return row


def history() -> "pd.DataFrame":
    """Every recorded run, oldest first (the ``report`` column holds the full report)."""
    import pandas as pd

    df = pd.DataFrame(_ROWS)
    if df.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    extra = [c for c in df.columns if c not in COLUMNS]
    return df[[c for c in COLUMNS if c in df.columns] + extra]


def clear_history() -> None:
    _ROWS.clear()


def find_run(spec: "int | str") -> tuple[CompileReport, str]:
    """The report of a recorded run and its name (``"run 3 (loop)"``): ``spec`` is a run
    number (``3``, ``"3"``), a negative index from the end (``-1``: the last run), or a
    label (the last run with that label). A ``ValueError`` says what exists otherwise."""
    if not _ROWS:
        raise ValueError("no runs recorded yet: run a %%compile cell (or ipycompile.run_cell) first")
    text = str(spec).strip()
    row = None
    if re.fullmatch(r"-?\d+", text):
        n = int(text)
        if n < 0 and -n <= len(_ROWS):
            row = _ROWS[n]
        else:
            row = next((r for r in _ROWS if r["run"] == n), None)
        if row is None:
            raise ValueError(f"no run {text}: runs are numbered 1 to {len(_ROWS)} (or -1 for the last, -2 before it)")
    else:
        label = text.strip("'\"")
        matches = [r for r in _ROWS if r.get("label") == label]
        if not matches:
            labels = sorted({str(r["label"]) for r in _ROWS if r.get("label")})
            known = f"labels are {', '.join(map(repr, labels))}" if labels else "no run has a label (--label)"
            raise ValueError(f"no run labelled {label!r}: {known}; or give a run number")
        row = matches[-1]
    name = f"run {row['run']}"
    extra = [x for x in (f"In [{row['execution_count']}]" if row.get("execution_count") else "", row.get("label") or "") if x]
    return row["report"], name + (f" ({', '.join(extra)})" if extra else "")


def compare_runs(a: "int | str", b: "int | str"):
    """:func:`ipycompile.compare` of two recorded runs, named by number or label (see :func:`find_run`)."""
    from ..analysis.compare import compare

    (ra, na), (rb, nb) = find_run(a), find_run(b)
    return compare(ra, rb, names=(na, nb))
