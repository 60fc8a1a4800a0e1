"""Compile time by phase, from torch's chromium (dynamo_timed) events.

Each instant of a compile is charged to the innermost open event whose name
maps to a phase, so nested events are never counted twice. Without chromium
events (older torch, partial logs) the phases come from compilation_metrics.
"""

from __future__ import annotations

import functools
import heapq
import operator

import re
from typing import Any, Iterable, Optional

from ..report.model import Compile, CompileTime, Phase

PHASES = (
    "Dynamo tracing",
    "Dynamo guards",
    "AOTAutograd",
    "Inductor graph passes",
    "Inductor lowering",
    "Inductor codegen",
    "Kernel compilation",
    "Autotuning",
    "Cache lookups",
    "GC",
    "Other",
)

_EXACT = {
    "bytecode_tracing": "Dynamo tracing",
    "build_guards": "Dynamo guards",
    "backend_compile": "AOTAutograd",
    "create_aot_dispatcher_function": "AOTAutograd",
    "aot_collect_metadata": "AOTAutograd",
    "aot_trace_joint_graph": "AOTAutograd",
    "min_cut_rematerialization_partition": "AOTAutograd",
    "entire_backward_compile": "AOTAutograd",
    "inductor_compile": "Inductor graph passes",
    "fx_codegen_and_compile": "Inductor graph passes",
    "additional_fake_tensor_prop": "Inductor graph passes",
    "GraphLowering.run": "Inductor lowering",
    "GraphLowering.codegen": "Inductor codegen",
    "GraphLowering.compile_to_fn": "Inductor codegen",
    "code_gen": "Inductor codegen",
    "Scheduler.__init__": "Inductor codegen",
    "Scheduler.codegen": "Inductor codegen",
    "Scheduler.fused_nodes": "Inductor codegen",
    "PythonWrapperCodegen.generate": "Inductor codegen",
    "generate_kernel_code_from_nodes": "Inductor codegen",
    "PyCodeCache.load_by_key_path": "Kernel compilation",
    "async_compile.wait": "Kernel compilation",
    "async_compile.precompile": "Kernel compilation",
    "compile_file": "Kernel compilation",
    "TritonBundler.collect": "Kernel compilation",
    "inductor_codecache_torch_key": "Cache lookups",
    "gc": "GC",
}
_PATTERNS = [
    (re.compile(r"^pass\.|_recursive_.*passes$"), "Inductor graph passes"),
    (re.compile(r"autotun|benchmark|precompil|CachingAutotuner", re.I), "Autotuning"),
    (re.compile(r"compile_fx\.<locals>\.(fw|bw)_compiler"), "Inductor graph passes"),
    (re.compile(r"cache|Cache"), "Cache lookups"),
    (re.compile(r"triton", re.I), "Kernel compilation"),
]
#: Events that span a whole compile: time inside them and no finer event is "Other".
_ROOTS = {"dynamo", "entire_frame_compile", "entire_backward_compile"}


@functools.lru_cache(maxsize=4096)  # a few dozen names over tens of thousands of spans
def phase_of(name: str) -> Optional[str]:
    if name in _EXACT:
        return _EXACT[name]
    for pattern, phase in _PATTERNS:
        if pattern.search(name):
            return phase
    if name.startswith("compile_attempt_") or name in _ROOTS:
        return "Other"
    return None


