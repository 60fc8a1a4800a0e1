"""Where each call's time goes on the GPU: busy time, the idle share, and a verdict.

After the timed runs, a short separate phase runs a few more calls under
``torch.profiler`` (CUPTI): the GPU's **busy time per call** is the time covered by the
calls' device activity (kernels, copies and fills; overlapping ones on several streams
counted once) over the calls. Beside the run time (a loop of calls, from the timing
phase) it says how much of each call the GPU works:

- **device-bound**: busy at least :data:`DEVICE_BOUND` of each call: faster kernels
  (or less work) are what would help;
- **host-bound**: busy at most :data:`HOST_BOUND` of each call: the GPU waits for the host
  (Python, guards, kernel launches). In a mode without CUDA graphs the advice is to try
  ``mode="reduce-overhead"`` (CUDA graphs replay the call's launches as one); under CUDA
  graphs, the host operations that remain, in torch's own names, with their shares of the
  host's time under the profiler (which slows the host, so not as times);
- **in between** otherwise.

The profiler's own cost lands on the host, never in the device's activity, so the busy
time is the device's; the share is taken against the run time measured without the
profiler.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..report import DeviceBusy

#: busy at least this share of each call: device-bound
DEVICE_BOUND = 0.8
#: busy at most this share of each call: host-bound
HOST_BOUND = 0.5

#: host operations that are the profiler's or the runtime's bookkeeping, not the cell's work
_NOT_HOST_WORK = ("ProfilerStep", "cudaDeviceSynchronize", "cudaStreamSynchronize", "[memory]")


def busy_calls(run_s: float) -> int:
    """How many calls to profile: about 0.2 s of them, 3 to 20."""
    return max(3, min(20, int(0.2 / max(run_s, 1e-9))))


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


def measure_busy(fn: Callable[[], Any], run_s: float, *, cudagraphs: bool, suggest: bool,
                 calls: Optional[int] = None) -> DeviceBusy:
    """Profile ``calls`` calls of ``fn`` (:func:`busy_calls` by default) and judge them against
    ``run_s``, the run time per call. ``cudagraphs``: the calls replay CUDA graphs;
    ``suggest``: ``reduce-overhead`` is a setting the user could switch to (inductor, CUDA
    graphs off), so a host-bound verdict suggests it."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    from .kernel_times import _is_device
    from .devices import synchronize

    n = calls or busy_calls(run_s)
    synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            synchronize()
        events = list(prof.events())
    device = [e for e in events if _is_device(e) and not getattr(e, "is_user_annotation", False)]
    busy_s = _union_us([(float(e.time_range.start), float(e.time_range.end)) for e in device]) / n / 1e6
    host: dict[str, float] = {}
    for e in events:
        if _is_device(e) or e.name.startswith(_NOT_HOST_WORK) or getattr(e, "cpu_parent", None) is not None:
            continue  # top-level host operations only (their children are inside them)
        host[e.name] = host.get(e.name, 0.0) + float(e.time_range.elapsed_us()) / n / 1e6
    # the profiler slows the host, so its host times are shares, not the call's times
    total = sum(host.values()) or 1.0
    top = sorted(host.items(), key=lambda kv: -kv[1])[:4]
    return judge(busy_s, run_s, kernels=len(device) / n, calls=n, cudagraphs=cudagraphs, suggest=suggest,
                 host_ops=[f"{name} {t / total:.0%}" for name, t in top])


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
