"""Per-kernel time (``--profile-kernels``): which of a report's kernels the steady state spent its time in.

Two halves:

- :func:`profile_calls` runs a few calls under ``torch.profiler`` (CPU activity,
  plus CUDA when CUDA is in use), each call inside a :data:`CALL_MARKER`
  record-function, and :func:`events_from_profiler` turns the profiler's
  events into plain :class:`ProfiledEvent` records;
- :func:`attribute` (pure: events and the report's kernels in, ``KernelTime`` s
  out) charges the time to kernels by name.

On CUDA the time is device time: each device kernel (and memcpy/memset) once.
A device kernel named as one of the report's kernels (Triton's are) is that
kernel; one launched by an op that an extern kernel calls (``aten::mm`` for
``extern_kernels.mm``: cuBLAS, cuDNN) inside compiled code is that extern
kernel; an Inductor kernel the report does not hold (compiled code reused)
keeps its own name, and so does an NCCL kernel launched outside compiled code (DDP's
gradient all-reduce). Kernels replayed from a CUDA graph (``reduce-overhead``,
``max-autotune``) are linked to the graph-launch runtime call or straight to the
compiled region, not to an op: a Triton kernel is still found by name; a library
kernel there (cuBLAS, CUTLASS, cuDNN) is the extern kernel of its family (attention,
convolution, matrix product, told by its name) in its compile and stage when that
holds exactly one (else it is not guessed). Everything else is :data:`OTHER_DEVICE_TIME`,
its seconds split by cause in ``KernelTime.parts`` (:data:`~ipycompile.report.model.OTHER_CAUSES`:
eager code, copies and memsets, unmatched library kernels in a replay or in
compiled code). Shares are of all the device time.

On CPU the time is the calling thread's: Inductor's C++ kernels show up as
``graph_<id>_<kernel name>`` record-functions (only when compiled with
``cpp.enable_kernel_profile=True``; a C++ GEMM template names its own,
``graph_<id>_gemm_m64n256k128_kernel``, found in the source that opens it), extern kernels as their ops
(``aten::mm``, outermost under Inductor's graph call). Shares are of the
calls' wall time; what no kernel accounts for (the Python wrapper, guards,
allocation, eager code) is :data:`OTHER_CPU_TIME`.

``import ipycompile.kernel_times`` does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from ..analysis.kernel_costs import COSTED_OPS
from ..capture.parse.launches import extern_op_name
from ..capture.parse.profiler_names import GRAPH_CALL, cpp_kernel, is_copy, is_graph_launch, is_op, library_ops, region_id
from ..report.model import (OTHER_CAUSES, OTHER_CPU_TIME, OTHER_DEVICE_TIME, CompileId, Kernel, KernelLaunch,
                            KernelTime, collective_kind)

__all__ = [
    "CALL_MARKER",
    "KERNEL_PROFILE_OPTION",
    "kernel_profile_options",
    "cell_devices",
    "ProfiledEvent",
    "profile_calls",
    "events_from_profiler",
    "attribute",
    "extern_op",
    "profiled_call_count",
]

#: The record-function around each profiled call.
CALL_MARKER = "ipycompile: profiled call"
#: The Inductor option that makes C++ kernels visible to the profiler.
KERNEL_PROFILE_OPTION = "cpp.enable_kernel_profile"


def kernel_profile_options(options: Optional[dict], backend: Any, devices: Optional[set[str]] = None) -> Optional[dict]:
    """Inductor options for ``--profile-kernels``: :data:`KERNEL_PROFILE_OPTION` turned on (C++
    kernels are visible to the profiler only so) unless the user set it; other backends as given.

    ``devices``: the device types of the tensors the code uses (:func:`cell_devices`). The
    option is for C++ kernels: it is left out when every such tensor is on CUDA (Inductor
    generates Triton kernels there); ``None`` (not known) or a CPU tensor keeps it."""
    if (backend or "inductor") != "inductor" or KERNEL_PROFILE_OPTION in (options or {}):
        return options
    if devices and devices <= {"cuda"}:
        return options
    return {**(options or {}), KERNEL_PROFILE_OPTION: True}


def cell_devices(source: str, namespace: dict) -> set[str]:
    """Device types (``"cpu"``, ``"cuda"``) of the tensors a cell's code reads from ``namespace``:
    tensors, the parameters and buffers of modules, and tensors in lists, tuples and dicts.
    A name the code reads that holds none of these adds nothing; empty when none is found."""
    import ast
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return set()
    try:
        names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()
    out: set[str] = set()

    def visit(value: Any, depth: int = 0) -> None:
        if isinstance(value, torch.Tensor):
            out.add(value.device.type)
        elif isinstance(value, torch.nn.Module):
            for t in value.parameters():
                out.add(t.device.type)
                break
            for t in value.buffers():
                out.add(t.device.type)
                break
        elif depth < 2 and isinstance(value, (list, tuple)):
            for v in value[:64]:
                visit(v, depth + 1)
        elif depth < 2 and isinstance(value, dict):
            for v in list(value.values())[:64]:
                visit(v, depth + 1)

    for name in names:
        if name in namespace:
            visit(namespace[name])
    return out

@dataclass(frozen=True)
class ProfiledEvent:
    """One profiler event, as plain data.

    ``ops``: the CPU events around it, innermost first; for a device event,
    the CPU event that launched it, then that one's parents (empty when the
    profiler linked it to none). ``launch``: for a device event, an id of
    that launching CPU event (-1 when none), so that the several device
    kernels one op launches count as one call.
    """

    name: str
    duration_us: float
    on_device: bool = False
    ops: tuple[str, ...] = ()
    launch: int = -1
    inputs: Optional[tuple] = None  # (op, shapes, dtypes, concrete) of the op that launched it (record_shapes)


# -- running the profiler (torch) ------------------------------------------------
def profile_calls(fn: Callable[[], Any], calls: int, *, cuda: bool) -> list[ProfiledEvent]:
    """Call ``fn`` ``calls`` times under ``torch.profiler``, synchronised, each call in a :data:`CALL_MARKER`."""
    import warnings

    from torch.profiler import ProfilerActivity, profile, record_function

    from .devices import synchronize

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the profiler's own notices; the calls warned already when timed
        with profile(activities=activities, record_shapes=True) as prof:  # shapes: the launches' bytes and FLOPs
            for _ in range(calls):
                with record_function(CALL_MARKER):
                    fn()
            synchronize()
        events = prof.events()
    return events_from_profiler(events, _kineto_dtypes(prof))


def _kineto_dtypes(prof: Any) -> dict:
    """The input dtypes of each CPU op, by (id, name), from the profiler's Kineto events: torch
    2.11's ``FunctionEvent`` has no ``input_dtypes`` (2.13's has); its ``id`` is the Kineto
    event's ``correlation_id``."""
    try:
        return {(ev.correlation_id(), ev.name()): list(ev.dtypes()) for ev in prof.profiler.kineto_results.events()
                if ev.dtypes()}
    except Exception:  # a profiler without these: no dtypes, so no bytes
        return {}


