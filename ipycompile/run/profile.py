"""Honest measurement primitives: device-synchronised timing, peak memory, output checks.

Everything here measures what actually happened on the device, not what the
host thought it launched. Three different times, named (see :func:`time_blocks`,
:func:`time_device`, :func:`time_calls`):

- **run time**: calls back to back between two device synchronisations, per call,
  the median over blocks (``torch.utils.benchmark.Timer.blocked_autorange``'s
  method): what a loop of calls costs, host overhead the device cannot hide included;
- **device time**: CUDA events around each call, the L2 cache flushed and the
  queue kept ahead of the device before each (``triton.testing.do_bench``'s method);
- **latency**: one call from a synchronised start to a synchronised end.

Peak memory counters are reset at the start of the measured block, and compiled
outputs are checked against eager ones with ``torch.testing.assert_close``
semantics (:mod:`ipycompile.run.accuracy` checks with precision in mind).

``import ipycompile.profile`` does not import torch. Functions that only need
to know whether an accelerator is *in use* look at ``sys.modules`` first: if
torch was never imported, no device work can be pending.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import re
import reprlib
import statistics
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional

__all__ = [
    "synchronize",
    "device_name",
    "Timing",
    "time_calls",
    "BlockTiming",
    "time_blocks",
    "time_paired",
    "time_device",
    "CompileActivity",
    "PeakMemory",
    "compare_outputs",
    "break_even_calls",
    "speedup",
]


# --------------------------------------------------------------------------- devices


def _torch_if_imported() -> Any:
    """The torch module if something already imported it, else None (never imports it)."""
    return sys.modules.get("torch")


def _cuda_in_use() -> bool:
    torch = _torch_if_imported()
    return torch is not None and torch.cuda.is_initialized()


def synchronize(device: str | None = None) -> None:
    """Wait for all work queued on the accelerator, so a host clock reading afterwards is honest.

    With ``device`` (e.g. ``"cuda"``, ``"cuda:1"``, ``"xpu"``, ``"mps"``, ``"cpu"``)
    that device is synchronised (initialising it if needed); ``"cpu"`` is a no-op.
    Without it, every accelerator that is already in use is synchronised: CUDA
    (the current device) and XPU when initialised, MPS when available. When torch
    has not been imported nothing can be pending and this returns at once.
    """
    if device is not None:
        import torch

        dev = torch.device(device)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elif dev.type == "xpu":
            torch.xpu.synchronize(dev)
        elif dev.type == "mps":
            torch.mps.synchronize()
        return
    torch = _torch_if_imported()
    if torch is None:
        return
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_initialized():
        xpu.synchronize()
    if torch.backends.mps.is_available():
        torch.mps.synchronize()


def _cpu_brand() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _gpu_name(torch: Any) -> str | None:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.cuda.current_device())
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return xpu.get_device_name(xpu.current_device())
    return None


def device_name() -> str:
    """The accelerator measurements run on, e.g. ``"NVIDIA H100 80GB HBM3"``, else ``"cpu: <brand>"``.

    For CUDA/XPU this is the current device. When CUDA is available but not yet
    initialised, asking for its name initialises it (as any CUDA work would).
    On Apple silicon with MPS available: ``"mps: <brand>"``.
    """
    import torch

    name = _gpu_name(torch)
    if name is not None:
        return name
    if torch.backends.mps.is_available():
        return f"mps: {_cpu_brand()}"
    return f"cpu: {_cpu_brand()}"


# --------------------------------------------------------------------------- timing


@dataclasses.dataclass
class Timing:
    """Wall time of individually timed, device-synchronised calls."""

    times_s: list[float]  # each timed call, seconds
    warmup: int  # untimed calls made before timing (including the auto-range probe)
    auto: bool  # runs and/or warmup were chosen automatically

    @property
    def runs(self) -> int:
        return len(self.times_s)

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
        """Sample standard deviation; 0.0 for a single run."""
        return statistics.stdev(self.times_s) if len(self.times_s) > 1 else 0.0

    @property
    def iqr_s(self) -> float:
        """Interquartile range (linear interpolation, as numpy's default); 0.0 for a single run."""
        if len(self.times_s) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q3 - q1

    @property
    def spread(self) -> float:
        """Relative noise: IQR / median (0.0 when the median is 0)."""
        median = self.median_s
        return self.iqr_s / median if median > 0 else 0.0


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
class BlockTiming:
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

    @property
    def runs(self) -> int:
        return len(self.times_s) * self.block_calls

    @property
    def blocks(self) -> int:
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def iqr_s(self) -> float:
        if len(self.times_s) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q3 - q1


#: ``blocked_autorange``'s rule: the timer's own cost (a clock reading between two
#: synchronisations) is at most this share of a block
TIMER_OVERHEAD_SHARE = 1e-4
#: and a block lasts at least this long (``blocked_autorange`` asks for a thousandth of its
#: ``min_run_time``; 10 ms keeps a block long against a busy machine's scheduler ticks)
BLOCK_MIN_S = 0.01
#: probe blocks per size: the per-call estimate is their median, so one slow call
#: (a scheduler hiccup, a late compile) cannot shrink the blocks
PROBES = 5


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
    """
    per_block, blocks, probes = plan_blocks(fn, runs=runs, target_s=target_s, min_blocks=min_blocks,
                                            max_blocks=max_blocks)
    times: list[float] = []
    dropped = 0
    while len(times) < blocks:
        seen = activity.count if activity is not None else 0
        elapsed = _timed_block(fn, per_block)
        if activity is not None and activity.count != seen and dropped < max_dropped:
            dropped += 1
            continue
        times.append(elapsed / per_block)
    return BlockTiming(times, per_block, dropped, probes)


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
) -> tuple[BlockTiming, BlockTiming]:
    """Run time of ``a`` and ``b`` measured interleaved: pairs of one block of each, in
    alternating order (``a b``, ``b a``, ``a b``, ...: ABBA), so that drift of the machine's
    clocks and load hits both sides alike. Block ``i`` of one side and block ``i`` of the
    other form pair ``i`` (:func:`ipycompile.run.stats.paired_ratio` summarises them).

    Each side's blocks are sized as :func:`time_blocks` sizes them (``blocked_autorange``'s
    rule, from the median of probe blocks); auto (``runs=None``): pairs until about
    ``target_s`` is spent (both sides), between ``min_pairs`` and ``max_pairs`` (one pair
    when a pair would last over ``5 * target_s``). With ``runs``: about that many calls of
    each side, in ``min(runs, min_pairs)`` pairs."""
    if runs is not None:
        _check_int("runs", runs, 1)
    _check_number("target_s", target_s, positive=True)
    _check_int("min_pairs", min_pairs, 1)
    _check_int("max_pairs", max_pairs, min_pairs)
    probes = [0, 0]
    if runs is None:
        block_s = block_seconds(timer_overhead_s(), target_s / 2, min_pairs)
        est_a, probes[0] = estimate_call_s(a, block_s=block_s, budget_s=0.1 * target_s)
        est_b, probes[1] = estimate_call_s(b, block_s=block_s, budget_s=0.1 * target_s)
        calls = [max(1, math.ceil(block_s / max(est_a, 1e-9))), max(1, math.ceil(block_s / max(est_b, 1e-9)))]
        pair_s = calls[0] * est_a + calls[1] * est_b
        pairs = 1 if est_a + est_b > 5 * target_s else max(min_pairs, min(max_pairs, round(target_s / max(pair_s, 1e-9))))
    else:
        pairs = min(runs, min_pairs)
        calls = [max(1, runs // pairs)] * 2
    times: tuple[list[float], list[float]] = ([], [])
    sides = ((0, a), (1, b))
    for i in range(pairs):
        for side, fn in (sides if i % 2 == 0 else sides[::-1]):
            times[side].append(_timed_block(fn, calls[side]) / calls[side])
    return (BlockTiming(times[0], calls[0], 0, probes[0]), BlockTiming(times[1], calls[1], 0, probes[1]))


# --------------------------------------------------------------------------- device time


#: bytes zeroed before each call of :func:`time_device`: flushes the L2 cache (50 MB
#: on an H100) and keeps the device busy while the host queues the call
FLUSH_BYTES = 256 * 2**20


def time_device(fn: Callable[[], Any], *, target_s: float = 0.1, warmup_s: float = 0.025,
                estimate_s: Optional[float] = None, max_calls: int = 1000) -> list[float]:
    """Device time of ``fn`` on CUDA, per call, in seconds (``triton.testing.do_bench``'s method).

    Before each call a 256 MiB buffer is zeroed (the L2 cache is flushed, and the
    device is busy while the host queues the call, so the host's launch time is
    hidden wherever the call queues its work faster than the zeroing runs); CUDA
    events on the current stream are recorded around each call; one
    synchronisation at the end. Calls for about ``warmup_s`` untimed, then for
    about ``target_s`` (at least 5 calls, or 1 for a call slower than ``target_s``;
    at most ``max_calls``). ``estimate_s`` (a known time per call) skips the five
    calls that estimate it. What a call spends waiting
    for the host beyond that (a synchronisation inside it, a host-bound call)
    is in the figure too, as in do_bench.

    Raises ValueError when CUDA is not available.
    """
    _check_number("target_s", target_s, positive=True)
    import torch

    if not torch.cuda.is_available():
        raise ValueError("time_device: CUDA is not available (device time is measured with CUDA events)")
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    if estimate_s is None:
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            flush.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate_s = start.elapsed_time(end) / 5 / 1000.0
    estimate_s = max(estimate_s, 1e-7)
    for _ in range(int(warmup_s / estimate_s)):
        fn()
    n = max(5 if estimate_s < target_s else 1, min(max_calls, int(target_s / estimate_s)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    del flush
    return [s.elapsed_time(e) / 1000.0 for s, e in zip(starts, ends)]


# --------------------------------------------------------------------------- compile activity


class CompileActivity:
    """Counts what torch compiles or records while the block is open: Dynamo compiles,
    lazy backward compiles and CUDA-graph recordings, through Dynamo's own compile
    callbacks (``torch._dynamo.callback_handler``; a registered callback, nothing
    patched). ``count`` is the number of such events so far; ``by_trigger`` counts
    them by torch's trigger name (``"DYNAMO"``, ``"CUDAGRAPH_RECORDING"``, ...) and
    ``seconds`` their time. Cheap: nothing runs unless torch compiles or records.
    Where torch has no callback handler, ``available`` is False and nothing is counted.
    """

    def __init__(self) -> None:
        self.count = 0
        self.by_trigger: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.available = False
        self._handler: Any = None
        self._t0: Optional[float] = None

    def _start(self, args: Any) -> None:
        self._t0 = time.perf_counter()

    def _end(self, args: Any) -> None:
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "UNKNOWN")
        self.count += 1
        self.by_trigger[trigger] = self.by_trigger.get(trigger, 0) + 1
        if self._t0 is not None:
            self.seconds[trigger] = self.seconds.get(trigger, 0.0) + time.perf_counter() - self._t0
        self._t0 = None

    def __enter__(self) -> "CompileActivity":
        try:
            from torch._dynamo import callback_handler
        except ImportError:
            return self
        if hasattr(callback_handler, "register_start_callback") and hasattr(callback_handler, "remove_end_callback"):
            callback_handler.register_start_callback(self._start)
            callback_handler.register_end_callback(self._end)
            self._handler = callback_handler
            self.available = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handler is not None:
            for remove, cb in ((self._handler.remove_start_callback, self._start),
                               (self._handler.remove_end_callback, self._end)):
                try:
                    remove(cb)
                except ValueError:
                    pass
            self._handler = None


# --------------------------------------------------------------------------- memory

_HWM_RESET_SLACK_BYTES = 4 * 2**20  # VmHWM may exceed VmRSS by this much right after a working reset


def _proc_status_bytes() -> dict[str, int]:
    """VmHWM and VmRSS of this process in bytes, from /proc/self/status ({} where unreadable)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    return {m.group(1): int(m.group(2)) * 1024 for m in re.finditer(r"^(VmHWM|VmRSS):\s+(\d+)\s+kB", text, re.M)}


def _current_rss() -> int | None:
    """Resident set size now, in bytes, from /proc/self/statm (None where there is no /proc)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            resident_pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM); True only if it now reads about the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    status = _proc_status_bytes()
    if "VmHWM" not in status or "VmRSS" not in status:
        return False
    return status["VmHWM"] - status["VmRSS"] <= _HWM_RESET_SLACK_BYTES


class _RssSampler:
    """Daemon thread recording the highest RSS seen every ``interval_s``.

    It misses spikes shorter than the interval, and those that rise and fall
    while the sampler waits for the GIL.
    """

    def __init__(self, interval_s: float = 0.002) -> None:
        self.peak = _current_rss() or 0
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ipycompile-rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def _sample(self) -> None:
        self.peak = max(self.peak, _current_rss() or 0)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self._sample()
        return self.peak


class PeakMemory:
    """Context manager measuring peak host RSS and peak device memory inside the block.

    After the block:

    - ``host_bytes``: peak resident set size of the whole process during the
      block (it includes ``baseline_host_bytes``, the RSS at entry). On Linux the
      kernel's peak counter is reset at entry (``5`` written to
      ``/proc/self/clear_refs``) and ``VmHWM`` is read at exit: ``host_method ==
      "vmhwm"``, exact. Where the reset is refused or does not take effect, a
      daemon thread samples the RSS every ~2 ms: ``"sampling"``, which can miss
      short spikes. Without /proc (macOS, Windows): ``"unavailable"`` and None.
    - ``device_bytes``: ``torch.cuda.max_memory_allocated()`` of the current CUDA
      device when CUDA is initialised (at entry, or during the block: then the
      peak covers everything since initialisation and ``baseline_device_bytes``
      is 0); the counters are reset at entry after a synchronize. It counts
      tensors from PyTorch's caching allocator, not the allocator's reserve nor
      memory of other libraries. None when CUDA is not in use.
    - ``baseline_device_bytes``: ``torch.cuda.memory_allocated()`` at entry.

    Do not nest PeakMemory blocks (nor call ``torch.cuda.reset_peak_memory_stats``
    inside one): the peak counters are process-wide, so an inner block resets the
    counters the outer one reads, and the outer one then misses any peak reached
    before the inner block started.
    """

    def __init__(self) -> None:
        self.host_bytes: int | None = None
        self.device_bytes: int | None = None
        self.host_method: str = "unavailable"
        self.baseline_host_bytes: int | None = None
        self.baseline_device_bytes: int | None = None
        self._cuda_device: int | None = None
        self._sampler: _RssSampler | None = None

    def __enter__(self) -> PeakMemory:
        self.host_bytes = self.device_bytes = self.baseline_device_bytes = None
        self._cuda_device = None
        if _cuda_in_use():
            import torch

            torch.cuda.synchronize()
            self._cuda_device = torch.cuda.current_device()
            self.baseline_device_bytes = torch.cuda.memory_allocated(self._cuda_device)
            torch.cuda.reset_peak_memory_stats(self._cuda_device)

        self.baseline_host_bytes = _current_rss()
        if self.baseline_host_bytes is None:
            self.host_method = "unavailable"
        elif _reset_hwm():
            self.host_method = "vmhwm"
        else:
            self.host_method = "sampling"
            self._sampler = _RssSampler()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.host_method == "vmhwm":
            self.host_bytes = _proc_status_bytes().get("VmHWM")
        elif self._sampler is not None:
            self.host_bytes = self._sampler.stop()  # its first sample is the RSS at entry
            self._sampler = None

        if _cuda_in_use():
            import torch

            if self._cuda_device is None:  # CUDA was initialised inside the block
                self._cuda_device = torch.cuda.current_device()
                self.baseline_device_bytes = 0
            self.device_bytes = torch.cuda.max_memory_allocated(self._cuda_device)


# --------------------------------------------------------------------------- correctness


def _default_tolerances(torch: Any, dtype: Any) -> tuple[float, float]:
    """(rtol, atol) that ``torch.testing.assert_close`` uses by default for ``dtype`` (its documented table)."""
    table = {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
        torch.complex32: (1e-3, 1e-5),
        torch.complex64: (1.3e-6, 1e-5),
        torch.complex128: (1e-7, 1e-7),
    }
    for quantized in (torch.quint8, torch.qint8, torch.qint32, torch.quint4x2, torch.quint2x4):
        table[quantized] = (1.3e-6, 1e-5)
    return table.get(dtype, (0.0, 0.0))


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _pair_leaves(torch: Any, a: Any, b: Any, path: str, leaves: list[tuple[str, Any, Any]]) -> str | None:
    """Append the matching leaves of ``a`` and ``b`` to ``leaves``; return why the structures differ, if they do."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        leaves.append((path, a, b))
        return None
    containers = (isinstance(a, (Mapping, list, tuple)) or _is_dataclass_instance(a),
                  isinstance(b, (Mapping, list, tuple)) or _is_dataclass_instance(b))
    if not any(containers):
        leaves.append((path, a, b))
        return None
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, Mapping):
        if a.keys() != b.keys():
            only_a, only_b = [k for k in a if k not in b], [k for k in b if k not in a]
            return f"{path}: keys differ (only in first: {only_a}, only in second: {only_b})"
        children = [(f"{path}[{k!r}]", a[k], b[k]) for k in a]
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        children = [(f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b))]
    else:
        children = [(f"{path}.{f.name}", getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)]
    for child_path, x, y in children:
        why = _pair_leaves(torch, x, y, child_path, leaves)
        if why is not None:
            return why
    return None


