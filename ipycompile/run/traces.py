"""Trace files, end to end, for ``%compile_trace`` and ``python -m ipycompile report``.

Reads a TORCH_TRACE log or a directory of rank logs (:func:`ipycompile.load_trace`)
and, for a directory, compares the ranks (:func:`ipycompile.analysis.ranks.rank_divergence`).
Sits on top of capture and analysis, beside the run layer; imports no IPython.
"""

from __future__ import annotations

import os
from typing import Optional

from ..analysis.ranks import RankDivergence, rank_divergence
from ..analysis import diagnose
from ..capture.tracedir import RankReports
from ..capture.tracedir import load_trace as _load_trace
from ..capture.tracefile import Progress
from ..report import CompileReport

__all__ = ["load_trace", "open_trace"]


def load_trace(path: "str | os.PathLike[str]", **kwargs) -> "CompileReport | RankReports":
    """``ipycompile.load_trace``: :func:`ipycompile.capture.tracedir.load_trace` with the
    doctor applied to every full report (a file's, or a rank's when it is read), as a
    live capture's report is."""
    return _load_trace(path, finish=diagnose, **kwargs)


def open_trace(
    path: "str | os.PathLike[str]",
    *,
    rank: Optional[int] = None,
    strict: bool = False,
    summary: bool = False,
    workers: Optional[int] = None,
    progress: Optional[Progress] = None,
) -> "tuple[CompileReport | RankReports, CompileReport | RankDivergence]":
    """``(what was loaded, what to show)``: a log file, or one rank of a directory, gives its
    report twice; a directory gives its :class:`RankReports` and the ranks' divergence, or,
    when it holds one rank's log only (nothing to compare), that rank's report.
    Raises :class:`ipycompile.TraceFileError` (a ``ValueError``) with the reason when the
    path cannot be read."""
    loaded = load_trace(os.path.expanduser(os.fspath(path)), rank=rank, strict=strict, summary=summary,
                        workers=workers, progress=progress)
    if isinstance(loaded, CompileReport):
        return loaded, loaded
    if len(loaded) == 1:  # a job of one process
        (only,) = loaded
        return loaded, load_trace(loaded.files[only], strict=strict, summary=summary, progress=progress)
    return loaded, rank_divergence(loaded)