def spans_from_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pair B/E (and take X) chromium events into spans: name, compile_id, start_us, dur_us, depth."""
    spans: list[dict[str, Any]] = []
    open_: dict[tuple, list[dict[str, Any]]] = {}
    for ev in events:  # tens of thousands: the lookups kept few
        ts = ev.get("ts")
        if not isinstance(ts, (int, float)):
            continue
        ph, name, args = ev.get("ph"), ev.get("name", ""), ev.get("args")
        cid = args.get("compile_id") if args else None
        if ph == "B":
            stack = open_.get(track := (ev.get("pid"), ev.get("tid")))
            if stack is None:
                stack = open_[track] = []
            stack.append({"name": name, "compile_id": cid, "start_us": float(ts), "dur_us": 0.0, "depth": len(stack)})
        elif ph == "E":
            stack = open_.get((ev.get("pid"), ev.get("tid")))
            if not stack:
                continue
            if stack[-1]["name"] == name:  # nearly always: the innermost open span ends
                span = stack.pop()
            else:
                for i in range(len(stack) - 2, -1, -1):
                    if stack[i]["name"] == name:
                        span = stack.pop(i)
                        del stack[i:]  # anything opened inside and never closed ends here
                        break
                else:
                    continue
            span["dur_us"] = max(0.0, float(ts) - span["start_us"])
            if span["compile_id"] is None:
                span["compile_id"] = cid
            spans.append(span)
        elif ph == "X":
            spans.append(
                {"name": name, "compile_id": cid, "start_us": float(ts), "dur_us": float(ev.get("dur") or 0.0), "depth": 0}
            )
    spans.sort(key=_START_DEPTH)
    return spans


_START_DEPTH = operator.itemgetter("start_us", "depth")


def _exclusive_by_phase(spans: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    """Charge each instant to the innermost mapped span (the deepest, then the latest started,
    then the first); returns (phase -> us, covered us)."""
    bounds: list[tuple[float, int, int]] = []  # (time, 0=end/1=start, span index)
    phases: dict[int, str] = {}
    for i, s in enumerate(spans):
        phase = phase_of(s["name"])
        if phase is None:
            continue
        phases[i] = phase
        bounds.append((s["start_us"], 1, i))
        bounds.append((s["start_us"] + s["dur_us"], 0, i))
    bounds.sort()
    inner: list[tuple] = []  # the open spans, innermost first (a heap; ended ones dropped when met)
    open_: set[int] = set()
    totals: dict[str, float] = {}
    covered = 0.0
    last = None
    for t, is_start, i in bounds:
        if last is not None and open_ and t > last:
            while inner[0][2] not in open_:
                heapq.heappop(inner)
            phase = phases[inner[0][2]]
            totals[phase] = totals.get(phase, 0.0) + (t - last)
            covered += t - last
        if is_start:
            open_.add(i)
            heapq.heappush(inner, (-spans[i]["depth"], -spans[i]["start_us"], i))
        else:
            open_.discard(i)  # a span of no length ends before it starts: it stays open, as it always has
        last = t
    return totals, covered


def compile_time(events: list[dict[str, Any]], compiles: list[Compile]) -> CompileTime:
    spans = spans_from_events(events)
    ct = CompileTime(events=spans)
    if spans:
        totals, covered = _exclusive_by_phase(spans)
        ct.phases = [Phase(p, round(totals[p] / 1e6, 6)) for p in PHASES if totals.get(p)]
        ct.total_s = round(covered / 1e6, 6)
        for s in spans:
            if s["name"] in _ROOTS and s["depth"] == 0 and s["compile_id"]:
                key = str(s["compile_id"])
                ct.by_compile[key] = round(ct.by_compile.get(key, 0.0) + s["dur_us"] / 1e6, 6)
        return ct
    # No chromium events: fall back to compilation_metrics.
    dynamo = aot = inductor = total = 0.0
    for c in compiles:
        frame = c.entire_frame_compile_s or 0.0
        backend = c.backend_compile_s or 0.0
        ind = c.inductor_compile_s or 0.0
        total += frame
        dynamo += max(0.0, frame - backend)
        aot += max(0.0, backend - ind)
        inductor += ind
        if frame:
            ct.by_compile[str(c.compile_id)] = frame
    ct.total_s = round(total, 6)
    ct.phases = [Phase(n, round(v, 6)) for n, v in (("Dynamo tracing", dynamo), ("AOTAutograd", aot), ("Inductor codegen", inductor)) if v]
    return ct
