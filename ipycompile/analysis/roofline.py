"""The roofline of a profiled call: per kernel, bytes and FLOPs, achieved bandwidth and
FLOP/s against the device's peaks, and a verdict; and where the call's kernel time goes.

Pure: a report with ``--profile-kernels``'s times (``Profile.kernel_times``, their
launches' shapes) in, plain values out. The estimates are :mod:`.kernel_costs`'s;
the peaks :mod:`.device_peaks`'.

Verdicts, from the arithmetic intensity (FLOPs per byte) against the ridge point
(peak FLOP/s over peak bandwidth) for the kernel's dtype:

- **latency-bound**: at its roof the launch would take under :data:`LATENCY_S`
  (5 us), and it reached less than :data:`NEAR_ROOF` of it: launch, ramp-up and
  tail effects dominate; no roof is in reach at this size;
- **compute-bound**: intensity at or above the ridge;
- **memory-bound**: below it.

A kernel at :data:`NEAR_ROOF` (70 %) or more of the roof that bounds it is
"near the roof": little is left to gain inside it.

The **host gap** beside the kernels' shares is the GPU's idle time per call while
the host runs Python, guards and launches: from the run layer's GPU busy-time phase
(``Profile.busy``, :mod:`ipycompile.run.busy`): the run time per call of the plain
blocks timed between its profiled ones, less the GPU busy time per call it measured,
at least 0. That phase runs on CUDA only, with more than one timed run; without it the
gap is None (not measured), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..report.model import OTHER_CPU_TIME, OTHER_DEVICE_TIME, Kernel, KernelTime, RooflineShares
from .device_peaks import DevicePeak, device_peak
from .kernel_costs import Cost, cpp_source_cost, cpp_template_cost, launch_cost, meta_cost

if TYPE_CHECKING:
    from ..report import CompileReport

__all__ = ["KernelRoof", "Roofline", "roofline", "NEAR_ROOF", "LATENCY_S"]

NEAR_ROOF = 0.7
LATENCY_S = 5e-6
#: ``how`` suffix of a cost from the shapes Inductor's wrapper code passes (no launch shapes recorded)
FROM_WRAPPER = "shapes from Inductor's wrapper code (the profiler recorded none for these launches, as in CUDA-graph replays)"
#: ``how`` of a kernel whose launches have no shapes recorded and none static in its wrapper code
STATIC_UNKNOWN = "not estimated: no launch shapes recorded, and its wrapper's are symbols (dynamic shapes) or not declared"
MEMORY, COMPUTE, LATENCY = "memory-bound", "compute-bound", "latency-bound"


@dataclass
class KernelRoof:
    """One kernel-time row against the roofs."""

    time: KernelTime
    kernel: Optional[Kernel]
    bytes_per_launch: Optional[float] = None
    flops_per_launch: Optional[float] = None
    how: str = ""  # how bytes and FLOPs were estimated
    dtype: str = ""
    bytes_s: Optional[float] = None  # achieved
    flops_s: Optional[float] = None
    bw_pct: Optional[float] = None  # of the peak bandwidth
    flops_pct: Optional[float] = None  # of the peak FLOP/s for its dtype
    intensity: Optional[float] = None  # FLOPs per byte
    roof_fraction: Optional[float] = None  # of the roof that bounds it (min of the two roofs at its intensity)
    verdict: str = ""  # memory-bound | compute-bound | latency-bound | "" (no estimate or no peak)

    @property
    def near_roof(self) -> bool:
        return self.roof_fraction is not None and self.roof_fraction >= NEAR_ROOF


@dataclass
class Roofline:
    device: str
    peak: Optional[DevicePeak]
    rows: list[KernelRoof]
    shares: RooflineShares


def _cost(t: KernelTime, kernel: Optional[Kernel]) -> Cost:
    """Bytes and FLOPs per launch: torch's metadata, else the launches' shapes (averaged over the recorded launches)."""
    meta = meta_cost(kernel) if kernel is not None else None
    if meta is not None:
        dtype = next((launch_cost(x, kernel).dtype for x in t.launches), "")
        return Cost(meta.bytes, meta.flops, meta.how, dtype)
    launches, static = t.launches, False
    if not launches and kernel is not None and kernel.static_launches:
        launches, static = kernel.static_launches, True  # CUDA-graph replays: no op records their shapes
    if not launches:
        if kernel is not None and kernel.backend == "cpp":
            cpp = cpp_template_cost(kernel) if kernel.kind == "template" else cpp_source_cost(kernel)
            return cpp if cpp is not None else Cost(how="not estimated: a C++ kernel whose source gives no sizes to count")
        if kernel is not None and kernel.backend in ("triton", "extern") and kernel.source:
            return Cost(how=STATIC_UNKNOWN)
        return Cost(how="no shapes recorded (profiled without record_shapes)")
    costs = [(launch_cost(x, kernel), max(x.count, 1)) for x in launches]
    known = [(c, n) for c, n in costs if c.bytes is not None]
    if not known:
        return costs[0][0]
    n = sum(k for _, k in known)
    b = sum(c.bytes * k for c, k in known) / n
    f = sum((c.flops or 0.0) * k for c, k in known) / n
    hows = list(dict.fromkeys(c.how for c, _ in known))
    if static:
        hows.append(FROM_WRAPPER)
    dtype = next((c.dtype for c, _ in known if c.dtype), "")
    return Cost(b, f, "; ".join(hows), dtype)


def _kernel(r: "CompileReport", t: KernelTime) -> Optional[Kernel]:
    for k in r.kernels:
        if k.name == t.kernel and (t.compile_id is None or k.compile_id == t.compile_id):
            return k
    return next((k for k in r.kernels if k.name == t.kernel), None) if t.kernel else None


def roofline(r: "CompileReport") -> Optional[Roofline]:
    """The roofline of a report's profiled kernels; None without ``--profile-kernels`` times."""
    p = r.profile
    if p is None or not p.kernels.times:
        return None
    peak = device_peak(p.settings.device) if p.kernels.device == "cuda" else None
    calls = max(p.kernels.calls, 1)
    shares = RooflineShares(device=p.settings.device, peak_known=peak is not None)
    busy = p.steady.busy  # the GPU busy-time phase (CUDA, more than one timed run): its idle time is the host gap
    if busy is not None and busy.run_s > 0:
        shares.host_gap_s, shares.run_s = max(0.0, busy.run_s - busy.busy_s), busy.run_s
    rows = []
    for t in p.kernels.times:
        if t.name == OTHER_CPU_TIME:
            continue
        per_call = t.total_s / calls
        shares.busy_s += per_call
        kernel = _kernel(r, t)
        row = KernelRoof(t, kernel)
        rows.append(row)
        if t.name == OTHER_DEVICE_TIME or t.calls <= 0 or t.total_s <= 0:
            shares.unknown_s += per_call
            continue
        c = _cost(t, kernel)
        row.how, row.dtype = c.how, c.dtype
        if c.bytes is None:
            shares.unknown_s += per_call
            continue
        per_launch_s = t.total_s / t.calls
        row.bytes_per_launch, row.flops_per_launch = c.bytes, c.flops or 0.0
        row.bytes_s = c.bytes / per_launch_s
        row.flops_s = row.flops_per_launch / per_launch_s
        row.intensity = row.flops_per_launch / c.bytes if c.bytes else None
        if peak is None:
            shares.unknown_s += per_call
            continue
        peak_flops = peak.flops_for(c.dtype)
        row.bw_pct = 100 * row.bytes_s / peak.dram_bytes_s
        row.flops_pct = 100 * row.flops_s / peak_flops
        intensity = row.intensity or 0.0
        attainable = min(peak_flops, intensity * peak.dram_bytes_s)
        row.roof_fraction = row.flops_s / attainable if intensity > 0 and attainable > 0 else row.bytes_s / peak.dram_bytes_s
        at_roof_s = max(c.bytes / peak.dram_bytes_s, row.flops_per_launch / peak_flops)
        if at_roof_s < LATENCY_S and row.roof_fraction < NEAR_ROOF:
            row.verdict = LATENCY
            shares.latency_s += per_call
        else:
            row.verdict = COMPUTE if intensity >= peak.ridge(c.dtype) else MEMORY
            if row.near_roof:
                shares.near_roof_s += per_call
            elif row.verdict == COMPUTE:
                shares.compute_far_s += per_call
            else:
                shares.memory_far_s += per_call
    return Roofline(p.settings.device, peak, rows, shares)
