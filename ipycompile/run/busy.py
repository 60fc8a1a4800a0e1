"""Where each call's time goes on the GPU: busy time, the idle share, and a verdict.

After the timed runs, a short separate phase runs a few more calls under
``torch.profiler`` (CUPTI): the GPU's **busy time per call** is the time covered by the
calls' device activity (kernels, copies and fills; overlapping ones on several streams
counted once) over the calls. Beside the run time of the same calls (a loop, timed without
the profiler) it says how much of each call the GPU works:

- **device-bound**: busy at least :data:`DEVICE_BOUND` of each call: faster kernels
  (or less work) are what would help;
- **host-bound**: busy at most :data:`HOST_BOUND` of each call: the GPU waits for the host
  (Python, guards, kernel launches). In a mode without CUDA graphs the advice is to try
  ``mode="reduce-overhead"`` (CUDA graphs replay the call's launches as one); under CUDA
  graphs, the host operations that remain, in torch's own names, with their shares of the
  host's time under the profiler (which slows the host, so not as times);
- **in between** otherwise.

The profiler's own cost lands on the host, never in the device's activity, so the busy
time is the device's; the share is taken against a run time measured **next to** it,
without the profiler: plain blocks of the same calls alternate with the profiled ones
(plain, profiled, plain, profiled, plain; :func:`alternate`), the run time the median of
the plain blocks' time per call (a plain block lasts at least 10 ms: :func:`plain_calls`). A run time measured seconds earlier (the steady state's)
can differ from it by 0.76-1.75x on a GPU whose clocks and host load move (issue 21), which
turned a 90 % busy share into "49 %, host-bound". When the plain blocks disagree by more than
:data:`ipycompile.run.stats.RUN_NOISE`, the share is noisy (:func:`busy_noise`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, TypeVar

from ..report import DeviceBusy
from .stats import range_noise

T = TypeVar("T")

#: busy at least this share of each call: device-bound
DEVICE_BOUND = 0.8
#: busy at most this share of each call: host-bound
HOST_BOUND = 0.5

#: host operations that are the profiler's or the runtime's bookkeeping, not the cell's work
_NOT_HOST_WORK = ("ProfilerStep", "cudaDeviceSynchronize", "cudaStreamSynchronize", "[memory]")


def _union_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``[start, end]`` intervals (microseconds)."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def busy_calls(run_s: float) -> int:
    """How many calls to profile: about 0.2 s of them, 3 to 20."""
    return max(3, min(20, int(0.2 / max(run_s, 1e-9))))


#: profiled blocks, each between two plain ones (plain, profiled, plain, profiled, plain)
PROFILED_BLOCKS = 2


@dataclass
class BusyBlock:
    """One profiled block of calls: the device's busy time per call, its activities per call,
    and the top-level host operations' time per call (under the profiler, so shares only)."""

    busy_s: float
    kernels: float = 0.0
    host: dict[str, float] = field(default_factory=dict)


def alternate(plain: Callable[[], float], profiled: Callable[[], T], blocks: int = PROFILED_BLOCKS
              ) -> tuple[list[float], list[T]]:
    """``plain`` and ``profiled`` blocks in turn, plain first and last (plain, profiled, plain, ...,
    plain): ``blocks`` profiled blocks, each between two plain ones, so that the run time the busy
    time is judged against is measured next to it. ``plain()`` returns a block's time per call."""
    plains, profs = [plain()], []
    for _ in range(blocks):
        profs.append(profiled())
        plains.append(plain())
    return plains, profs


def busy_beside_run(plain: Callable[[], float], profiled: Callable[[], BusyBlock], *, calls: int,
                    cudagraphs: bool, suggest: bool, blocks: int = PROFILED_BLOCKS) -> DeviceBusy:
    """Plain and profiled blocks of the same calls in turn (:func:`alternate`), judged (:func:`judge`):
    the busy time the median of the profiled blocks' per call, the run time the median of the plain
    blocks' (``DeviceBusy.run_times_s`` keeps them; :func:`busy_noise` says when they disagree)."""
    plains, profs = alternate(plain, profiled, blocks)
    host: dict[str, float] = {}
    for b in profs:
        for name, t in b.host.items():
            host[name] = host.get(name, 0.0) + t
    # the profiler slows the host, so its host times are shares, not the call's times
    total = sum(host.values()) or 1.0
    top = sorted(host.items(), key=lambda kv: -kv[1])[:4]
    busy = judge(statistics.median(b.busy_s for b in profs), statistics.median(plains),
                 kernels=statistics.median(b.kernels for b in profs), calls=calls, cudagraphs=cudagraphs,
                 suggest=suggest, host_ops=[f"{name} {t / total:.0%}" for name, t in top])
    return dataclasses.replace(busy, run_times_s=list(plains), busy_times_s=[b.busy_s for b in profs])


def busy_noise(busy: DeviceBusy, what: str = "GPU busy share") -> str:
    """Why a busy share is noisy (one line: the plain blocks beside the profiled ones disagree), or ""."""
    return range_noise(busy.run_times_s, what, "the run time measured beside the profiled calls")


def busy_method(busy: DeviceBusy) -> str:
    """How the busy share was measured, in words (for the timing method)."""
    return (f"GPU busy: {len(busy.busy_times_s)} blocks of {busy.calls} calls under torch.profiler (CUPTI), each "
            f"between two plain blocks of {busy.run_block_calls or busy.calls} calls of the same function; the share "
            "is the profiled blocks' median busy time per call over the plain blocks' median time per call "
            "(measured next to them)")


