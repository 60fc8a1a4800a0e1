"""Capture: torch's structured trace -> records -> :class:`CompileReport`."""

from .builder import HANDLERS, build_report
from .listener import Capture, capture
from .records import TraceRecord

__all__ = ["capture", "Capture", "build_report", "TraceRecord", "HANDLERS"]
