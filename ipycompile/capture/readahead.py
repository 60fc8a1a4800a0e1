"""Reading a large log in a second process, while this one builds the report.

One pass over a TORCH_TRACE log has two halves of about the same cost: reading
(splitting lines, decoding the JSON envelopes, checking payloads' md5) and building
(the handlers, which parse graphs, generated code, guard trees and compile events).
For a large plain log, :func:`records_read_ahead` runs
:func:`~ipycompile.capture.tracefile.iter_records` in a forked process
(:class:`~ipycompile.capture.forked.Forked`), with part of the handlers' pure work
(``prepare``: the builder's :data:`~ipycompile.capture.builder.PREPARE`), and this process
builds from the records as they come back in batches. The report is the same as a
one-process read's (``tests/test_readahead.py`` compares their JSON).

It is used only where forking is safe and pays (:func:`can_read_ahead`): where
:func:`~ipycompile.capture.forked.can_fork` holds (Linux, one thread: a command line or a
script, not a Jupyter kernel), for a full (not summary), lazy read of a plain (not gzip)
log of at least :data:`MIN_BYTES` (:data:`IDLE_MIN_BYTES` where a second CPU is idle). Anything
else is read in this process.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any, Callable, Iterator, Optional

from ..report import LazyText
from ..report.model import CompileId
from ..report.owners import CodeLayout
from .records import TraceRecord

#: Logs smaller than this are read in one process (what a fork saves grows with the log;
#: ``benchmarks/trace_load.py``: a third of the reading time of a 300 MB log)...
MIN_BYTES = 32 << 20
#: ...unless a second CPU is idle (:func:`~ipycompile.capture.chunks.idle_cpus`), from this size: the page
#: of the 10 MB benchmark log, this process's read 0.21 s to 0.12-0.13 s of CPU, the reader's 0.13 s, the
#: peak memory 34 to 35 MB (on busy CPUs the fork's 0.05 s of CPU would only add).
IDLE_MIN_BYTES = 8 << 20
#: Records per message.
_BATCH = 256


def can_read_ahead(path: str, *, summary: bool, lazy: bool, min_bytes: Optional[int] = None,
                   idle: Optional[Callable[[], int]] = None) -> bool:
    """Whether :func:`records_read_ahead` should read ``path`` in a second process. ``idle()``: the idle
    usable CPUs (:func:`~ipycompile.capture.chunks.idle_usable_cpus`), asked for a log under
    :data:`MIN_BYTES` (none given: such a log is read in one process)."""
    from .logfile import is_gzip

    if summary or not lazy:
        return False
    from .forked import can_fork  # imported here: a summary or a small log never forks (pickle, signal unloaded)

    if not can_fork():
        return False
    try:
        size = os.path.getsize(path)
        if size < (MIN_BYTES if min_bytes is None else min_bytes):
            if min_bytes is not None or size < IDLE_MIN_BYTES or idle is None or idle() < 2:
                return False
        return not is_gzip(path)  # gzip: read where it is unpacked
    except OSError:
        return False  # the one-process read says why


def records_read_ahead(
    path: str,
    iter_records: Callable[..., Iterator[TraceRecord]],
    payload_file: Any,
    *,
    strict: bool = False,
    progress: Optional[Callable[[int, int], None]] = None,
    origin: Optional[list] = None,
    layout: Optional[CodeLayout] = None,
    prepare: Optional[Callable[[TraceRecord], Any]] = None,
    counted: Optional[Callable[[str], bool]] = None,
) -> Iterator[TraceRecord]:
    """The records of ``path`` as ``iter_records(path, lazy=True, ...)`` gives them, read by a
    forked process. ``prepare(record)`` (the builder's ``prepare_record``), run by that process,
    gives each record's ``prepared`` value (an exception there leaves it None: the builder
    prepares it again, and reports what fails); ``counted(key)``: the kinds the builder only counts,
    sent with no metadata or payload (the builder's ``counted_only``). ``payload_file`` is this process's ``PayloadFile`` for the log (the records'
    :class:`LazyText` read through it). ``origin`` receives the reader's state when the pass
    ends; ``layout`` is filled in place as soon as the reader meets the log's layout. A
    :class:`~ipycompile.capture.tracefile.TraceFileError` in the reader is raised here, with
    its message."""
    from .forked import Forked, ForkedError
    from .logfile import TraceFileError

    with Forked(lambda send: _read(path, iter_records, strict, prepare, counted, send)) as child:
        while True:
            try:
                msg = child.receive()
            except ForkedError as exc:
                raise TraceFileError(f"{path}: {exc}; read_trace(..., read_ahead=False) reads it in one process") from None
            if msg is Forked.END:
                raise TraceFileError(f"{path}: the process reading it ended before the log did")
            kind = msg[0]
            if kind == "records":
                _, packed, done_bytes, total, new_layout = msg
                if new_layout is not None and layout is not None:
                    set_layout(layout, new_layout)
                for rec in packed:
                    yield _unpack(rec, payload_file)
                if progress is not None and done_bytes is not None:
                    progress(done_bytes, total)
            elif kind == "end":
                reader = msg[1]
                if layout is not None:
                    reader.layout = layout
                if origin is not None:
                    origin.append(reader)
                return
            else:  # "error": the reader's TraceFileError
                raise TraceFileError(msg[1])


def _read(path: str, iter_records, strict: bool, prepare, counted, send: Callable[[Any], None]) -> None:
    """The child's work: the log's records, prepared and packed, a batch a message."""
    from .logfile import TraceFileError

    holder: list = []
    layout = CodeLayout()
    sent_layout = CodeLayout()
    seen: list = [None, 0]

    def progress(done: int, total: int) -> None:
        seen[0], seen[1] = done, total

    def flush(batch: list) -> None:
        nonlocal sent_layout
        changed = layout != sent_layout
        if changed:
            sent_layout = copy.deepcopy(layout)
        send(("records", batch, seen[0], seen[1], sent_layout if changed else None))

    batch: list = []
    try:
        for rec in iter_records(path, strict=strict, origin=holder, layout=layout, lazy=True, progress=progress):
            batch.append(_pack(rec, prepare, counted=counted))
            if len(batch) >= _BATCH:
                flush(batch)
                batch = []
        flush(batch)
    except TraceFileError as exc:
        send(("error", str(exc)))
        return
    send(("end", holder[0]))


def set_layout(layout: CodeLayout, new: CodeLayout) -> None:
    """``layout`` made ``new`` in place (the builder holds it)."""
    for f in dataclasses.fields(CodeLayout):
        setattr(layout, f.name, getattr(new, f.name))


def _pack(rec: TraceRecord, prepare, alone: frozenset = frozenset(),
          counted: Optional[Callable[[str], bool]] = None) -> tuple:
    """``rec`` as a tuple to send; ``alone``: the kinds whose payload is not sent once prepared;
    ``counted(key)``: whether the receiver only counts the kind (sent with no metadata or payload)."""
    if counted is not None and counted(rec.key):
        return (rec.kind, rec.name, {}, None, None, 0, None, None)
    prepared = None
    if prepare is not None:
        try:
            prepared = prepare(rec)
        except Exception:  # noqa: BLE001 - the builder prepares it again, and reports what fails
            prepared = None
    cid = rec.compile_id
    ref = rec.payload_ref
    payload = None if prepared is not None and rec.key in alone else rec.payload
    return (rec.kind, rec.name, rec.metadata, payload,
            None if cid is None else (cid.frame_id, cid.frame_compile_id, cid.compiled_autograd_id),
            rec.attempt, None if ref is None else (ref.offset, ref.length, ref.md5), prepared)


def _unpack(t: tuple, payload_file: Any) -> TraceRecord:
    kind, name, meta, payload, cid, attempt, ref, prepared = t
    return TraceRecord(kind, name, meta, payload, None if cid is None else CompileId(*cid), attempt,
                       None if ref is None else LazyText(payload_file, *ref), prepared)