def _is_device(event: Any) -> bool:
    kind = getattr(event, "device_type", None)
    return getattr(kind, "name", str(kind)).rsplit(".", 1)[-1] != "CPU"


def _parents(event: Any) -> tuple[str, ...]:
    out = []
    parent = getattr(event, "cpu_parent", None)
    while parent is not None:
        out.append(parent.name)
        parent = parent.cpu_parent
    return tuple(out)


def _plain(value: Any) -> Any:
    """A profiler input (shape list, number, string) as JSON-able plain data."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def _costed(event: Any) -> Any:
    """The event, or the first op around it whose cost has a formula (``aten::convolution_backward``
    around the ``cudnn`` ops that launch its two kernels): one call of it is one launch."""
    e = event
    while e is not None:
        if e.name in COSTED_OPS:
            return e
        e = getattr(e, "cpu_parent", None)
    return event


def _inputs(event: Any, dtypes_by_id: Optional[dict] = None) -> Optional[tuple]:
    """What ``record_shapes`` kept of an event's inputs, for its bytes and FLOPs: of the
    event, or of :func:`_costed`'s op around it. None when nothing was recorded."""
    chosen = _costed(event)
    shapes = getattr(chosen, "input_shapes", None)
    if not shapes:
        return None
    dtypes = getattr(chosen, "input_dtypes", None) or (dtypes_by_id or {}).get((getattr(chosen, "id", None), chosen.name)) or []
    concrete = getattr(chosen, "concrete_inputs", None) or []
    return (chosen.name, _plain(list(shapes)), [str(d) for d in dtypes], _plain(list(concrete)))


