"""``python -m ipycompile report``: a fresh process, as a user runs it on a shell; the errors of arguments
and inputs through the same entry point in this process (:mod:`cli_runs`; ``test_cli_errors.py`` runs one of
each exit status as a process)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ipycompile
from ipycompile import CompileReport
from cli_runs import in_this_process
from trace_jobs import dist_logs

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "gpu-h100"


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "ipycompile", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_a_log_gives_a_one_screen_summary_on_stdout():
    p = cli("report", DATA / "quickstart.log.gz")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    # the first screen: what to fix, most costly first (the break hit twice, then the recompiles), then the counts
    assert lines[0].startswith("ipycompile: what to fix (") and lines[1].startswith("read from ")
    assert "first-pass summary" in p.stdout and "run again with --full" in p.stdout
    first = next(i for i, ln in enumerate(lines) if ln.startswith("1. "))
    assert lines[first].startswith("1. Graph break: Data-dependent branching") and "(hit 2 times" in lines[first]
    assert "recompiled" in p.stdout and "2 graph breaks" in p.stdout and "2 recompiles" in p.stdout
    assert "-o PAGE.html" in lines[-1]
    assert len(lines) <= 48 and not p.stderr  # no progress bar for a small log on a pipe


def test_html_and_json_outputs_hold_the_full_report(tmp_path):
    html, js = tmp_path / "report.html", tmp_path / "report.json"
    p = cli("report", DATA / "reduce_overhead.log.gz", "-o", html, "--json", js)
    assert p.returncode == 0, p.stderr
    assert f"wrote {html}" in p.stdout and f"wrote {js}" in p.stdout
    report = CompileReport.from_json(js.read_text())
    expected = ipycompile.load_trace(DATA / "reduce_overhead.log.gz")
    assert report == expected and report.kernels  # the full pass, not the summary
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "cpu_scalar" in page and "GB0124" in page

    p = cli("report", DATA / "max_autotune.log.gz", "--json", "-")
    assert p.returncode == 0 and CompileReport.from_dict(json.loads(p.stdout)) == ipycompile.load_trace(DATA / "max_autotune.log.gz")
    assert p.stderr.startswith("ipycompile: ") and "1 graph" in p.stderr  # the first screen moves to stderr


def test_a_rank_directory_shows_how_the_ranks_differ_and_one_rank_on_request(tmp_path):
    d = dist_logs(2)
    p = cli("report", d, "--workers", "2", "-o", tmp_path / "job.html", "--json", tmp_path / "job.json")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"2 rank logs in {d} (ranks 0-1)")
    assert "launcher.out: not a TORCH_TRACE log" in p.stdout and "2 ranks (0-1) diverge" in p.stdout
    data = json.loads((tmp_path / "job.json").read_text())
    assert sorted(data["summaries"]) == ["0", "1"] and data["divergence"]["behaviours"][1]["ranks"] == [1]
    page = (tmp_path / "job.html").read_text()
    assert "2 ranks (0-1) diverge" in page and page.count("<h3>rank ") == 2  # one full report per behaviour

    p = cli("report", d, "--rank", "1")
    assert p.returncode == 0 and "(rank 1)" in p.stdout and "recompiled" in p.stdout


def test_unreadable_input_exits_non_zero_with_the_reason(tmp_path):
    p = in_this_process("report", tmp_path / "missing.log")
    assert p.returncode == 1 and "no such file or directory" in p.stderr and not p.stdout
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 300)
    p = in_this_process("report", notes)
    assert p.returncode == 1 and "is not a TORCH_TRACE log" in p.stderr
    cut = tmp_path / "cut.log"
    data = gzip.decompress((DATA / "max_autotune.log.gz").read_bytes())
    cut.write_bytes(data[: len(data) // 2])
    p = in_this_process("report", cut)
    assert p.returncode == 0 and "1 unreadable trace event skipped" in p.stdout
    p = in_this_process("report", cut, "--strict")
    assert p.returncode == 1 and "cut.log, line " in p.stderr
    only_notes = tmp_path / "notes"
    only_notes.mkdir()
    (only_notes / "notes.txt").write_text("hello\n")
    p = in_this_process("report", only_notes, "--json", tmp_path / "out.json")
    assert p.returncode == 1 and "holds no rank logs" in p.stderr
    p = in_this_process("report")
    assert p.returncode == 2 and "TRACE_OR_DIR" in p.stderr


def test_the_progress_bar_goes_to_stderr(tmp_path):
    p = cli("report", DATA / "quickstart.log.gz", "--progress")
    assert p.returncode == 0
    assert "reading quickstart.log.gz [" in p.stderr and "100%" in p.stderr
    assert "ipycompile: what to fix" in p.stdout and "[####" not in p.stdout


@pytest.mark.parametrize("args, expected", [(("report", "--help"), "--rank R"), (("--help",), "read a TORCH_TRACE log or a directory of rank logs")])
def test_help(args, expected):
    p = in_this_process(*args)
    assert p.returncode == 0 and expected in p.stdout


# -- hostile and unusual input ------------------------------------------------------------
import shutil  # noqa: E402

import trace_inputs  # noqa: E402


def test_a_torch_trace_directory_of_one_process_is_read_as_its_log(tmp_path):
    d = trace_inputs.one_process_trace_dir()  # TORCH_TRACE=DIR python train.py, for real
    (log,) = d.iterdir()
    assert log.name.startswith("dedicated_log_torch_trace_") and "rank" not in log.name
    p = cli("report", d)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ipycompile: what to fix (1") and "1 graph break" in p.stdout, p.stdout
    assert "run again with --full" in p.stdout  # the command line's option, not the Python API's
    assert "summary=True" not in p.stdout + p.stderr and "load_trace(" not in p.stdout + p.stderr
    assert isinstance(ipycompile.load_trace(d), CompileReport)
    # a job of one rank (rank_0 in its name): its report, as there is nothing to compare
    one_rank = tmp_path / "one_rank"
    one_rank.mkdir()
    shutil.copy(log, one_rank / "dedicated_log_torch_trace_rank_0_abcd.log")
    p = cli("report", one_rank, "--full")
    assert p.returncode == 0 and p.stdout.startswith("ipycompile: what to fix (1"), p.stdout + p.stderr
    assert "first-pass summary" not in p.stdout


def test_deeply_nested_json_is_a_counted_problem_not_a_traceback(tmp_path):
    path = trace_inputs.write_log(tmp_path / "deep.log", trace_inputs.records(),
                                  trace_inputs.deep_envelope_line() + trace_inputs.deep_payload_event())
    p = in_this_process("report", path)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "2 unreadable trace events skipped" in p.stdout and "nested too deeply" in p.stdout
    p = in_this_process("report", path, "--strict")
    assert p.returncode == 1 and "nested too deeply" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("content", [b"", b"\x1f\x8b" + b"garbage" * 20])
def test_an_empty_file_or_broken_gzip_exits_1(tmp_path, content):
    path = tmp_path / "trace.log"
    path.write_bytes(content)
    p = in_this_process("report", path)
    assert p.returncode == 1 and "not a TORCH_TRACE log" in p.stderr and str(path) in p.stderr, p.stderr


def test_unreadable_rank_logs_and_symlink_loops_say_so(tmp_path):
    d = tmp_path / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(trace_inputs.one_process_trace_dir().iterdir().__next__(), d / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    os.symlink(d / "gone.log", d / "dedicated_log_torch_trace_rank_2_x.log")
    p = in_this_process("report", d)
    assert p.returncode == 0, p.stderr
    assert "unreadable rank log: a broken symlink" in p.stdout and "covers ranks 0-1 only" in p.stdout
    p = in_this_process("report", d, "--strict")
    assert p.returncode == 1 and "rank_2_x.log: a rank log that cannot be read: a broken symlink" in p.stderr
    loop = tmp_path / "loop.log"
    os.symlink(loop, loop)
    p = in_this_process("report", loop)
    assert p.returncode == 1 and "a symlink loop" in p.stderr


def test_control_characters_in_a_trace_never_reach_the_terminal(tmp_path):
    title, clear = "\x1b]0;TITLE\x07", "\x1b[2J"
    recs = []
    for meta, payload in trace_inputs.records():
        if "str" in meta:  # the interned file names of stacks
            meta = {**meta, "str": [meta["str"][0] + title, meta["str"][1]]}
        if meta.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            payload = (payload.replace("Data-dependent branching", f"Data-dependent{clear} branching")
                       .replace("gpu_traces.py", f"gpu{title}.py"))
        recs.append((meta, payload))
    path = trace_inputs.write_log(tmp_path / f"evil{clear}.log", recs)
    p = cli("report", path)
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    assert "\x1b" not in out and "\x07" not in out
    assert "Data-dependent\\x1b[2J branching" in out and "\\x1b]0;TITLE\\x07" in out
    # a directory listing names its files with the same escapes
    d = tmp_path / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(path, d / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    (d / f"notes{clear}.txt").write_text("hello\n")
    p = cli("report", d)
    assert p.returncode == 0 and "\x1b" not in p.stdout + p.stderr and "notes\\x1b[2J.txt" in p.stdout
    assert "\x1b" not in ipycompile.load_trace(path).summary()


# -- issue 28: the command line never loses a file, never forges a line, keeps its contract ------------
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path):
    log = tmp_path / "trace.log.gz"
    shutil.copy(DATA / "max_autotune.log.gz", log)
    before = log.read_bytes()
    os.symlink(log, tmp_path / "link.html")
    os.link(log, tmp_path / "hard.json")
    d = tmp_path / "job"
    d.mkdir()
    shutil.copy(log, d / "dedicated_log_torch_trace_rank_0_x.log.gz")
    for args, what in [((log, "--json", log), "--json"), ((log, "-o", log), "-o"),
                       ((log, "-o", tmp_path / "link.html"), "-o"), ((log, "--json", tmp_path / "hard.json"), "--json"),
                       ((d, "-o", d / "report.html"), "inside the input directory"),
                       ((log, "-o", "-", "--json", "-"), "both write to stdout"),
                       ((log, "-o", tmp_path / "x", "--json", tmp_path / "x"), "name the same file"),
                       ((log, "--workers", "0"), "--workers: 0: give 1 or more")]:
        p = in_this_process("report", *args)
        assert p.returncode == 2 and what in p.stderr and "usage:" in p.stderr and not p.stdout, (args, p.stderr)
    assert log.read_bytes() == before and (tmp_path / "hard.json").read_bytes() == before
    assert sorted(os.listdir(d)) == ["dedicated_log_torch_trace_rank_0_x.log.gz"]


def test_dash_writes_html_to_stdout_and_a_closed_pipe_ends_quietly(tmp_path):
    log = DATA / "max_autotune.log.gz"
    p = cli("report", log, "-o", "-", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("<!DOCTYPE html>") and p.stdout.rstrip().endswith("</html>")
    assert p.stderr.startswith("ipycompile: ") and "read from " in p.stderr and os.listdir(tmp_path) == []  # no file named '-'
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for opt in ("--json", "-o", None):  # the reader of stdout is gone before it is written (`| head -c 10` that ended)
        args = [sys.executable, "-m", "ipycompile", "report", str(log)] + ([opt, "-"] if opt else [])
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == 141  # 128 + SIGPIPE, as a shell reports a tool that a pipe stopped
        assert "Broken pipe" not in err and "Traceback" not in err and "error" not in err, err


def test_a_failed_write_leaves_the_earlier_output_as_it_was(tmp_path):
    import resource

    out = tmp_path / "report.html"
    out.write_text("the earlier page\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "ipycompile", "report", str(DATA / "max_autotune.log.gz"), "-o", str(out),
                        "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, env=env, timeout=300,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000)))
    assert p.returncode == 1 and f"cannot write {tmp_path / 'r.json'}: file too large" in p.stderr, p.stderr
    assert out.read_text() == "the earlier page\n" and sorted(os.listdir(tmp_path)) == ["report.html"]


def test_rank_on_a_log_without_ranks_is_refused():
    p = in_this_process("report", DATA / "max_autotune.log.gz", "--rank", "3")
    assert p.returncode == 1 and "without a rank" in p.stderr and "leave it out" in p.stderr and not p.stdout


def test_file_names_and_text_can_neither_forge_lines_nor_reorder_them(tmp_path):
    forged = "x.log\nipycompile report: 0 compiles, FORGED LINE"
    bidi = "\u202e\u2066evil\u2069\u200f\u061c"
    unsafe = set("\u202e\u2066\u2069\u200f\u061c")
    recs = []
    for meta, payload in trace_inputs.records("max_autotune"):
        if "str" in meta:
            meta = {**meta, "str": [meta["str"][0] + bidi, meta["str"][1]]}
        recs.append((meta, payload))
    path = trace_inputs.write_log(tmp_path / forged, recs)
    p = cli("report", path, "--json", tmp_path / f"out{bidi}\n.json")
    assert p.returncode == 0, p.stderr
    assert not any(line.startswith("ipycompile report: 0 compiles") for line in p.stdout.splitlines()), p.stdout
    assert "x.log\\x0aipycompile report: 0 compiles, FORGED LINE" in p.stdout
    assert not unsafe & set(p.stdout + p.stderr) and "\\u202e\\u2066evil\\u2069" in p.stdout
    json.loads((tmp_path / f"out{bidi}\n.json").read_text())
    d = tmp_path / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(path, d / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    (d / f"notes\n  FORGED: {bidi}.txt").write_text("hello\n")
    p = cli("report", d)
    assert p.returncode == 0 and "FORGED" not in "".join(line for line in p.stdout.splitlines() if line.startswith("  FORGED"))
    assert "notes\\x0a  FORGED: \\u202e" in p.stdout and not unsafe & set(p.stdout)


def test_json_output_is_standard_json_for_jq(tmp_path):
    recs = []
    for meta, payload in trace_inputs.records("max_autotune"):
        if "compilation_metrics" in meta:  # torch writes Infinity for some times (e.g. a compile it never ended)
            meta = {**meta, "compilation_metrics": {**meta["compilation_metrics"], "dynamo_time_before_restart_s": float("inf"),
                                                    "entire_frame_compile_time_s": float("nan")}}
        recs.append((meta, payload))
    path = trace_inputs.write_log(tmp_path / "inf.log", recs)
    assert "Infinity" in path.read_text()
    p = cli("report", path, "--json", "-")
    assert p.returncode == 0, p.stderr

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    data = json.loads(p.stdout, parse_constant=refuse)
    back = CompileReport.from_dict(data)
    assert back.to_json() == json.dumps(data, allow_nan=False)
    d = tmp_path / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(path, d / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    p = cli("report", d, "--json", "-")
    assert p.returncode == 0 and json.loads(p.stdout, parse_constant=refuse)["summaries"]


# -- issue 37: an output that cannot be written is found before the log is read ----------------------
def test_an_output_into_a_missing_folder_fails_before_anything_is_read(tmp_path):
    log = DATA / "max_autotune.log.gz"
    (tmp_path / "file").write_text("x")
    for opt, target, why in [("-o", "missing/dir/r.html", f"no folder {tmp_path / 'missing' / 'dir'}"),
                             ("--json", "file/r.json", f"{tmp_path / 'file'} is not a folder"),
                             ("-o", ".", "it is a folder")]:
        p = in_this_process("report", log, opt, target, cwd=tmp_path)
        assert p.returncode == 1 and not p.stdout, (opt, p.stdout[-500:], p.stderr)  # no summary: nothing was read
        assert p.stderr == f"ipycompile report: error: cannot write {target}: {why}\n"
    assert sorted(os.listdir(tmp_path)) == ["file"]
