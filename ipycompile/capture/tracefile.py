"""TORCH_TRACE log files: read them into reports, write captures in their format.

The format is torch's (``torch._logging._internal.TorchLogsFormatter`` with
``trace=True``): one event per line, a glog prefix, then a JSON envelope::

    V1123 07:01:40.464000 420 torch/_dynamo/utils.py:2126] {"chromium_event": {}, ..., "has_payload": "790a..."}
    \t{
    \t"name": "dynamo",
    \t...

An envelope with ``has_payload`` (the payload's md5) is followed by its
payload, one tab-indented line per payload line. ``str`` events intern the
filenames of stacks (``{"str": [filename, id]}``).

:func:`iter_records` reads a log in one streaming pass (plain or gzip, one
event in memory at a time) into the :class:`TraceRecord` objects that
:func:`build_report` consumes; :func:`read_trace` builds the report. A line
that is cut off or corrupted is reported (line number, what was wrong) in
``report.origin``, skipped and counted; ``strict=True`` makes it an error,
as ``tlparse --strict`` does. :func:`write_trace` writes records back in
torch's format, so that tlparse (or a PyTorch developer) can read them.

Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import errno
import gc
import gzip
import hashlib
import io
import json
import os
import stat
import re
import sys
import time
import zlib
from typing import Any, Callable, IO, Iterable, Iterator, Optional

from ..report import CompileReport, LazyText, TraceOrigin
from ..report.files import atomic_writer
from ..report.owners import CodeLayout
from .builder import (PREPARED_ALONE, build_report, chromium_entry, counted_only, plain_chromium_entry, prepare_record,
                      prepare_span_record)
from .chunks import FULL_BUILD_PER_READ, SpansDepend, idle_usable_cpus, records_in_spans, span_count, span_shares
from .logfile import GZIP_MAGIC as _GZIP_MAGIC, TraceFileError, is_gzip
from .readahead import can_read_ahead, records_read_ahead
from .records import CONTEXT_KEYS, ChromiumBatch, NestingError, TraceRecord, event_ids, loads
from .source_files import SourceFiles

__all__ = [
    "TraceFileError",
    "iter_records",
    "read_trace",
    "write_trace",
    "format_record",
    "sniff_trace",
    "check_path",
    "os_reason",
    "SUMMARY_PAYLOADS",
]

#: torch's line prefix: level, MMDD HH:MM:SS.micros, process id, path:line]
_PREFIX = re.compile(rb"[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +(\d+) (.*?):(\d+)\] ")
#: How many problems a report lists (all are counted).
MAX_PROBLEMS = 20
#: Lines read before a file with no readable event is refused as not a trace log.
_SNIFF_LINES = 200
#: A log's first bytes must hold one of torch's line prefixes.
_HEAD_BYTES = 1 << 20
_PROGRESS_STEP = 1 << 22  # report progress every 4 MiB read
#: The longest line a log may hold (an envelope, or one line of a payload): a longer one is not
#: read (memory while reading is bounded by this, whatever the file or its gzip stream holds),
#: its event is skipped and counted as a problem. torch's lines are a few KB; generated code's
#: longest lines, a few hundred KB.
MAX_LINE_BYTES = 16 << 20
#: A UTF-8 byte order mark, which an editor may put at the start of a log it saved.
_BOM = b"\xef\xbb\xbf"

#: Payloads a summary pass reads: small ones the summary needs (Dynamo's graph for graph counts and
#: control flow, graph breaks, recompile reasons, errors, compile-time events, cache bypass reasons).
SUMMARY_PAYLOADS = frozenset(
    {
        "dynamo_output_graph",
        "chromium_event",
        "artifact:dynamo_graph_break_reason",
        "artifact:recompile_reasons",
        "artifact:dynamo_error",
        "artifact:fx_graph_cache_bypass",
        "artifact:aotautograd_cache_bypass",
        "artifact:torch_version",
        "artifact:ipycompile_sources",
        "artifact:ipycompile_code_layout",
        "artifact:ipycompile_recompile_limits",
        "artifact:ipycompile_op_schemas",
        "artifact:ipycompile_source_files",
    }
)
#: The artifact a capture's log carries for notebook cell names (``{filename: "In [7]"}``).
SOURCES_ARTIFACT = "ipycompile_sources"
#: The artifact a capture's log carries for the source kept around breaks and failures
#: (``CompileReport.source_context``: a list of ``{filename, first_line, lines, module}``),
#: so that a log read elsewhere is diagnosed as the live report was.
CONTEXT_ARTIFACT = "ipycompile_source_context"
#: The artifact a capture's log carries for where code lived in the process that wrote it
#: (:class:`~ipycompile.report.owners.CodeLayout`), so that the log read anywhere judges
#: whose code a file is as the live report did; a log torch wrote alone has none (path
#: shapes decide).
LAYOUT_ARTIFACT = "ipycompile_code_layout"
#: The artifact a capture's log carries for torch._dynamo.config's global recompile limits while it
#: was open (``CompileReport.recompile_limits``): whether a limit hit was the global one or one given
#: to torch.compile for the function, read anywhere as live.
LIMITS_ARTIFACT = "ipycompile_recompile_limits"
#: The artifact a capture's log carries for the schemas of the custom ops its breaks name
#: (``CompileReport.op_schemas``), read from torch's registry while the ops were registered.
SCHEMAS_ARTIFACT = "ipycompile_op_schemas"
#: The artifact a capture's log carries for the text of the source files its build read
#: (:mod:`.source_files`), so that a log read elsewhere names guarded values as the live report did.
FILES_ARTIFACT = "ipycompile_source_files"
#: Events a summary pass keeps without their (bulky) payload: the event itself says all the summary needs.
_SUMMARY_WITHOUT_PAYLOAD = frozenset(
    f"artifact:{layer}_cache_{status}" for layer in ("fx_graph", "aotautograd") for status in ("hit", "miss")
) | {"optimize_ddp_split_child"}  # DDP's bucket subgraphs: counted, their code left for the full read

#: Artifacts the reader itself reads (properties of the file), not passed on as events.
_READ_HERE = frozenset({"artifact:torch_version", f"artifact:{SOURCES_ARTIFACT}", f"artifact:{CONTEXT_ARTIFACT}",
                        f"artifact:{LAYOUT_ARTIFACT}", f"artifact:{LIMITS_ARTIFACT}",
                        f"artifact:{SCHEMAS_ARTIFACT}", f"artifact:{FILES_ARTIFACT}"})

Progress = Callable[[int, int], None]  # (bytes read, total bytes)


def os_reason(exc: OSError) -> str:
    """Why the OS refused a path, in words: ``permission denied``, ``a symlink loop (...)``."""
    if exc.errno == errno.ELOOP:
        return "a symlink loop (too many levels of symbolic links)"
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    return (exc.strerror or str(exc)).lower()


def check_path(path: str) -> os.stat_result:
    """``os.stat(path)``, or :class:`TraceFileError` saying why the path cannot be used
    (missing, a symlink loop, a broken symlink, no permission): the one check of an input path."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            raise TraceFileError(f"{path}: a broken symlink (it points to {os.readlink(path)!r}, which does not exist)") from None
        raise TraceFileError(f"{path}: {os_reason(exc)}") from None