def events_from_profiler(function_events: Iterable[Any], dtypes_by_id: Optional[dict] = None) -> list[ProfiledEvent]:
    """Plain records of ``torch.profiler`` ``FunctionEvent`` s (``prof.events()``).

    A device event is linked to the CPU event that launched it through that
    CPU event's ``kernels`` (the profiler's own link, by name and duration:
    torch 2.11's events carry no correlation id; one device event may be
    listed under two CPU events, and then the one that started first is taken). GPU user annotations (the
    device-side copy of a record-function) are left out.
    """
    events = list(function_events)
    index = {id(e): i for i, e in enumerate(events)}
    launched: dict[tuple[str, float], list[tuple[int, tuple[str, ...]]]] = {}
    out: list[ProfiledEvent] = []
    for i, e in enumerate(events):
        if _is_device(e):
            continue
        chain = _parents(e)
        inputs = _inputs(e, dtypes_by_id)
        out.append(ProfiledEvent(e.name, float(e.time_range.elapsed_us()), False, chain, inputs=inputs))
        launch = index.get(id(_costed(e)), i)  # the kernels of one costed op are one launch
        for k in getattr(e, "kernels", None) or ():
            launched.setdefault((k.name, round(float(k.duration), 3)), []).append((launch, (e.name, *chain), inputs))
    for e in events:
        if not _is_device(e) or getattr(e, "is_user_annotation", False) or e.name == CALL_MARKER:
            continue
        duration = float(e.time_range.elapsed_us())
        by = launched.get((e.name, round(duration, 3)))
        launch, ops, inputs = by.pop(0) if by else (-1, (), None)
        out.append(ProfiledEvent(e.name, duration, True, ops, launch, inputs))
    return out


# -- attribution (pure) --------------------------------------------------------------
def profiled_call_count(events: Iterable[ProfiledEvent]) -> int:
    """How many :data:`CALL_MARKER` calls the events hold."""
    return sum(1 for e in events if not e.on_device and e.name == CALL_MARKER)


def _region(ops: tuple[str, ...]) -> Optional[CompileId]:
    """The compile id of the innermost compiled frame around an event."""
    for op in ops:
        cid = region_id(op)
        if cid is not None:
            try:
                return CompileId.parse(cid)
            except ValueError:
                return None
    return None


def _stage(ops: tuple[str, ...]) -> str:
    """The AOT graph an event ran in: ``"backward"``, ``"forward"``, or ``""`` (inference, or not known)."""
    if "CompiledFunctionBackward" in ops:
        return "backward"
    return "forward" if "CompiledFunction" in ops else ""


def _in_graph(ops: tuple[str, ...]) -> Optional[tuple[str, ...]]:
    """The events between an event and the innermost Inductor graph call around it (None: not in one)."""
    for i, op in enumerate(ops):
        if op.startswith(GRAPH_CALL):
            return ops[:i]
    return None


def extern_op(kernel: Kernel) -> str:
    """The op an extern kernel runs, as the profiler names it: ``extern_kernels.mm`` -> ``aten::mm``,
    ``aten.index_put_.default`` -> ``aten::index_put_``; ``""`` for other kernels."""
    return extern_op_name(kernel.name) if kernel.backend == "extern" else ""


def _outermost(graph: Optional[tuple[str, ...]]) -> bool:
    """In an Inductor graph call, and no op or kernel between it and the event."""
    return graph is not None and not any(is_op(op) or cpp_kernel(op) is not None for op in graph)


