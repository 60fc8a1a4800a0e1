"""``python -m ipycompile report LOG --timings``: where the command's time and memory went, stage by stage,
on stderr, in a real process (the ``start`` stage is the interpreter's and the imports' before the command),
and nothing else changed: the same summary on stdout, the same page and JSON as without it.
``benchmarks/trace_load.py`` reads its last line to say why a target was missed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from cli_runs import in_this_process

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "data" / "gpu-h100" / "quickstart.log.gz"


def test_timings_name_every_stage_and_change_no_output(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("TORCH_TRACE", None)
    def report(*args):
        return subprocess.run([sys.executable, "-m", "ipycompile", "report", str(LOG), *args],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    timed = report("-o", "a.html", "--json", "a.json", "--timings")
    assert timed.returncode == 0, timed.stderr
    plain = report("-o", "b.html", "--json", "b.json")  # a process as alike as can be (not this test's)
    assert plain.returncode == 0, plain.stderr
    assert "timings" not in plain.stderr
    assert timed.stdout.replace("a.html", "b.html").replace("a.json", "b.json") == plain.stdout
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    # the page's element ids carry the writing process's id (ids unique across pages on one screen)
    same_ids = lambda page: re.sub(r"\bipyc\d+-\d+-", "ipyc-", (tmp_path / page).read_text())  # noqa: E731
    assert same_ids("a.html") == same_ids("b.html")

    lines = [ln for ln in timed.stderr.splitlines() if ln.startswith("timings: ")]
    named = [ln.split()[1] for ln in lines[:-1]]
    assert named == ["start", "imports", "reading", "summary", "JSON", "page", "total"], timed.stderr
    assert "(the interpreter and imports, before the command)" in lines[0]
    facts = json.loads(lines[-1][len("timings: "):])
    stages = facts["stages"]
    assert [s["stage"] for s in stages] == named[:-1]
    # the start is a real interpreter's: it took some time and CPU before the command began
    assert stages[0]["wall_s"] > 0 and stages[0]["cpu_s"] > 0
    assert all(s["wall_s"] >= 0 and s["cpu_s"] >= 0 and s["other_processes_cpu_s"] >= 0 for s in stages)
    assert abs(facts["wall_s"] - sum(s["wall_s"] for s in stages)) < 1e-3
    assert abs(facts["cpu_s"] - sum(s["cpu_s"] + s["other_processes_cpu_s"] for s in stages)) < 1e-3
    assert facts["peak_rss_mb"] > 10  # a Python process with our modules


def test_timings_are_written_when_the_command_fails(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("not a trace\n")
    done = in_this_process("report", bad, "--strict", "--timings", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith("ipycompile report: error: ")
    assert "timings: total" in done.stderr and "Traceback" not in done.stderr
