"""The statistics benchmarks/overhead.py judges its target with: the interval of a
median of paired differences, the verdict it gives, and the order of the arms."""

import random
import statistics
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from overhead import ARMS, MIN_PAIRS, arm_order, judged, median_ci, verdict  # noqa: E402


@pytest.mark.parametrize("n", [6, 8, 12, 24])
def test_median_interval_covers_the_true_median_at_least_95_percent(n):
    # skewed, heavy-tailed differences (compile times are): lognormal, true median exp(0) - 1 = 0
    rng = random.Random(n)
    trials, covered = 4000, 0
    for _ in range(trials):
        xs = [rng.lognormvariate(0, 0.3) - 1 for _ in range(n)]
        lo, hi = median_ci(xs)
        covered += lo <= 0.0 <= hi
    assert covered / trials >= 0.95 - 0.01  # the exact coverage is >= 95 %; 0.01 for simulation noise


def test_median_interval_is_no_wider_than_needed():
    # with many pairs, the interval is a narrow band of order statistics around the median, not min-max
    xs = [i / 100 for i in range(101)]
    lo, hi = median_ci(xs)
    assert lo <= statistics.median(xs) <= hi
    assert 0.35 <= lo < 0.5 < hi <= 0.65


def test_verdict_needs_the_whole_interval_and_enough_pairs():
    assert verdict((-0.015, 0.01), MIN_PAIRS) == "within"
    assert verdict((0.025, 0.09), MIN_PAIRS) == "outside"
    assert verdict((-0.09, -0.03), MIN_PAIRS) == "outside"
    assert verdict((-0.05, 0.01), 20) == "not resolved"  # the interval straddles the -2 % bound
    assert verdict((-0.01, 0.01), MIN_PAIRS - 1) == "not resolved"  # too few pairs for a 95 % interval


def test_arm_order_balances_places_and_predecessors():
    orders = [arm_order(rep) for rep in range(2 * len(ARMS))]
    assert all(sorted(o) == sorted(ARMS) for o in orders)
    places = Counter((arm, o.index(arm)) for o in orders for arm in o)
    assert set(places.values()) == {2}  # each arm twice in each place
    follows = Counter((a, b) for o in orders for a, b in zip(o, o[1:]))
    assert set(follows) == {(a, b) for a in ARMS for b in ARMS if a != b}  # each arm after each other one,
    assert set(follows.values()) == {2}  # and equally often


def test_judged_summarises_pairs_and_control_alike():
    diffs = [0.001 * i for i in range(-10, 11)]  # 21 pairs, median 0, interval well inside +-2 %
    row = judged(diffs, [0.05 + d for d in diffs])
    assert row["pairs"] == 21 and row["compile_overhead"] == 0.0
    assert row["compile_overhead_ci95"] == median_ci(diffs) and row["verdict"] == "within"
    assert row["control_pairs"] == 21 and abs(row["control_overhead"] - 0.05) < 1e-12
    assert "control_ci95" not in judged(diffs)  # no control arm, no control fields