class _Kernels:
    """The report's kernels by name and by extern op; picks the one of a compile when several share a name."""

    def __init__(self, kernels: Iterable[Kernel]) -> None:
        self.by_name: dict[str, list[Kernel]] = {}
        self.by_op: dict[str, list[Kernel]] = {}
        self.by_record: dict[str, list[Kernel]] = {}
        for k in kernels:
            self.by_name.setdefault(k.name, []).append(k)
            op = extern_op(k)
            if op:
                self.by_op.setdefault(op, []).append(k)
            if k.backend == "cpp":  # the record-functions its source opens (a GEMM template's: graph_1_gemm_m64n256k128_kernel)
                for record in k.code.records if k.code is not None else ():
                    self.by_record.setdefault(record, []).append(k)

    @staticmethod
    def pick(found: list[Kernel], where: tuple[Optional[CompileId], str]) -> Kernel:
        """The kernel of the event's compile and stage, else of its compile, else of its stage, else the first."""
        region, stage = where
        in_region = [k for k in found if region is not None and k.compile_id == region] or found
        return next((k for k in in_region if stage and k.graph_stage == stage), in_region[0])

    def named(self, name: str, where: tuple[Optional[CompileId], str]) -> Optional[Kernel]:
        found = self.by_name.get(name)
        return self.pick(found, where) if found else None

    def recorded(self, record: str, where: tuple[Optional[CompileId], str]) -> Optional[Kernel]:
        """The C++ kernel whose source opens the record-function ``record``."""
        found = self.by_record.get(record)
        return self.pick(found, where) if found else None

    def replayed(self, name: str, where: tuple[Optional[CompileId], str]) -> Optional[Kernel]:
        """The extern kernel of the event's compile (and stage) that a library kernel replayed from a
        CUDA graph ran for: of the family its name tells (attention, convolution, matrix product),
        only when that compile holds exactly one such extern kernel (no op records which call a
        replayed kernel belongs to); None otherwise."""
        region, stage = where
        ops = library_ops(name)
        if region is None or ops is None:
            return None
        found = [k for op in ops for k in self.by_op.get(op, ()) if k.compile_id == region]
        staged = [k for k in found if stage and k.graph_stage == stage] or found
        return staged[0] if len({k.name for k in staged}) == 1 else None

    def extern(self, ops: Iterable[str], where: tuple[Optional[CompileId], str]) -> Optional[Kernel]:
        for op in ops:
            found = self.by_op.get(op)
            if found:
                return self.pick(found, where)
        return None


class _Tally:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str, str], KernelTime] = {}
        self.launches: dict[tuple[str, str, str, str], set] = {}
        self.inputs: dict[tuple[str, str, str, str], dict[str, KernelLaunch]] = {}

    def _count_inputs(self, key: tuple, inputs: Optional[tuple]) -> None:
        if not inputs:
            return
        import json

        op, shapes, dtypes, concrete = inputs
        seen = self.inputs.setdefault(key, {})
        k = json.dumps([op, shapes, dtypes, concrete], default=str)
        if k not in seen:
            seen[k] = KernelLaunch(op, shapes, dtypes, concrete)
            self.entries[key].launches.append(seen[k])
        seen[k].count += 1

    def other_part(self, cause: str, us: float) -> None:
        """Add ``us`` to the cause's part of the other-time entry (added just before)."""
        entry = self.entries[(OTHER_DEVICE_TIME, "", "", "")]
        entry.parts[cause] = entry.parts.get(cause, 0.0) + us / 1e6

    def add(self, name: str, kernel: Optional[Kernel], where: tuple[Optional[CompileId], str], us: float,
            launch: Optional[int] = None, inputs: Optional[tuple] = None) -> None:
        cid, stage = where
        if kernel is not None:
            cid, stage = kernel.compile_id or cid, kernel.graph_stage
        key = (name, kernel.name if kernel is not None else "", str(cid or ""), stage)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = KernelTime(name, key[1], cid, stage)
            self.launches[key] = set()
        entry.total_s += us / 1e6
        if launch is None:
            entry.calls += 1
            self._count_inputs(key, inputs)
        elif launch not in self.launches[key]:
            self.launches[key].add(launch)
            entry.calls += 1
            self._count_inputs(key, inputs)


def _replayed(e: ProfiledEvent) -> bool:
    """Whether a device event ran in a CUDA graph's replay: the profiler links a replayed kernel to the
    graph-launch runtime call, or (torch 2.11 on an H100, cudagraph trees) straight to the compiled
    region's record-function, with no op or kernel record-function of its own in between."""
    return bool(e.ops) and (is_graph_launch(e.ops[0]) or region_id(e.ops[0]) is not None)


