"""``python -m ipycompile report``: a fresh process, as a user runs it on a shell."""

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
    assert lines[0] == "ipycompile report: 4 compiles, 4 graphs, 2 graph breaks, 2 recompiles, kernels not read, 0 failures"
    assert "Data-dependent branching [GB0170] (x2)" in p.stdout and "Recompiles:" in p.stdout
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
    assert p.stderr.startswith("ipycompile report: 1 compile")  # the summary moves to stderr


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
    assert p.returncode == 0 and "(rank 1)" in p.stdout and "Recompiles:" in p.stdout


def test_unreadable_input_exits_non_zero_with_the_reason(tmp_path):
    p = cli("report", tmp_path / "missing.log")
    assert p.returncode == 1 and "no such file or directory" in p.stderr and not p.stdout
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 300)
    p = cli("report", notes)
    assert p.returncode == 1 and "is not a TORCH_TRACE log" in p.stderr
    cut = tmp_path / "cut.log"
    data = gzip.decompress((DATA / "max_autotune.log.gz").read_bytes())
    cut.write_bytes(data[: len(data) // 2])
    p = cli("report", cut)
    assert p.returncode == 0 and "1 unreadable trace event skipped" in p.stdout
    p = cli("report", cut, "--strict")
    assert p.returncode == 1 and "cut.log, line " in p.stderr
    p = cli("report", tmp_path, "--json", tmp_path / "no-such-dir" / "out.json")
    assert p.returncode == 1 and "holds no rank logs" in p.stderr
    p = cli("report")
    assert p.returncode == 2 and "TRACE_OR_DIR" in p.stderr


def test_the_progress_bar_goes_to_stderr(tmp_path):
    p = cli("report", DATA / "quickstart.log.gz", "--progress")
    assert p.returncode == 0
    assert "reading quickstart.log.gz [" in p.stderr and "100%" in p.stderr
    assert "ipycompile report:" in p.stdout and "[####" not in p.stdout


@pytest.mark.parametrize("args, expected", [(("report", "--help"), "--rank R"), (("--help",), "read a TORCH_TRACE log or a directory of rank logs")])
def test_help(args, expected):
    p = cli(*args)
    assert p.returncode == 0 and expected in p.stdout
