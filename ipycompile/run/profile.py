"""The measurement primitives, by the names they have always been imported by.

Each idea has its own module; this one only gathers their public names:
:mod:`~ipycompile.run.devices` (``synchronize``, ``device_name``),
:mod:`~ipycompile.run.timing` (run time in blocks, paired blocks, latency),
:mod:`~ipycompile.run.device_time` (CUDA events, do_bench's method),
:mod:`~ipycompile.run.activity` (what torch compiles or records meanwhile),
:mod:`~ipycompile.run.memory` (peak memory), :mod:`~ipycompile.run.outputs` (output
checks) and :mod:`~ipycompile.run.stats` (paired comparisons, speedup, break-even).
``import ipycompile.run.profile`` does not import torch.
"""

from .activity import CompileActivity
from .device_time import FLUSH_BYTES, time_device
from .devices import _cpu_brand, device_name, synchronize  # noqa: F401 (benchmarks name the CPU)
from .memory import PeakMemory, _current_rss  # noqa: F401 (benchmarks read the RSS)
from .outputs import compare_outputs
from .stats import break_even_calls, speedup
from .timing import (BLOCK_MIN_S, PROBES, TIMER_OVERHEAD_SHARE, BlockTiming, Timing, block_seconds, estimate_call_s,
                     plan_blocks, time_blocks, time_calls, time_paired, timer_overhead_s)

__all__ = [
    "synchronize",
    "device_name",
    "Timing",
    "time_calls",
    "BlockTiming",
    "time_blocks",
    "time_paired",
    "plan_blocks",
    "timer_overhead_s",
    "block_seconds",
    "estimate_call_s",
    "TIMER_OVERHEAD_SHARE",
    "BLOCK_MIN_S",
    "PROBES",
    "time_device",
    "FLUSH_BYTES",
    "CompileActivity",
    "PeakMemory",
    "compare_outputs",
    "break_even_calls",
    "speedup",
]
