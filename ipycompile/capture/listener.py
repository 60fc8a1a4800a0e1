"""``capture()``: listen to torch's structured trace for the duration of a block.

A logging handler on the ``torch.__trace`` logger receives every event torch
would write to a TORCH_TRACE file. Nothing about what torch compiles changes;
on exit (normally, on an exception, on KeyboardInterrupt) the logger's level,
handlers, propagation and disabled flag are put back exactly as they were.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

from ..report import CompileReport
from .builder import build_report
from .hooks import TorchHooks
from .sources import notebook_sources

TRACE_LOGGER = "torch.__trace"


class _RecordHandler(logging.Handler):
    def __init__(self, sink: list) -> None:
        super().__init__(level=logging.DEBUG)
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if isinstance(metadata, dict):
            self._sink.append((metadata, getattr(record, "payload", None)))

    def handleError(self, record: logging.LogRecord) -> None:  # never print tracebacks into user output
        pass


class Capture:
    """Context manager returned by :func:`capture`.

    ``records`` holds the raw ``(metadata, payload)`` events seen; ``report``
    builds (once, on first access) the :class:`CompileReport`, then hands it to
    ``finish`` when one is given (the layers above pass the doctor,
    :func:`ipycompile.analysis.diagnose`, which returns a new report).
    """

    def __init__(self, finish: Optional[Callable[[CompileReport], CompileReport]] = None) -> None:
        self.finish = finish
        self.records: list[tuple[dict[str, Any], Optional[str]]] = []
        self._handler = _RecordHandler(self.records)
        self._hooks = TorchHooks(self.records)  # CUDA-graph logs, recordings, autotune choices
        self._saved: Optional[tuple] = None
        self._report: Optional[CompileReport] = None
        self._lock = threading.Lock()
        self.active = False

    def __enter__(self) -> "Capture":
        import torch  # noqa: F401  (initialises torch's logging, which owns this logger)

        if self.active:
            raise RuntimeError("this capture is already active; use a new ipycompile.capture() to nest")
        logger = logging.getLogger(TRACE_LOGGER)
        self._saved = (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        # First in line: torch's lazy TORCH_TRACE handler may remove itself while
        # handling a record, which would make logging skip the handler after it.
        logger.handlers.insert(0, self._handler)
        if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
        logger.disabled = False
        self.records.clear()
        self._report = None
        self.active = True
        self._hooks.attach()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def detach(self) -> None:
        """Stop listening and restore the logger (idempotent)."""
        if not self.active:
            return
        self._hooks.detach()
        logger = logging.getLogger(TRACE_LOGGER)
        level, handlers, propagate, disabled = self._saved
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = disabled
        self.active = False

    @property
    def report(self) -> CompileReport:
        with self._lock:
            if self._report is None or self.active:
                report = build_report(list(self.records))
                report.torch_version = _torch_version()
                report.sources.update(notebook_sources())
                if self.finish is not None:
                    report = self.finish(report)
                if self.active:
                    return report  # a snapshot; the final one is built after exit
                self._report = report
            return self._report


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


def capture(*, finish: Optional[Callable[[CompileReport], CompileReport]] = None) -> Capture:
    """Record what ``torch.compile`` does inside a ``with`` block::

        with ipycompile.capture() as cap:
            compiled(x)
        print(cap.report)

    ``ipycompile.capture`` (:func:`ipycompile.run.observe.capture`) is this with the
    doctor as ``finish``.
    """
    return Capture(finish)
