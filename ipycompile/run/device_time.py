"""Device time: CUDA events around each call, the L2 cache flushed before each
(``triton.testing.do_bench``'s method)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .timing import _check_number

__all__ = ["time_device", "FLUSH_BYTES"]


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