# -- reading -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PayloadFile:
    """A plain log whose payloads a report keeps by place (:class:`~ipycompile.report.model.LazyText`):
    reads one when a view asks for it, and refuses clearly when the log changed since."""

    path: str
    size: int
    mtime_ns: int

    def text(self, ref: LazyText) -> str:
        """The payload at ``ref``, checked against its md5. A log still being written (only appended
        to since) reads as it did; one cut short or rewritten raises :class:`TraceFileError`, saying so."""
        why = ""
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < ref.offset + ref.length:
                    data, why = b"", f"the log was cut short since it was read: {size:,} bytes now, {self.size:,} then"
                else:
                    f.seek(ref.offset)
                    data = f.read(ref.length)
        except OSError as exc:
            data, why = b"", os_reason(exc)
        if not why:
            data = (data[1:-1] if data.endswith(b"\n") else data[1:]).replace(b"\n\t", b"\n")
            if hashlib.md5(data, usedforsecurity=False).hexdigest() == ref.md5:
                return data.decode("utf-8")
            why = "the log was rewritten since it was read" + (
                f" ({size:,} bytes now, {self.size:,} then)" if size < self.size else "")
        raise TraceFileError(f"{self.path}: cannot read the payload at byte {ref.offset} ({why}); "
                             "read the log again (load_trace)")


class _Reader:
    """State of one pass over one log: counts, problems, the rank it belongs to."""

    def __init__(self, name: str, strict: bool, summary: bool) -> None:
        self.name = name
        self.strict = strict
        self.summary = summary
        self.origin = TraceOrigin(path=name, summary=summary)
        self.torch_version = ""
        self.sources: dict[str, str] = {}
        self.source_context: list[dict] = []
        self.recompile_limits: dict[str, int] = {}
        self.op_schemas: list[dict] = []
        self.source_files: dict[str, str] = {}  # FILES_ARTIFACT: {filename: text}
        self.layout = CodeLayout()  # filled in place from LAYOUT_ARTIFACT (the builder holds the same object)
        self.layout_reads = 0  # how many times the log's layout was read (a span's reader sends it on)
        #: where the span read starts (``iter_records(span=...)``), and the lines before it: counted
        #: only when a problem needs a line number (the lines of a span are numbered from its start)
        self.span_start = 0
        self._lines_before: Optional[int] = None
        #: the first rank an event named, and whether a line was cut short (read through, past
        #: MAX_LINE_BYTES): what one span's reading may depend on in the spans before it
        self.first_rank: Optional[int] = None
        self.ended_cleanly = True
        self.seen_event = False

    def line(self, lineno: int) -> int:
        """The line number in the file of the ``lineno``-th line read."""
        if not self.span_start:
            return lineno
        if self._lines_before is None:
            n = 0
            with open(self.name, "rb") as f:
                left = self.span_start
                while left > 0:
                    block = f.read(min(left, _BLOCK_BYTES))
                    if not block:
                        break
                    n += block.count(b"\n")
                    left -= len(block)
            self._lines_before = n
        return self._lines_before + lineno

    def merge(self, rd: "_Reader") -> None:
        """The state of the reader of the next span of the log (``iter_records(span=...)``) added to
        this one's, as one reader of both spans would have it."""
        o, p = self.origin, rd.origin
        o.lines += p.lines
        o.records += p.records
        o.skipped_lines += p.skipped_lines
        o.problem_count += p.problem_count
        o.problems.extend(p.problems[:max(0, MAX_PROBLEMS - len(o.problems))])
        for key, n in p.unread.items():
            o.unread[key] = o.unread.get(key, 0) + n
        o.size_bytes = max(o.size_bytes, p.size_bytes)
        o.rank = p.rank if o.rank is None else o.rank
        o.pid = p.pid if o.pid is None else o.pid
        self.first_rank = rd.first_rank if self.first_rank is None else self.first_rank
        self.ended_cleanly = self.ended_cleanly and rd.ended_cleanly
        self.seen_event = self.seen_event or rd.seen_event
        self.torch_version = rd.torch_version or self.torch_version
        self.sources.update(rd.sources)
        self.source_context.extend(rd.source_context)
        self.recompile_limits.update(rd.recompile_limits)
        self.op_schemas.extend(rd.op_schemas)
        self.source_files.update(rd.source_files)

    def problem(self, lineno: int, what: str, lines: int = 1) -> None:
        lineno = self.line(lineno)
        if self.strict:
            raise TraceFileError(f"{self.name}, line {lineno}: {what}")
        o = self.origin
        o.problem_count += 1
        o.skipped_lines += lines
        if len(o.problems) < MAX_PROBLEMS:
            o.problems.append(f"line {lineno}: {what}")