def _profiled_block(fn: Callable[[], Any], calls: int) -> BusyBlock:
    """``calls`` calls of ``fn`` under ``torch.profiler`` (CPU and CUDA activity), synchronised."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    from .kernel_times import _is_device
    from .devices import synchronize

    synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            synchronize()
        events = list(prof.events())
    device = [e for e in events if _is_device(e) and not getattr(e, "is_user_annotation", False)]
    busy_s = _union_us([(float(e.time_range.start), float(e.time_range.end)) for e in device]) / calls / 1e6
    host: dict[str, float] = {}
    for e in events:
        if _is_device(e) or e.name.startswith(_NOT_HOST_WORK) or getattr(e, "cpu_parent", None) is not None:
            continue  # top-level host operations only (their children are inside them)
        host[e.name] = host.get(e.name, 0.0) + float(e.time_range.elapsed_us()) / calls / 1e6
    return BusyBlock(busy_s, len(device) / calls, host)


def measure_busy(fn: Callable[[], Any], run_s: float, *, cudagraphs: bool, suggest: bool,
                 calls: Optional[int] = None) -> DeviceBusy:
    """The GPU's busy time per call of ``fn``, judged against a run time measured next to it:
    blocks of ``calls`` calls (:func:`busy_calls` of ``run_s``, the steady state's run time, by
    default) plain and under the profiler in turn (:func:`busy_beside_run`). ``cudagraphs``: the
    calls replay CUDA graphs; ``suggest``: ``reduce-overhead`` is a setting the user could switch
    to (inductor, CUDA graphs off), so a host-bound verdict suggests it."""
    from .timing import _timed_block

    n = calls or busy_calls(run_s)
    plain = plain_calls(n, run_s)
    busy = busy_beside_run(lambda: _timed_block(fn, plain) / plain, lambda: _profiled_block(fn, n), calls=n,
                           cudagraphs=cudagraphs, suggest=suggest)
    return dataclasses.replace(busy, run_block_calls=plain)


def plain_calls(calls: int, run_s: float) -> int:
    """Calls in a plain block: the profiled block's ``calls``, and more where those would last
    under :data:`~ipycompile.run.timing.BLOCK_MIN_S` (the synchronisations around a block of a
    few short calls would weigh on its time per call; the busy time per call does not depend on
    the block's length), at most 100,000."""
    from .timing import BLOCK_MIN_S

    return max(calls, min(100_000, math.ceil(BLOCK_MIN_S / max(run_s, 1e-9))))


def judge(busy_s: float, run_s: float, *, kernels: float, calls: int, cudagraphs: bool, suggest: bool,
          host_ops: Optional[list[str]] = None) -> DeviceBusy:
    """The verdict and the advice for a call busy ``busy_s`` of its ``run_s`` (pure)."""
    share = min(1.0, busy_s / run_s) if run_s > 0 else 0.0
    idle = 1 - share
    us = lambda s: f"{s * 1e6:.1f} us"  # noqa: E731
    if share >= DEVICE_BOUND:
        verdict, advice = "device-bound", ""
    elif share <= HOST_BOUND:
        verdict = "host-bound"
        if cudagraphs:
            advice = (f"under CUDA graphs the host still spends about {us(run_s - busy_s)} of each call outside the "
                      "GPU's work" + (f"; its largest top-level operations, as shares of the host's time under the "
                                      f"profiler: {', '.join(host_ops)}" if host_ops else ""))
        elif suggest:
            advice = (f"the GPU is idle {idle:.0%} of each call while the host launches its {kernels:.0f} kernels: try "
                      "mode='reduce-overhead' (CUDA graphs replay them as one launch)")
        else:
            advice = ""
    else:
        verdict, advice = "in between", ""
    return DeviceBusy(busy_s=busy_s, run_s=run_s, share=share, verdict=verdict, advice=advice,
                      kernels_per_call=kernels, calls=calls, host_ops=list(host_ops or []))


#: kernels this much slower (or faster) than eager's are "slower" (else the GPU's work is about the same)
KERNELS_DIFFER = 1.1


def why_slower(compiled: Optional[DeviceBusy], eager: Optional[DeviceBusy], speedup: Optional[float],
               ci95: Sequence[float] = ()) -> str:
    """Why compiled is slower than eager, from both sides' busy time (pure): on the host (the
    GPU works no longer per compiled call, but waits longer for it: guards, the compiled
    wrapper, launches) or on the GPU (the compiled kernels take longer). "" unless compiled
    is slower beyond doubt (the speedup's interval below 1 where there is one) and both sides
    were profiled."""
    if compiled is None or eager is None or speedup is None or speedup >= 1 or (ci95 and max(ci95) >= 1):
        return ""
    if compiled.run_s <= 0 or eager.run_s <= 0:
        return ""
    us = lambda s: f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"  # noqa: E731
    c_wait, e_wait = max(0.0, compiled.run_s - compiled.busy_s), max(0.0, eager.run_s - eager.busy_s)
    if compiled.busy_s > KERNELS_DIFFER * eager.busy_s:
        return (f"compiled is slower on the GPU: its {compiled.kernels_per_call:.0f} kernels keep it busy "
                f"{us(compiled.busy_s)} per call against eager's {us(eager.busy_s)} ({eager.kernels_per_call:.0f} "
                "kernels); --profile-kernels shows which kernels take the time")
    if c_wait > e_wait:
        return (f"compiled is slower on the host, not on the GPU: its kernels keep the GPU busy "
                f"{us(compiled.busy_s)} per call against eager's {us(eager.busy_s)}, but the GPU waits "
                f"{us(c_wait)} of each compiled call for the host (guards, the compiled wrapper, "
                f"{compiled.kernels_per_call:.0f} launches) against {us(e_wait)} of each eager call")
    return ""
