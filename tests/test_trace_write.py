"""Writing captures as TORCH_TRACE logs, and the notebook side: ``%%compile --trace-dir``, ``%compile_trace``.

Real compiles are captured with ``ipycompile.capture(trace_dir=...)``; the log
written must read back as the same report, and tlparse must read it (in its
``--strict`` mode, which fails on any line it cannot parse) with the same
counts. The magics run in a real IPython shell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from IPython.utils.capture import capture_output

import ipycompile
import scenarios
from tlparse_truth import assert_report_agrees, read_tlparse_output, run_tlparse, tlparse_counts
from trace_jobs import dist_logs


def comparable(report) -> dict:
    d = json.loads(report.to_json())
    d.pop("origin")
    return d


def _recompiles():
    fn = torch.compile(scenarios.scaled, backend="eager", dynamic=False)
    fn(torch.randn(8), 2)
    fn(torch.randn(16), 2)


def _failure():
    try:
        torch.compile(scenarios.fullgraph_break, backend="eager", fullgraph=True)(torch.randn(3))
    except Exception:
        pass


def _training():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    torch.compile(model, backend="aot_eager")(torch.randn(3, 4)).sum().backward()


CASES = {
    "graph break": lambda: torch.compile(scenarios.data_dependent_if, backend="eager")(torch.randn(8)),
    "break in a loop": lambda: torch.compile(scenarios.loop_calling_break, backend="eager")(torch.randn(8)),
    "recompiles": _recompiles,
    "failure": _failure,
    "control flow": lambda: torch.compile(scenarios.control_flow, backend="eager", fullgraph=True)(torch.randn(5, 4)),
    "aot training": _training,
}


@pytest.mark.parametrize("case", CASES)
def test_a_written_capture_reads_back_as_the_same_report_and_tlparse_agrees(case, tmp_path):
    torch._dynamo.reset()
    with ipycompile.capture(trace_dir=tmp_path / "logs") as cap:
        CASES[case]()
    path = Path(cap.trace_path)
    assert path.parent == tmp_path / "logs" and path.name.startswith("dedicated_log_torch_trace_") and path.suffix == ".log"
    live = cap.report
    assert live.compiles and live.origin is None
    back = ipycompile.load_trace(path)
    assert comparable(back) == comparable(live)
    assert back.origin.path == str(path) and not back.origin.problems and back.torch_version == torch.__version__

    out = tmp_path / "tl"
    run_tlparse(path, out, "--strict")  # fails on any line tlparse cannot read
    assert_report_agrees(back, read_tlparse_output(out))


def test_a_capture_written_in_a_rank_puts_the_rank_on_ipycompiles_own_events_too(tmp_path):
    """In a rank of a torch.distributed job torch puts ``rank`` in every event; the events a capture adds
    (what Dynamo held when it opened, its cache hits) carry it too, or tlparse counts them as another
    rank's and fails (found when a gloo group another test left open made a 'break in a loop' capture a
    rank's)."""
    from doors import gloo

    torch._dynamo.reset()
    with gloo():
        with ipycompile.capture(trace_dir=tmp_path / "logs") as cap:
            CASES["break in a loop"]()
    path = Path(cap.trace_path)
    assert "rank_0" in path.name
    metas = [json.loads(line.split("] ", 1)[1]) for line in path.read_text().splitlines() if line.startswith(("V", "I", "W"))]
    assert metas and all(m.get("rank") == 0 for m in metas), [m for m in metas if m.get("rank") != 0][:3]
    run_tlparse(path, tmp_path / "tl", "--strict")


def test_file_names_interned_before_the_capture_are_written_too(tmp_path):
    torch._dynamo.reset()
    fn = torch.compile(scenarios.scaled, backend="eager", dynamic=False)
    fn(torch.randn(8), 2)  # torch interns this file's name now, outside the capture
    with ipycompile.capture(trace_dir=tmp_path) as cap:
        fn(torch.randn(16), 2)  # a recompile whose stack names the same file
    back = ipycompile.load_trace(cap.trace_path)
    (c,) = back.compiles
    assert c.stack and all(not f.filename.startswith("<string ") for f in c.stack)  # `<string N>`: a name never read
    assert c.stack[-1].filename == scenarios.FILE and c.stack[-1].function == "scaled"


#: a library's module (its folder is shaped as an installed package's), and the user's script that compiles it
#: and a module of its own, each called with a Python int that changes (one compiled version per value)
_LIBRARY = """
import torch


class Scale(torch.nn.Module):
    def forward(self, x, factor):
        return x * factor
"""
_SCRIPT = """
import torch
import steplib


class Shift(torch.nn.Module):
    def forward(self, x, offset):
        return x + offset


scaled = torch.compile(steplib.Scale(), backend="eager", dynamic=False)
shifted = torch.compile(Shift(), backend="eager", dynamic=False)
for n in (2, 3):
    scaled(torch.ones(2), n)
for step in (1, 4):
    shifted(torch.ones(2), offset=step)
"""