def _event_key(metadata: dict[str, Any]) -> str:
    """What handlers are looked up by (as :attr:`TraceRecord.key`), without building the record."""
    kind = ""
    for k in metadata:  # the event's own key, nearly always the first
        if k not in CONTEXT_KEYS:
            kind = k
            break
    if kind == "artifact":
        body = metadata.get("artifact")
        return "artifact:" + (str(body.get("name", "")) if isinstance(body, dict) else "")
    return kind or ("stack" if "stack" in metadata else "")


def summary_records(records: Iterable[tuple[dict[str, Any], Optional[str]]]) -> Iterator[tuple[dict[str, Any], Optional[str]]]:
    """Live ``(metadata, payload)`` records as a summary pass reads them from a log
    (``read_trace(summary=True)``): bulky payloads dropped with their events, except the
    events kept without their payload; the file's own artifacts left out. A capture's
    summary is then the one :func:`ipycompile.load_trace` reads from the same events."""
    for meta, payload in records:
        key = _event_key(meta)
        if key in _READ_HERE:
            continue
        if payload is not None and key not in SUMMARY_PAYLOADS:
            if key in _SUMMARY_WITHOUT_PAYLOAD:
                yield meta, None
            else:
                continue
        else:
            yield meta, payload




def _open_binary(path: str) -> tuple[IO[bytes], IO[bytes]]:
    """``(stream of the log's bytes, the file underneath)``: gzip is recognised by its magic bytes."""
    raw = open(path, "rb")
    try:
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            return gzip.GzipFile(fileobj=raw, mode="rb"), raw
        raw.seek(0)
        return raw, raw
    except BaseException:
        raw.close()
        raise


#: The most chromium events given in one batch (``iter_records(chromium_batches=True)``).
_BATCH_EVENTS = 512
#: Where a run of payload lines ends: a newline whose next line does not start with a tab (found
#: by one search, ten times faster than matching the run line by line).
_RUN_END = re.compile(rb"\n[^\t]")
#: How much of a log is read at once (the lines and payload runs are cut from this block).
_BLOCK_BYTES = 1 << 20
#: A carriage return at the end of a line (of a payload whose line ends became CRLF).
_CR_AT_END = re.compile(rb"\r(?=\n|\Z)")


def _bounded_lines(stream: IO[bytes], limit: int) -> Iterator[tuple[bytes, int, int]]:
    """``(line, 1, 0)`` for each line of ``stream`` of at most ``limit`` bytes (its newline
    included), ``(first bytes, 1, length)`` for a longer one, which is read through in pieces
    and never held whole: memory stays bounded by ``limit`` (and the block read). Consecutive
    payload lines (each a tab, its text and a newline) in the block read come as one
    ``(lines, count, 0)``: a log's payloads are most of its lines, each run found with one search
    instead of one step per line."""
    read = getattr(stream, "read1", stream.read)  # one read of the file (or gzip member) at a time
    buf, pos = b"", 0
    while True:
        if pos >= len(buf):
            buf, pos = read(_BLOCK_BYTES), 0
            if not buf:
                return
        if buf[pos] == 9:  # a tab: a run of whole payload lines, at most limit + 1 bytes in all
            m = _RUN_END.search(buf, pos, pos + limit + 2)
            end = m.start() + 1 if m is not None else buf.rfind(b"\n", pos, pos + limit + 1) + 1
            if end > pos:
                yield buf[pos:end], buf.count(b"\n", pos, end), 0
                pos = end
                continue
        nl = buf.find(b"\n", pos, pos + limit + 1)
        if nl >= 0:
            yield buf[pos:nl + 1], 1, 0
            pos = nl + 1
            continue
        if len(buf) - pos <= limit:  # the line goes on in the next block
            more = read(max(_BLOCK_BYTES, len(buf) - pos))
            if more:
                buf, pos = buf[pos:] + more, 0
                continue
            yield buf[pos:], 1, 0  # the file's last line, with no newline
            return
        head = buf[pos:pos + 64]  # a line longer than the limit: read through, not held
        nl = buf.find(b"\n", pos + limit + 1)
        if nl >= 0:  # it ends in this block
            yield head, 1, nl + 1 - pos
            pos = nl + 1
            continue
        n = len(buf) - pos
        while True:
            buf, pos = read(_BLOCK_BYTES), 0
            nl = buf.find(b"\n")
            if nl >= 0:
                n += nl + 1
                pos = nl + 1
                break
            n += len(buf)
            if not buf:
                break
        yield head, 1, n


