"""``--memory-timeline``: the CUDA caching allocator's own history of one call.

:class:`MemoryRecorder` turns on ``torch.cuda.memory._record_memory_history`` (the
recorder behind ``torch.cuda.memory._dump_snapshot`` and PyTorch's ``memory_viz``)
around a block, with Python stacks, and takes ``torch.cuda.memory._snapshot()``
after it. :func:`timeline_from_trace` (pure: the snapshot's trace in, a
:class:`~ipycompile.report.MemoryTimeline` out) replays the allocator's events:
allocated bytes over time (``alloc`` adds, ``free_completed`` removes, as
memory_viz's active-memory timeline does), the peak, and the largest blocks live
at the peak, each with the user's line that made it:

- the innermost frame of the user's own code (a notebook cell, a script) on the
  allocation's stack;
- for a buffer that Inductor's generated code allocates (``buf3 =
  empty_strided_cuda(...)``), the FX nodes of the first kernel launch after it
  that uses the buffer (the ``# Topologically Sorted Source Nodes: [...]`` comment
  Inductor writes above launches); :func:`resolve_user_lines` maps those nodes
  to the user's lines through the report's graphs (their ``# File:`` comments).

``import ipycompile.run.memory_timeline`` does not import torch.
"""

from __future__ import annotations

import linecache
from typing import Any, Iterable, Optional

from ..capture.layout import current_layout
from ..capture.parse.kernels import allocation_nodes
from ..report.model import MemoryAllocation, MemoryTimeline, UserFrame
from ..report.owners import CodeLayout, Owner, owner

__all__ = ["MemoryRecorder", "timeline_from_trace", "resolve_user_lines", "MAX_POINTS", "TOP_ALLOCATIONS"]

#: points kept of a timeline (the peak is always one of them)
MAX_POINTS = 2000
#: the largest blocks listed at the peak
TOP_ALLOCATIONS = 10
#: allocator events kept per recorded call
MAX_ENTRIES = 500_000