def _max_abs_diff(torch: Any, x: Any, y: Any) -> float:
    """max |x - y| over elements in float64; equal values (same infinities too) count 0, NaN makes it NaN."""
    if x.is_quantized:
        x, y = x.dequantize(), y.dequantize()
    if x.layout != torch.strided:
        x, y = x.to_dense(), y.to_dense()
    if x.numel() == 0:
        return 0.0
    wide = torch.complex128 if x.is_complex() else torch.float64
    x, y = x.to(wide), y.to(wide)
    return float(torch.where(x == y, 0.0, (x - y).abs()).max())


def _tensor_value_mismatch(torch: Any, x: Any, y: Any, rtol: float | None, atol: float | None) -> str | None:
    """Why ``x`` and ``y`` are not close under ``assert_close`` (one line), or None when they are."""
    if rtol is not None or atol is not None:
        default_rtol, default_atol = _default_tolerances(torch, x.dtype)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
    try:
        torch.testing.assert_close(x, y, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        # Drop the "Tensor-likes are not close!" headline; keep counts and greatest differences.
        return "; ".join(lines[1:] or lines)
    return None


def compare_outputs(a: Any, b: Any, *, rtol: float | None = None, atol: float | None = None) -> tuple[bool, float | None, str]:
    """Compare two outputs (e.g. eager vs compiled) without ever raising: ``(match, max_abs_diff, message)``.

    Walks tensors in nested tuples, lists (namedtuples and ``torch.return_types``
    included), mappings and dataclasses; containers must have the same type,
    length and keys. Tensors are compared after ``.detach().cpu()``: same shape,
    dtype and layout required, values with ``torch.testing.assert_close``
    semantics (per-dtype default tolerances; NaN never equals NaN). Give ``rtol``
    and/or ``atol`` to override; one left out takes its per-dtype default.
    Other leaves are compared with ``==``.

    ``max_abs_diff`` is the largest elementwise ``|a - b|`` over all tensors (NaN
    if any tensor holds a NaN; None when no tensor was compared or the structure,
    a shape or a dtype differs). ``message`` says why outputs do not match,
    naming the first offending leaf (e.g. ``output[0]['logits']``).
    """
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None:
            _check_number(name, tol, positive=False)
    import torch

    leaves: list[tuple[str, Any, Any]] = []
    why = _pair_leaves(torch, a, b, "output", leaves)
    if why is not None:
        return False, None, why

    tensors = []
    for path, x, y in leaves:
        if isinstance(x, torch.Tensor):
            try:
                x, y = x.detach().cpu(), y.detach().cpu()
            except Exception as e:  # e.g. meta or fake tensors have no data to copy
                return False, None, f"{path}: cannot copy to CPU ({type(e).__name__}: {e})"
            for attribute, left, right in (
                ("shape", tuple(x.shape), tuple(y.shape)),
                ("dtype", x.dtype, y.dtype),
                ("layout", x.layout, y.layout),
            ):
                if left != right:
                    return False, None, f"{path}: {attribute} {left} vs {right}"
            tensors.append((path, x, y))

    diffs: list[float] = []
    mismatches: list[str] = []
    for path, x, y in leaves:
        if not isinstance(x, torch.Tensor):
            try:
                equal = bool(x == y)
            except Exception as e:  # == may raise or return something without a truth value
                mismatches.append(f"{path}: cannot compare {type(x).__name__} with == ({e})")
                continue
            if not equal:
                mismatches.append(f"{path}: {reprlib.repr(x)} != {reprlib.repr(y)}")
    for path, x, y in tensors:
        try:
            diffs.append(_max_abs_diff(torch, x, y))
            why = _tensor_value_mismatch(torch, x, y, rtol, atol)
        except Exception as e:  # e.g. a dtype neither comparison supports
            why = f"cannot compare ({type(e).__name__}: {e})"
        if why is not None:
            mismatches.append(f"{path}: {why}")

    max_diff = None
    if diffs:
        max_diff = math.nan if any(math.isnan(d) for d in diffs) else max(diffs)
    if mismatches:
        more = f" (and {len(mismatches) - 1} more mismatching leaves)" if len(mismatches) > 1 else ""
        return False, max_diff, mismatches[0] + more
    if max_diff is None:
        return True, None, "outputs are equal (no tensors)"
    return True, max_diff, f"outputs match: {len(tensors)} tensor(s), max |diff| {max_diff:.3g}"


# --------------------------------------------------------------------------- economics


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
