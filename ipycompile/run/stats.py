"""Paired comparisons and their uncertainty: one home for the statistic.

Two things timed in alternating blocks (ABBA) give pairs of figures; a comparison
is the median of the pairs' ratios (or differences), with a distribution-free 95 %
interval of that median from order statistics (:func:`median_ci`). The benchmarks
(``benchmarks/overhead.py``) and the run layer's eager comparison both use it.

A figure is **noisy** when its spread is large: a run time whose blocks disagree
(interquartile range over the median above :data:`RUN_NOISE`), a ratio whose interval
is wide (its upper end over its lower end above :data:`RATIO_NOISE`);
:mod:`ipycompile.run.contention` adds figures measured while the machine was
oversubscribed. The thresholds come from ``benchmarks/noise.py`` (the quickstart's cells,
quiet and with two busy processes; ``benchmarks/results/noise-*.json``): on the H100
machine's 16-core host, the loaded runs' speedups moved 100-250x while their intervals'
ends stayed 1.37-2.0x apart (1.3 marks them all; the contention check marks them too),
and with 16 threads even quiet runs gave intervals 1.2-32x wide and blocks with an IQR of
3-39 % (eager's blocks erratic), which are marked as they should be. On a quiet 2-core
machine with one thread (``--threads 1``, ``noise-cpu-amd-epyc.json``) the quiet runs' intervals
were 1.05-1.07x wide and their blocks' IQR 0.7-4.7 % (none marked), the loaded runs' IQR 52-85 %
(all marked; their speedups moved at most 1.04x). The benchmark checks the rule the thresholds
keep (a quiet run never marked; a loaded speedup that moved more than 1.5x marked).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .timing import _check_number

#: the fewest pairs whose median interval reaches 95 % coverage (1 - 2 / 2**6 = 96.9 %)
MIN_PAIRS = 6

#: run time is noisy when its blocks' IQR is more than this share of their median
RUN_NOISE = 0.15

#: a ratio (speedup) is noisy when its 95 % interval's upper end is more than this many
#: times its lower end
RATIO_NOISE = 1.3


def median_ci(xs: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of ``xs`` (paired differences or ratios):
    the order statistics ``[x_(k), x_(n+1-k)]`` with the largest ``k`` whose coverage,
    ``1 - 2 P(Binomial(n, 1/2) < k)``, is at least ``level``. Unlike a bootstrap of the
    median, it does not understate the uncertainty of a few pairs; with fewer than
    :data:`MIN_PAIRS` no interval reaches 95 % and ``(min, max)`` is returned."""
    x = sorted(xs)
    n = len(x)
    if n == 0:
        raise ValueError("median_ci: no values")
    below = 0.0  # P(B < k) for the next k to try
    k = 0
    while k + 1 <= n - k:
        below_next = below + math.comb(n, k) / 2 ** n  # P(B < k + 1)
        if 1 - 2 * below_next < level:
            break
        k, below = k + 1, below_next
    k = max(k, 1)
    return float(x[k - 1]), float(x[n - k])


def relative_iqr(xs: Sequence[float]) -> float:
    """Interquartile range over the median (0.0 for fewer than two values or a zero median)."""
    if len(xs) < 2:
        return 0.0
    q1, median, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return (q3 - q1) / median if median > 0 else 0.0


@dataclass
class PairedRatio:
    """The median of paired ratios (``b / a`` block by block) with its 95 % interval."""

    median: float
    ci95: list[float] = field(default_factory=list)  # [low, high]
    pairs: int = 0

    @property
    def noisy(self) -> bool:
        lo, hi = self.ci95
        return lo > 0 and hi / lo > RATIO_NOISE

    def why_noisy(self, what: str) -> str:
        """One line for the notes, or "" when the figure is not noisy."""
        if not self.noisy:
            return ""
        lo, hi = self.ci95
        return (f"{what}: the pairs disagree (95 % interval {lo:.2f}x to {hi:.2f}x over {self.pairs} pairs, "
                f"wider than {RATIO_NOISE:.2f}x from end to end)")


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> PairedRatio:
    """``b[i] / a[i]`` summarised: median, 95 % interval (:func:`median_ci`), pairs."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired_ratio: need equal, non-zero numbers of figures ({len(a)} and {len(b)})")
    ratios = [y / x for x, y in zip(a, b) if x > 0]
    if not ratios:
        raise ValueError("paired_ratio: every figure of the first side is zero")
    return PairedRatio(statistics.median(ratios), list(median_ci(ratios)), len(ratios))


def run_time_noise(times_s: Sequence[float], what: str = "run time") -> str:
    """Why a run time's blocks are noisy (one line), or "" when they agree."""
    spread = relative_iqr(times_s)
    if spread <= RUN_NOISE:
        return ""
    return (f"{what}: the blocks disagree (IQR {spread:.0%} of the median over {len(times_s)} blocks, "
            f"more than {RUN_NOISE:.0%})")


