"""The report's figures read right at a glance (issue 29 §2): inspected as matplotlib
Figure objects (labels, scales, bars, text artists), not pixels."""

from __future__ import annotations

import torch

import ipycompile
from ipycompile.widgets.figures import fig_runs


def _tallest(ax) -> float:
    """The tallest bar of a step-filled histogram: the highest vertex of its polygons."""
    return max(float(p.get_xy()[:, 1].max()) for p in ax.patches)


def test_run_histogram_counts_blocks_on_a_log_axis_that_spreads_one_slow_block():
    run = ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(64)}, backend="eager", runs=5, record=False)
    st = run.report.profile.steady
    assert st.run_block_calls > 0
    fig = fig_runs(run.report)
    ax = fig.axes[0]
    assert ax.get_ylabel() == f"blocks of {st.run_block_calls} calls"  # what is counted, not "calls"
    assert ax.get_xscale() == "log"
    # the shape the issue saw: 99 blocks near 22 us and one at 2 ms; a linear 30-bin axis put
    # all 99 in one bar. Log-spaced bins spread them over several.
    st.run_times_s = [22e-6 * (1 + 0.01 * (i % 20)) for i in range(99)] + [2e-3]
    st.run_median_s = sorted(st.run_times_s)[50]
    ax = fig_runs(run.report).axes[0]
    assert _tallest(ax) < 99 and ax.get_xscale() == "log"
    lo, hi = ax.get_xlim()
    assert lo <= 0.022 and hi >= 2.0  # ms: both ends shown
