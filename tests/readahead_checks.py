"""Run by tests/test_readahead.py in a fresh process (one thread: where ipycompile forks).

``python readahead_checks.py CHECK ARGS...`` prints one JSON object of what it saw.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import threading

CHECK = sys.argv[1]
ARGS = sys.argv[2:]
facts: dict = {"pid": os.getpid()}


if CHECK == "read":  # LOG [--strict]: the report read ahead and in one process
    from ipycompile.capture.tracefile import TraceFileError, read_trace

    readahead = importlib.import_module("ipycompile.capture.readahead")
    path, strict = ARGS[0], "--strict" in ARGS
    facts["can_fork"] = importlib.import_module("ipycompile.report.forked").can_fork()
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
    if len(ARGS) > 1 and ARGS[1].endswith(".gz"):
        facts["chosen"]["gzip"] = readahead.can_read_ahead(ARGS[1], summary=False, lazy=True, min_bytes=0)

elif CHECK == "forked":  # Forked: values in order, errors named, a dead child said, an early close reaped
    from ipycompile.report.forked import Forked, ForkedError

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
    before = importlib.import_module("ipycompile.report.forked").can_fork()
    t.start()
    facts["can_fork"] = [before, importlib.import_module("ipycompile.report.forked").can_fork()]

elif CHECK == "figures":  # LOG: the page with figures drawn by a second process and by this one
    from ipycompile.capture.tracefile import read_trace
    from ipycompile.widgets.blocks import Figure, Tab, TreeNode
    from ipycompile.widgets.viewmodel import view_model

    html = importlib.import_module("ipycompile.widgets.html")
    report = read_trace(ARGS[0])
    pages = {}
    for ahead in (True, False):
        html.FIGURES_AHEAD = ahead
        vm = view_model(report)

        def marked():  # a figure that says which process drew it (in a file: a child's memory is its own)
            with open(ARGS[0] + ".drawn", "a") as f:
                f.write(f"{os.getpid()}\n")
            from matplotlib.figure import Figure as MplFigure

            f = MplFigure(figsize=(2, 1))
            f.add_subplot().plot([0, 1], [1, 0])
            return f

        def broken():
            raise ValueError("no data to draw")

        extra = Tab("extra", "Extra", lambda: [TreeNode("nested", [Figure("Marked", marked)]), Figure("Broken", broken)])
        vm.tabs.append(extra)
        out: list = []
        html.render_view_model(vm, write=out.append)
        page = re.sub(r"ipyc\d+-\d+", "X", "".join(out))  # the page's anchor and ids differ from page to page
        pages[ahead] = re.sub(r"(X-[a-z_]+)\d+", r"\1N", page)
    facts["same_page"] = pages[True] == pages[False]
    facts["figures"] = pages[True].count("<figure>")
    facts["broken_said"] = "Broken: could not draw the figure (ValueError: no data to draw)" in pages[True]
    with open(ARGS[0] + ".drawn") as f:
        facts["drawn_in"] = [int(x) for x in f.read().split()]
    facts["can_fork"] = importlib.import_module("ipycompile.report.forked").can_fork()

print(json.dumps(facts))
