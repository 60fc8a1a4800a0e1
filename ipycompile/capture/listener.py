"""``capture()``: listen to torch's structured trace for the duration of a block.

One process-wide handler on the ``torch.__trace`` logger (:mod:`.routing`) receives
every event torch would write to a TORCH_TRACE file and hands each to the captures
open on the thread that logged it: captures in two threads never mix, nested captures
on one thread all see the inner block, and closing one never disturbs another. Nothing
about what torch compiles changes; when the last capture closes (normally, on an
exception, on KeyboardInterrupt) the logger's level, propagation, disabled flag and
handlers are put back as they were (a handler someone else added meanwhile stays).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import tempfile
import threading
import time
from typing import Any, Callable, Optional

from ..report import CompileReport
from .builder import build_report
from .hooks import CACHE_HIT_EVENT, CAPTURE_EVENT, code_has_graph
from .layout import current_layout
from .routing import ROUTER
from .schemas import op_schemas
from .source_files import SourceFiles
from .kept_source import notebook_sources, source_context
from .tracefile import CONTEXT_ARTIFACT, FILES_ARTIFACT, summary_records, LAYOUT_ARTIFACT, LIMITS_ARTIFACT, SCHEMAS_ARTIFACT, SOURCES_ARTIFACT, glog_prefix, trace_file_name, write_trace


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
        # with a trace_dir: (time, pid, path, line, level) of each record, for its glog prefix
        self._where: Optional[list] = [] if self.trace_dir is not None else None
        self.thread = threading.get_ident()  # the thread whose compiles it sees (set on entry)
        self.compile_keys: set = set()  # the compile ids seen, so torch's own threads' events follow them
        self._earlier_strings: Optional[list] = None
        self._sources: Optional[dict[str, str]] = None  # notebook cell names when the capture closed
        self._opened = 0.0
        self._limits_open: dict[str, int] = {}  # torch._dynamo.config's recompile limits when it opened
        self._hits_closed = False  # cache hits heard from now on are not recorded (cache_hits_until_now)
        self._limits_closed: Optional[dict[str, int]] = None  # ... and when it closed
        self._report: Optional[CompileReport] = None
        self._raw: Optional[CompileReport] = None  # built at exit when a log is written (its source goes in the log)
        self._files = SourceFiles()  # the source files the last build read (set by _build_raw; their text goes in the log)
        self._lock = threading.Lock()
        self._delivering = threading.Lock()
        self.active = False

    def __enter__(self) -> "Capture":
        import torch  # noqa: F401  (initialises torch's logging, which owns this logger)

        if self.active:
            raise RuntimeError("this capture is already active; use a new ipycompile.capture() to nest")
        if self.trace_dir is not None:  # fail before anything runs when the log cannot be written
            self.trace_path = _new_trace_file(self.trace_dir)
            self._opened = time.time()
        self.records.clear()
        self.compile_keys = set()
        if self._where is not None:
            self._where.clear()
        self._earlier_strings = None
        self._sources = None
        self._report = None
        self._raw = None
        self.thread = threading.get_ident()
        self._limits_open, self._limits_closed = _recompile_limits(), None
        self._hits_closed = False
        self.active = True
        # its first record: whether Dynamo held compiled graphs now (written to its log like torch's events)
        self.deliver({CAPTURE_EVENT: {"graphs_before": _compiled_graphs_exist()}}, None,
                     (time.time(), os.getpid(), __file__, 0, "INFO"))
        ROUTER.open(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def detach(self) -> None:
        """Stop listening and restore the logger (idempotent)."""
        if not self.active:
            return
        ROUTER.close(self)
        self.active = False
        self._limits_closed = _recompile_limits()
        self._earlier_strings = _earlier_strings(self.records)
        self._sources = notebook_sources()
        if self.trace_path is not None:
            self._raw = self._build_raw()  # its source context goes into the log too
            self._write()

    def cache_hits_until_now(self) -> None:
        """Record Dynamo's cache hits heard so far only (``CompileReport.ran_cached_code``): the run
        layer calls it after the first call, so that its warm-up calls, which run the code this
        capture compiled, are not taken for code compiled earlier."""
        self._hits_closed = True

    def deliver(self, metadata: dict, payload: Optional[str], where: tuple) -> None:
        """One event for this capture (called by :data:`.routing.ROUTER`)."""
        if self._hits_closed and CACHE_HIT_EVENT in metadata:
            return
        if self._where is None:
            self.records.append((metadata, payload))
            return
        with self._delivering:  # two threads may deliver (its own, torch's): keep each record beside its prefix
            self.records.append((metadata, payload))
            self._where.append(where)

    def _write(self) -> None:
        """The records in torch's TORCH_TRACE format, as torch would have written them: the
        torch_version artifact, the interned file names the records use that were interned
        before the capture opened, then every record with its glog prefix."""
        from torch._logging._internal import make_module_path_relative

        opened = glog_prefix(self._opened, os.getpid(), "torch/_logging/_internal.py", 0)
        version = json.dumps({"pytorch_version": _torch_version(), "oss": True}, indent=0)
        head = [({"artifact": {"name": "torch_version", "encoding": "json"}}, version, opened)]
        if self._raw is not None and self._raw.code_layout is not None:  # whose code a file is, read anywhere
            layout = json.dumps(dataclasses.asdict(self._raw.code_layout), indent=0)
            head.append(({"artifact": {"name": LAYOUT_ARTIFACT, "encoding": "json"}}, layout, opened))
        if self._sources:  # which file is which notebook cell ("In [7]"): ipycompile's own artifact
            head.append(({"artifact": {"name": SOURCES_ARTIFACT, "encoding": "json"}}, json.dumps(self._sources, indent=0), opened))
        if self._raw is not None and self._raw.source_context:  # the source kept around breaks and failures
            spans = [dataclasses.asdict(sp) for sp in self._raw.source_context]
            head.append(({"artifact": {"name": CONTEXT_ARTIFACT, "encoding": "json"}}, json.dumps(spans, indent=0), opened))
        if self._files.read:  # the files the build read, as they were: a log read elsewhere names values the same
            head.append(({"artifact": {"name": FILES_ARTIFACT, "encoding": "json"}}, json.dumps(self._files.read, indent=0), opened))
        if self._raw is not None and self._raw.op_schemas:  # the custom ops' schemas, read while they were registered
            schemas = json.dumps([dataclasses.asdict(x) for x in self._raw.op_schemas], indent=0)
            head.append(({"artifact": {"name": SCHEMAS_ARTIFACT, "encoding": "json"}}, schemas, opened))
        if self._raw is not None and self._raw.recompile_limits:  # the global limits, to tell a function's own
            head.append(({"artifact": {"name": LIMITS_ARTIFACT, "encoding": "json"}}, json.dumps(self._raw.recompile_limits), opened))
        head += [(meta, payload, opened) for meta, payload in self._earlier_strings or []]
        body = (
            (meta, payload, glog_prefix(t, pid, make_module_path_relative(path), line, _LEVELS.get(level, "V")))
            for (meta, payload), (t, pid, path, line, level) in zip(self.records, self._where or [])
        )
        # in a rank of a torch.distributed job torch puts the rank in each event: ours carry it too
        # (a reader such as tlparse counts an event without it as another rank's)
        rank = next((m["rank"] for m, _ in self.records if isinstance(m, dict) and "rank" in m), None)
        if rank is not None:
            head = [({**m, "rank": rank}, p, w) for m, p, w in head]
            body = (({**m, "rank": rank} if "rank" not in m else m, p, w) for m, p, w in body)
        write_trace(itertools.chain(head, body), self.trace_path)

    def _build_raw(self, summary: bool = False) -> CompileReport:
        """The report of the records, with the cell names and the source it keeps; not yet finished.
        ``summary``: as a summary pass reads the same events from a log (:func:`.tracefile.summary_records`)."""
        strings = self._earlier_strings if self._earlier_strings is not None else _earlier_strings(self.records)
        records = strings + list(self.records)
        self._files = SourceFiles()
        report = build_report(summary_records(records) if summary else records, current_layout(), self._files)
        report.torch_version = _torch_version()
        report.sources.update(self._sources if self._sources is not None else notebook_sources())
        report.source_context = source_context(report)
        report.op_schemas = op_schemas(report)
        closed = self._limits_closed if self._limits_closed is not None else _recompile_limits()
        report.recompile_limits = {k: v for k, v in self._limits_open.items() if closed.get(k) == v}
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


def _compiled_graphs_exist() -> Optional[bool]:
    """Whether Dynamo holds compiled code that runs a graph (a cache entry whose code calls a
    ``__compiled_fn``), for any code object it has compiled; None where torch cannot say."""
    try:
        from torch._dynamo import convert_frame

        for ref in list(convert_frame.input_codes.seen):
            code = ref()
            if code is not None and code_has_graph(code):
                return True
        return False
    except Exception:  # noqa: BLE001 - torch's internals differ: unknown
        return None


def _recompile_limits() -> dict[str, int]:
    """torch._dynamo.config's global recompile limits, now (those that exist in this torch)."""
    from torch._dynamo import config

    out = {}
    for name in ("recompile_limit", "accumulated_recompile_limit"):
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


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
