"""``load_trace``: a TORCH_TRACE log, or a directory of rank logs, into reports.

A distributed job run with ``TORCH_TRACE=DIR`` leaves one log per rank in
``DIR`` (``dedicated_log_torch_trace_rank_<r>_<random>.log``), often beside
other files. :func:`load_trace` on a directory finds the rank logs (and says
what else it ignored), reads every rank's first-pass summary in parallel
worker processes, and returns a :class:`RankReports` mapping: ``reports[r]``
is rank ``r``'s full report, read when first asked for. A job of one process
(``TORCH_TRACE=DIR python train.py``, not distributed) leaves one log without a
rank (``dedicated_log_torch_trace_<random>.log``): that directory reads as the log.

Memory stays bounded by the largest single log, not by the job: each worker
reads one log at a time, keeping only the summary pass's events (no generated
code, no later graphs), and sends back a slim summary (a few KB: compiles,
graph-break sites, recompile reasons, cache results, failures, compile times);
only the two most recently asked-for full reports are kept.

Workers are fresh ``python -m ipycompile.capture._rankworker`` processes fed
through pipes (not ``multiprocessing``): nothing of the calling process is
forked or re-imported, so this works the same from a notebook, a script
without a ``__main__`` guard, or a process that has torch's threads running.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from ..report import CompileReport, CompileTime
from ..report.text import fmt_ranks as rank_ranges
from ..report.text import one_line, printable
from .tracefile import Progress, TraceFileError, check_path, os_reason, read_trace, sniff_trace

if TYPE_CHECKING:  # pragma: no cover
    import subprocess

__all__ = ["load_trace", "RankReports", "find_rank_logs"]

#: A rank in a log's file name: torch's ``..._rank_3_x.log``, or ``rank3.log``, ``rank-3.log.gz``.
_RANK_IN_NAME = re.compile(r"(?:^|[_.-])rank[_-]?(\d+)(?=[_.-]|$)", re.I)
_LOG_NAME = re.compile(r"\.(log|txt|trace)(\.gz)?$|\.gz$", re.I)
#: The bytes of logs that make one worker worth starting (:func:`reading_workers`). A worker
#: costs about 0.15 s of CPU to start (the interpreter and our reader's modules) and about 12 ms
#: a log to send its summary back, which this process parses again; reading summaries goes at
#: about 85 MB/s a core (docs/benchmarks.md, trace_load). Two workers beat this process from
#: about 36 MB of logs (measured: 28 MB of 8 ranks took 0.31 s of CPU here, 0.60 s in two
#: workers); at 24 MB a worker, two start from 48 MB.
BYTES_PER_WORKER = 24 << 20
#: What one reading worker is taken to hold at its peak: the interpreter and ipycompile's
#: modules (about 21 MB of RSS, 15 MB of it not shared, measured for a small log), with room ...
WORKER_BASE_BYTES = 48 << 20
#: ... plus this much per byte of the largest log it reads (a first-pass summary grows by about
#: 0.2 MB per MB of log: docs/benchmarks.md).
WORKER_BYTES_PER_LOG_BYTE = 0.3
#: A gzip log counts as this many times its size: about what it unpacks to (the committed H100
#: logs unpack to 5 to 8 times theirs).
GZIP_EXPANSION = 8
#: The share of the available memory the workers may take together (the rest: this process,
#: and whatever else the machine runs).
WORKER_MEMORY_SHARE = 0.75
#: The memory the workers may take together, whatever the number of CPUs: this much ...
WORKERS_MEMORY_FLOOR = 192 << 20
#: ... or this much per byte of the logs, whichever is more. So the job's memory follows the size
#: of its logs, not the machine's cores (tlparse --all-ranks-html holds about 1.6 bytes per byte
#: of a directory's logs; 64 workers on a 64-core host would hold 1.5 GB for any directory).
WORKERS_MEMORY_PER_LOG_BYTE = 0.25
#: Full reports kept by a RankReports (the most recently asked for).
FULL_REPORTS_KEPT = 2
#: Why a trace log without a rank is not one of a directory's rank logs.
_NO_RANK = "a trace log with no rank (in its name or its first events): read it on its own"


#: torch's name for TORCH_TRACE logs (``torch._logging._internal.LOG_PREFIX``).
_TORCH_LOG_PREFIX = "dedicated_log_torch_trace_"
#: :attr:`RankReports.path` of the reports a live capture gathered from the job's ranks.
GATHERED = "ipycompile.capture(ranks='gather')"
#: How :attr:`RankReports.ignored` names a log that could not be read (``--strict`` makes it fatal).
UNREADABLE = "unreadable rank log"


def find_rank_logs(directory: str, *, strict: bool = False) -> tuple[dict[int, str], list[tuple[str, str]]]:
    """``({rank: path}, [(name, why ignored), ...])`` for the files of ``directory``.

    A rank log is a TORCH_TRACE log (its first lines are trace events) whose
    name carries a rank (``rank_3``, ``rank3``, ``rank-3``), or, when the name
    has none, whose events do. Of two logs of one rank, the newer is taken.
    A file named like a trace log that cannot be read (permissions, a broken
    symlink, an I/O error) is listed as an :data:`UNREADABLE` with the OS's
    reason; ``strict=True`` raises :class:`TraceFileError` for it instead.
    """
    found: dict[int, list[tuple[float, str]]] = {}
    ignored: list[tuple[str, str]] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise TraceFileError(f"{directory}: cannot be listed ({exc.strerror or exc})") from None
    for name in names:
        path = os.path.join(directory, name)
        m = _RANK_IN_NAME.search(name)
        try:
            st = check_path(path)
            if stat.S_ISDIR(st.st_mode):
                ignored.append((name, "a folder (not searched)"))
                continue
            if not stat.S_ISREG(st.st_mode):
                ignored.append((name, "not a regular file"))
                continue
            try:
                is_trace, rank_inside = sniff_trace(path)
            except OSError as exc:
                raise TraceFileError(f"{path}: cannot be read ({os_reason(exc)})") from None
        except TraceFileError as exc:
            if not (m or name.startswith(_TORCH_LOG_PREFIX) or _LOG_NAME.search(name)):
                ignored.append((name, "unreadable: " + str(exc).removeprefix(path + ": ")))  # not a log
                continue
            reason = str(exc).removeprefix(path + ": ")
            if strict:
                raise TraceFileError(f"{path}: a rank log that cannot be read: {reason}") from None
            ignored.append((name, f"{UNREADABLE}: {reason}"))
            continue
        if not is_trace:
            why = "named like a rank log, but not a TORCH_TRACE log" if m else "not a TORCH_TRACE log"
            if st.st_size == 0:
                why = "empty"
            ignored.append((name, why))
            continue
        rank = int(m.group(1)) if m else rank_inside
        if rank is None:
            ignored.append((name, _NO_RANK))
            continue
        found.setdefault(rank, []).append((st.st_mtime, path))
    files: dict[int, str] = {}
    for rank, candidates in sorted(found.items()):
        candidates.sort()
        files[rank] = candidates[-1][1]
        for _, older in candidates[:-1]:
            ignored.append((os.path.basename(older), f"an older log of rank {rank} (a restarted job?); the newest is read"))
    return files, ignored


def slim(report: CompileReport) -> CompileReport:
    """The report with what a comparison of ranks never reads dropped (graph code, guard trees,
    kernel sources, each node's user line, the compile-time timeline, raw artifacts, every other
    metric): a few KB."""
    for g in report.graphs:
        g.code = ""
    for gs in report.guards:
        gs.tree = ""
    for k in report.kernels:
        k.source = ""
    for n in report.control_flow:
        _slim_node(n)
    for b in report.graph_breaks:
        b.detail = ""
    for f in report.failures:
        f.traceback = ""
    for c in report.compiles:
        c.metrics = {}
    report.artifacts = []
    report.node_lines = {}
    report.compile_time = CompileTime(report.compile_time.total_s, report.compile_time.phases, report.compile_time.by_compile)
    return report


def _slim_node(node) -> None:
    for s in node.subgraphs:
        s.code = ""
    for child in node.children:
        _slim_node(child)


class RankReports(Mapping):
    """The rank logs of one TORCH_TRACE directory, as ``{rank: CompileReport}``.

    ``reports[r]`` is rank ``r``'s full report, read from its log when first
    asked for (the two most recent are kept). ``summaries[r]`` is its slim
    first-pass summary, read for every rank when the directory was loaded:
    what :func:`ipycompile.analysis.ranks.rank_divergence` compares.
    ``files[r]`` is the log read for rank ``r``; ``ignored`` lists the other
    files of the directory, each with why it was not read.
    """

    def __init__(self, path: str, files: dict[int, str], ignored: list[tuple[str, str]],
                 summaries: dict[int, CompileReport], strict: bool = False,
                 finish: Optional[Callable[[CompileReport], CompileReport]] = None, *,
                 held: Optional[dict[int, CompileReport]] = None, missing: Optional[dict[int, str]] = None) -> None:
        self.path = path
        self.finish = finish  # applied to each full report as it is read (the doctor, from the run layer)
        self.files = dict(sorted(files.items()))  # "" for a rank gathered without a log (ipycompile.capture(ranks="gather"))
        self.ignored = list(ignored)
        self.summaries = dict(sorted(summaries.items()))
        self.strict = strict
        self.held = dict(held or {})  # full reports in memory (a gathered capture's own rank), not yet finished
        self.missing = dict(sorted((missing or {}).items()))  # ranks gathered late or failed: rank -> why
        self._full: "OrderedDict[int, CompileReport]" = OrderedDict()
        self._lock = threading.Lock()

    def __getitem__(self, rank: int) -> CompileReport:
        if rank not in self.files:
            raise KeyError(f"rank {rank!r}: no log of that rank in {self.path} (ranks: {rank_ranges(self.files)})")
        with self._lock:
            if rank in self._full:
                self._full.move_to_end(rank)
                return self._full[rank]
        if rank in self.held:
            report = self.held[rank]
        elif not self.files[rank]:
            raise KeyError(f"rank {rank}: only its summary was gathered (no log); give the capture a trace_dir "
                           f"to read every rank's full report")
        else:
            report = read_trace(self.files[rank], strict=self.strict)
        if self.finish is not None:
            report = self.finish(report)
        with self._lock:
            self._full[rank] = report
            while len(self._full) > FULL_REPORTS_KEPT:
                self._full.popitem(last=False)
        return report

    def __iter__(self) -> Iterator[int]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    @property
    def gathered(self) -> bool:
        """Gathered from a live job (``ipycompile.capture(ranks="gather")``), not read from a directory."""
        return self.path == GATHERED

    @property
    def unreadable(self) -> list[str]:
        """Files named like rank logs that could not be read (their reasons are in :attr:`ignored`)."""
        return [name for name, why in self.ignored if why.startswith(UNREADABLE)]

    @property
    def problems(self) -> dict[int, list[str]]:
        """Unreadable lines, by rank (from the summary pass)."""
        return {r: s.origin.problems for r, s in self.summaries.items() if s.origin is not None and s.origin.problems}

    def __str__(self) -> str:
        if self.gathered:
            lines = [f"{len(self)} ranks' reports gathered by {one_line(self.path)} (ranks {rank_ranges(self.files)})"]
        else:
            lines = [f"{len(self)} rank logs in {one_line(self.path)} (ranks {rank_ranges(self.files)})"]
        if self.unreadable:
            lines.append(f"{len(self.unreadable)} rank log(s) could not be read: the comparison covers ranks "
                         f"{rank_ranges(self.files)} only (--strict, or strict=True, makes this an error)")
        for rank, why in self.missing.items():
            lines.append(f"  rank {rank}: {one_line(why)}")
        for rank, probs in self.problems.items():
            n = self.summaries[rank].origin.problem_count
            lines.append(f"  rank {rank}: {n} unreadable event(s) skipped, e.g. {one_line(probs[0])}")
        if self.ignored:
            lines.append(f"ignored {len(self.ignored)} other file(s):")
            lines += [f"  {one_line(name)}: {one_line(why)}" for name, why in self.ignored[:10]]
            if len(self.ignored) > 10:
                lines.append(f"  ... and {len(self.ignored) - 10} more")
        return printable("\n".join(lines))  # file names are untrusted: escaped

    def __repr__(self) -> str:
        ign = f", {len(self.ignored)} other files ignored" if self.ignored else ""
        miss = f", {len(self.missing)} missing" if self.missing else ""
        return f"<RankReports {len(self)} ranks ({rank_ranges(self.files)}) from {one_line(self.path)}{ign}{miss}>"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self) if cycle else str(self))


def load_trace(
    path: "str | os.PathLike[str]",
    *,
    rank: Optional[int] = None,
    strict: bool = False,
    summary: bool = False,
    workers: Optional[int] = None,
    progress: Optional[Progress] = None,
    finish: Optional[Callable[[CompileReport], CompileReport]] = None,
) -> "CompileReport | RankReports":
    """Read TORCH_TRACE logs: a file (plain or gzip) gives its :class:`CompileReport`;
    a directory of rank logs gives a :class:`RankReports` (rank -> report), or,
    with ``rank``, that rank's report. A directory holding one trace log without
    a rank (``TORCH_TRACE=DIR python train.py``: one process) gives that log's report.

    A line that is cut off or corrupted is skipped and counted
    (``report.origin.problems``); ``strict=True`` raises :class:`TraceFileError`
    instead, as ``tlparse --strict`` fails. ``summary=True`` reads a file in a
    quick first pass (bulky payloads left unread: no kernels, no graphs after
    Dynamo's). ``workers``: processes reading a directory's rank logs (default: by the CPUs,
    the logs' size and a memory budget that follows it: :func:`reading_workers`; none for a
    small directory), or one log's spans, this process included (default: for a first-pass
    summary of a large plain log, by the CPUs, its size and the memory: :func:`~.chunks.span_count`). ``progress(bytes_read, total)``
    is called as the reading goes.

    ``finish`` is applied to every full report returned (``ipycompile.load_trace``
    passes the doctor); the slim ``summaries`` of a directory are left as read.

    Raises :class:`TraceFileError` (a ``ValueError``) with the reason when the
    path is missing or unreadable, is not a trace log, or is a directory with no rank logs
    (with ``strict=True``, also when a rank log in it cannot be read).
    """
    done = finish or (lambda r: r)
    name = os.fspath(path)
    if not stat.S_ISDIR(check_path(name).st_mode):
        report = read_trace(name, strict=strict, summary=summary, progress=progress, workers=workers)
        got = report.origin.rank if report.origin is not None else None
        if rank is not None and got is None:
            raise TraceFileError(f"{name} is the log of one process, without a rank: rank= (--rank) picks a log "
                                 "from a directory of rank logs; leave it out to read this log")
        if rank is not None and got != rank:
            raise TraceFileError(f"{name} is the log of rank {got}, not rank {rank}; "
                                 "rank= picks a log from a directory of rank logs")
        return done(report)
    files, ignored = find_rank_logs(name, strict=strict)
    unranked = [n for n, why in ignored if why == _NO_RANK]
    if not files and len(unranked) == 1:  # TORCH_TRACE=DIR python train.py: one process, one log
        if rank is not None:
            raise TraceFileError(f"{name} holds the log of one process, without a rank ({unranked[0]}); "
                                 "leave out the rank to read it")
        return load_trace(os.path.join(name, unranked[0]), strict=strict, summary=summary, workers=workers,
                          progress=progress, finish=finish)
    if not files:
        raise TraceFileError(_no_rank_logs(name, ignored))
    if rank is not None:
        if rank not in files:
            raise TraceFileError(f"{name} holds no log of rank {rank} (ranks: {rank_ranges(files)})")
        return done(read_trace(files[rank], strict=strict, summary=summary, progress=progress, workers=workers))
    summaries = read_summaries(files, strict=strict, workers=workers, progress=progress)
    return RankReports(name, files, ignored, summaries, strict=strict, finish=finish)


def _no_rank_logs(name: str, ignored: list[tuple[str, str]]) -> str:
    unranked = [n for n, why in ignored if why == _NO_RANK]
    msg = f"{name} holds no rank logs (TORCH_TRACE logs of a distributed job, e.g. dedicated_log_torch_trace_rank_0_*.log)"
    if unranked:
        return msg + f"; it holds {len(unranked)} trace logs without a rank (one per process): read each file on its own"
    if not ignored:
        return msg + "; it is empty"
    return msg + "; its files: " + ", ".join(f"{n} ({why})" for n, why in ignored[:5]) + (" ..." if len(ignored) > 5 else "")


# -- reading many logs in worker processes -------------------------------------------
def _read_one(path: str, strict: bool) -> CompileReport:
    return slim(read_trace(path, strict=strict, summary=True))


_UNKNOWN = object()


def reading_workers(
    sizes: "list[int] | tuple[int, ...]",
    *,
    workers: Optional[int] = None,
    cpus: Optional[int] = None,
    available: "Optional[int] | object" = _UNKNOWN,
) -> int:
    """How many processes read rank logs of these ``sizes`` (bytes, a gzip log's counted as
    unpacked: :data:`GZIP_EXPANSION`). ``workers``, when given, is the caller's choice (at most
    one per log). By default, the fewest of:

    * the CPUs (``cpus``, default :func:`usable_cpus`);
    * the work: one worker per :data:`BYTES_PER_WORKER` of logs (a worker that reads less
      costs more to start than it saves);
    * the memory: the workers' budget, :data:`WORKERS_MEMORY_PER_LOG_BYTE` of the logs' bytes
      but at least :data:`WORKERS_MEMORY_FLOOR`, and no more than :data:`WORKER_MEMORY_SHARE`
      of the ``available`` memory (default :func:`available_memory`; None: unknown), divided by
      what one worker holds at its peak, :data:`WORKER_BASE_BYTES` plus
      :data:`WORKER_BYTES_PER_LOG_BYTE` of the largest log;
    * the logs.

    1 (read in this process, no worker) when that leaves fewer than two."""
    if not sizes:
        return 1
    if workers is not None:
        return max(1, min(workers, len(sizes)))
    total = sum(sizes)
    budget = max(WORKERS_MEMORY_FLOOR, int(WORKERS_MEMORY_PER_LOG_BYTE * total))
    room = available_memory() if available is _UNKNOWN else available
    if room is not None:
        budget = min(budget, int(room * WORKER_MEMORY_SHARE))
    each = WORKER_BASE_BYTES + int(WORKER_BYTES_PER_LOG_BYTE * max(sizes))
    n = min(cpus if cpus is not None else usable_cpus(), total // BYTES_PER_WORKER, budget // each, len(sizes))
    return n if n >= 2 else 1


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity (``taskset``, a container's or a batch job's cpuset),
    where the platform tells it, else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_memory() -> Optional[int]:
    """Bytes this process's children could still take: the kernel's ``MemAvailable``
    (``/proc/meminfo``; elsewhere the free physical pages), less where the cgroup the process
    runs in (a container, a batch job) leaves less room below its limit. None when unknown."""
    room: Optional[int] = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    room = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if room is None:
        try:
            room = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    group = _cgroup_room()
    if group is not None:
        room = group if room is None else min(room, group)
    return room


def _cgroup_room() -> Optional[int]:
    """The room left below this process's cgroup memory limit (v2, else v1), or None (no
    limit, or no cgroup to read)."""
    def read(path: str) -> Optional[str]:
        try:
            with open(path, encoding="ascii") as f:
                return f.read().strip()
        except OSError:
            return None

    where = ""
    for line in (read("/proc/self/cgroup") or "").splitlines():
        if line.startswith("0::"):  # cgroup v2: one hierarchy
            where = line[3:]
    for limit_file, usage_file in ((f"/sys/fs/cgroup{where}/memory.max", f"/sys/fs/cgroup{where}/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, usage = read(limit_file), read(usage_file)
        if limit is None or usage is None:
            continue
        try:
            cap, used = int(limit), int(usage)
        except ValueError:  # "max": no limit
            return None
        if cap >= 1 << 60:  # v1 writes a huge number for no limit
            return None
        return max(0, cap - used)
    return None


def read_summaries(
    files: dict[int, str],
    *,
    strict: bool = False,
    workers: Optional[int] = None,
    progress: Optional[Progress] = None,
) -> dict[int, CompileReport]:
    """The slim first-pass summary of each rank's log, read by ``workers`` processes
    (default: :func:`reading_workers`; in this process when the logs are small or ``workers=1``)."""
    sizes = {r: _size(p) for r, p in files.items()}
    total = sum(sizes.values())
    n = reading_workers([s * (GZIP_EXPANSION if files[r].lower().endswith(".gz") else 1) for r, s in sizes.items()],
                        workers=workers)
    out: dict[int, CompileReport] = {}
    done = 0
    if n == 1:
        for r, p in files.items():
            out[r] = _read_one(p, strict)
            done += sizes[r]
            if progress is not None:
                progress(done, total)
        return out
    # largest logs first, each to the least loaded worker: the job ends when the last worker does
    shares: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    loads = [0] * n
    for r in sorted(files, key=lambda r: -sizes[r]):
        i = loads.index(min(loads))
        shares[i].append((r, files[r]))
        loads[i] += sizes[r]
    procs: list[subprocess.Popen] = []
    try:
        for share in shares:
            if share:
                procs.append(_start_worker(share, strict))
    except OSError:  # no Python to start (an embedded interpreter): read them here
        for p in procs:
            p.kill()
            p.wait()
        return read_summaries(files, strict=strict, workers=1, progress=progress)
    errors: list[tuple[int, str]] = []
    lock = threading.Lock()

    def collect(proc: subprocess.Popen) -> None:
        nonlocal done
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:  # not a worker's line (something else printed): its ranks are read again below
                continue
            with lock:
                r = int(msg["rank"])
                done += sizes[r]
                if "error" in msg:
                    errors.append((r, msg["error"]))
                else:
                    out[r] = CompileReport.from_dict(msg["report"])
                if progress is not None:
                    progress(done, total)

    threads = [threading.Thread(target=collect, args=(p,), daemon=True) for p in procs]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
    if errors:
        raise TraceFileError(errors[0][1])
    for r in files:
        if r not in out:  # a worker died (killed, out of memory): read what it left here
            out[r] = _read_one(files[r], strict)
    return {r: out[r] for r in sorted(out)}


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _start_worker(share: list[tuple[int, str]], strict: bool) -> "subprocess.Popen":
    import subprocess  # here: a single log, or a directory read in this process, starts none

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ipycompile.capture._rankworker", "--strict" if strict else "--lenient"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        encoding="utf-8",
    )
    proc.stdin.write(json.dumps([[r, p] for r, p in share]))
    proc.stdin.close()
    return proc