def _other_cause(e: ProfiledEvent, replayed: bool, where: tuple[Optional[CompileId], str],
                 graph: Optional[tuple[str, ...]]) -> str:
    """Which of :data:`OTHER_CAUSES` a device event in no kernel of the report is."""
    if is_copy(e.name):
        return OTHER_CAUSES["copies"]
    if replayed:
        return OTHER_CAUSES["replay"]
    if where[0] is None and graph is None:
        return OTHER_CAUSES["eager"]
    return OTHER_CAUSES["library"]


def attribute(events: Iterable[ProfiledEvent], kernels: Iterable[Kernel], *, device: bool) -> list[KernelTime]:
    """Charge the profiled calls' time to ``kernels`` (a report's), longest first.

    ``device``: attribute device time (CUDA), else the calling thread's CPU
    time; see the module's doc for the rules. The entry of time no kernel
    accounts for (:data:`OTHER_DEVICE_TIME` / :data:`OTHER_CPU_TIME`) is there when
    that time is above zero. ``per_call_s`` divides by the number of
    :data:`CALL_MARKER` calls in ``events``; ``share`` by the total (all
    device time, or the calls' wall time on CPU). No events: ``[]``.
    """
    events = list(events)
    table = _Kernels(kernels)
    tally = _Tally()
    calls = profiled_call_count(events) or 1
    if device:
        total_us = 0.0
        for e in events:
            if not e.on_device:
                continue
            total_us += e.duration_us
            where = (_region(e.ops), _stage(e.ops))
            launch = e.launch if e.launch >= 0 else None
            named = table.named(e.name, where)
            graph = _in_graph(e.ops)
            extern = None if named is not None or graph is None else table.extern(graph, where)
            if named is not None:
                tally.add(e.name, named, where, e.duration_us, inputs=e.inputs)
            elif extern is not None:
                tally.add(extern.name, extern, where, e.duration_us, launch, e.inputs)
            elif e.name.startswith("triton_") or (e.ops and e.ops[0] == e.name):  # an Inductor kernel not in the report
                tally.add(e.name, None, where, e.duration_us, inputs=e.inputs)
            elif collective_kind(e.name):  # NCCL outside compiled code (DDP's gradient buckets, FSDP's gathers)
                tally.add(e.name, None, where, e.duration_us, launch)
            else:
                replayed = _replayed(e)
                library = table.replayed(e.name, where) if replayed else None
                if library is not None:
                    tally.add(library.name, library, where, e.duration_us)
                else:
                    tally.add(OTHER_DEVICE_TIME, None, (None, ""), e.duration_us)
                    tally.other_part(_other_cause(e, replayed, where, graph), e.duration_us)
        other = OTHER_DEVICE_TIME
    else:
        total_us = sum(e.duration_us for e in events if not e.on_device and e.name == CALL_MARKER)
        for e in events:
            if e.on_device or CALL_MARKER not in e.ops:
                continue
            inner = e.ops[: e.ops.index(CALL_MARKER)]  # what encloses it inside the call
            where = (_region(inner), _stage(inner))
            name = cpp_kernel(e.name)
            if name is not None and not any(cpp_kernel(op) is not None for op in inner):
                kernel = table.named(name, where) or table.recorded(e.name, where)
                tally.add(kernel.name if kernel is not None else name, kernel, where, e.duration_us)
            elif is_op(e.name) and _outermost(_in_graph(inner)):
                extern = table.extern([e.name], where)
                if extern is not None:
                    tally.add(extern.name, extern, where, e.duration_us, inputs=e.inputs)
        other = OTHER_CPU_TIME
    out = list(tally.entries.values())
    rest_us = total_us - sum(t.total_s for t in out) * 1e6
    if not device and rest_us > 0:  # on CPU the other time is what the kernels leave of the calls
        out.append(KernelTime(OTHER_CPU_TIME, total_s=rest_us / 1e6))
    for t in out:
        if t.name == other:
            t.calls = 0  # not one thing's calls
        t.per_call_s = t.total_s / calls
        t.share = t.total_s / (total_us / 1e6) if total_us > 0 else 0.0
    out.sort(key=lambda t: -t.total_s)
    return out