def _names(report) -> list:
    return [(g.path, g.name, g.origin) for rc in report.recompiles for g in rc.guards]


def test_a_written_capture_names_guarded_values_the_same_where_its_files_are_gone(tmp_path):
    """A log read on another machine, or after the project moved or its venv was rebuilt, where the files
    its compiled code came from are gone (or hold other lines): the values that recompiled are named as
    the live report named them, from the user's own call (``n``, ``step``), since the log carries the
    files its report was built from. The files are really removed, and Python's line cache forgets them."""
    import linecache
    import runpy
    import shutil
    import sys

    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "steplib").mkdir(parents=True)
    (site / "steplib" / "__init__.py").write_text(_LIBRARY)
    script = tmp_path / "project" / "train.py"
    script.parent.mkdir()
    script.write_text(_SCRIPT)
    torch._dynamo.reset()
    sys.path.insert(0, str(site))
    try:
        with ipycompile.capture(trace_dir=tmp_path / "logs") as cap:
            runpy.run_path(str(script), run_name="__main__")  # `python train.py`
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("steplib", None)
        torch._dynamo.reset()
    live = cap.report
    assert _names(live) == [("factor", "n", "argument"), ("offset", "step", "argument")], _names(live)
    assert live.owner(str(site / "steplib" / "__init__.py")).value == "library"

    shutil.rmtree(tmp_path / "env")
    shutil.rmtree(script.parent)
    linecache.checkcache()  # what Python knew of their lines goes with them
    assert not linecache.getlines(str(script))
    back = ipycompile.load_trace(cap.trace_path)
    assert _names(back) == _names(live)
    assert comparable(back) == comparable(live)
    # the command line, a fresh process that never saw the files: the same names
    import subprocess

    cli = subprocess.run([sys.executable, "-m", "ipycompile", "report", str(cap.trace_path), "--json", "-"],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr[-2000:]
    got = json.loads(cli.stdout)
    assert [(g["path"], g["name"], g["origin"]) for rc in got["recompiles"] for g in rc["guards"]] == _names(live)


def test_a_capture_of_nothing_writes_a_log_of_nothing(tmp_path):
    with ipycompile.capture(trace_dir=tmp_path) as cap:
        pass
    back = ipycompile.load_trace(cap.trace_path)
    assert back.compiled_nothing and back.torch_version == torch.__version__
    assert tlparse_counts(cap.trace_path)["compile_ids"] == set()


def test_a_trace_dir_that_cannot_be_written_fails_before_anything_runs(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    ran = []
    with pytest.raises(ValueError, match="cannot write a trace log there"):
        with ipycompile.capture(trace_dir=blocker / "logs"):
            ran.append(True)
    assert not ran
    with pytest.raises(ValueError, match="--trace-dir"):
        ipycompile.run_cell("ran = True", {}, backend="eager", trace_dir=str(blocker / "logs"))


def test_run_cell_writes_its_capture_and_names_the_log(tmp_path):
    run = ipycompile.run_cell("y = x * 2\nif y.sum() > 0:\n    y = y + 1\ny", {"x": torch.ones(3)}, backend="eager",
                              runs=1, trace_dir=str(tmp_path), record=False)
    (log,) = tmp_path.glob("dedicated_log_torch_trace_*.log")
    assert any(str(log) in note for note in run.report.profile.notes)
    back = ipycompile.load_trace(log)
    assert back.graph_break_count == run.report.graph_break_count == 1
    assert [c.compile_id for c in back.compiles] == [c.compile_id for c in run.report.compiles]


# -- the magics, in a real IPython shell (the shared ``ip`` fixture of conftest.py) ----------------
def run(ip, cell: str):
    with capture_output() as out:
        res = ip.run_cell(cell, store_history=True)
    return res, out


def test_compile_magic_writes_a_trace_that_compile_trace_shows(ip, tmp_path):
    logs = tmp_path / "logs"
    res, out = run(ip, f"%%compile --backend eager --runs 1 --trace-dir {logs}\nq = torch.ones(4)\nif q.sum() > 0:\n    q = q * 2")
    assert res.error_in_exec is None, res.error_in_exec
    (log,) = logs.glob("dedicated_log_torch_trace_*.log")
    assert f"trace log written to {log}" in out.outputs[0].data["text/plain"]
    live = ipycompile.history()["report"].iloc[-1]

    res, out = run(ip, f"%compile_trace {log} -o from_file")
    assert res.error_in_exec is None, res.error_in_exec
    (shown,) = out.outputs
    text = shown.data["text/plain"]
    assert f"read from {log}" in text and "1 graph break" in text
    assert "text/html" not in shown.data  # the test shell is a terminal's (its text/html formatter off): text only
    loaded = ip.user_ns["from_file"]
    assert loaded.origin.path == str(log)
    assert [c.compile_id for c in loaded.compiles] == [c.compile_id for c in live.compiles]
    assert loaded.graph_breaks[0].frame.lineno == live.graph_breaks[0].frame.lineno == 3
    gb = loaded.graph_breaks[0]  # the log names the notebook cell, as the live report does
    assert loaded.where(gb.frame.filename, gb.frame.lineno) == live.where(gb.frame.filename, gb.frame.lineno) == f"In [{res.execution_count - 1}], line 3"
    assert comparable(loaded) == {**comparable(live), "profile": None}  # the same report, but for the run's measurements


def test_compile_trace_on_a_rank_directory_shows_how_the_ranks_differ(ip):
    d = dist_logs(2)
    res, out = run(ip, f"%compile_trace {d} -o job")
    assert res.error_in_exec is None, res.error_in_exec
    (shown,) = out.outputs
    assert shown.data["text/plain"].startswith("2 ranks (0-1) diverge")
    assert isinstance(ip.user_ns["job"], ipycompile.RankReports) and list(ip.user_ns["job"]) == [0, 1]
    # the HTML view: chips and tabs of the same facts (rank 1 breaks and recompiles on purpose)
    page = shown.data["text/html"]
    assert 'class="ipyc"' in page and "2 behaviours" in page and 'data-tab="graph_breaks"' in page
    div = ipycompile.analysis.ranks.rank_divergence(ip.user_ns["job"])
    for g in div.graph_breaks:  # each differing site, with its count on each rank
        row = "".join(f'<td class="n">{g.counts.get(r, 0)}</td>' for r in div.ranks)
        assert row in page, (g, page[-3000:])

    res, out = run(ip, f"%compile_trace {d} --rank 1 -o rank1")
    assert res.error_in_exec is None
    assert "(rank 1)" in out.outputs[0].data["text/plain"]
    assert ip.user_ns["rank1"].origin.rank == 1 and ip.user_ns["rank1"].recompiles


@pytest.mark.parametrize(
    "line, expected",
    [
        ("/no/such/trace.log", "no such file or directory"),
        ("{here}", "is not a TORCH_TRACE log"),
        ("{dist} --rank 9", "holds no log of rank 9"),
        ("", "the following arguments are required: path"),
    ],
)
def test_compile_trace_bad_input_is_a_usage_error(ip, line, expected):
    line = line.format(here=__file__, dist=dist_logs(2) if "{dist}" in line else "")
    res, out = run(ip, f"%compile_trace {line}")
    text = out.stdout + out.stderr
    assert "UsageError" in text and expected in text, text


def test_compile_trace_counts_deep_json_and_shows_a_one_process_directory(ip, tmp_path):
    import trace_inputs

    path = trace_inputs.write_log(tmp_path / "deep.log", trace_inputs.records(), trace_inputs.deep_envelope_line())
    res, out = run(ip, f"%compile_trace {path} -o deep")
    assert res.error_in_exec is None, res.error_in_exec
    assert "1 unreadable trace event skipped" in out.outputs[0].data["text/plain"]
    assert "nested too deeply" in ip.user_ns["deep"].origin.problems[0]
    res, out = run(ip, f"%compile_trace {trace_inputs.one_process_trace_dir()} -o one")
    assert res.error_in_exec is None, res.error_in_exec
    assert out.outputs[0].data["text/plain"].startswith("ipycompile: what to fix (1")
    assert "\nSummary\n-------\n\n2 compiles" in out.outputs[0].data["text/plain"]
    assert isinstance(ip.user_ns["one"], ipycompile.CompileReport)
    res, out = run(ip, f"%compile_trace {path} --strict")
    assert "UsageError" in out.stdout + out.stderr and "nested too deeply" in out.stdout + out.stderr


def test_compile_trace_output_never_carries_raw_control_or_bidi_characters(ip, tmp_path):
    """Issue 28: the rank view's text and the magic's errors go through the one escaping rule."""
    import shutil

    import trace_inputs

    evil = "\x1b]0;TITLE\x07\u202e"
    recs = []
    for meta, payload in trace_inputs.records():
        if meta.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            payload = payload.replace("Data-dependent branching", f"Data-dependent{evil} branching")
        recs.append((meta, payload))
    log = trace_inputs.write_log(tmp_path / "evil.log", recs)
    d = tmp_path / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(log, d / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    (d / f"notes{evil}\nFORGED.txt").write_text("hello\n")
    res, out = run(ip, f"%compile_trace {d} -o evil_job")
    assert res.error_in_exec is None, res.error_in_exec
    shown = "".join(o.data.get("text/plain", "") for o in out.outputs) + str(ip.user_ns["evil_job"]) + out.stdout
    assert shown and not set("\x1b\x07\u202e") & set(shown) and "notes\\x1b]0;TITLE\\x07\\u202e\\x0aFORGED.txt" in shown
    res, out = run(ip, f"%compile_trace '{tmp_path}/gone{evil}.log'")
    text = out.stdout + out.stderr
    assert "UsageError" in text and "gone\\x1b]0;TITLE\\x07\\u202e.log" in text and not set("\x1b\x07\u202e") & set(text)
