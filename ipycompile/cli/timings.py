"""``report --timings``: where a command's time and memory went, stage by stage, on stderr.

A stage is the span between two :meth:`Stages.mark` calls: its wall time, this process's CPU
(user + system) and the CPU of the processes it started and has waited for (a read-ahead reader,
forked span readers, rank workers: ``RUSAGE_CHILDREN``). The first stage, ``start``, is what the
process spent before the command began: the interpreter and the imports (its wall time from the
process's start time in ``/proc``, where there is one). The last line gives the totals and the
peak memory of this process and of the largest process it waited for (``ru_maxrss``).

What it prints is one line per stage, then one JSON line (``timings: {...}``) that
``benchmarks/trace_load.py`` reads to say where the time of a missed target went.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import IO, Optional

__all__ = ["Stages"]


def _process_age() -> Optional[float]:
    """Seconds since this process started (Linux: ``/proc/self/stat``'s start time), or None."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat(5), after pid and comm
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _cpu(who: int) -> float:
    u = resource.getrusage(who)
    return u.ru_utime + u.ru_stime


class Stages:
    """Stage times of one command; :meth:`mark` ends a stage, :meth:`write` prints them."""

    def __init__(self) -> None:
        age = _process_age()
        self._wall = time.perf_counter()
        self._self = _cpu(resource.RUSAGE_SELF)
        self._children = _cpu(resource.RUSAGE_CHILDREN)
        self.rows: list[dict] = [{"stage": "start", "wall_s": age, "cpu_s": self._self,
                                  "other_processes_cpu_s": self._children}]

    def mark(self, stage: str) -> None:
        """End ``stage`` now (it began at the previous mark)."""
        wall, me, kids = time.perf_counter(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        self.rows.append({"stage": stage, "wall_s": wall - self._wall, "cpu_s": me - self._self,
                          "other_processes_cpu_s": kids - self._children})
        self._wall, self._self, self._children = wall, me, kids

    def summary(self) -> dict:
        walls = [r["wall_s"] for r in self.rows]
        return {
            "stages": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in self.rows],
            "wall_s": round(sum(walls), 4) if None not in walls else None,
            "cpu_s": round(sum(r["cpu_s"] + r["other_processes_cpu_s"] for r in self.rows), 4),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "largest_other_process_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        }

    def write(self, stream: IO[str] = sys.stderr) -> None:
        s = self.summary()
        for r in s["stages"]:
            wall = "?" if r["wall_s"] is None else f"{r['wall_s']:.3f}"
            other = f" + {r['other_processes_cpu_s']:.3f} s in other processes" if r["other_processes_cpu_s"] >= 0.0005 else ""
            note = " (the interpreter and imports, before the command)" if r["stage"] == "start" else ""
            print(f"timings: {r['stage']:<10} {wall:>7} s wall, {r['cpu_s']:.3f} s CPU{other}{note}", file=stream)
        total = "?" if s["wall_s"] is None else f"{s['wall_s']:.3f}"
        print(f"timings: {'total':<10} {total:>7} s wall, {s['cpu_s']:.3f} s CPU; peak memory {s['peak_rss_mb']:.0f} MB "
              f"here, {s['largest_other_process_rss_mb']:.0f} MB in the largest other process", file=stream)
        print("timings: " + json.dumps(s, separators=(",", ":")), file=stream)