def iter_records(
    path: "str | os.PathLike[str]",
    *,
    strict: bool = False,
    summary: bool = False,
    progress: Optional[Progress] = None,
    origin: Optional[list] = None,
    layout: Optional[CodeLayout] = None,
    lazy: bool = False,
    span: Optional[tuple[int, Optional[int]]] = None,
    chromium_batches: bool = False,
) -> Iterator[TraceRecord]:
    """The events of one TORCH_TRACE log (plain or gzip), in file order, one at a time.

    A line that cannot be read (no glog prefix, a JSON envelope cut off or
    corrupted, a payload that does not match its md5, an event of another
    rank than the log's) is skipped with its payload and counted; with
    ``strict=True`` it raises :class:`TraceFileError` instead. A file whose
    first lines hold no event at all is refused (it is not a trace log).

    ``summary=True`` reads only the payloads in :data:`SUMMARY_PAYLOADS`
    (the rest are stepped over unread: no bytes of them are kept or decoded),
    for a quick first report. ``progress(bytes_read, total_bytes)`` is called
    every few MiB. ``origin``, a list, receives the :class:`TraceOrigin`
    (filled in as the pass goes; complete when the iterator is exhausted).
    ``layout`` is filled in place with the code layout the log carries (written by
    ``ipycompile.capture``), as soon as it is read: pass the same object to
    :func:`build_report`.

    ``lazy=True`` (a plain file, not gzip) gives each record with a payload its place in the
    file too (``TraceRecord.payload_ref``, a :class:`~ipycompile.report.model.LazyText`), so
    that the report can keep the place of a bulky payload instead of its text.

    ``span=(start, end)`` reads only the bytes ``[start, end)`` of a plain log (``end`` None: to
    its end), cut where an
    event's line starts (:func:`~ipycompile.capture.chunks.cut_points`): the read of one piece
    of a log read in parallel (:mod:`~ipycompile.capture.chunks`). Its problems name the lines
    of the file (the lines before ``start`` are counted when one needs a number); the origin
    counts its own lines; a span after the first takes the log as one (no check that the file
    is a trace log) and leaves the checks of the whole file to whoever merges the spans.

    ``chromium_batches=True`` (for :func:`~ipycompile.capture.builder.build_report` alone) gives the
    chromium events between two other events as one :class:`~ipycompile.capture.records.ChromiumBatch`
    of what the builder keeps of each, in place of a record each: most events of a log are chromium
    events, and a record costs more than what is kept of one.
    """
    name = os.fspath(path)
    st = check_path(name)
    if stat.S_ISDIR(st.st_mode):
        raise TraceFileError(f"{name} is a directory; pass a log file, or use load_trace() for a directory of rank logs")
    if not stat.S_ISREG(st.st_mode):
        raise TraceFileError(f"{name} is not a regular file (a pipe, a socket or a device); pass a log file")
    reader = _Reader(name, strict, summary)
    if layout is not None:
        reader.layout = layout
    reader.origin.size_bytes = st.st_size
    if origin is not None:
        origin.append(reader)
    try:
        stream, raw = _open_binary(name)
    except OSError as exc:
        raise TraceFileError(f"{name}: cannot be read ({os_reason(exc)})") from None
    with raw, stream:
        if span is not None and stream is not raw:
            raise TraceFileError(f"{name}: a gzip log is read whole, not by spans")
        if span is None or span[0] == 0:
            head = _head(name, stream, stream is not raw)
            if not _PREFIX.search(head):  # refuse at once, before reading a large file through
                raise TraceFileError(_not_a_trace(name, None))
        source = PayloadFile(name, st.st_size, st.st_mtime_ns) if lazy and stream is raw and not summary else None
        if span is None:
            stream.seek(0)
            yield from _records(stream, raw, reader, progress, source, batches=chromium_batches)
        else:
            part = _Span(raw, *span)
            reader.span_start = span[0]
            reader.seen_event = span[0] > 0  # a later span: the file's start was a trace log's
            yield from _records(part, part, reader, progress, source, span=span, batches=chromium_batches)


class _Span:
    """The bytes ``[start, end)`` of a file (``end`` None: to its end, also past the size it had when
    it was opened, as a log still being written), read as a stream (what :func:`_bounded_lines` reads)."""

    def __init__(self, f: IO[bytes], start: int, end: Optional[int]) -> None:
        f.seek(start)
        self.f, self.left = f, sys.maxsize if end is None else max(0, end - start)

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n) if n > 0 else b""
        self.left -= len(data)
        return data


def _head(name: str, stream: IO[bytes], gzipped: bool) -> bytes:
    """The first bytes of a log (up to :data:`_HEAD_BYTES`, as far as a broken gzip stream goes),
    or :class:`TraceFileError` when there are none: an empty file, or gzip that yields nothing."""
    head = b""
    try:
        while len(head) < _HEAD_BYTES:
            chunk = stream.read(min(1 << 16, _HEAD_BYTES - len(head)))
            if not chunk:
                break
            head += chunk
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if not head:
            raise TraceFileError(f"{name} starts as a gzip file but cannot be decompressed ({exc}): "
                                 "not a TORCH_TRACE log") from None
        # a gzip stream cut later on: the pass reports where, with what it held
    except OSError as exc:
        raise TraceFileError(f"{name}: cannot be read ({os_reason(exc)})") from None
    if not head:
        raise TraceFileError(f"{name} is empty: not a TORCH_TRACE log (torch writes a log's first event "
                             "when the first compile starts)" + (" (its gzip stream holds no data)" if gzipped else ""))
    return head


