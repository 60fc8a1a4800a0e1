"""Run by tests/test_readahead.py in a fresh process (one thread: where ipycompile forks).

``python readahead_checks.py CHECK ARGS...`` prints one JSON object of what it saw.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading

CHECK = sys.argv[1]
ARGS = sys.argv[2:]
facts: dict = {"pid": os.getpid()}


if CHECK == "read":  # LOG [--strict]: the report read ahead and in one process
    from ipycompile.capture.tracefile import TraceFileError, read_trace

    readahead = importlib.import_module("ipycompile.capture.readahead")
    path, strict = ARGS[0], "--strict" in ARGS
    facts["can_fork"] = importlib.import_module("ipycompile.capture.forked").can_fork()
    for ahead in (False, True):
        seen: list = []
        try:
            r = read_trace(path, strict=strict, read_ahead=ahead, progress=lambda done, total: seen.append((done, total)))
            facts[str(ahead)] = {"json": r.to_json(), "origin": repr(r.origin), "torch_version": r.torch_version,
                                 "layout": repr(r.code_layout), "progress": seen}
        except TraceFileError as exc:
            facts[str(ahead)] = {"error": str(exc)}
    # who prepared the records: the reader process, not this one
    from ipycompile.capture.tracefile import PayloadFile, iter_records

    st = os.stat(path)
    pids = {rec.prepared for rec in readahead.records_read_ahead(
        path, iter_records, PayloadFile(path, st.st_size, st.st_mtime_ns), prepare=lambda rec: os.getpid())}
    facts["prepared_in"] = sorted(pids)
    facts["same_records"] = (list(readahead.records_read_ahead(path, iter_records, PayloadFile(path, st.st_size, st.st_mtime_ns)))
                             == list(iter_records(path, lazy=True)))
    facts["chosen"] = {"plain": readahead.can_read_ahead(path, summary=False, lazy=True, min_bytes=0),
                       "summary": readahead.can_read_ahead(path, summary=True, lazy=True, min_bytes=0),
                       "small": readahead.can_read_ahead(path, summary=False, lazy=True)}
    # a log under MIN_BYTES: read ahead only from IDLE_MIN_BYTES (here the test log's size), with a second CPU idle
    readahead.IDLE_MIN_BYTES = os.path.getsize(path)
    facts["chosen"]["idle"] = [readahead.can_read_ahead(path, summary=False, lazy=True, idle=lambda n=n: n)
                               for n in (1, 2)]
    readahead.IDLE_MIN_BYTES = os.path.getsize(path) + 1
    facts["chosen"]["idle_smaller"] = readahead.can_read_ahead(path, summary=False, lazy=True, idle=lambda: 2)
    if len(ARGS) > 1 and ARGS[1].endswith(".gz"):
        facts["chosen"]["gzip"] = readahead.can_read_ahead(ARGS[1], summary=False, lazy=True, min_bytes=0)

elif CHECK == "spans":  # LOG [--strict] [--max-line N]: the report read in spans (2 and 3 processes) and in one
    from ipycompile.capture.tracefile import TraceFileError, cut_points, iter_records, read_trace

    chunks = importlib.import_module("ipycompile.capture.chunks")
    path, strict = ARGS[0], "--strict" in ARGS
    if "--max-line" in ARGS:  # a smaller cap on a line's length, so that a small log holds a longer one
        importlib.import_module("ipycompile.capture.tracefile").MAX_LINE_BYTES = int(ARGS[ARGS.index("--max-line") + 1])
    size = os.path.getsize(path)
    for summary in (True, False):
        for workers in (1, 2, 3):
            seen: list = []
            try:
                r = read_trace(path, strict=strict, summary=summary, workers=workers,
                               progress=lambda done, total: seen.append((done, total)))
                facts[f"{summary} {workers}"] = {"json": r.to_json(), "origin": repr(r.origin),
                                                 "torch_version": r.torch_version, "layout": repr(r.code_layout),
                                                 "progress": seen}
            except TraceFileError as exc:
                facts[f"{summary} {workers}"] = {"error": str(exc)}
    cuts = cut_points(path, [int(share * size) for share in chunks.span_shares(3)])
    facts["cuts"] = cuts
    with open(path, "rb") as f:
        data = f.read()
    facts["lines_before_cuts"] = [data.count(b"\n", 0, c) for c in cuts]
    facts["cut_at_event"] = all(c == 0 or c == size or data[c - 1:c] == b"\n" and data[c:c + 1] != b"\t" for c in cuts)
    # the spans after the first are read by other processes (one each), unless they depend on each other
    try:
        pids = {rec.prepared for rec in chunks.records_in_spans(
            path, iter_records, list(zip(cuts, cuts[1:])), strict=False, summary=True, lazy=False,
            prepare=lambda rec: os.getpid())}
        facts["read_apart"] = sorted(p for p in pids if p is not None and p != os.getpid())
    except chunks.SpansDepend:
        facts["read_apart"] = None
    facts["count"] = {"small": chunks.span_count(4 << 20, summary=True, cpus=2, load=0.0),
                      "ten_mb": chunks.span_count(10 << 20, summary=True, cpus=8, load=0.0),
                      "full": chunks.span_count(1 << 30, summary=False, cpus=2, load=0.0),
                      "large": chunks.span_count(1 << 30, summary=True, cpus=2, load=0.0),
                      "one_busy": chunks.span_count(1 << 30, summary=True, cpus=2, load=1.0),
                      "busy": chunks.span_count(1 << 30, summary=True, cpus=2, load=2.0),
                      "by_memory": chunks.span_count(1 << 30, summary=True, cpus=64, available=64 << 20, load=0.0),
                      "many": chunks.span_count(1 << 30, summary=True, cpus=64, available=64 << 30, load=0.0),
                      "many_busy": chunks.span_count(1 << 30, summary=True, cpus=64, available=64 << 30, load=40.0),
                      "forced": chunks.span_count(1 << 10, summary=False, workers=3, load=9.0),
                      # a full read: spans only from three idle CPUs, one process per 12 MiB, a memory budget
                      # that grows with the log's size
                      "full_three": chunks.span_count(100_000_000, summary=False, cpus=16, available=64 << 30, load=0.0),
                      "full_small": chunks.span_count(30 << 20, summary=False, cpus=16, available=64 << 30, load=0.0),
                      "full_busy": chunks.span_count(1 << 30, summary=False, cpus=16, available=64 << 30, load=15.0),
                      "full_by_log": [chunks.span_count(mb << 20, summary=False, cpus=64, available=64 << 30, load=0.0)
                                      for mb in (200, 400, 1024)],
                      "full_by_memory": chunks.span_count(1 << 30, summary=False, cpus=64, available=128 << 20, load=0.0)}
    facts["can_fork"] = importlib.import_module("ipycompile.capture.forked").can_fork()

elif CHECK == "forked":  # Forked: values in order, errors named, a dead child said, an early close reaped
    from ipycompile.capture.forked import Forked, ForkedError

    with Forked(lambda send: [send(("n", i, os.getpid())) for i in range(1000)]) as f:
        got = []
        while (v := f.receive()) is not Forked.END:
            got.append(v)
    facts["values"] = [v[1] for v in got]
    facts["child_pids"] = sorted({v[2] for v in got})

    def fails(send):
        send(1)
        raise KeyError("no such figure")

    f = Forked(fails)
    facts["first"] = f.receive()
    try:
        f.receive()
    except ForkedError as exc:
        facts["raised"] = str(exc)

    f = Forked(lambda send: os.kill(os.getpid(), 9))
    try:
        f.receive()
    except ForkedError as exc:
        facts["killed"] = str(exc)

    f = Forked(lambda send: [send(b"x" * 100_000) for _ in range(10_000)])  # blocks on a full pipe
    f.receive()
    pid = f.pid
    f.close()
    try:
        os.waitpid(pid, os.WNOHANG)
        facts["reaped"] = False
    except ChildProcessError:
        facts["reaped"] = True
    t = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    before = importlib.import_module("ipycompile.capture.forked").can_fork()
    t.start()
    facts["can_fork"] = [before, importlib.import_module("ipycompile.capture.forked").can_fork()]


print(json.dumps(facts))
