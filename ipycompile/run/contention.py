"""Was the machine busy while we timed? Other processes' CPU use, from /proc.

A busy machine can shift a whole measurement (every block and every pair alike: OpenMP
threads that wait for a descheduled sibling, a core shared with another process), and no
spread inside the run shows a shift that hits all of it. So the timing phases also read
how much CPU the rest of the machine used meanwhile (``/proc/stat``'s busy and stolen
time, minus this process's own from ``/proc/self/stat``): when other processes plus this
process's threads (``torch.get_num_threads()``) ask for more cores than there are, the
figures measured meanwhile are called noisy (:mod:`ipycompile.run.stats`). Where there is
no /proc (macOS, Windows) nothing is read and nothing is said.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

#: measurements shorter than this say nothing (the kernel counts CPU time in 10 ms ticks)
MIN_WINDOW_S = 0.2


def _machine_busy_ticks() -> Optional[float]:
    """All CPUs' busy and stolen ticks so far (``/proc/stat``'s first line), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [float(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)  # idle, iowait
    guest = sum(ticks[8:10]) if len(ticks) > 9 else 0.0  # guest time is counted in user time already
    return sum(ticks) - idle - guest


def _own_ticks() -> Optional[float]:
    """This process's user and system ticks so far (all its threads), or None."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return float(fields[11]) + float(fields[12])  # utime, stime


class Contention:
    """Context manager: other processes' CPU use (in cores, on average) during the block.

    ``others_cores`` is None where /proc cannot be read or the block was shorter than
    :data:`MIN_WINDOW_S`. ``why(what)`` gives one line for the noise notes when the
    machine was oversubscribed, else "".
    """

    def __init__(self, threads: Optional[int] = None) -> None:
        self.threads = threads
        self.cores = os.cpu_count() or 1
        self.others_cores: Optional[float] = None
        self._start: Any = None

    def __enter__(self) -> "Contention":
        self._start = (time.perf_counter(), _machine_busy_ticks(), _own_ticks())
        return self

    def __exit__(self, *exc: Any) -> None:
        t0, machine0, own0 = self._start
        wall = time.perf_counter() - t0
        machine1, own1 = _machine_busy_ticks(), _own_ticks()
        if None in (machine0, own0, machine1, own1) or wall < MIN_WINDOW_S:
            return
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.others_cores = max(0.0, ((machine1 - machine0) - (own1 - own0)) / hz / wall)
        if self.threads is None:
            import torch

            self.threads = torch.get_num_threads()

    @property
    def oversubscribed(self) -> bool:
        return self.others_cores is not None and self.others_cores + (self.threads or 1) > self.cores + 0.5

    def why(self, what: str) -> str:
        if not self.oversubscribed:
            return ""
        return (f"{what}: the machine was busy (other processes used {self.others_cores:.1f} of its {self.cores} cores "
                f"meanwhile, and this process's {self.threads} thread(s) need the rest): a shift that hits every block "
                "alike, which no spread shows")
