"""Capture: torch's structured trace -> records -> :class:`CompileReport`.

The names below are imported when first used (:pep:`562`): reading a log file
(:mod:`.tracefile`) loads neither the live listener nor the builder's parsers.
"""

from ..report.lazy import lazy_names
from ..report.report import register_load_fill

__all__ = [
    "capture",
    "Capture",
    "build_report",
    "TraceRecord",
    "HANDLERS",
    "load_trace",
    "read_trace",
    "write_trace",
    "RankReports",
    "TraceFileError",
]

#: name -> the module that defines it, imported on first use
_LAZY = {
    **dict.fromkeys(("HANDLERS", "build_report"), ".builder"),
    **dict.fromkeys(("Capture", "capture"), ".listener"),
    "TraceRecord": ".records",
    **dict.fromkeys(("RankReports", "load_trace"), ".tracedir"),
    **dict.fromkeys(("TraceFileError", "read_trace", "write_trace"), ".tracefile"),
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)


def _fill_loaded(report) -> None:
    """What capture reads of torch's text for a report saved before the record was kept (its readers
    loaded only then): run on each loaded report (``report.register_load_fill``)."""
    from .parse.saved import fill

    fill(report)


register_load_fill(_fill_loaded)
