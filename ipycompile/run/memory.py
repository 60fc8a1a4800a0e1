"""Peak memory of a block: host RSS (the kernel's peak counter, else sampling) and the CUDA
caching allocator's peak."""

from __future__ import annotations

import os
import re
import threading

from .devices import _cuda_in_use

__all__ = ["PeakMemory"]

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
