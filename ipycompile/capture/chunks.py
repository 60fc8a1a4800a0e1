"""Reading one large log in parallel: its spans read by forked processes, merged in file order.

A first-pass summary of a large plain log is mostly reading (splitting lines, decoding the JSON
envelopes, checking payloads' md5, parsing the chromium events); the builder's share is small.
:func:`records_in_spans` cuts the log into byte ranges where an event's line starts
(:func:`~ipycompile.capture.tracefile.cut_points`); each span after the first is read by a forked
process (:class:`~ipycompile.capture.forked.Forked`: the reader's own code,
``iter_records(span=..., chromium_batches=True)``, its chromium events prepared as read and sent
in batches, with the builder's pure parsing of the other events,
:data:`~ipycompile.capture.builder.PREPARE_SPAN`), which sends its records back once its span is
read; this process reads the first span itself while they work, then builds from their records in
file order. The first span is the smaller one (:data:`BUILD_PER_READ`): this process builds every
span's records besides.

What crosses a cut is resolved here or in the builder: ``str`` events (interned filenames) are
records built in file order; each span's problems name lines of the file (``_Reader.line``); its
counts, problems, unread kinds and the artifacts the reader keeps are merged in file order; the
log's code layout is applied where it was read; ``--strict`` raises the first span's error in
file order. Where a span's reading depended on the spans before it (the log's rank, first named
in an earlier span, differs from the one a span saw; a line cut short before a span with problems;
a first span with no event), :class:`SpansDepend` is raised and the log is read again in one
process: the report is always the one-process read's (``tests/test_readahead.py`` compares them).

Used where forking is safe (:func:`~ipycompile.capture.forked.can_fork`), for a first-pass
summary (``read_trace(summary=True)``) of a plain log of at least :data:`MIN_BYTES`, with one
process per :data:`BYTES_PER_PROCESS` of log, at most one per idle usable CPU, within a memory
budget (:func:`span_count`).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Iterator, Optional

from ..report.owners import CodeLayout
from .records import TraceRecord

#: Logs smaller than this are read in one process (docs/benchmarks.md, "Reading one log in parallel":
#: from 10 MB a second process pays, this one's CPU 0.139 s to 0.103 s for the summary of 10 MB, the
#: other's 0.070 s; a fork costs 2 to 3 ms of CPU).
MIN_BYTES = 8 << 20
#: The bytes of log that make one more reading process worth starting (two from MIN_BYTES).
BYTES_PER_PROCESS = 8 << 20
#: The builder's CPU per byte of a summary, over a span reader's (both measured on the renumbered
#: H100 logs of ``benchmarks/trace_load.py``): this process reads the first span and builds every
#: span, so its span is the smaller, to end with the others. Since the chromium events come in
#: batches prepared as read, the builder's share is small: with 0.05, this process ends its span as
#: the other ends its own (100 MB, 2 processes: 0.37-0.46 s of CPU against 0.39-0.46 s; with 0.15 it
#: waited, 0.36-0.43 s against 0.40-0.46 s), docs/benchmarks.md, "Reading one log in parallel".
BUILD_PER_READ = 0.05
#: What one span's reader holds beyond what it shares with this process (its records, pickled,
#: until this process takes them), per byte of its span, and at least (measured: the reader of
#: 110 MB of the 200 MB log peaked at 35 MB of RSS, the pages it shares with this process included).
SPAN_BYTES_PER_LOG_BYTE = 0.25
SPAN_BASE_BYTES = 16 << 20
#: A full read (the page, ``--json``) in spans, against the read-ahead's two processes
#: (:mod:`.readahead`), which it replaces where it pays (docs/benchmarks.md, "The full read in spans"):
#: this process builds every record, so the readers only shorten its reading; with two processes it
#: gains nothing on the read-ahead, so it takes at least :data:`FULL_MIN_PROCESSES`, one per
#: :data:`FULL_BYTES_PER_PROCESS` of log, on idle CPUs.
FULL_MIN_PROCESSES = 3
FULL_BYTES_PER_PROCESS = 12 << 20
#: :data:`BUILD_PER_READ` of a full read: this process reading and building its own span took 1.8 s per
#: 100 MB, a reader 1.6 s (4 processes, the 100 MB log), so its span is the smaller by this much.
FULL_BUILD_PER_READ = 0.15
#: What one reader of a full read adds to the processes' summed memory (PSS), measured: its own
#: pages (about 8 MB), and its records pickled until this process takes them (0.17 bytes per byte of
#: its span on the benchmark's logs: the generated code, chromium events and caches are sent prepared,
#: without their payloads). Three processes hold about what the read-ahead's two do (its reader holds
#: a pipe's worth and its state): the sum over the read-ahead's was +1 and +10 MB with 3, +8 and +4 MB
#: with 4, then about 8 MB a process more (100 and 200 MB logs, 4 to 16 processes).
FULL_SPAN_BASE_BYTES = 8 << 20
FULL_SPAN_BYTES_PER_LOG_BYTE = 0.2
#: What the readers of a full read may add to its memory, as a share of the log's size: a process
#: more than :data:`FULL_MIN_PROCESSES` per :data:`FULL_SPAN_BASE_BYTES` of it (the one-process page
#: holds 0.4 to 0.65 of the log's size; tlparse's page 3.3 times it): 3 processes for 100 MB, 4 for
#: 200 MB, 6 for 400 MB.
FULL_MEMORY_SHARE = 0.08
#: Records per message.
_BATCH = 512


class SpansDepend(Exception):
    """A span's reading depended on the spans before it: read the log in one process."""