def range_noise(times_s: Sequence[float], what: str, which: str = "the blocks") -> str:
    """Why a few blocks (too few for an IQR) are noisy: their range over their median above
    :data:`RUN_NOISE` (one line), or "" when they agree."""
    if len(times_s) < 2:
        return ""
    median = statistics.median(times_s)
    spread = (max(times_s) - min(times_s)) / median if median > 0 else 0.0
    if spread <= RUN_NOISE:
        return ""
    from ..report.text import fmt_seconds

    return (f"{what}: {which} disagree ({len(times_s)} blocks from {fmt_seconds(min(times_s))} to "
            f"{fmt_seconds(max(times_s))} per call, {spread:.0%} of their median, more than {RUN_NOISE:.0%})")


def verdict(ci: tuple[float, float], n: int, target: float = 0.02) -> str:
    """Whether a 95 % interval over ``n`` pairs settles a +-``target`` question:
    "within", "outside" or "not resolved" (always so with fewer than :data:`MIN_PAIRS`)."""
    lo, hi = ci
    if n < MIN_PAIRS:
        return "not resolved"
    if -target <= lo and hi <= target:
        return "within"
    if lo > target or hi < -target:
        return "outside"
    return "not resolved"


def judged(diffs: Sequence[float], control: Sequence[float] = (), target: float = 0.02) -> dict:
    """The summary of paired differences (median, 95 % interval, verdict against +-``target``)
    and, when given, of an A/A control's."""
    ci = median_ci(diffs)
    out = {"pairs": len(diffs), "compile_overhead": statistics.median(diffs), "compile_overhead_ci95": ci,
           "verdict": verdict(ci, len(diffs), target)}
    if control:
        out.update(control_pairs=len(control), control_overhead=statistics.median(control),
                   control_ci95=median_ci(control))
    return out


# -- the economics of compiling ----------------------------------------------------------
def speedup(eager_s: float, compiled_s: float) -> float | None:
    """``eager_s / compiled_s`` (> 1: compiled is faster); None when either time is 0.

    Raises ValueError for a negative or non-finite time.
    """
    _check_number("eager_s", eager_s, positive=False)
    _check_number("compiled_s", compiled_s, positive=False)
    if eager_s == 0 or compiled_s == 0:
        return None
    return eager_s / compiled_s


def break_even_calls(compile_s: float, compiled_run_s: float, eager_run_s: float) -> int | None:
    """After how many calls compiling has paid for itself; None when the compiled function is not faster.

    The first compiled call costs ``compile_s`` (compilation plus that first
    run); each later one ``compiled_run_s``. The answer is the smallest n >= 1
    with ``compile_s + (n - 1) * compiled_run_s <= n * eager_run_s``, i.e.
    ``ceil((compile_s - compiled_run_s) / (eager_run_s - compiled_run_s))``.
    Example: compile 10 s, compiled 1 ms, eager 2 ms -> 9,999 calls.

    Raises ValueError for a negative or non-finite time.
    """
    _check_number("compile_s", compile_s, positive=False)
    _check_number("compiled_run_s", compiled_run_s, positive=False)
    _check_number("eager_run_s", eager_run_s, positive=False)
    saved_per_call = eager_run_s - compiled_run_s
    if saved_per_call <= 0:
        return None
    calls = (compile_s - compiled_run_s) / saved_per_call
    # The tolerance keeps float noise (9999.000000000002) from adding a call.
    return max(1, math.ceil(calls - 1e-9 * max(1.0, calls)))
