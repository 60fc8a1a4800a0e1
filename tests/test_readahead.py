"""A large log read by a second process: the same report as one process reads
(ipycompile.capture.readahead, ipycompile.capture.forked).

Forking is done only by a process with one thread, so each check runs in a fresh process
(``readahead_checks.py``), as the command line does; pytest's workers have threads."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trace_inputs import PREFIX, deep_payload_event, records, write_log

HERE = Path(__file__).parent
ROOT = HERE.parent
DATA = HERE / "data" / "gpu-h100"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ipycompile forks on Linux only")


def check(*args) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, str(HERE / "readahead_checks.py"), *map(str, args)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.splitlines()[-1])


def plain_log(tmp_path: Path, *workloads: str) -> Path:
    """The recorded logs one after the other, unpacked (a lazy read needs a plain file)."""
    out = tmp_path / "job.log"
    with open(out, "wb") as f:
        for w in workloads:
            f.write(gzip.decompress((DATA / f"{w}.log.gz").read_bytes()))
    return out


def test_a_log_read_ahead_gives_the_report_one_process_gives(tmp_path):
    log = plain_log(tmp_path, "quickstart", "max_autotune", "reduce_overhead")
    facts = check("read", log, DATA / "quickstart.log.gz")
    one, ahead = facts["False"], facts["True"]
    assert "error" not in one and "error" not in ahead
    assert ahead["json"] == one["json"] and json.loads(one["json"])["kernels"]  # graphs, kernels, guards, compile time
    assert ahead["origin"] == one["origin"] and ahead["torch_version"] == one["torch_version"]
    assert ahead["layout"] == one["layout"]
    # the reader's progress reaches the log's end, in order
    done = [d for d, _ in ahead["progress"]]
    assert done == sorted(done) and ahead["progress"][-1] == [log.stat().st_size] * 2
    # the records were read and prepared by another process, and are the records one process reads
    assert facts["prepared_in"] and facts["pid"] not in facts["prepared_in"] and len(facts["prepared_in"]) == 1
    assert facts["same_records"]
    # chosen for a plain, full read of a large log only: not a summary, a gzip log, or a small log
    assert facts["chosen"] == {"plain": facts["can_fork"], "summary": False, "small": False, "gzip": False}


def test_a_broken_log_read_ahead_counts_the_same_problems_and_strict_fails_alike(tmp_path):
    recs = records("quickstart")
    log = write_log(tmp_path / "broken.log", recs,
                    deep_payload_event("recompile_reasons", 500, compile_id=(0, 0))
                    + f"{PREFIX} {{\"dynamo_start\": {{\"stack\": []}}, \"frame_id\": 9, \"frame_comp".encode() + b"\n"
                    + b"\tan orphan payload line\n")
    with open(log, "r+b") as f:  # a payload line changed after its md5 was written
        data = f.read()
        at = data.index(b"\n\t", len(data) // 2) + 2
        f.seek(at)
        f.write(b"#" if data[at:at + 1] != b"#" else b"$")
    facts = check("read", log)
    one, ahead = facts["False"], facts["True"]
    assert ahead["json"] == one["json"] and ahead["origin"] == one["origin"]
    problems = json.loads(one["json"])["origin"]["problems"]
    assert len(problems) == 2 and "does not match its md5" in problems[0] and "JSON envelope" in problems[1], problems
    assert json.loads(one["json"])["stats"]["parse_errors"] == {"artifact:recompile_reasons": 1}

    strict = check("read", log, "--strict")
    assert strict["True"]["error"] == strict["False"]["error"] and ", line " in strict["True"]["error"]


def test_forked_work_comes_back_in_order_and_its_failures_are_said():
    facts = check("forked")
    assert facts["values"] == list(range(1000))
    assert len(facts["child_pids"]) == 1 and facts["child_pids"][0] != facts["pid"]
    assert facts["first"] == 1 and facts["raised"] == "KeyError: 'no such figure'"
    assert "stopped unexpectedly" in facts["killed"]
    assert facts["reaped"]  # a child stopped early (blocked on a full pipe) is killed and reaped
    assert facts["can_fork"][1] is False  # never with a second thread running
    assert facts["can_fork"][0] is (len(os.sched_getaffinity(0)) >= 2)
