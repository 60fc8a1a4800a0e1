"""Collectives against compute in a profiled call (``--profile-kernels``).

The profiler names NCCL's kernels (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``);
:func:`ipycompile.run.kernel_times.attribute` charges those launched by compiled code to
the extern collective call that launched them (``_c10d_functional.all_reduce_.default``)
and keeps the others by their own names (DDP's gradient all-reduce, FSDP's gathers).
:func:`collective_share` adds them up by kind (:func:`ipycompile.report.collective_kind`)
against the compute kernels' time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..report.model import OTHER_CPU_TIME, OTHER_DEVICE_TIME, KernelTime
from ..report.text import fmt_seconds

__all__ = ["CollectiveShare", "collective_share"]


@dataclass
class CollectiveShare:
    """Device time per call in collectives (by kind) and in compute kernels."""

    by_kind: dict[str, float] = field(default_factory=dict)  # all_reduce -> seconds per call
    collective_s: float = 0.0
    compute_s: float = 0.0
    share: float = 0.0  # of all the profiled device time

    def describe(self) -> str:
        kinds = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in sorted(self.by_kind.items(), key=lambda kv: -kv[1]))
        ratio = f"{self.collective_s / self.compute_s:.2f}x" if self.compute_s > 0 else "no compute kernels"
        return (f"Collectives (NCCL): {fmt_seconds(self.collective_s)} per call, {self.share:.0%} of the device time "
                f"({kinds}); compute kernels {fmt_seconds(self.compute_s)} ({ratio}). NCCL runs on its own stream: "
                "the two may overlap")


def collective_share(times: Iterable[KernelTime]) -> Optional[CollectiveShare]:
    """The collectives' time against compute in ``times``; ``None`` when no time was spent in one."""
    out = CollectiveShare()
    for t in times:
        kind = t.collective
        if kind:
            out.by_kind[kind] = out.by_kind.get(kind, 0.0) + t.per_call_s
            out.collective_s += t.per_call_s
            out.share += t.share
        elif t.name not in (OTHER_DEVICE_TIME, OTHER_CPU_TIME):
            out.compute_s += t.per_call_s
    return out if out.collective_s > 0 else None