def span_count(size: int, *, summary: bool, workers: Optional[int] = None, cpus: Optional[int] = None,
               available: Optional[int] = None, load: Optional[float] = None) -> int:
    """How many processes read a plain log of ``size`` bytes (this one included; 1: no other).
    ``workers``, when given, is the caller's choice. By default, the fewest of the usable CPUs
    (``cpus``), the CPUs left idle by the machine's ``load`` (:func:`idle_cpus`), one per
    :data:`BYTES_PER_PROCESS` (a full read: :data:`FULL_BYTES_PER_PROCESS`), and what the memory
    budget allows (a quarter of the ``available`` memory,
    :func:`~ipycompile.capture.tracedir.available_memory`, or 1 GiB where unknown; a full read's
    readers also within :data:`FULL_MEMORY_SHARE` of the log's size); 1 below :data:`MIN_BYTES`, for
    a full read that would get fewer than :data:`FULL_MIN_PROCESSES` (the read-ahead does as well
    with less memory), or where forking is not safe."""
    if workers is not None:
        n = workers
    else:
        if size < MIN_BYTES:
            return 1
        from .tracedir import available_memory, usable_cpus

        cpus = cpus if cpus is not None else usable_cpus()
        room = available if available is not None else available_memory()
        budget = (room if room is not None else 1 << 30) // 4
        if summary:
            n = min(cpus, idle_cpus(cpus, load), max(2, size // BYTES_PER_PROCESS))
            n = _within_budget(n, size, budget, SPAN_BASE_BYTES, SPAN_BYTES_PER_LOG_BYTE)
        else:
            n = min(cpus, idle_cpus(cpus, load), size // FULL_BYTES_PER_PROCESS,
                    FULL_MIN_PROCESSES + int(FULL_MEMORY_SHARE * size) // FULL_SPAN_BASE_BYTES)
            n = _within_budget(n, size, budget, FULL_SPAN_BASE_BYTES, FULL_SPAN_BYTES_PER_LOG_BYTE)
            if n < FULL_MIN_PROCESSES:
                return 1
    if n < 2:
        return 1
    from .forked import can_fork  # imported here: a small log's summary never forks (pickle, signal unloaded)

    return n if can_fork() else 1


def _within_budget(n: int, size: int, budget: int, base: int, per_log_byte: float) -> int:
    """At most ``n`` processes, and as many as a memory ``budget`` holds: each reader of ``n`` spans of a
    ``size``-byte log holds ``base`` bytes and ``per_log_byte`` of its span (this process needs none more)."""
    each = base + int(per_log_byte * size / max(1, n))
    return min(n, 1 + budget // each)


def idle_cpus(cpus: int, load: Optional[float] = None) -> int:
    """The processes that may read at once without waiting on other work: ``cpus`` plus this one,
    less the run queue's ``load`` (default: the 1-minute load average), at least 1. Reading in spans
    costs about a fifth more CPU than in one process (the records sent back, the builder waiting on
    them): on busy cores it is slower (docs/benchmarks.md, "Reading one log in parallel")."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    return max(1, min(cpus, int(cpus + 1 - load + 0.5)))


def idle_usable_cpus() -> int:
    """:func:`idle_cpus` of the CPUs this process may use, at the 1-minute load average."""
    from .tracedir import usable_cpus

    return idle_cpus(usable_cpus())


def span_shares(n: int, build_per_read: Optional[float] = None) -> list[float]:
    """Where ``n`` spans end, as shares of the log: the first (this process's) smaller by
    ``build_per_read`` (:data:`BUILD_PER_READ`, a summary's, when not given; a full read's is
    :data:`FULL_BUILD_PER_READ`), so that it ends reading and building it as the others end reading."""
    first = 1.0 / (1.0 + (n - 1) * (1.0 + (BUILD_PER_READ if build_per_read is None else build_per_read)))
    rest = (1.0 - first) / (n - 1)
    return [first + i * rest for i in range(n - 1)]


def records_in_spans(
    path: str,
    iter_records: Callable[..., Iterator[TraceRecord]],
    spans: "list[tuple[int, Optional[int]]]",
    *,
    strict: bool,
    summary: bool,
    lazy: bool,
    payload_file: Any = None,
    progress: Optional[Callable[[int, int], None]] = None,
    origin: Optional[list] = None,
    layout: Optional[CodeLayout] = None,
    prepare: Optional[Callable[[TraceRecord], Any]] = None,
    alone: frozenset = frozenset(),
    counted: Optional[Callable[[str], bool]] = None,
) -> Iterator[TraceRecord]:
    """The records of ``path`` as one ``iter_records(chromium_batches=True)`` pass gives them, its ``spans`` after the
    first read by forked processes (``prepare``: the builder's part they run; ``alone``: the kinds
    whose payload they do not send once prepared; ``counted(key)``: the kinds the builder only
    counts, sent with no metadata or payload). ``origin`` receives the merged reader state;
    ``layout`` is set where the log's layout was read. Raises :class:`SpansDepend` where the spans
    cannot be read apart (the caller reads the log in one process), and the reader's
    :class:`~ipycompile.capture.logfile.TraceFileError` of the first span, in file order, that has one."""
    from .forked import Forked, ForkedError
    from .logfile import TraceFileError
    from .readahead import _unpack, set_layout

    children: list = []
    try:
        for span in spans[1:]:
            children.append(Forked(lambda send, span=span: _read_span(
                path, iter_records, span, strict, summary, lazy, prepare, alone, counted, send)))
        holder: list = []
        yield from iter_records(path, strict=strict, summary=summary, progress=progress, origin=holder,
                                layout=layout, lazy=lazy, span=spans[0], chromium_batches=True)
        merged = holder[0]
        if not merged.seen_event:
            raise SpansDepend("no event in the first span")
        total = merged.origin.size_bytes
        for child, span in zip(children, spans[1:]):
            try:
                msg = child.receive()
                if msg is Forked.END:
                    raise ForkedError("it ended before its span did")
                msg = pickle.loads(msg)
            except ForkedError as exc:
                raise TraceFileError(f"{path}: the process reading it from byte {span[0]:,} stopped ({exc}); "
                                     "read_trace(..., workers=1) reads it in one process") from None
            if msg[0] == "error":
                _, text, first_rank = msg
                if _ranks_differ(merged.first_rank, first_rank):
                    raise SpansDepend("the log's rank")
                raise TraceFileError(text)
            reader = msg[1]
            if _ranks_differ(merged.first_rank, reader.first_rank) or (
                    not merged.ended_cleanly and reader.origin.problem_count):
                raise SpansDepend("the log's rank, or a line cut short before a span with problems")
            while (data := child.receive()) is not Forked.END:
                msg = pickle.loads(data)
                if msg[0] == "layout":
                    if layout is not None:
                        set_layout(layout, msg[1])
                    continue
                for rec in msg[1]:
                    yield _unpack(rec, payload_file)
            merged.merge(reader)
            if progress is not None and span[1] is not None:
                progress(span[1], total)
        if progress is not None:
            progress(total, total)
        if origin is not None:
            origin.append(merged)
    finally:
        for child in children:
            child.close()


def _ranks_differ(before: Optional[int], here: Optional[int]) -> bool:
    return before is not None and here is not None and before != here


def _read_span(path: str, iter_records, span: "tuple[int, Optional[int]]", strict: bool, summary: bool, lazy: bool,
               prepare, alone: frozenset, counted, send: Callable[[Any], None]) -> None:
    """A reader process's work: its span read whole, then its reader state and its records sent
    (each message pickled as it is made: the bytes hold less than the objects until they are sent)."""
    from .logfile import TraceFileError
    from .readahead import _pack

    holder: list = []
    layout = CodeLayout()
    out: list = []  # ("records", packed) and ("layout", the layout read there), pickled, in file order
    batch: list = []
    reads = 0

    def keep(msg: tuple) -> None:
        out.append(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))

    try:
        for rec in iter_records(path, strict=strict, summary=summary, origin=holder, layout=layout, lazy=lazy,
                                span=span, chromium_batches=True):
            if holder[0].layout_reads != reads:  # the layout was read just before this record
                reads = holder[0].layout_reads
                keep(("records", batch))
                keep(("layout", layout))
                batch = []
            batch.append(_pack(rec, prepare, alone, counted))
            if len(batch) >= _BATCH:
                keep(("records", batch))
                batch = []
    except TraceFileError as exc:
        send(pickle.dumps(("error", str(exc), holder[0].first_rank if holder else None)))
        return
    keep(("records", batch))
    if holder and holder[0].layout_reads != reads:
        keep(("layout", layout))
    send(pickle.dumps(("reader", holder[0])))
    for msg in out:
        send(msg)
