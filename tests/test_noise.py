"""Issue 21, item 1: the quickstart's speedups under load either hold or are marked noisy.

The quickstart's three timed cells (benchmarks/noise.py holds them: the model with a graph
break, the fixed model, ``run_cell``) run with ``compare_eager`` quiet, then with two busy
processes beside them (``python -c`` loops, killed after the cells). Each loaded speedup
either stays within 1.5x of the quiet one or is marked noisy; the quiet run is not marked.
"Quiet" needs a machine that is: the test is skipped, saying so, when the load average
already exceeds half the cores before it starts (other work would make the quiet run noisy).
The cells run on one thread: the quickstart's model is 8x64, and with 16 OpenMP threads its
eager time is erratic even on an idle machine (measured on the H100 machine's 16 cores:
eager blocks' IQR up to 9x their median), which ipycompile rightly calls noisy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from noise import busy, quickstart_namespace, run_cells  # noqa: E402


def _load_note() -> str:
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return f"load average {load:.1f} on {cores} cores" if load > cores / 2 else ""


def test_loaded_speedups_hold_or_are_marked_noisy():
    busy_now = _load_note()
    if busy_now:
        pytest.skip(f"the machine is not quiet ({busy_now}): the quiet run could not be quiet")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _check_quiet_and_loaded()
    finally:
        torch.set_num_threads(threads)


def _check_quiet_and_loaded():
    ns = quickstart_namespace()
    run_cells(ns)  # compile once; the measured runs below reuse the compiled code
    quiet = run_cells(ns)
    with busy(2, seconds=60):
        loaded = run_cells(ns)
    for cell, q in quiet.items():
        assert not q["noise"], (cell, q)  # a quiet run is never called noisy
        l = loaded[cell]
        moved = max(l["speedup"] / q["speedup"], q["speedup"] / l["speedup"])
        assert moved <= 1.5 or l["noisy_speedup"], (cell, q["speedup"], l["speedup"], l["ci95"], l["noise"])
