"""How many processes read a directory's rank logs: by CPUs, by the work, and by a memory budget
(:func:`ipycompile.capture.tracedir.reading_workers`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipycompile.capture import tracedir
from ipycompile.capture.tracedir import (BYTES_PER_WORKER, GZIP_EXPANSION, WORKER_BASE_BYTES,
                                         WORKER_BYTES_PER_LOG_BYTE, WORKER_MEMORY_SHARE, WORKERS_MEMORY_FLOOR,
                                         WORKERS_MEMORY_PER_LOG_BYTE, available_memory, reading_workers)
from trace_inputs import records, write_log

MB = 1 << 20
GB = 1 << 30


def each(largest: int) -> int:
    return WORKER_BASE_BYTES + int(WORKER_BYTES_PER_LOG_BYTE * largest)


def test_small_directories_are_read_here_and_larger_ones_by_a_worker_per_share_of_the_work():
    # under two workers' worth of logs (8 ranks of 3.5 MB, the benchmark's): no worker
    assert reading_workers([int(3.5 * MB)] * 8, cpus=16, available=64 * GB) == 1
    assert reading_workers([BYTES_PER_WORKER] * 2, cpus=16, available=64 * GB) == 2
    floor = WORKERS_MEMORY_FLOOR // each(BYTES_PER_WORKER)
    assert 2 <= floor < 5 and reading_workers([BYTES_PER_WORKER] * 5, cpus=16, available=64 * GB) == floor  # memory
    assert reading_workers([100 * MB] * 64, cpus=16, available=None) == 16  # memory unknown: the budget, the CPUs
    assert reading_workers([100 * MB] * 64, cpus=2, available=64 * GB) == 2
    assert reading_workers([40 * MB] * 2, cpus=16, available=64 * GB) == 2  # never more than the logs (3 by the rest)
    assert reading_workers([], cpus=16, available=64 * GB) == 1


@pytest.mark.parametrize("cpus", [32, 128, 1024])
def test_the_workers_memory_follows_the_logs_not_the_cores(cpus):
    """The benchmark's 64 and 512 small ranks on a host of many cores: the workers' estimated peak
    stays within the budget (a floor, or a quarter of the logs' bytes), however many cores."""
    for ranks in (64, 512):
        sizes = [int(3.5 * MB)] * ranks
        n = reading_workers(sizes, cpus=cpus, available=256 * GB)
        budget = max(WORKERS_MEMORY_FLOOR, WORKERS_MEMORY_PER_LOG_BYTE * sum(sizes))
        assert 2 <= n < cpus and n * each(max(sizes)) <= budget < (n + 1) * each(max(sizes))
    assert reading_workers([int(3.5 * MB)] * 64, cpus=cpus, available=256 * GB) == WORKERS_MEMORY_FLOOR // each(int(3.5 * MB))


def test_the_workers_are_bounded_by_the_memory_available():
    sizes = [100 * MB] * 64
    room = 1 * GB
    fit = int(room * WORKER_MEMORY_SHARE) // each(100 * MB)
    assert 1 < fit < 16
    assert reading_workers(sizes, cpus=16, available=room) == fit
    # the estimate follows the largest log: one 2 GB log among small ones leaves room for fewer
    assert reading_workers([*sizes[1:], 2 * GB], cpus=16, available=room) == max(1, int(room * WORKER_MEMORY_SHARE) // each(2 * GB))
    # not even two fit: the logs are read in this process
    assert reading_workers(sizes, cpus=16, available=each(100 * MB)) == 1
    assert reading_workers(sizes, cpus=16, available=0) == 1


def test_workers_given_by_the_caller_are_kept():
    assert reading_workers([100 * MB] * 64, workers=12, cpus=2, available=0) == 12
    assert reading_workers([1] * 3, workers=12, cpus=2, available=0) == 3
    assert reading_workers([1] * 3, workers=2, cpus=2, available=0) == 2  # even for a small directory


def test_the_memory_available_is_read_on_this_machine():
    room = available_memory()
    assert room is None or room > 0


def _rank_dir(tmp_path):
    recs = records("quickstart")[:60]
    for r in range(3):
        write_log(tmp_path / f"dedicated_log_torch_trace_rank_{r}_x.log",
                  [({**m, "rank": r} if "str" not in m else m, p) for m, p in recs])
    return tmp_path


@pytest.mark.parametrize("room, started", [(0, False), (None, True)], ids=["no-room", "unknown"])
def test_read_summaries_starts_workers_only_where_they_fit(tmp_path, monkeypatch, room, started):
    d = _rank_dir(tmp_path)
    calls = []
    start = tracedir._start_worker

    def spy(share, strict):
        calls.append(share)
        return start(share, strict)

    monkeypatch.setattr(tracedir, "BYTES_PER_WORKER", 1)
    monkeypatch.setattr(tracedir, "available_memory", lambda: room)
    monkeypatch.setattr(tracedir, "_start_worker", spy)
    monkeypatch.setattr(tracedir.os, "cpu_count", lambda: 2)
    files, _ = tracedir.find_rank_logs(str(d))
    summaries = tracedir.read_summaries(files)
    assert sorted(summaries) == [0, 1, 2]
    assert bool(calls) is started, calls
    if started:
        assert len(calls) == 2


def test_a_gzip_log_counts_as_what_it_unpacks_to(tmp_path, monkeypatch):
    import gzip

    d = _rank_dir(tmp_path)
    plain = d / "dedicated_log_torch_trace_rank_2_x.log"
    packed = d / "dedicated_log_torch_trace_rank_2_x.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    seen = []
    monkeypatch.setattr(tracedir, "reading_workers", lambda sizes, **kw: seen.append(sorted(sizes)) or 1)
    files, _ = tracedir.find_rank_logs(str(d))
    tracedir.read_summaries(files)
    one = (d / "dedicated_log_torch_trace_rank_0_x.log").stat().st_size
    assert seen == [sorted([one, one, packed.stat().st_size * GZIP_EXPANSION])]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_the_workers_count_the_cpus_the_process_may_run_on_not_the_hosts():
    """A job pinned to one CPU (``taskset -c 0``, a cpuset) is sized for one CPU, whatever the host has."""
    code = "from ipycompile.capture.tracedir import usable_cpus; print(usable_cpus())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.strip() == "1", out
