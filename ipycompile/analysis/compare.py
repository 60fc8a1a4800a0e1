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
name without the trailing counter. Plain data with a readable ``str``; the views render
it (:mod:`ipycompile.widgets.compare_view`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..report.owners import is_notebook_cell
from ..report.text import one_line, printable

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["compare", "Comparison", "BreakDiff", "CountDiff", "MetricDelta"]


@dataclass
class BreakDiff:
    """A graph-break site in one run or both: ``count_a`` / ``count_b`` times."""

    where: str  # as the user knows it: "In [3], line 2" (the newer run's place when in both)
    function: str
    code: str  # the source line
    reason: str
    count_a: int = 0
    count_b: int = 0


@dataclass
class CountDiff:
    """A count per function in both runs (recompiles, graphs), with the ops of its graphs."""

    function: str
    a: int = 0
    b: int = 0
    ops_a: int = 0
    ops_b: int = 0


@dataclass
class MetricDelta:
    """One measured figure of both runs; ``spread_*`` is the IQR where the figure is a median."""

    name: str
    unit: str  # "s" | "bytes"
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


@dataclass
class Comparison:
    """What changed from run ``a`` to run ``b``. ``str(comparison)`` reads it out."""

    a: str
    b: str
    comparable: bool = True
    differences: list[str] = field(default_factory=list)  # settings that differ: why not comparable
    notes: list[str] = field(default_factory=list)  # caches, reused code: what to keep in mind
    breaks_fixed: list[BreakDiff] = field(default_factory=list)
    breaks_introduced: list[BreakDiff] = field(default_factory=list)
    breaks_unchanged: list[BreakDiff] = field(default_factory=list)
    recompiles: list[CountDiff] = field(default_factory=list)  # per function, where either run recompiled
    graphs: list[CountDiff] = field(default_factory=list)  # per function: Dynamo graphs and their ops
    kernels_added: list[str] = field(default_factory=list)
    kernels_removed: list[str] = field(default_factory=list)
    kernels_kept: int = 0
    loops_fixed: list[str] = field(default_factory=list)
    loops_introduced: list[str] = field(default_factory=list)
    failures: tuple[int, int] = (0, 0)
    limit_hit: tuple[bool, bool] = (False, False)
    metrics: list[MetricDelta] = field(default_factory=list)

    def metric(self, name: str) -> Optional[MetricDelta]:
        return next((m for m in self.metrics if m.name == name), None)

    def __str__(self) -> str:
        return render_text(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows the text, not the dataclass repr
        p.text(str(self))


# -- keys -----------------------------------------------------------------------
def _function(name: str, resumes: str = "") -> str:
    """A function as the user knows it: ``f (after a graph break)`` for a compile of the code of
    ``f`` after a break (``Compile.resumes``: capture read Dynamo's resume-function name)."""
    return f"{resumes} (after a graph break)" if resumes else (name or "?")


#: a compiled function as the user knows it: ``f (after a graph break)`` for torch's
#: ``torch_dynamo_resume_in_f_at_17`` (what the views show where the user reads first)
user_function = _function


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
    return (_function(frame.function), _stable_file(report, frame.filename), place, kind)


def _kernel_key(name: str) -> str:
    return re.sub(r"_\d+$", "", name)


def _loop_key(report: "CompileReport", u) -> tuple:
    return (_stable_file(report, u.filename), " ".join((u.source_line or "").split()) or str(u.lineno))


def _report(x: Any) -> "CompileReport":
    report = getattr(x, "report", x)  # a CellRun, or a report
    if not hasattr(report, "graph_breaks") or not hasattr(report, "compiles"):
        raise TypeError(f"compare: expected a CompileReport or a CellRun, got {type(x).__name__}")
    return report


# -- the comparison --------------------------------------------------------------
_SETTINGS = (("mode", "mode"), ("backend", "backend"), ("dynamic", "dynamic"), ("fullgraph", "fullgraph"),
             ("options", "options"), ("config", "torch config"), ("observe", "observe"))


def _comparability(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    pa, pb = a.profile, b.profile
    ta = a.torch_version or (pa.settings.torch_version if pa else "")
    tb = b.torch_version or (pb.settings.torch_version if pb else "")
    if ta and tb and ta != tb:
        out.differences.append(f"torch {ta} vs {tb}")
    if pa is None or pb is None:
        if (pa is None) != (pb is None):
            out.differences.append("one run is profiled (%%compile / run_cell), the other is a capture")
        else:
            out.notes.append("neither run is profiled: no times or memory to compare (capture reports)")
        return
    if pa.settings.device != pb.settings.device:
        out.differences.append(f"device {pa.settings.device} vs {pb.settings.device}")
    for attr, label in _SETTINGS:
        va, vb = getattr(pa.settings, attr), getattr(pb.settings, attr)
        if va != vb:
            out.differences.append(f"{label}: {_setting(va)} vs {_setting(vb)}")
    if pa.settings.fresh != pb.settings.fresh:
        which = "A" if pa.settings.fresh else "B"
        out.differences.append(f"fresh caches: only {which} compiled from scratch (--fresh), so their compile times differ by design")
    elif not pa.settings.fresh:
        out.notes.append("neither run used fresh caches: a compile can be faster from Inductor's caches (run with --fresh for honest compile times)")
    for label, r, p in (("A", a, pa), ("B", b, pb)):
        if r.reused_from or (p.reused_compiled_code and r.compiled_nothing):
            src = f" ({r.reused_from})" if r.reused_from else ""
            out.notes.append(f"{label} compiled nothing: it reused compiled code{src}; its breaks, graphs and kernels are those of that code")
        if p.error:
            out.notes.append(f"{label} raised {p.error.splitlines()[0]}")
    out.comparable = not out.differences


def _setting(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={x!r}" for k, x in sorted(v.items())) + "}" if v else "{}"
    return repr(v) if isinstance(v, str) else str(v)


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
        d = BreakDiff(r.where(frame.filename, frame.lineno), key[0], key[2], g.reason, na, nb)
        (out.breaks_unchanged if na and nb else out.breaks_fixed if na else out.breaks_introduced).append(d)


def _per_function(r: "CompileReport") -> tuple[Counter, Counter, Counter]:
    names = {c.compile_id: (_function(c.function, c.resumes), _stable_file(r, c.filename)) for c in r.compiles}
    recompiles: Counter = Counter()
    for rc in r.recompiles:
        recompiles[names.get(rc.compile_id, (_function(rc.function), _stable_file(r, rc.filename)))] += 1
    graphs: Counter = Counter()
    ops: Counter = Counter()
    for g in r.graphs:
        if g.stage == "dynamo":
            key = names.get(g.compile_id, ("?", ""))
            graphs[key] += 1
            ops[key] += g.op_count
    return recompiles, graphs, ops


def _label(key: tuple) -> str:
    fn, file = key
    return f"{fn} ({file.rsplit('/', 1)[-1]})" if file else fn


def _functions(a: "CompileReport", b: "CompileReport", out: Comparison) -> None:
    ra, ga, oa = _per_function(a)
    rb, gb, ob = _per_function(b)
    for key in list(ra) + [k for k in rb if k not in ra]:
        out.recompiles.append(CountDiff(_label(key), ra.get(key, 0), rb.get(key, 0)))
    for key in list(ga) + [k for k in gb if k not in ga]:
        out.graphs.append(CountDiff(_label(key), ga.get(key, 0), gb.get(key, 0), oa.get(key, 0), ob.get(key, 0)))
    ka, kb = Counter(_kernel_key(k.name) for k in a.kernels), Counter(_kernel_key(k.name) for k in b.kernels)
    out.kernels_added = sorted((kb - ka).elements())
    out.kernels_removed = sorted((ka - kb).elements())
    out.kernels_kept = sum((ka & kb).values())
    la = {_loop_key(a, u): u for u in a.unrolled_loops}
    lb = {_loop_key(b, u): u for u in b.unrolled_loops}
    out.loops_fixed = [f"loop at {a.where(u.filename, u.lineno)} unrolled {u.repeats} times" for k, u in la.items() if k not in lb]
    out.loops_introduced = [f"loop at {b.where(u.filename, u.lineno)} unrolled {u.repeats} times" for k, u in lb.items() if k not in la]
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
    :class:`~ipycompile.CellRun` s). ``names`` label them in the text."""
    ra, rb = _report(a), _report(b)
    out = Comparison(names[0], names[1])
    _comparability(ra, rb, out)
    _breaks(ra, rb, out)
    _functions(ra, rb, out)
    _metrics(ra, rb, out)
    return out


# -- text -----------------------------------------------------------------------------
def fmt(value: Optional[float], unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        v = abs(value)
        text = f"{v:.2f} s" if v >= 1 else f"{v * 1e3:.2f} ms" if v >= 1e-3 else f"{v * 1e6:.1f} us"
        return ("-" if value < 0 else "") + text
    if unit == "bytes":
        v, n = abs(value), 0
        units = ("B", "KiB", "MiB", "GiB")
        while v >= 1024 and n < len(units) - 1:
            v, n = v / 1024, n + 1
        return ("-" if value < 0 else "") + (f"{v:.0f} B" if n == 0 else f"{v:.1f} {units[n]}")
    return f"{value:.2f}{unit}"


def metric_text(m: MetricDelta) -> str:
    """``1.20 ms (IQR 0.05 ms) -> 0.80 ms (IQR 0.04 ms): -0.40 ms (-33.3%), beyond the spread``."""

    def side(v, s):
        return fmt(v, m.unit) + (f" (IQR {fmt(s, m.unit)})" if s is not None else "")

    text = f"{side(m.a, m.spread_a)} -> {side(m.b, m.spread_b)}"
    if m.delta is not None:
        sign = "+" if m.delta > 0 else ""
        text += f": {sign}{fmt(m.delta, m.unit)}"
        if m.ratio is not None:
            text += f" ({(m.ratio - 1) * 100:+.1f}%)"
        if m.beyond_spread is not None:
            text += ", beyond the spread" if m.beyond_spread else ", within the spread (noise)"
    return text


def _break_line(d: BreakDiff) -> str:
    counts = f"x{d.count_a} -> x{d.count_b}" if d.count_a and d.count_b else f"x{d.count_a or d.count_b}"
    code = f": {d.code}" if d.code and not d.code.startswith("line ") else ""
    return f"    {d.where} in {d.function}{code} -- {d.reason} ({counts})"


def render_text(c: Comparison) -> str:
    lines = [f"ipycompile comparison: A = {one_line(c.a)}, B = {one_line(c.b)}"]
    if c.comparable:
        lines.append("comparable: same torch, device and settings")
    else:
        lines.append("NOT comparable: " + "; ".join(c.differences))
    lines += [f"  note: {n}" for n in c.notes]
    nb = (len(c.breaks_fixed), len(c.breaks_introduced), len(c.breaks_unchanged))
    lines.append(f"graph break sites: {nb[0]} fixed, {nb[1]} introduced, {nb[2]} unchanged")
    for title, items in (("fixed", c.breaks_fixed), ("introduced", c.breaks_introduced), ("unchanged", c.breaks_unchanged)):
        if items:
            lines.append(f"  {title}:")
            lines += [_break_line(d) for d in items]
    if c.recompiles:
        lines.append("recompiles: " + ", ".join(f"{d.function} {d.a} -> {d.b}" for d in c.recompiles))
    else:
        lines.append("recompiles: none in either run")
    if c.limit_hit != (False, False):
        lines.append(f"recompile limit hit: A {'yes' if c.limit_hit[0] else 'no'}, B {'yes' if c.limit_hit[1] else 'no'}")
    if c.graphs:
        lines.append("graphs: " + ", ".join(f"{d.function} {d.a} -> {d.b} ({d.ops_a} -> {d.ops_b} ops)" for d in c.graphs))
    if c.kernels_added or c.kernels_removed or c.kernels_kept:
        k = f"kernels: {len(c.kernels_added)} added, {len(c.kernels_removed)} removed, {c.kernels_kept} in both"
        lines.append(k)
        if c.kernels_added:
            lines.append("  added: " + ", ".join(c.kernels_added))
        if c.kernels_removed:
            lines.append("  removed: " + ", ".join(c.kernels_removed))
    for title, items in (("unrolled loops fixed", c.loops_fixed), ("unrolled loops introduced", c.loops_introduced)):
        if items:
            lines.append(f"{title}: " + "; ".join(items))
    if c.failures != (0, 0):
        lines.append(f"failures: {c.failures[0]} -> {c.failures[1]}")
    if c.metrics:
        width = max(len(m.name) for m in c.metrics)
        lines += [f"{m.name:<{width}}  {metric_text(m)}" for m in c.metrics]
    return printable("\n".join(lines))  # names and reasons come from traces: escaped
