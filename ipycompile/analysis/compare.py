"""Compare two runs: what a change to the code (or to the settings) did.

:func:`compare` takes two reports (or two :class:`~ipycompile.CellRun` s) and returns a
:class:`Comparison`: graph breaks fixed, introduced and unchanged by site; recompiles
and graphs per function; kernels added and removed; unrolled loops; failures; and the
compile time, run time and memory of both with their deltas and spread, after saying
whether the two runs can be compared at all (same torch, device, mode, backend,
options and config; fresh caches or not).

Matching is by what survives an edit, not by torch's frame ids (which count frames in
the order a process first saw them): a function is its name (a Dynamo continuation
``torch_dynamo_resume_in_f_at_17`` is "f, after a graph break"), plus its file when
that file is a real one (a notebook cell's file changes with every execution); a break
site is its function, its source line's text and torch's break kind; a kernel is its
name without the trailing counter. It returns values only (no sentences, no units): the
views word and render them (:mod:`ipycompile.views.compare_view` builds the comparison's
view model, which the shared text and HTML renderers show; ``str(comparison)`` is that
text once ``import ipycompile`` has registered the views).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..report.owners import is_notebook_cell

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["compare", "Comparison", "BreakDiff", "CountDiff", "LoopDiff", "FunctionRef", "SettingDiff", "CompareNote",
           "MetricDelta", "register_views"]


@dataclass(frozen=True)
class FunctionRef:
    """A compiled function as two runs share it: its ``name``, whether this is its code after
    a graph break (Dynamo's ``torch_dynamo_resume_in_f_at_17``: ``after_break``), and its
    ``file`` where that names the same code in both runs ("" for a notebook cell, whose file
    changes with each execution)."""

    name: str
    after_break: bool = False
    file: str = ""


@dataclass
class BreakDiff:
    """A graph-break site in one run or both: ``count_a`` / ``count_b`` times. ``where`` is the
    place as the report names it (``In [3], line 2``; the newer run's place when in both),
    ``cell`` its notebook cell's execution count (None outside a cell) and ``lineno`` its line."""

    where: str
    function: str
    code: str  # the source line ("" when torch recorded none)
    reason: str
    count_a: int = 0
    count_b: int = 0
    cell: Optional[int] = None
    lineno: Optional[int] = None


@dataclass
class CountDiff:
    """A count per function in both runs (recompiles, graphs), with the ops of its graphs."""

    function: FunctionRef
    a: int = 0
    b: int = 0
    ops_a: int = 0
    ops_b: int = 0


@dataclass
class LoopDiff:
    """An unrolled loop found in one run only, at ``where`` (the report's place), ``repeats`` times."""

    where: str
    repeats: int
    cell: Optional[int] = None
    lineno: Optional[int] = None


@dataclass
class SettingDiff:
    """A setting the two runs differ in, which makes them not comparable: ``setting`` is one of
    ``torch`` (its version), ``profiled`` (a run of %%compile / run_cell against a capture),
    ``device``, ``mode``, ``backend``, ``dynamic``, ``fullgraph``, ``options``, ``config`` (torch
    config changed), ``observe``, ``fresh`` (compiled with fresh caches); ``a`` and ``b`` its values."""

    setting: str
    a: Any
    b: Any


@dataclass
class CompareNote:
    """Something to keep in mind that does not make the runs incomparable. ``kind``:
    ``unprofiled`` (neither run is profiled: no times or memory), ``warm_caches`` (neither
    used fresh caches: a compile may be quick from Inductor's caches), ``reused`` (``run``
    compiled nothing: it reused compiled code, from ``detail`` when known), ``raised``
    (``run`` raised; ``detail`` is the error's first line)."""

    kind: str
    run: str = ""  # "a" | "b" | "" (both)
    detail: str = ""


@dataclass
class MetricDelta:
    """One measured figure of both runs; ``spread_*`` is the IQR where the figure is a median.
    ``unit``: ``"s"``, ``"bytes"`` or ``"x"`` (a ratio)."""

    name: str
    unit: str
    a: Optional[float] = None
    b: Optional[float] = None
    spread_a: Optional[float] = None
    spread_b: Optional[float] = None

    @property
    def delta(self) -> Optional[float]:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def ratio(self) -> Optional[float]:
        return None if self.a in (None, 0) or self.b is None else self.b / self.a

    @property
    def beyond_spread(self) -> Optional[bool]:
        """Whether the change is larger than the spread of either run (None where no spread is known)."""
        if self.delta is None or self.spread_a is None or self.spread_b is None:
            return None
        return abs(self.delta) > max(self.spread_a, self.spread_b)


#: How a :class:`Comparison` is shown: ``register_views(text, bundle)`` (filled by
#: :func:`ipycompile.views.install`, as the report's renderers are); this layer formats nothing.
_VIEWS: dict = {}


def register_views(text, bundle) -> None:
    """Register ``text(comparison) -> str`` (``str(comparison)``) and ``bundle(comparison) ->
    {mimetype: data}`` (its notebook display)."""
    _VIEWS["text"], _VIEWS["bundle"] = text, bundle


@dataclass
class Comparison:
    """What changed from run ``a`` to run ``b`` (``a`` and ``b`` are the runs' names). Plain
    values; ``str(comparison)`` and its notebook display are the registered views'
    (:mod:`ipycompile.views.compare_view`)."""

    a: str
    b: str
    comparable: bool = True
    differences: list[SettingDiff] = field(default_factory=list)  # why not comparable
    notes: list[CompareNote] = field(default_factory=list)  # caches, reused code: what to keep in mind
    breaks_fixed: list[BreakDiff] = field(default_factory=list)
    breaks_introduced: list[BreakDiff] = field(default_factory=list)
    breaks_unchanged: list[BreakDiff] = field(default_factory=list)
    recompiles: list[CountDiff] = field(default_factory=list)  # per function, where either run recompiled
    graphs: list[CountDiff] = field(default_factory=list)  # per function: Dynamo graphs and their ops
    kernels_added: list[str] = field(default_factory=list)
    kernels_removed: list[str] = field(default_factory=list)
    kernels_kept: int = 0
    loops_fixed: list[LoopDiff] = field(default_factory=list)
    loops_introduced: list[LoopDiff] = field(default_factory=list)
    failures: tuple[int, int] = (0, 0)
    limit_hit: tuple[bool, bool] = (False, False)
    metrics: list[MetricDelta] = field(default_factory=list)

    def metric(self, name: str) -> Optional[MetricDelta]:
        return next((m for m in self.metrics if m.name == name), None)

    def __str__(self) -> str:
        if "text" not in _VIEWS:
            return repr(self)  # no view registered (`import ipycompile` registers one)
        return _VIEWS["text"](self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows the text, not the dataclass repr
        p.text(str(self))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Optional[dict]:
        return _VIEWS["bundle"](self) if "bundle" in _VIEWS else None


# -- keys -----------------------------------------------------------------------
def _stable_file(report: "CompileReport", filename: str) -> str:
    """The file, when it names the same code in another run; "" for notebook cells and
    temporary files (a cell's file changes with each execution)."""
    if not filename or filename.startswith("<") or is_notebook_cell(filename, report.sources):
        return ""
    return filename


def _break_key(report: "CompileReport", b) -> tuple:
    frame = b.stop
    code = (frame.source_line or "").strip()
    place = code or f"line {frame.lineno}"
    kind = b.gb_type or b.gb_code or " ".join((b.reason or "").split())[:120]
    return (frame.function or "?", _stable_file(report, frame.filename), place, kind)


def _kernel_key(name: str) -> str:
    head, sep, tail = name.rpartition("_")  # a kernel's number: triton_poi_fused_add_3 -> triton_poi_fused_add
    return head if sep and tail.isdecimal() else name


def _loop_key(report: "CompileReport", u) -> tuple:
    return (_stable_file(report, u.filename), " ".join((u.source_line or "").split()) or str(u.lineno))


def _report(x: Any) -> "CompileReport":
    report = getattr(x, "report", x)  # a CellRun, or a report
    if not hasattr(report, "graph_breaks") or not hasattr(report, "compiles"):
        raise TypeError(f"compare: expected a CompileReport or a CellRun, got {type(x).__name__}")
    return report


# -- the comparison --------------------------------------------------------------
_SETTINGS = ("mode", "backend", "dynamic", "fullgraph", "options", "config", "observe")


def _comparability(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    pa, pb = a.profile, b.profile
    ta = a.torch_version or (pa.settings.torch_version if pa else "")
    tb = b.torch_version or (pb.settings.torch_version if pb else "")
    if ta and tb and ta != tb:
        out.differences.append(SettingDiff("torch", ta, tb))
    if pa is None or pb is None:
        if (pa is None) != (pb is None):
            out.differences.append(SettingDiff("profiled", pa is not None, pb is not None))
        else:
            out.notes.append(CompareNote("unprofiled"))
        out.comparable = not out.differences
        return
    if pa.settings.device != pb.settings.device:
        out.differences.append(SettingDiff("device", pa.settings.device, pb.settings.device))
    for attr in _SETTINGS:
        va, vb = getattr(pa.settings, attr), getattr(pb.settings, attr)
        if va != vb:
            out.differences.append(SettingDiff(attr, va, vb))
    if pa.settings.fresh != pb.settings.fresh:
        out.differences.append(SettingDiff("fresh", pa.settings.fresh, pb.settings.fresh))
    elif not pa.settings.fresh:
        out.notes.append(CompareNote("warm_caches"))
    for side, r, p in (("a", a, pa), ("b", b, pb)):
        if r.reused_from or (p.reused_compiled_code and r.compiled_nothing):
            out.notes.append(CompareNote("reused", side, r.reused_from or ""))
        if p.error:
            out.notes.append(CompareNote("raised", side, p.error.splitlines()[0]))
    out.comparable = not out.differences


def _breaks(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    def sites(r: "CompileReport") -> dict[tuple, tuple]:
        found: dict[tuple, tuple] = {}
        for gb in r.graph_breaks:
            key = _break_key(r, gb)
            n, first = found.get(key, (0, gb))
            found[key] = (n + gb.count, first)
        return found

    sa, sb = sites(a), sites(b)
    for key in list(sa) + [k for k in sb if k not in sa]:
        na, ga = sa.get(key, (0, None))
        nb, gb = sb.get(key, (0, None))
        r, g = (b, gb) if gb is not None else (a, ga)
        frame = g.stop
        code = (frame.source_line or "").strip()
        d = BreakDiff(r.where(frame.filename, frame.lineno), key[0], code, g.reason, na, nb,
                      r.cell_number(frame.filename), frame.lineno)
        (out.breaks_unchanged if na and nb else out.breaks_fixed if na else out.breaks_introduced).append(d)


def _per_function(r: "CompileReport") -> tuple[Counter, Counter, Counter]:
    names = {c.compile_id: FunctionRef(c.user_function or "?", bool(c.resumes), _stable_file(r, c.filename))
             for c in r.compiles}
    recompiles: Counter = Counter()
    for rc in r.recompiles:
        recompiles[names.get(rc.compile_id, FunctionRef(rc.function or "?", False, _stable_file(r, rc.filename)))] += 1
    graphs: Counter = Counter()
    ops: Counter = Counter()
    for g in r.graphs:
        if g.stage == "dynamo":
            key = names.get(g.compile_id, FunctionRef("?"))
            graphs[key] += 1
            ops[key] += g.op_count
    return recompiles, graphs, ops


def _functions(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    ra, ga, oa = _per_function(a)
    rb, gb, ob = _per_function(b)
    for key in list(ra) + [k for k in rb if k not in ra]:
        out.recompiles.append(CountDiff(key, ra.get(key, 0), rb.get(key, 0)))
    for key in list(ga) + [k for k in gb if k not in ga]:
        out.graphs.append(CountDiff(key, ga.get(key, 0), gb.get(key, 0), oa.get(key, 0), ob.get(key, 0)))
    ka, kb = Counter(_kernel_key(k.name) for k in a.kernels), Counter(_kernel_key(k.name) for k in b.kernels)
    out.kernels_added = sorted((kb - ka).elements())
    out.kernels_removed = sorted((ka - kb).elements())
    out.kernels_kept = sum((ka & kb).values())
    la = {_loop_key(a, u): u for u in a.unrolled_loops}
    lb = {_loop_key(b, u): u for u in b.unrolled_loops}

    def loop(r: "CompileReport", u) -> LoopDiff:
        return LoopDiff(r.where(u.filename, u.lineno), u.repeats, r.cell_number(u.filename), u.lineno)

    out.loops_fixed = [loop(a, u) for k, u in la.items() if k not in lb]
    out.loops_introduced = [loop(b, u) for k, u in lb.items() if k not in la]
    out.failures = (len(a.failures), len(b.failures))
    out.limit_hit = (any(rc.limit_hit for rc in a.recompiles), any(rc.limit_hit for rc in b.recompiles))


def _metrics(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    pa, pb = a.profile, b.profile
    def torch_compile_s(r: "CompileReport") -> Optional[float]:
        return None if r.reused_from else (r.compile_time.total_s or None)  # a reused run compiled nothing

    out.metrics.append(MetricDelta("compile time (torch)", "s", torch_compile_s(a), torch_compile_s(b)))
    if pa is None or pb is None:
        return
    fa, fb, sa, sb = pa.first_call, pb.first_call, pa.steady, pb.steady
    out.metrics += [
        MetricDelta("first call (compile)", "s", fa.compile_s, fb.compile_s),
        MetricDelta("run median", "s", sa.run_median_s, sb.run_median_s, sa.run_iqr_s, sb.run_iqr_s),
        MetricDelta("peak device memory, steady", "bytes", _num(sa.peak_device_bytes), _num(sb.peak_device_bytes)),
        MetricDelta("peak device memory, compile", "bytes", _num(fa.peak_device_bytes), _num(fb.peak_device_bytes)),
        MetricDelta("peak host memory, steady", "bytes", _num(sa.peak_host_bytes), _num(sb.peak_host_bytes)),
        MetricDelta("peak host memory, compile", "bytes", _num(fa.peak_host_bytes), _num(fb.peak_host_bytes)),
    ]
    ea, eb = pa.eager, pb.eager
    if ea is not None or eb is not None:
        out.metrics.append(MetricDelta("speedup vs eager", "x", ea.speedup if ea else None, eb.speedup if eb else None))
    out.metrics = [m for m in out.metrics if m.a is not None or m.b is not None]


def _num(v: Optional[int]) -> Optional[float]:
    return None if v is None else float(v)


def compare(a: Any, b: Any, *, names: tuple[str, str] = ("A", "B")) -> Comparison:
    """What changed from ``a`` to ``b`` (two :class:`~ipycompile.CompileReport` s or
    :class:`~ipycompile.CellRun` s). ``names`` name them in the views."""
    ra, rb = _report(a), _report(b)
    out = Comparison(names[0], names[1])
    _comparability(ra, rb, out)
    _breaks(ra, rb, out)
    _functions(ra, rb, out)
    _metrics(ra, rb, out)
    return out