def _records(stream: IO[bytes], raw: IO[bytes], rd: _Reader, progress: Optional[Progress],
             source: "Optional[PayloadFile]" = None,
             span: Optional[tuple[int, Optional[int]]] = None, batches: bool = False) -> Iterator[TraceRecord]:
    o = rd.origin
    total = o.size_bytes
    summary = rd.summary
    lineno = 0
    start_at = span[0] if span is not None else 0
    next_progress = start_at + _PROGRESS_STEP
    read_bytes = start_at
    at = start_at  # where the current line (or run of payload lines) starts in the file
    payload_at = payload_end = 0  # where the current event's payload lines start and end in the file
    # the event being read: its line, metadata, key, payload lines (None: payload not kept), md5, line count
    cur_line = 0
    cur_meta: Optional[dict] = None
    cur_key = ""
    cur_payload: Optional[list] = None
    cur_md5: Optional[str] = None
    cur_lines = 0
    cur_skip = False  # the current envelope was bad: step over its payload lines
    rank: Optional[int] = None
    seen_event = rd.seen_event
    ended_cleanly = True
    pending = ChromiumBatch()  # chromium events read since the last record given (``batches``)

    def given(rec: Optional[TraceRecord]) -> tuple:
        """What to give once an event is read: the chromium events batched before it and its record,
        or a batch that is full."""
        nonlocal pending
        if rec is None and len(pending) < _BATCH_EVENTS:
            return ()
        out = (pending, rec) if rec is not None and pending else (rec,) if rec is not None else (pending,)
        if out[0] is pending:
            pending = ChromiumBatch()
        return out

    def finish() -> Optional[TraceRecord]:
        nonlocal rank
        meta = cur_meta
        payload: Optional[str] = None
        ref: Optional[LazyText] = None
        entry: Optional[tuple] = None  # what the builder keeps of a chromium event (``batches``)
        chromium = batches and cur_key == "chromium_event"
        if chromium:
            try:
                cid, unreadable = event_ids(meta)[0], None
            except Exception as exc:  # said below, where TraceRecord.from_raw says it
                cid, unreadable = None, exc
        if cur_payload is not None:
            data = b"\n".join(cur_payload)  # each piece one or more of the payload's lines
            if cur_md5 is not None and hashlib.md5(data, usedforsecurity=False).hexdigest() != cur_md5:
                # a log whose line ends were turned into CRLF on the way (a copy through Windows)
                crlf = _CR_AT_END.sub(b"", data)
                if crlf != data and hashlib.md5(crlf, usedforsecurity=False).hexdigest() == cur_md5:
                    data = crlf
                else:
                    cut = " (the file ends inside it: truncated)" if not ended_cleanly else ""
                    rd.problem(cur_line, f"the payload of this {cur_key or 'event'} event does not match its md5{cut}", cur_lines)
                    return None
            elif source is not None and cur_md5 is not None and cur_payload:
                ref = LazyText(source, payload_at, payload_end - payload_at, cur_md5)
            if chromium:  # nearly every event: read from its bytes, not decoded
                entry = plain_chromium_entry(data, cid)
            if entry is None:
                try:
                    payload = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    rd.problem(cur_line, f"the payload of this {cur_key} event is not UTF-8 text ({exc.reason})", cur_lines)
                    return None
        elif cur_md5 is not None and cur_key not in _SUMMARY_WITHOUT_PAYLOAD:
            # a summary pass stepping over a bulky payload: the event is counted, not read
            o.unread[cur_key] = o.unread.get(cur_key, 0) + 1
            return None
        r = meta.get("rank")
        if r is not None:
            if not isinstance(r, int) or isinstance(r, bool) or r < 0:
                rd.problem(cur_line, f"the rank of this {cur_key} event is {r!r:.40}, not a whole number >= 0", cur_lines)
                return None
            if rank is None:
                rank = rd.first_rank = r
                o.rank = rank if o.rank is None else o.rank
            elif r != rank:
                rd.problem(cur_line, f"an event of rank {r} in a log of rank {rank} (one log holds one rank's events)", cur_lines)
                return None
        if cur_key in _READ_HERE:  # properties of the file, not events of a compile
            try:
                data = loads(payload) if payload else None
            except NestingError as exc:
                rd.problem(cur_line, f"the payload of this {cur_key} event is {exc}", cur_lines)
                return None
            except ValueError:
                data = None
            if cur_key == "artifact:torch_version":  # written once per file by torch
                if isinstance(data, dict) and data.get("pytorch_version"):
                    rd.torch_version = str(data["pytorch_version"])
            elif cur_key == "artifact:" + SOURCES_ARTIFACT:  # written by ipycompile.capture: notebook cell names
                if isinstance(data, dict):
                    rd.sources.update({str(k): str(v) for k, v in data.items()})
            elif cur_key == "artifact:" + LAYOUT_ARTIFACT:  # written by ipycompile.capture, first: where code lived
                if isinstance(data, dict):
                    for f in dataclasses.fields(CodeLayout):
                        value = data.get(f.name)
                        setattr(rd.layout, f.name, [str(d) for d in value if isinstance(d, str)] if isinstance(value, list) else [])
                    rd.layout_reads += 1
            elif cur_key == "artifact:" + LIMITS_ARTIFACT:  # written by ipycompile.capture: the global limits
                if isinstance(data, dict):
                    rd.recompile_limits.update({str(k): v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)})
            elif cur_key == "artifact:" + SCHEMAS_ARTIFACT:  # written by ipycompile.capture: custom ops' schemas
                if isinstance(data, list):
                    rd.op_schemas.extend(d for d in data if isinstance(d, dict))
            elif cur_key == "artifact:" + FILES_ARTIFACT:  # written by ipycompile.capture: the files its build read
                if isinstance(data, dict):
                    rd.source_files.update({str(k): v for k, v in data.items() if isinstance(v, str)})
            elif isinstance(data, list):  # CONTEXT_ARTIFACT, written by ipycompile.capture: the source it kept
                rd.source_context.extend(d for d in data if isinstance(d, dict))
            return None
        if chromium:  # kept in the batch given before the next record
            if unreadable is not None:
                rd.problem(cur_line, f"unreadable {cur_key} event ({unreadable})", cur_lines)
                return None
            try:
                pending.append(entry if entry is not None else chromium_entry(payload, cid))
                o.records += 1
                return None
            except Exception:  # noqa: BLE001 - the builder's handler reports it, with the event kept raw
                pass
        try:
            rec = TraceRecord.from_raw(meta, payload, ref)
        except Exception as exc:  # e.g. an interned string that is not [text, id]
            rd.problem(cur_line, f"unreadable {cur_key} event ({exc})", cur_lines)
            return None
        o.records += 1
        return rec

    try:
        for line, n_lines, too_long in _bounded_lines(stream, MAX_LINE_BYTES):
            lineno += n_lines
            n_raw = len(line)
            if at == 0 and line.startswith(_BOM):  # saved by an editor: not part of the log
                line = line[len(_BOM):]
            read_bytes += too_long or len(line)
            start, at = at, at + (too_long or n_raw)
            if too_long:
                limit = f"{MAX_LINE_BYTES >> 20} MiB" if MAX_LINE_BYTES % (1 << 20) == 0 else f"{MAX_LINE_BYTES:,} bytes"
                what = f"a line of {too_long:,} bytes, longer than the {limit} a log's line may have"
                if line[:1] == b"\t" and cur_meta is not None:  # in a payload: the event cannot be read
                    rd.problem(cur_line, f"this {cur_key or 'event'} event's payload has {what} (line {rd.line(lineno)}): "
                               "not read", cur_lines + 1)
                    cur_meta, cur_payload, cur_skip = None, None, True
                elif line[:1] == b"\t":
                    o.skipped_lines += 1
                else:
                    if cur_meta is not None:
                        yield from given(finish())
                        cur_meta = None
                    rd.problem(lineno, f"{what}: not read")
                    cur_skip = True
                if not line.endswith(b"\n"):
                    ended_cleanly = False
                continue
            if line[:1] == b"\t":  # one payload line, or a run of n_lines whole ones
                if cur_payload is not None:
                    if not cur_payload:
                        payload_at = start
                    payload_end = at
                    cur_lines += n_lines
                    if line[-1:] == b"\n":
                        line = line[1:-1]
                    else:
                        ended_cleanly = False
                        line = line[1:]
                    if n_lines > 1:  # each line's tab dropped: all the tabs at once where no line holds another
                        tabless = line.translate(None, b"\t")
                        line = tabless if len(line) - len(tabless) == n_lines - 1 else line.replace(b"\n\t", b"\n")
                    cur_payload.append(line)
                elif cur_meta is not None:
                    cur_lines += n_lines
                elif cur_skip:  # the payload of an event that could not be read
                    o.skipped_lines += n_lines
                else:
                    rd.problem(lineno - n_lines + 1, "a payload line (tab-indented) with no event before it")
                    o.skipped_lines += n_lines - 1
                    cur_skip = True
                continue
            if len(line) <= 2 and not line.strip():  # torch writes no blank lines; some log collectors add them
                continue
            if cur_meta is not None:
                yield from given(finish())
                cur_meta = None
            if read_bytes >= next_progress and progress is not None:
                next_progress = read_bytes + _PROGRESS_STEP
                progress(raw.tell() if raw is not stream else read_bytes, total)
            if line[-1:] != b"\n":
                ended_cleanly = False
            cur_skip = True
            cur_line, cur_lines, cur_payload, cur_md5 = lineno, 1, None, None
            m = _PREFIX.match(line)
            if m is None:
                if not seen_event and lineno >= _SNIFF_LINES:
                    raise TraceFileError(_not_a_trace(o.path, lineno))
                rd.problem(lineno, "no glog prefix (not a line torch's trace writer makes)" + _cut(line))
                continue
            try:
                meta = loads(line[m.end():])
            except NestingError as exc:
                rd.problem(lineno, f"the JSON envelope is {exc}")
                continue
            except ValueError as exc:
                if not seen_event and lineno >= _SNIFF_LINES:
                    raise TraceFileError(_not_a_trace(o.path, lineno))
                what = "cut off (the file ends mid-line)" if line[-1:] != b"\n" else "corrupted"
                rd.problem(lineno, f"the JSON envelope is {what}: {getattr(exc, 'msg', exc)}")
                continue
            if not isinstance(meta, dict):
                rd.problem(lineno, f"the JSON envelope is a {type(meta).__name__}, not an object")
                continue
            seen_event = True
            if o.pid is None:
                o.pid = int(m.group(1))
            cur_skip = False
            cur_meta = meta
            cur_key = _event_key(meta)
            md5 = meta.get("has_payload")
            if md5 is not None:
                cur_md5 = str(md5)
                if not summary or cur_key in SUMMARY_PAYLOADS:
                    cur_payload = []
        if cur_meta is not None:
            yield from given(finish())
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if cur_meta is not None:
            rd.problem(cur_line, f"the gzip stream breaks off inside this event ({exc})", cur_lines)
        else:
            rd.problem(lineno + 1, f"the gzip stream breaks off here ({exc})")
    if pending:
        yield pending
    o.lines = lineno
    rd.ended_cleanly, rd.seen_event = ended_cleanly, seen_event
    if raw is stream:  # a plain log still being written: the bytes read, past the size it had when opened
        o.size_bytes = max(o.size_bytes, at)
    if span is not None:  # one piece of the log: the checks of the whole file are the merger's
        return
    if not seen_event and lineno:
        raise TraceFileError(_not_a_trace(o.path, lineno))
    if progress is not None:
        progress(total, total)


