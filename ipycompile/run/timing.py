"""Run time and latency: calls timed between device synchronisations.

- **run time** (:func:`time_blocks`): calls back to back between two device
  synchronisations, per call, the median over blocks; blocks sized by
  ``torch.utils.benchmark.Timer.blocked_autorange``'s rule (the timer's own overhead at
  most :data:`TIMER_OVERHEAD_SHARE` of a block) from the median of several probe blocks:
  what a loop of calls costs, host overhead the device cannot hide included;
- **paired run time** (:func:`time_paired`): two callables in alternating blocks (ABBA),
  for comparisons (:mod:`ipycompile.run.stats` summarises the pairs);
- **latency** (:func:`time_calls`): one call from a synchronised start to a synchronised end.

Device time (CUDA events, do_bench's method) is :mod:`ipycompile.run.device_time`.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from typing import Any, Callable, Optional

from .devices import _cuda_in_use, synchronize

__all__ = ["Timing", "time_calls", "BlockTiming", "time_blocks", "plan_blocks", "time_paired", "timer_overhead_s",
           "block_seconds", "estimate_call_s", "sized_again", "TIMER_OVERHEAD_SHARE", "BLOCK_MIN_S", "PROBES"]


class _Samples:
    """Statistics of ``times_s``, shared by :class:`Timing` (one figure per call) and
    :class:`BlockTiming` (one figure per block)."""

    times_s: list[float]

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def mean_s(self) -> float:
        return statistics.fmean(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def max_s(self) -> float:
        return max(self.times_s)

    @property
    def stdev_s(self) -> float:
        """Sample standard deviation; 0.0 for a single figure."""
        return statistics.stdev(self.times_s) if len(self.times_s) > 1 else 0.0

    @property
    def iqr_s(self) -> float:
        """Interquartile range (linear interpolation, as numpy's default); 0.0 for a single figure."""
        if len(self.times_s) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q3 - q1

    @property
    def spread(self) -> float:
        """Relative noise: IQR / median (0.0 when the median is 0)."""
        median = self.median_s
        return self.iqr_s / median if median > 0 else 0.0


@dataclasses.dataclass
class Timing(_Samples):
    """Wall time of individually timed, device-synchronised calls."""

    times_s: list[float]  # each timed call, seconds
    warmup: int  # untimed calls made before timing (including the auto-range probe)
    auto: bool  # runs and/or warmup were chosen automatically

    @property
    def runs(self) -> int:
        return len(self.times_s)


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: {value!r} is not allowed; expected an integer >= {minimum}")


def _check_number(name: str, value: Any, *, positive: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > 0 if positive else value >= 0)
    if not ok:
        raise ValueError(f"{name}: {value!r} is not allowed; expected a finite number {'>' if positive else '>='} 0")


def _auto_runs(probe_s: float, target_s: float, min_runs: int, max_runs: int) -> int:
    """Runs for a call of ``probe_s`` so that all runs take about ``target_s`` (like ``%timeit``)."""
    if probe_s > 5 * target_s:
        return 1
    if probe_s > target_s:
        return min_runs
    if probe_s <= 0:
        return max_runs
    return max(min_runs, min(max_runs, round(target_s / probe_s)))


def _timed_call(fn: Callable[[], Any]) -> float:
    return _timed_block(fn, 1)


def time_calls(
    fn: Callable[[], Any],
    *,
    runs: int | None = None,
    warmup: int | None = None,
    target_s: float = 1.0,
    max_runs: int = 100,
    min_runs: int = 3,
    use_cuda_events: bool | None = None,
) -> Timing:
    """Call ``fn()`` ``warmup`` times untimed, then time ``runs`` calls one by one.

    warmup: untimed calls first. Default: 2, or 3 when CUDA is in use after the
        first call (CUDA-graph trees record on a later call than the first, and
        autotuning must settle before timing).
    runs: timed calls. Default (auto-range, like ``%timeit``): the last warm-up
        call is timed as a probe (so at least one warm-up call is made) and
        ``runs = clamp(round(target_s / probe), min_runs, max_runs)``; a call
        slower than ``target_s`` gets ``min_runs`` and one slower than
        ``5 * target_s`` gets a single run, so a slow cell is never repeated much.
    use_cuda_events: time with ``torch.cuda.Event`` pairs (device is synchronised
        before each call, and after it to read the events). Default: when CUDA is
        in use after warm-up. Otherwise each call is timed with
        ``time.perf_counter`` between two ``synchronize()`` calls.

    CUDA events time the current stream of the current device; work that ``fn``
    puts on other streams is waited for (device synchronize) but only counted
    where the current stream waits for it.

    Raises ValueError, naming the argument, for a bad ``runs``, ``warmup``,
    ``target_s``, ``min_runs``, ``max_runs``, or ``use_cuda_events=True`` without CUDA.
    """
    if runs is not None:
        _check_int("runs", runs, 1)
    if warmup is not None:
        _check_int("warmup", warmup, 0)
    _check_number("target_s", target_s, positive=True)
    _check_int("min_runs", min_runs, 1)
    _check_int("max_runs", max_runs, min_runs)
    if use_cuda_events:
        import torch

        if not torch.cuda.is_available():
            raise ValueError("use_cuda_events: True is not allowed; CUDA is not available")
    auto = runs is None or warmup is None

    made = 0
    probe_s = 0.0
    while True:
        wanted = warmup if warmup is not None else (3 if _cuda_in_use() else 2)
        if runs is None:
            wanted = max(wanted, 1)
        if made >= wanted:
            break
        probe_s = _timed_call(fn)
        made += 1
    if runs is None:
        runs = _auto_runs(probe_s, target_s, min_runs, max_runs)

    if use_cuda_events is None:
        use_cuda_events = _cuda_in_use()
    if use_cuda_events:
        times = _time_with_cuda_events(fn, runs)
    else:
        times = [_timed_call(fn) for _ in range(runs)]
    return Timing(times_s=times, warmup=made, auto=auto)


def _time_with_cuda_events(fn: Callable[[], Any], runs: int) -> list[float]:
    import torch

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        # An idle stream at start.record() makes the event interval include host-side launch overhead.
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return times



# --------------------------------------------------------------------------- run time (blocks)


@dataclasses.dataclass
class BlockTiming(_Samples):
    """Run time: blocks of ``block_calls`` calls made back to back between two synchronisations.

    ``times_s`` holds one figure per block: the block's wall time divided by its
    calls (what one call costs in a loop). ``dropped_blocks`` counts blocks thrown
    away and re-run because torch compiled or recorded a CUDA graph during them
    (see :class:`CompileActivity`).
    """

    times_s: list[float]
    block_calls: int
    dropped_blocks: int = 0
    probe_calls: int = 0  # untimed calls that sized the blocks
    budget_s: Optional[float] = None  # the time the measurement could take (None: no ceiling)
    spent_s: float = 0.0  # the time it took, probes included
    over_budget: bool = False  # the budget ran out before the plan was done: re-planning and blocks stopped

    @property
    def runs(self) -> int:
        return len(self.times_s) * self.block_calls

    @property
    def blocks(self) -> int:
        return len(self.times_s)


#: ``blocked_autorange``'s rule: the timer's own cost (a clock reading between two
#: synchronisations) is at most this share of a block
TIMER_OVERHEAD_SHARE = 1e-4
#: and a block lasts at least this long (``blocked_autorange`` asks for a thousandth of its
#: ``min_run_time``; 10 ms keeps a block long against a busy machine's scheduler ticks)
BLOCK_MIN_S = 0.01
#: probe blocks per size: the per-call estimate is their median, so one slow call
#: (a scheduler hiccup, a late compile) cannot shrink the blocks
PROBES = 5
#: times the blocks are sized again when the first timed blocks come out far shorter than planned
MAX_REPLANS = 2


def timer_overhead_s(samples: int = 5) -> float:
    """The timer's own cost: the median of ``samples`` empty timings, each a clock reading
    between two synchronisations (``blocked_autorange``'s ``_timeit(0)``)."""
    times = []
    for _ in range(samples):
        synchronize()
        t0 = time.perf_counter()
        synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _timed_block(fn: Callable[[], Any], calls: int) -> float:
    synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return time.perf_counter() - t0


def estimate_call_s(fn: Callable[[], Any], *, block_s: float, budget_s: float) -> tuple[float, int]:
    """Seconds per call of ``fn`` in a loop, and the calls it took to say so: :data:`PROBES`
    probe blocks of one size, the estimate their median per call; the size grows (about
    tenfold) until a probe block lasts a tenth of ``block_s``. Probing stops once it has
    spent ``budget_s`` (a slow call is probed once or twice)."""
    calls, spent, n = 0, 0.0, 1
    while True:
        samples = []
        for _ in range(PROBES):
            t = _timed_block(fn, n)
            samples.append(t / n)
            calls += n
            spent += t
            if spent > budget_s:
                break
        est = statistics.median(samples)
        if est * n >= block_s / 10 or spent > budget_s or n >= 10**6:
            return est, calls
        n = max(n + 1, min(n * 10, math.ceil(block_s / 10 / max(est, 1e-9))))


def block_seconds(overhead_s: float, target_s: float, min_blocks: int) -> float:
    """How long a block should last: the timer's overhead at most :data:`TIMER_OVERHEAD_SHARE`
    of it and at least :data:`BLOCK_MIN_S`, but no longer than ``target_s / min_blocks``
    (so a run keeps its time)."""
    return min(max(BLOCK_MIN_S, overhead_s / TIMER_OVERHEAD_SHARE), max(BLOCK_MIN_S, target_s / min_blocks))


def time_blocks(
    fn: Callable[[], Any],
    *,
    runs: Optional[int] = None,
    target_s: float = 1.0,
    min_blocks: int = 5,
    max_blocks: int = 100,
    activity: Optional["CompileActivity"] = None,
    max_dropped: int = 5,
    budget_s: Optional[float] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> BlockTiming:
    """Run time of ``fn``: blocks of calls back to back, each block between two synchronisations.

    Auto (``runs=None``), by ``blocked_autorange``'s rule: the timer's own cost is
    measured (:func:`timer_overhead_s`), a block lasts long enough that it is at most
    :data:`TIMER_OVERHEAD_SHARE` of it (at least :data:`BLOCK_MIN_S`, at most
    ``target_s / min_blocks``: see :func:`block_seconds`), and its calls are that time over
    the median per call of several probe blocks (:func:`estimate_call_s`); then blocks until
    about ``target_s`` is spent, between ``min_blocks`` and ``max_blocks`` blocks (a call
    slower than ``5 * target_s`` gets a single block). With ``runs``: that many timed calls
    in all, in at least ``min(runs, min_blocks)`` blocks (the median of a few probe calls
    sizes them when ``runs > min_blocks``; otherwise each block is one call).

    ``activity``: a :class:`CompileActivity` that is open around this call; a
    block during which torch compiled or recorded a CUDA graph is dropped and
    re-run (at most ``max_dropped`` times; later ones are kept, and counted).

    ``budget_s``: a ceiling on the whole measurement (probes included, read on ``clock``): once
    it is spent, re-planning stops and no block starts after the first one that is kept; the
    result says ``over_budget`` (the caller marks the figure NOISY) and what the budget bought.
    """
    start = clock()
    per_block, blocks, probes = plan_blocks(fn, runs=runs, target_s=target_s, min_blocks=min_blocks,
                                            max_blocks=max_blocks)
    block_s = block_seconds(timer_overhead_s(), target_s, min_blocks) if runs is None else 0.0
    times: list[float] = []
    dropped = replans = 0
    over = False
    while len(times) < blocks:
        if budget_s is not None and times and clock() - start >= budget_s:
            over = True  # what was measured is the figure; it is marked, not measured on
            break
        seen = activity.count if activity is not None else 0
        elapsed = _timed_block(fn, per_block)
        if activity is not None and activity.count != seen and dropped < max_dropped:
            dropped += 1
            continue
        times.append(elapsed / per_block)
        spent = clock() - start
        if block_s and replans < MAX_REPLANS and (budget_s is None or spent < budget_s):
            again = sized_again(times, per_block, block_s)
            if again is not None:
                probes += per_block * len(times)
                per_block, call_s = again
                blocks = max(min_blocks, min(max_blocks, round(target_s / max(call_s * per_block, 1e-9))))
                times, replans = [], replans + 1
    return BlockTiming(times, per_block, dropped, probes, budget_s=budget_s, spent_s=clock() - start,
                       over_budget=over)


def sized_again(times: list[float], per_block: int, block_s: float) -> Optional[tuple[int, float]]:
    """The re-planning rule of :func:`time_blocks` and :func:`time_paired`: after every
    :data:`PROBES` timed blocks, when their median per call makes a block of ``per_block`` calls
    last under a quarter of ``block_s``, the probes were slow (a busy machine, calls still
    settling): ``(calls per block sized again from that median, that median)``, and timing
    starts over; else None."""
    if not times or len(times) % PROBES:
        return None
    call_s = statistics.median(times[-PROBES:])
    if call_s * per_block >= block_s / 4:
        return None
    return max(1, math.ceil(block_s / max(call_s, 1e-9))), call_s


def plan_blocks(fn: Callable[[], Any], *, runs: Optional[int] = None, target_s: float = 1.0, min_blocks: int = 5,
                max_blocks: int = 100) -> tuple[int, int, int]:
    """``(calls per block, blocks, probe calls made)`` for :func:`time_blocks` (see there)."""
    if runs is not None:
        _check_int("runs", runs, 1)
    _check_number("target_s", target_s, positive=True)
    _check_int("min_blocks", min_blocks, 1)
    _check_int("max_blocks", max_blocks, min_blocks)
    block_s = block_seconds(timer_overhead_s(), target_s, min_blocks)
    if runs is None:
        est, probes = estimate_call_s(fn, block_s=block_s, budget_s=0.2 * target_s)
        per_block = max(1, math.ceil(block_s / max(est, 1e-9)))
        blocks = 1 if est > 5 * target_s else max(
            min_blocks, min(max_blocks, round(target_s / max(est * per_block, 1e-9))))
        return per_block, blocks, probes
    if runs <= min_blocks:
        return 1, runs, 0
    est, probes = estimate_call_s(fn, block_s=block_s, budget_s=0.2 * target_s)
    per_block = max(1, min(math.ceil(block_s / max(est, 1e-9)), runs // min_blocks))
    return per_block, max(1, runs // per_block), probes


def time_paired(
    a: Callable[[], Any],
    b: Callable[[], Any],
    *,
    runs: Optional[int] = None,
    target_s: float = 2.0,
    min_pairs: int = 6,
    max_pairs: int = 50,
    budget_s: Optional[float] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[BlockTiming, BlockTiming]:
    """Run time of ``a`` and ``b`` measured interleaved: pairs of one block of each, in
    alternating order (``a b``, ``b a``, ``a b``, ...: ABBA), so that drift of the machine's
    clocks and load hits both sides alike. Block ``i`` of one side and block ``i`` of the
    other form pair ``i`` (:func:`ipycompile.run.stats.paired_ratio` summarises them).

    Each side's blocks are sized as :func:`time_blocks` sizes them (``blocked_autorange``'s
    rule, from the median of probe blocks); auto (``runs=None``): pairs until about
    ``target_s`` is spent (both sides), between ``min_pairs`` and ``max_pairs`` (one pair
    when a pair would last over ``5 * target_s``), and a side whose first timed blocks come
    out far shorter than planned is sized again as :func:`time_blocks` does (:func:`sized_again`;
    both sides start over, their discarded blocks counted as probe calls). With ``runs``: about
    that many calls of each side, in ``min(runs, min_pairs)`` pairs. ``budget_s``: as for
    :func:`time_blocks`, a ceiling on the whole comparison (re-planning and new pairs stop
    once it is spent; both results say ``over_budget``)."""
    start = clock()
    if runs is not None:
        _check_int("runs", runs, 1)
    _check_number("target_s", target_s, positive=True)
    _check_int("min_pairs", min_pairs, 1)
    _check_int("max_pairs", max_pairs, min_pairs)
    probes = [0, 0]
    block_s = 0.0
    if runs is None:
        block_s = block_seconds(timer_overhead_s(), target_s / 2, min_pairs)
        est = [estimate_call_s(fn, block_s=block_s, budget_s=0.1 * target_s) for fn in (a, b)]
        probes = [calls for _, calls in est]
        est = [e for e, _ in est]
        calls = [max(1, math.ceil(block_s / max(e, 1e-9))) for e in est]
        pairs = 1 if sum(est) > 5 * target_s else _pairs(calls, est, target_s, min_pairs, max_pairs)
    else:
        pairs = min(runs, min_pairs)
        calls = [max(1, runs // pairs)] * 2
    times: tuple[list[float], list[float]] = ([], [])
    sides = ((0, a), (1, b))
    replans = [0, 0]
    over = False
    while len(times[0]) < pairs:
        if budget_s is not None and times[0] and clock() - start >= budget_s:
            over = True
            break
        order = sides if len(times[0]) % 2 == 0 else sides[::-1]
        for side, fn in order:
            times[side].append(_timed_block(fn, calls[side]) / calls[side])
        if not block_s or (budget_s is not None and clock() - start >= budget_s):
            continue
        # each side by time_blocks' rule; a side sized again starts both over (a pair is two adjacent blocks)
        again = [sized_again(times[s], calls[s], block_s) if replans[s] < MAX_REPLANS else None for s in (0, 1)]
        if any(again):
            for s in (0, 1):
                probes[s] += calls[s] * len(times[s])
                if again[s] is not None:
                    calls[s], est[s] = again[s]
                    replans[s] += 1
                times[s].clear()
            pairs = _pairs(calls, est, target_s, min_pairs, max_pairs)
    spent = clock() - start
    return tuple(BlockTiming(times[s], calls[s], 0, probes[s], budget_s=budget_s, spent_s=spent, over_budget=over)
                 for s in (0, 1))  # type: ignore[return-value]


def _pairs(calls: list[int], est: list[float], target_s: float, min_pairs: int, max_pairs: int) -> int:
    """Pairs of blocks that spend about ``target_s`` (both sides), between ``min_pairs`` and ``max_pairs``."""
    pair_s = calls[0] * est[0] + calls[1] * est[1]
    return max(min_pairs, min(max_pairs, round(target_s / max(pair_s, 1e-9))))
