"""Issue 21, item 1: the quickstart's speedups under load either hold or are marked noisy.

The quickstart's three timed cells (benchmarks/noise.py holds them: the model with a graph
break, the fixed model, ``run_cell``) run with ``compare_eager`` quiet, then with two busy
processes beside them (``python -c`` loops, killed after the cells). Each loaded speedup
either stays within 1.5x of the quiet one or is marked noisy; the quiet run is not marked.
"Quiet" needs a machine that is: the quiet baseline is the first of a few runs that nothing
marked, and the test is skipped, saying what was seen, when none is (other work, or a VM's
neighbours, disturbed every one).
The cells run on one thread: the quickstart's model is 8x64, and with 16 OpenMP threads its
eager time is erratic even on an idle machine (measured on the H100 machine's 16 cores:
eager blocks' IQR up to 9x their median), which ipycompile rightly calls noisy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from noise import busy, quickstart_namespace, run_cells  # noqa: E402


def test_loaded_speedups_hold_or_are_marked_noisy():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _check_quiet_and_loaded()
    finally:
        torch.set_num_threads(threads)


#: quiet runs tried before the machine is taken to be disturbed from outside (a VM's neighbours)
QUIET_TRIES = 3


def _check_quiet_and_loaded():
    ns = quickstart_namespace()
    run_cells(ns)  # compile once; the measured runs below reuse the compiled code
    # A shared VM's neighbours can disturb a run that nothing on this machine disturbs (seen here:
    # blocks' IQR 30-47 % on an idle machine, 2-6 % minutes later), and then the mark is right. So the
    # quiet baseline is the first of a few runs that nothing marked; none: skip, saying what was seen.
    tries = []
    for _ in range(QUIET_TRIES):
        quiet = run_cells(ns)
        tries.append({cell: q["noise"] for cell, q in quiet.items() if q["noise"]})
        if not tries[-1]:
            break
    else:
        pytest.skip(f"no quiet run in {QUIET_TRIES} tries (disturbed from outside this machine?): {tries}")
    with busy(2, seconds=60):
        loaded = run_cells(ns)
    for cell, q in quiet.items():
        assert not q["noise"], (cell, q)  # a quiet run is never called noisy
        l = loaded[cell]
        moved = max(l["speedup"] / q["speedup"], q["speedup"] / l["speedup"])
        assert moved <= 1.5 or l["noisy_speedup"], (cell, q["speedup"], l["speedup"], l["ci95"], l["noise"])
