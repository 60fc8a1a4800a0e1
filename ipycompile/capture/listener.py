"""``capture()``: listen to torch's structured trace for the duration of a block.

A logging handler on the ``torch.__trace`` logger receives every event torch
would write to a TORCH_TRACE file. Nothing about what torch compiles changes;
on exit (normally, on an exception, on KeyboardInterrupt) the logger's level,
handlers, propagation and disabled flag are put back exactly as they were.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import tempfile
import threading
import time
from typing import Any, Callable, Optional

from ..report import CompileReport
from .builder import build_report
from .hooks import TorchHooks
from .layout import current_layout
from .sources import notebook_sources, source_context
from .tracefile import CONTEXT_ARTIFACT, SOURCES_ARTIFACT, glog_prefix, trace_file_name, write_trace

TRACE_LOGGER = "torch.__trace"


class _RecordHandler(logging.Handler):
    def __init__(self, sink: list, where: Optional[list] = None) -> None:
        super().__init__(level=logging.DEBUG)
        self._sink = sink
        self._where = where  # with a trace_dir: (time, pid, path, line, level) of each record, for its glog prefix

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if isinstance(metadata, dict):
            self._sink.append((metadata, getattr(record, "payload", None)))
            if self._where is not None:
                self._where.append((record.created, record.process, record.pathname, record.lineno, record.levelname))

    def handleError(self, record: logging.LogRecord) -> None:  # never print tracebacks into user output
        pass


class _HookSink:
    """Where the hooks' events go (:mod:`.hooks`): the capture's records, with a glog
    prefix's worth of where-and-when beside each when a log is written, as torch's own."""

    def __init__(self, records: list, where: Optional[list]) -> None:
        self.records, self.where = records, where

    def append(self, record: tuple) -> None:
        self.records.append(record)
        if self.where is not None:
            self.where.append((time.time(), os.getpid(), __file__, 0, "INFO"))


class Capture:
    """Context manager returned by :func:`capture`.

    ``records`` holds the raw ``(metadata, payload)`` events seen; ``report``
    builds (once, on first access) the :class:`CompileReport`, then hands it to
    ``finish`` when one is given (the layers above pass the doctor,
    :func:`ipycompile.analysis.diagnose`, which returns a new report).
    """

    def __init__(self, trace_dir: "str | os.PathLike[str] | None" = None,
                 finish: Optional[Callable[[CompileReport], CompileReport]] = None) -> None:
        self.finish = finish
        self.records: list[tuple[dict[str, Any], Optional[str]]] = []
        self.trace_dir = os.fspath(trace_dir) if trace_dir is not None else None
        self.trace_path: Optional[str] = None  # the TORCH_TRACE log written on exit (with trace_dir)
        self._where: Optional[list] = [] if self.trace_dir is not None else None
        self._handler = _RecordHandler(self.records, self._where)
        self._hooks = TorchHooks(_HookSink(self.records, self._where))  # CUDA-graph logs, recordings, autotune choices
        self._earlier_strings: Optional[list] = None
        self._sources: Optional[dict[str, str]] = None  # notebook cell names when the capture closed
        self._opened = 0.0
        self._saved: Optional[tuple] = None
        self._report: Optional[CompileReport] = None
        self._raw: Optional[CompileReport] = None  # built at exit when a log is written (its source goes in the log)
        self._lock = threading.Lock()
        self.active = False

    def __enter__(self) -> "Capture":
        import torch  # noqa: F401  (initialises torch's logging, which owns this logger)

        if self.active:
            raise RuntimeError("this capture is already active; use a new ipycompile.capture() to nest")
        if self.trace_dir is not None:  # fail before anything runs when the log cannot be written
            self.trace_path = _new_trace_file(self.trace_dir)
            self._opened = time.time()
        logger = logging.getLogger(TRACE_LOGGER)
        self._saved = (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        # First in line: torch's lazy TORCH_TRACE handler may remove itself while
        # handling a record, which would make logging skip the handler after it.
        logger.handlers.insert(0, self._handler)
        if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
        logger.disabled = False
        self.records.clear()
        if self._where is not None:
            self._where.clear()
        self._earlier_strings = None
        self._sources = None
        self._report = None
        self._raw = None
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
        self._earlier_strings = _earlier_strings(self.records)
        self._sources = notebook_sources()
        if self.trace_path is not None:
            self._raw = self._build_raw()  # its source context goes into the log too
            self._write()

    def _write(self) -> None:
        """The records in torch's TORCH_TRACE format, as torch would have written them: the
        torch_version artifact, the interned file names the records use that were interned
        before the capture opened, then every record with its glog prefix."""
        from torch._logging._internal import make_module_path_relative

        opened = glog_prefix(self._opened, os.getpid(), "torch/_logging/_internal.py", 0)
        version = json.dumps({"pytorch_version": _torch_version(), "oss": True}, indent=0)
        head = [({"artifact": {"name": "torch_version", "encoding": "json"}}, version, opened)]
        if self._sources:  # which file is which notebook cell ("In [7]"): ipycompile's own artifact
            head.append(({"artifact": {"name": SOURCES_ARTIFACT, "encoding": "json"}}, json.dumps(self._sources, indent=0), opened))
        if self._raw is not None and self._raw.source_context:  # the source kept around breaks and failures
            spans = [dataclasses.asdict(sp) for sp in self._raw.source_context]
            head.append(({"artifact": {"name": CONTEXT_ARTIFACT, "encoding": "json"}}, json.dumps(spans, indent=0), opened))
        head += [(meta, payload, opened) for meta, payload in self._earlier_strings or []]
        body = (
            (meta, payload, glog_prefix(t, pid, make_module_path_relative(path), line, _LEVELS.get(level, "V")))
            for (meta, payload), (t, pid, path, line, level) in zip(self.records, self._where or [])
        )
        write_trace(itertools.chain(head, body), self.trace_path)

    def _build_raw(self) -> CompileReport:
        """The report of the records, with the cell names and the source it keeps; not yet finished."""
        strings = self._earlier_strings if self._earlier_strings is not None else _earlier_strings(self.records)
        report = build_report(strings + list(self.records), current_layout())
        report.torch_version = _torch_version()
        report.sources.update(self._sources if self._sources is not None else notebook_sources())
        report.source_context = source_context(report)
        return report

    @property
    def report(self) -> CompileReport:
        with self._lock:
            if self._report is None or self.active:
                report = self._raw if self._raw is not None and not self.active else self._build_raw()
                if self.finish is not None:
                    report = self.finish(report)
                if self.active:
                    return report  # a snapshot; the final one is built after exit
                self._report = report
            return self._report


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


_LEVELS = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}


def _earlier_strings(records: list) -> list[tuple[dict[str, Any], None]]:
    """``str`` records for the file names torch interned before the capture opened (its
    string table is per process): stacks in the records may point at them."""
    from torch._logging import structured

    table = getattr(structured, "INTERN_TABLE", None)
    if not isinstance(table, dict):
        return []
    defined = set()
    for meta, _ in records:
        body = meta.get("str")
        if isinstance(body, (list, tuple)) and len(body) == 2:
            defined.add(body[1])
    return [({"str": [text, i]}, None) for text, i in sorted(table.items(), key=lambda kv: kv[1]) if i not in defined]


def _new_trace_file(trace_dir: str) -> str:
    """An empty log in ``trace_dir``, named as torch names TORCH_TRACE logs (with the
    torch.distributed rank when there is one)."""
    import torch.distributed as dist

    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else None
    prefix, suffix = trace_file_name(rank)
    try:
        os.makedirs(trace_dir, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=trace_dir)
    except OSError as exc:
        raise ValueError(f"trace_dir {trace_dir!r}: cannot write a trace log there ({exc.strerror or exc})") from None
    os.close(fd)
    return path


def capture(trace_dir: "str | os.PathLike[str] | None" = None, *,
            finish: Optional[Callable[[CompileReport], CompileReport]] = None) -> Capture:
    """Record what ``torch.compile`` does inside a ``with`` block::

        with ipycompile.capture() as cap:
            compiled(x)
        print(cap.report)

    With ``trace_dir``, the events are also written, when the block ends, to a
    new log in that directory in torch's TORCH_TRACE format (``cap.trace_path``),
    for tlparse, for a PyTorch developer, or for :func:`ipycompile.load_trace`.

    ``ipycompile.capture`` (:func:`ipycompile.run.observe.capture`) is this with the
    doctor as ``finish``.
    """
    return Capture(trace_dir, finish)