#: Where an event's line starts: the newline before it (a cut between two spans of a log).
_EVENT_START = re.compile(rb"\n(?=" + _PREFIX.pattern + rb")")
#: How far past where a cut is wanted one is looked for.
_CUT_SEARCH_BYTES = 64 << 20


def cut_points(path: str, wanted: list[int]) -> list[int]:
    """``[0, cuts..., size]``: the log's bytes cut into spans, each cut the start of the first line
    at or after a ``wanted`` offset that holds one of torch's line prefixes (so never inside an
    event's payload), within :data:`_CUT_SEARCH_BYTES` of it; a wanted cut with none there is left out."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for want in sorted(wanted):
            pos = max(want, cuts[-1] + 1) - 1  # the newline before a line that starts at ``want``
            limit = min(size, pos + _CUT_SEARCH_BYTES)
            f.seek(pos)
            tail = b""
            while pos < limit:
                block = f.read(min(_BLOCK_BYTES, limit - pos))
                if not block:
                    break
                data = tail + block
                m = _EVENT_START.search(data)
                if m is not None:
                    cut = pos - len(tail) + m.start() + 1
                    if cut < size:
                        cuts.append(cut)
                    break
                tail = data[-256:]  # a prefix split between two blocks is found in the next
                pos += len(block)
            if cuts[-1] >= size:
                break
    return cuts + [size]


def _cut(line: bytes, n: int = 60) -> str:
    text = line[:n].decode("utf-8", "replace").rstrip("\n")
    return f": {text!r}" + ("..." if len(line) > n else "")


def _not_a_trace(path: str, lines: Optional[int]) -> str:
    first = f"its first {lines} lines" if lines is not None else "its first MiB"
    return (
        f"{path} is not a TORCH_TRACE log: none of {first} holds a trace event "
        "(torch writes 'V1123 07:01:40.464000 420 torch/...py:123] {...json...}'; "
        "make the log with TORCH_TRACE=DIR, or ipycompile.capture(trace_dir=DIR))"
    )


def read_trace(
    path: "str | os.PathLike[str]",
    *,
    strict: bool = False,
    summary: bool = False,
    progress: Optional[Progress] = None,
    lazy: bool = True,
    read_ahead: Optional[bool] = None,
    workers: Optional[int] = None,
) -> CompileReport:
    """The :class:`CompileReport` of one TORCH_TRACE log (plain or gzip), in one streaming pass.

    ``report.origin`` says where it came from and lists the lines that could
    not be read. ``summary=True`` is a quick first pass that leaves bulky
    payloads unread: compiles, graph breaks, recompiles, failures, caches and
    compile time are all there; kernels, guard trees and graphs after
    Dynamo's are not (``origin.unread`` counts what was left).

    From a plain (not gzip) log, the bulky payloads the report keeps (graphs' code, guard
    trees, raw artifacts) stay in the file: the report holds their places and reads one
    when a view asks for it (:class:`~ipycompile.report.model.LazyText`); saving the report
    reads them in. ``lazy=False`` keeps their text in the report instead.

    A large plain log is read by a second process while this one builds the report
    (:mod:`~ipycompile.capture.readahead`: Linux, one thread, 32 MiB or more, 8 MiB where a second
    CPU is idle); ``read_ahead``
    True or False forces it on (where the read is lazy and full) or off.

    A first-pass summary of a large plain log is read in parallel, by spans
    (:mod:`~ipycompile.capture.chunks`: Linux, one thread, 8 MiB or more, one process per
    8 MiB and idle usable CPU), and so is a full, lazy read where three or more idle CPUs and the
    log's size allow it (:func:`~ipycompile.capture.chunks.span_count`: one process per 12 MiB,
    within a memory budget that grows with the log; else the read-ahead); ``workers``, the number
    of processes reading it (this one included), forces it: 1 reads in one process, 2 or more read
    by spans.
    """
    collecting = gc.isenabled()
    gc.disable()  # what is read is kept (records, then the report), not garbage: no collection finds any
    try:
        return _read_trace(os.fspath(path), strict, summary, progress, lazy, read_ahead, workers)
    finally:
        if collecting:
            gc.enable()


def _read_trace(name: str, strict: bool, summary: bool, progress: Optional[Progress], lazy: bool,
                read_ahead: Optional[bool], workers: Optional[int]) -> CompileReport:
    n = 1
    if workers != 1 and hasattr(os, "fork"):
        st = check_path(name)
        if stat.S_ISREG(st.st_mode) and (summary or lazy or workers is not None):  # a full read's text kept: one process
            n = span_count(st.st_size, summary=summary, workers=workers)
        if n > 1:
            try:
                n = 1 if is_gzip(name) else n  # gzip: read where it is unpacked
            except OSError:
                n = 1  # the one-process read says why
    if n > 1:
        shares = span_shares(n, None if summary else FULL_BUILD_PER_READ)
        cuts = cut_points(name, [int(share * st.st_size) for share in shares])
        if len(cuts) > 2:
            holder: list = []
            layout = CodeLayout()
            source = PayloadFile(name, st.st_size, st.st_mtime_ns) if lazy and not summary else None
            shown = [0]

            def seen(done: int, total: int) -> None:  # what was shown (a second read goes on from there)
                shown[0] = max(shown[0], done)
                if progress is not None:
                    progress(done, total)

            try:
                spans: list = list(zip(cuts, cuts[1:]))
                spans[-1] = (spans[-1][0], None)  # the last to the log's end (a log still being written: as one pass)
                records = records_in_spans(name, iter_records, spans, strict=strict,
                                           summary=summary, lazy=lazy, payload_file=source, progress=seen,
                                           origin=holder, layout=layout, prepare=prepare_span_record,
                                           alone=PREPARED_ALONE, counted=counted_only)
                return _report(build_report(records, layout, _files(holder)), holder[0], layout, summary)
            except SpansDepend:  # read in one process below, its progress shown from where it was
                if progress is not None:
                    outer = progress
                    progress = lambda done, total: outer(max(done, shown[0]), total)  # noqa: E731
    holder = []
    layout = CodeLayout()  # empty (path shapes decide) until the log's own layout is read, at its head
    if read_ahead is None:
        read_ahead = can_read_ahead(name, summary=summary, lazy=lazy, idle=idle_usable_cpus)
    if read_ahead and lazy and not summary and hasattr(os, "fork"):
        st = check_path(name)
        records = records_read_ahead(name, iter_records, PayloadFile(name, st.st_size, st.st_mtime_ns), strict=strict,
                                     progress=progress, origin=holder, layout=layout, prepare=prepare_record,
                                     counted=counted_only)
    else:
        records = iter_records(name, strict=strict, summary=summary, progress=progress, origin=holder,
                               layout=layout, lazy=lazy, chromium_batches=True)
    return _report(build_report(records, layout, _files(holder)), holder[0], layout, summary)


def _files(holder: list) -> SourceFiles:
    """The source files of a log's build: the copies the log carries (read at its head, known once the
    reader has passed them: ``holder`` receives the reader's state), then this machine's files."""
    return SourceFiles(lambda: holder[0].source_files if holder else {})


def _report(report: CompileReport, reader: "_Reader", layout: CodeLayout, summary: bool) -> CompileReport:
    """``report`` given what its reader read besides the events (the file's own artifacts)."""
    report.code_layout = layout if layout.recorded else None
    report.origin = reader.origin
    report.torch_version = reader.torch_version
    report.sources.update(reader.sources)
    report.source_context = _spans(reader.source_context)
    if not report.source_context and not summary:
        # a log torch wrote (no source of ipycompile's in it): the source on this machine, where it
        # still has the lines torch recorded, so the doctor reads the same code a live capture did
        # (the `for` over a model's layers, the code around a break); elsewhere nothing is kept
        from .kept_source import source_context

        report.source_context = source_context(report)
    report.recompile_limits = dict(reader.recompile_limits)
    report.op_schemas = _schemas(reader.op_schemas)
    return report


def _schemas(items: list[dict]) -> list:
    from ..report.model import OpSchema
    from ..report.serialize import from_jsonable

    out = []
    for d in items:
        try:
            out.append(from_jsonable(OpSchema, d))
        except Exception:  # noqa: BLE001 - a schema this reader cannot use: the doctor writes less for that op
            continue
    return out


def _spans(items: list[dict]) -> list:
    from ..report.model import SourceSpan

    out = []
    for d in items:
        try:
            out.append(SourceSpan(str(d["filename"]), int(d["first_line"]), [str(x) for x in d.get("lines", [])],
                                  str(d.get("module", ""))))
        except (KeyError, TypeError, ValueError):
            continue  # a span this reader cannot use: the report just lacks that source
    return out


# -- writing -----------------------------------------------------------------------
def _payload_md5(payload: str) -> str:
    return hashlib.md5(payload.encode("utf-8"), usedforsecurity=False).hexdigest()


def format_record(
    metadata: dict[str, Any],
    payload: Optional[str] = None,
    *,
    prefix: str = "",
) -> str:
    """One event as torch writes it: ``prefix`` (a glog prefix ending in ``]``), the JSON
    envelope, then the payload's lines, each after a newline and a tab. No final newline.

    A payload is given an md5 (``has_payload``) when its metadata has none."""
    if payload is not None and not isinstance(payload, str):
        payload = json.dumps(payload, indent=0)
    if payload is not None and "has_payload" not in metadata:
        metadata = {**metadata, "has_payload": _payload_md5(payload)}
    text = f"{prefix or default_prefix()} {json.dumps(metadata, default=repr)}"
    if payload is not None:
        text += "".join(f"\n\t{line}" for line in payload.split("\n"))
    return text


def glog_prefix(created: float, pid: int, pathname: str, lineno: int, level: str = "V") -> str:
    """torch's prefix for an event logged at ``created`` (seconds since the epoch, local time)."""
    msecs = (created - int(created)) * 1000  # as logging.LogRecord.msecs, and torch's formatter after it
    return f"{level}{time.strftime('%m%d %H:%M:%S', time.localtime(created))}.{int(msecs * 1000):06d} {pid} {pathname}:{lineno}]"


def default_prefix() -> str:
    return glog_prefix(time.time(), os.getpid(), "ipycompile/capture/tracefile.py", 0)


def write_trace(
    records: Iterable["tuple[dict[str, Any], Optional[str]] | tuple[dict[str, Any], Optional[str], str]"],
    out: "str | os.PathLike[str] | IO[str]",
) -> int:
    """Write ``(metadata, payload[, prefix])`` records to ``out`` (a path or a text stream)
    in torch's TORCH_TRACE format; returns the number written. ``.gz`` paths are gzipped."""
    if isinstance(out, (str, os.PathLike)):
        name = os.fspath(out)
        with atomic_writer(name, "wb") as raw:  # a failed write leaves no half log (and no earlier one cut)
            zipped = gzip.GzipFile(fileobj=raw, mode="wb", filename="") if name.endswith(".gz") else None
            f = io.TextIOWrapper(zipped or raw, encoding="utf-8", newline="\n")
            n = write_trace(records, f)
            f.flush()
            f.detach()  # the writer closes the file
            if zipped is not None:
                zipped.close()
            return n
    n = 0
    for rec in records:
        meta, payload = rec[0], rec[1]
        prefix = rec[2] if len(rec) > 2 else ""
        out.write(format_record(meta, payload, prefix=prefix))
        out.write("\n")
        n += 1
    return n


def trace_file_name(rank: Optional[int] = None) -> tuple[str, str]:
    """``(prefix, suffix)`` of the file names torch gives TORCH_TRACE logs
    (``dedicated_log_torch_trace_rank_3_<random>.log``), for ``tempfile.mkstemp``."""
    return f"dedicated_log_torch_trace_{'' if rank is None else f'rank_{rank}_'}", ".log"


def sniff_trace(path: str, lines: int = 50) -> tuple[bool, Optional[int]]:
    """``(is a TORCH_TRACE log, the rank its first events name)`` from the first ``lines`` lines
    (within the first MiB: a file whose first MiB holds no torch line prefix is not read further).
    Raises ``OSError`` when the file cannot be opened or read (the caller says why)."""
    found, rank = False, None
    stream, raw = _open_binary(path)
    with raw, stream:
        head = b""
        try:
            while len(head) < _HEAD_BYTES:
                chunk = stream.read(min(1 << 16, _HEAD_BYTES - len(head)))
                if not chunk:
                    break
                head += chunk
        except (EOFError, zlib.error):  # a broken gzip stream: a log if its first lines were events
            pass
        if not _PREFIX.search(head):
            return False, None
        if head.startswith(_BOM):
            head = head[len(_BOM):]
        for i, line in enumerate(head.split(b"\n")):
            if i >= lines:
                break
            m = _PREFIX.match(line)
            if m is None:
                continue
            try:
                meta = loads(line[m.end():])
            except ValueError:  # a line the reading pass reports
                continue
            if isinstance(meta, dict):
                found = True
                if isinstance(meta.get("rank"), int) and not isinstance(meta["rank"], bool):
                    return True, meta["rank"]
    return found, rank
