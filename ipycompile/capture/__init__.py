"""Capture: torch's structured trace -> records -> :class:`CompileReport`."""

from .builder import HANDLERS, build_report
from .listener import Capture, capture
from .records import TraceRecord
from .tracedir import RankReports, load_trace
from .tracefile import TraceFileError, read_trace, write_trace

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
