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
    # chosen for a plain, full read of a large log only: not a summary, a gzip log, or a small log (a log
    # from IDLE_MIN_BYTES: where a second CPU is idle)
    assert facts["chosen"] == {"plain": facts["can_fork"], "summary": False, "small": False, "gzip": False,
                               "idle": [False, facts["can_fork"]], "idle_smaller": False}


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


# -- one log read in spans, by several processes (ipycompile.capture.chunks) --------------
#: the recorded logs a renumbered copy holds: two of benchmarks/trace_load.py's three (kernels, guards,
#: graph breaks, CUDA graphs; 2 of its 6 MB: the spans and their cuts are shares of the file, whatever its size)
RENUMBERED = ("max_autotune", "reduce_overhead")


def renumbered_log(path: Path, copies: int = 2, rank_from: "int | None" = None) -> Path:
    """A log built as ``benchmarks/trace_load.py`` builds its large ones (renumbered copies of
    recorded logs, :data:`RENUMBERED`), with the ``str`` events of the first copy only: the later copies' stacks
    name their files through the table the first copy interned, across the cuts. ``rank_from``:
    the copies from that one on set ``rank`` 1, the earlier ones 0."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import trace_load

    sources = [trace_load.source_records(w) for w in RENUMBERED]

    def chunks():
        offset = 0
        for i in range(copies):
            rank = None if rank_from is None else int(i >= rank_from)
            copy = []
            for recs in sources:
                copy.extend((m, p) for m, p in trace_load.shifted(recs, offset, rank=rank) if i == 0 or "str" not in m)
                offset += trace_load.frames_in(recs)
            yield copy

    trace_load.write_log(path, chunks())
    return path


def break_lines(path: Path, at: "list[float]") -> None:
    """At each share of the log in ``at``, the next event's line made a problem, in turn: its JSON
    envelope cut off, a line with no glog prefix before it, one of its payload's lines changed."""
    data = bytearray(path.read_bytes())
    for i, share in enumerate(sorted(at, reverse=True)):  # from the end: earlier offsets stay put
        start = data.index(b"\nV", int(share * len(data))) + 1
        end = data.index(b"\n", start)
        if i % 3 == 0:
            data[start:end] = data[start:start + (end - start) // 2]
        elif i % 3 == 1:
            data[start:start] = b"not a line torch writes\n"
        else:
            tab = data.index(b"\n\t", start) + 2
            data[tab] = ord("#") if data[tab] != ord("#") else ord("$")
    path.write_bytes(bytes(data))


def same_reports(facts: dict) -> None:
    for summary in ("True", "False"):
        one = facts[f"{summary} 1"]
        for workers in (2, 3):
            apart = facts[f"{summary} {workers}"]
            assert "error" not in one and "error" not in apart, (one.get("error"), apart.get("error"))
            assert apart["json"] == one["json"] and apart["origin"] == one["origin"]
            assert apart["torch_version"] == one["torch_version"] and apart["layout"] == one["layout"]
            done = [d for d, _ in apart["progress"]]
            assert done == sorted(done) and apart["progress"][-1][0] == apart["progress"][-1][1]


def test_a_log_read_in_spans_gives_the_report_one_process_gives(tmp_path):
    facts = check("spans", plain_log(tmp_path, "quickstart", "max_autotune", "reduce_overhead"))
    same_reports(facts)
    assert json.loads(facts["True 1"]["json"])["compile_time"] and json.loads(facts["False 1"]["json"])["kernels"]
    assert facts["cut_at_event"] and len(facts["cuts"]) == 4  # three spans, each cut where an event starts
    if facts["can_fork"]:
        assert len(facts["read_apart"]) == 2 and facts["pid"] not in facts["read_apart"]
    # by default: a summary of 8 MiB or more, one process per 8 MiB and idle CPU, within the memory
    count = facts["count"]
    assert count["small"] == 1 and count["full"] == 1
    if facts["can_fork"]:
        assert count["ten_mb"] == 2
        assert count["large"] == 2 and count["one_busy"] == 2 and count["busy"] == 1 and count["forced"] == 3
        assert count["by_memory"] == 1 and count["many"] == 64 and count["many_busy"] == 25
        # the page's full read: 3 processes or none (the read-ahead does as well as 2), more as the log grows
        assert count["full_three"] == 3 and count["full_small"] == 1 and count["full_busy"] == 1
        assert count["full_by_log"] == [5, 7, 13] and count["full_by_memory"] == 1


def test_a_renumbered_log_read_in_spans_resolves_interned_names_across_the_cuts(tmp_path):
    log = renumbered_log(tmp_path / "job.log")
    facts = check("spans", log)
    same_reports(facts)
    report = json.loads(facts["True 1"]["json"])
    assert "<string " not in facts["True 1"]["json"]  # every interned filename resolved, in every span
    frames = [(int(c["compile_id"].split("/")[0]), c) for c in report["compiles"]]
    later = [c for f, c in frames if f > max(f for f, _ in frames) // 2]  # the second copy's: no str events of their own
    assert later and all(c["filename"].endswith(".py") and c["stack"] for c in later)
    assert facts["cut_at_event"] and len(facts["read_apart"] or []) == (2 if facts["can_fork"] else 0)


def test_a_broken_log_read_in_spans_counts_the_same_problems_on_the_same_lines(tmp_path):
    log = renumbered_log(tmp_path / "broken.log")
    break_lines(log, [0.1, 0.5, 0.62, 0.8, 0.9, 0.95])  # in every span, several in the later ones
    facts = check("spans", log)
    same_reports(facts)
    origin = json.loads(facts["False 1"]["json"])["origin"]  # the full read checks every payload's md5
    lines = [int(p.split(":")[0].split()[1]) for p in origin["problems"]]
    assert len(lines) == 6 and lines == sorted(lines), origin["problems"]
    assert sum(n > facts["lines_before_cuts"][2] for n in lines) >= 2  # problems in the last span, numbered in the file
    strict = check("spans", log, "--strict")
    for summary in ("True", "False"):  # the first problem in the file, whichever process met it
        first = json.loads(facts[f"{summary} 1"]["json"])["origin"]["problems"][0].split(":")[0]
        errors = {strict[f"{summary} {w}"]["error"] for w in (1, 2, 3)}
        assert len(errors) == 1 and f", {first}: " in errors.pop()


def test_a_log_whose_rank_changes_across_a_cut_is_read_in_one_process(tmp_path):
    log = renumbered_log(tmp_path / "ranks.log", copies=3, rank_from=1)  # the last span: rank 1 only
    facts = check("spans", log)
    same_reports(facts)
    origin = json.loads(facts["True 1"]["json"])["origin"]
    assert origin["rank"] == 0 and "an event of rank 1 in a log of rank 0" in origin["problems"][0]
    assert facts["read_apart"] is None  # the spans depended on each other: read again in one process


def test_a_line_cut_short_before_a_span_with_problems_is_read_in_one_process(tmp_path):
    """A line longer than the cap is read through, and the file counts as not ending cleanly from
    there on, which a later payload's md5 problem says: that span depends on the ones before it."""
    log = renumbered_log(tmp_path / "long.log")
    data = bytearray(log.read_bytes())
    at = data.index(b"\nV", len(data) // 5) + 1  # in the first span: a line of 200 KB, no glog prefix
    data[at:at] = b"x" * 200_000 + b"\n"
    log.write_bytes(bytes(data))
    break_lines(log, [0.85, 0.9, 0.95])  # in the last span
    facts = check("spans", log, "--max-line", 100_000)
    same_reports(facts)
    problems = json.loads(facts["False 1"]["json"])["origin"]["problems"]
    assert "longer than the 100,000 bytes" in problems[0] and len(problems) == 4, problems
    assert "does not match its md5 (the file ends inside it: truncated)" in problems[1]  # as one pass says it
    assert facts["read_apart"] is None


def test_the_command_line_summary_is_the_same_read_in_spans_or_in_one_process(tmp_path):
    log = renumbered_log(tmp_path / "job.log")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def report(*flags: str) -> str:
        p = subprocess.run([sys.executable, "-m", "ipycompile", "report", str(log), *flags], capture_output=True,
                           text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        return p.stdout

    summary = report("--workers", "1")
    assert report("--workers", "3") == summary and "first-pass summary" in summary
    # the full read (--json) in spans too, where it is asked for
    report("--workers", "1", "--json", str(tmp_path / "one.json"))
    report("--workers", "3", "--json", str(tmp_path / "spans.json"))
    assert (tmp_path / "spans.json").read_text() == (tmp_path / "one.json").read_text()