class MemoryRecorder:
    """Record the CUDA allocator's history while the block runs; ``timeline`` after it.

    ``label`` names the block (``"compiling call"``, ``"steady-state call"``). The
    recorder keeps Python stacks for every allocation (``stacks="python"``), which
    slows allocation-heavy code while it records. Any history that was being
    recorded before is switched off at exit (torch has one recorder per process).
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.timeline: Optional[MemoryTimeline] = None
        self.error = ""
        self._baseline = 0

    def __enter__(self) -> "MemoryRecorder":
        import torch

        torch.cuda.synchronize()
        self._baseline = int(torch.cuda.memory_allocated())
        torch.cuda.reset_peak_memory_stats()  # the allocator's own peak counter: a check on the replay
        record = torch.cuda.memory._record_memory_history
        try:
            record(enabled="all", context="all", stacks="python", max_entries=MAX_ENTRIES, clear_history=True)
        except TypeError:  # torch without clear_history: switching off first drops the old history
            record(enabled=None)
            record(enabled="all", context="all", stacks="python", max_entries=MAX_ENTRIES)
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        try:
            torch.cuda.synchronize()
            peak = int(torch.cuda.max_memory_allocated())
            snapshot = torch.cuda.memory._snapshot()
        except Exception as e:  # never lose the run to the recorder
            self.error = f"{type(e).__name__}: {e}"
            snapshot = None
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        if snapshot is not None:
            device = torch.cuda.current_device()
            traces = snapshot.get("device_traces") or []
            trace = traces[device] if device < len(traces) else []
            self.timeline = timeline_from_trace(trace, label=self.label, baseline_bytes=self._baseline,
                                                truncated=len(trace) >= MAX_ENTRIES, layout=current_layout())
            self.timeline.allocator_peak_bytes = peak


def _frames(entry: dict) -> list[UserFrame]:
    out = []
    for fr in entry.get("frames") or []:
        if not isinstance(fr, dict):
            continue
        filename, line = str(fr.get("filename") or ""), fr.get("line")
        text = linecache.getline(filename, line).strip() if filename and isinstance(line, int) else ""
        out.append(UserFrame(filename, line if isinstance(line, int) else None, str(fr.get("name") or ""), text))
    return out


def _generated_nodes(frame: UserFrame, lookahead: int = 60) -> list[str]:
    """The FX nodes of the first launch that uses the buffer a generated-code line allocates (read by
    capture: :func:`~ipycompile.capture.parse.kernels.allocation_nodes`)."""
    if frame.lineno is None:
        return []
    following = (linecache.getline(frame.filename, ln) for ln in range(frame.lineno + 1, frame.lineno + 1 + lookahead))
    return allocation_nodes(frame.source_line or "", following)


def _allocation(size: int, entry: dict, layout: Optional[CodeLayout]) -> MemoryAllocation:
    frames = _frames(entry)
    # torch records the innermost frame first
    user = next((f for f in frames if owner(f.filename, layout) is Owner.USER), UserFrame())
    generated = next((f for f in frames if owner(f.filename, layout) is Owner.GENERATED), None)
    where = ""
    nodes: list[str] = []
    if generated is not None:
        where = f"{generated.source_line or generated.function} (generated code)"
        nodes = _generated_nodes(generated)
    elif frames:
        where = f"{frames[0].function} ({frames[0].filename.rsplit('/', 1)[-1]}:{frames[0].lineno})"
    return MemoryAllocation(size_bytes=size, frame=user, where=where, source_nodes=nodes, stack=frames[:12])


def _downsample(times: list[float], values: list[int], peak_index: int, limit: int) -> tuple[list[float], list[int]]:
    if len(times) <= limit:
        return times, values
    step = len(times) / (limit - 1)
    keep = sorted({min(len(times) - 1, int(i * step)) for i in range(limit - 1)} | {peak_index, len(times) - 1})
    return [times[i] for i in keep], [values[i] for i in keep]


def timeline_from_trace(trace: Iterable[dict], *, label: str, baseline_bytes: int = 0,
                        truncated: bool = False, layout: Optional[CodeLayout] = None) -> MemoryTimeline:
    """Replay one device's allocator trace (``_snapshot()["device_traces"][i]``).

    ``layout`` says whose code each frame is (``report.owners``; the recording
    process's, ``capture.layout.current_layout()``); None judges by path shape.

    Allocated bytes start at ``baseline_bytes`` (live before recording began);
    times are microseconds from the first event (event order where torch gives no
    time). Frees of blocks allocated before the recording started are counted too.
    """
    entries = [e for e in trace if isinstance(e, dict)]
    has_completed = any(e.get("action") == "free_completed" for e in entries)
    free_action = "free_completed" if has_completed else "free_requested"
    live: dict[int, tuple[int, dict]] = {}
    current = baseline_bytes
    t_start = next((e.get("time_us") for e in entries if isinstance(e.get("time_us"), (int, float))), None)
    times: list[float] = [0.0]
    values: list[int] = [current]
    peak, peak_index, peak_live = current, 0, dict(live)
    allocs = 0
    for i, e in enumerate(entries):
        action = e.get("action")
        size = int(e.get("size") or 0)
        addr = e.get("addr")
        if action == "alloc":
            current += size
            live[addr] = (size, e)
            allocs += 1
        elif action == free_action:
            live.pop(addr, None)
            current -= size
        else:
            continue
        t = e.get("time_us")
        times.append(float(t - t_start) if isinstance(t, (int, float)) and t_start is not None else float(i + 1))
        values.append(current)
        if current > peak:
            peak, peak_index, peak_live = current, len(values) - 1, dict(live)
    top = sorted(peak_live.values(), key=lambda se: -se[0])[:TOP_ALLOCATIONS]
    timeline = MemoryTimeline(
        label=label,
        baseline_bytes=baseline_bytes,
        peak_bytes=peak,
        peak_time_us=times[peak_index],
        end_bytes=current,
        allocations=allocs,
        live_at_peak=len(peak_live),
        top_at_peak=[_allocation(size, entry, layout) for size, entry in top],
        time_unit="us" if t_start is not None else "event",
        truncated=truncated,
    )
    timeline.times_us, timeline.allocated_bytes = _downsample(times, values, peak_index, MAX_POINTS)
    return timeline


def resolve_user_lines(timelines: Iterable[MemoryTimeline], node_lines: dict[str, UserFrame]) -> None:
    """Give allocations made in generated code the user's line of their FX nodes
    (``node_lines``: node name -> the user's frame, from the report's graphs)."""
    for tl in timelines:
        for a in tl.top_at_peak:
            if a.frame.filename and a.frame.lineno is not None and not a.source_nodes:
                continue
            for node in reversed(a.source_nodes):  # the last node in topological order makes the buffer
                frame = node_lines.get(node)
                if frame is not None:
                    a.frame = frame
                    a.from_nodes = True
                    break
