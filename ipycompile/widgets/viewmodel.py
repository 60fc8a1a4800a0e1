# VIEWMODEL_READY
"""The report's presentation, built once as plain data: one view-model, two renderings.

:func:`view_model` turns a :class:`~ipycompile.report.CompileReport` into a
:class:`ViewModel`: a header strip of :class:`Chip` s and a list of :class:`Tab` s
whose content (a list of blocks) is built lazily, on first use. The static HTML
rendering (:mod:`ipycompile.widgets.html`) and the ipywidgets view both render
this and nothing else, so neither can show a fact the other cannot.

Blocks (everything a tab holds):

- :class:`Text` -- a paragraph; ``kind`` is ``"plain"``, ``"heading"``, ``"warn"``
  or ``"note"``; with ``url`` it is a link.
- :class:`Table` -- ``columns`` and ``rows`` of plain cells (str, int, float;
  ``""`` for a missing value). ``sortable`` tables sort through :func:`sort_rows`.
  ``details[i]`` (optional) is a list of blocks shown when row ``i`` is expanded;
  an empty list means the row does not expand. ``title`` (optional) goes above.
- :class:`Code` -- ``language`` is ``"python"``, ``"cpp"`` or ``"text"``.
- :class:`Figure` -- ``build()`` returns a matplotlib ``Figure`` (not pyplot: no
  global state); renderers turn it into PNG/SVG. Built only when shown.
- :class:`TreeNode` -- ``label``, its own ``blocks``, and ``children`` (TreeNodes).
- :class:`Choice` -- ``options`` maps an option label to its blocks (pick one).

A :class:`Tab` has a stable ``key`` (:data:`TAB_KEYS`, in display order), a
``title`` with its count, ``count`` and ``warn`` (graph breaks, recompiles,
failures: show the tab title highlighted). ``Tab.blocks()`` builds once and caches.
:class:`Chip` has ``key`` and ``value`` so a view can find a fact without parsing
text, and ``tooltip`` for a hover title.

No ipywidgets or IPython import here; matplotlib is imported only inside the
figure builders. Views only read the report.
"""

from __future__ import annotations

import linecache
import os
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ..report.model import GRAPH_STAGES, OTHER_CPU_TIME, OTHER_DEVICE_TIME
from ..report.summary import fmt_bytes, fmt_seconds, settings_text

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = [
    "Chip",
    "Text",
    "Table",
    "Code",
    "Figure",
    "TreeNode",
    "Choice",
    "Block",
    "Tab",
    "ViewModel",
    "TAB_KEYS",
    "view_model",
    "header",
    "sort_rows",
    "figure_png",
    "gb_url",
    "SOURCE_CONTEXT",
]

#: Lines of source shown above and below a graph-break line.
SOURCE_CONTEXT = 3


# -- the blocks -----------------------------------------------------------------
@dataclass
class Chip:
    """One fact in the header strip. ``key`` names the fact (``"graphs"``,
    ``"graph_breaks"``, ``"recompiles"``, ``"kernels"``, ``"failures"``,
    ``"status"``, ``"compile_time"``, ``"run_time"``, ``"speedup"``,
    ``"break_even"``, ``"device_memory"``, ``"host_memory"``, ``"error"``);
    ``value`` is the number behind it when there is one."""

    text: str
    warn: bool = False
    key: str = ""
    value: Any = None
    tooltip: str = ""


@dataclass
class Text:
    text: str
    kind: str = "plain"  # "plain" | "heading" | "warn" | "note"
    url: Optional[str] = None  # render as a link when set


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    sortable: bool = False
    details: Optional[list[list["Block"]]] = None  # per row, shown on expansion
    title: str = ""


@dataclass
class Code:
    title: str
    code: str
    language: str = "text"  # "python" | "cpp" | "text"


@dataclass
class Figure:
    title: str
    build: Callable[[], Any]  # -> matplotlib.figure.Figure


@dataclass
class TreeNode:
    label: str
    blocks: list["Block"] = field(default_factory=list)
    children: list["TreeNode"] = field(default_factory=list)
    open: bool = False  # shown expanded at first


@dataclass
class Choice:
    label: str
    options: "dict[str, list[Block]]"
    default: Optional[str] = None  # the option shown first (default: the first)


Block = Union[Text, Table, Code, Figure, TreeNode, Choice]


@dataclass
class Tab:
    """One tab. ``build()`` makes its blocks; call :meth:`blocks` (built once, cached)."""

    key: str
    title: str
    build: Callable[[], list[Block]]
    count: Optional[int] = None  # what the tab title counts, when it counts something
    warn: bool = False
    _cache: Optional[list[Block]] = field(default=None, repr=False, compare=False)

    def blocks(self) -> list[Block]:
        if self._cache is None:
            self._cache = self.build()
        return self._cache


@dataclass
class ViewModel:
    header: list[Chip]
    tabs: list[Tab]

    def tab(self, key: str) -> Tab:
        for t in self.tabs:
            if t.key == key:
                return t
        raise KeyError(f"no tab {key!r}; tabs are {[t.key for t in self.tabs]}")

    def chip(self, key: str) -> Optional[Chip]:
        return next((c for c in self.header if c.key == key), None)


TAB_KEYS = ("summary", "graph_breaks", "recompiles", "graphs", "kernels", "control_flow", "profile", "guards")


def sort_rows(table: Table, column: int, descending: bool = False) -> list[int]:
    """Row order for sorting ``table`` by ``column``: numbers numerically, text
    case-insensitively, missing values (``""``/None) last either way."""

    def present(i: int) -> bool:
        v = table.rows[i][column]
        return v is not None and v != ""

    have = [i for i in range(len(table.rows)) if present(i)]
    missing = [i for i in range(len(table.rows)) if not present(i)]

    def key(i: int):
        v = table.rows[i][column]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (0, float(v), "")
        return (1, 0.0, str(v).lower())

    return sorted(have, key=key, reverse=descending) + missing


def figure_png(figure: Figure, dpi: int = 100) -> bytes:
    """The PNG of a :class:`Figure` block (builds it; matplotlib's Agg, no pyplot)."""
    import io

    buf = io.BytesIO()
    figure.build().savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def gb_url(gb_code: str) -> str:
    return f"https://meta-pytorch.github.io/compile-graph-break-site/gb/{gb_code.lower()}.html"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- header ---------------------------------------------------------------------
def header(report: "CompileReport") -> list[Chip]:
    r = report
    p = r.profile
    chips: list[Chip] = []
    add = chips.append
    if r.compiled_nothing:
        text = "reused compiled code" if p is not None and p.reused_compiled_code else "nothing compiled"
        add(Chip(text, False, "status"))
    graphs = sum(1 for g in r.graphs if g.stage == "dynamo")
    add(Chip(_plural(graphs, "graph"), False, "graphs", graphs))
    nb = r.graph_break_count
    add(Chip(_plural(nb, "graph break"), nb > 0, "graph_breaks", nb,
             f"{len(r.graph_breaks)} site(s)" if r.graph_breaks else ""))
    nr = len(r.recompiles)
    limit = any(rc.limit_hit for rc in r.recompiles)
    add(Chip(_plural(nr, "recompile") + (" (limit hit)" if limit else ""), nr > 0 or limit, "recompiles", nr))
    generated = sum(1 for k in r.kernels if k.backend != "extern")
    extern = len(r.kernels) - generated
    add(Chip(f"{_plural(len(r.kernels), 'kernel')} ({generated} generated / {extern} extern)", False, "kernels",
             len(r.kernels)))
    if r.failures:
        add(Chip(_plural(len(r.failures), "failure"), True, "failures", len(r.failures)))
    compile_s = p.compile_s if p is not None and p.compile_s is not None else (r.compile_time.total_s or None)
    if compile_s is not None:
        what = "first call" if p is not None and p.compile_s is not None else "compile"
        add(Chip(f"{what} {fmt_seconds(compile_s)}", False, "compile_time", compile_s))
    if p is not None:
        if p.run_median_s is not None:
            add(Chip(f"run {fmt_seconds(p.run_median_s)} median", False, "run_time", p.run_median_s,
                     f"{p.runs} runs, IQR {fmt_seconds(p.run_iqr_s)}"))
        e = p.eager
        if e is not None:
            if e.speedup is not None:
                add(Chip(f"{e.speedup:.2f}x vs eager", e.speedup < 1, "speedup", e.speedup,
                         f"eager median {fmt_seconds(e.run_median_s)}"))
            if e.run_median_s is not None or e.speedup is not None:
                if e.break_even_calls is not None:
                    add(Chip(f"break-even after {e.break_even_calls} calls", False, "break_even", e.break_even_calls))
                else:
                    add(Chip("never breaks even", True, "break_even", None))
            if e.outputs_match is False:
                add(Chip("outputs differ from eager", True, "outputs", False, e.message))
        if p.peak_device_bytes is not None:
            add(Chip(f"device peak {fmt_bytes(p.peak_device_bytes)}", False, "device_memory", p.peak_device_bytes))
        if p.peak_host_bytes is not None:
            add(Chip(f"host peak {fmt_bytes(p.peak_host_bytes)}", False, "host_memory", p.peak_host_bytes))
        if p.error:
            add(Chip(f"raised {p.error.splitlines()[0][:120]}", True, "error", p.error))
    return chips


# -- the view-model -------------------------------------------------------------
def view_model(report: "CompileReport") -> ViewModel:
    """The header (built now) and the tabs (built when first asked for)."""
    r = report
    nb, nr = r.graph_break_count, len(r.recompiles)
    graphs = len(r.graphs)
    cf = _count_nodes(r.control_flow)
    tabs = [
        Tab("summary", "Summary", lambda: _summary(r), None, bool(r.failures)),
        Tab("graph_breaks", f"Graph breaks ({nb})", lambda: _graph_breaks(r), nb, nb > 0),
        Tab("recompiles", f"Recompiles ({nr})", lambda: _recompiles(r), nr, nr > 0),
        Tab("graphs", f"Graphs ({graphs})", lambda: _graphs(r), graphs),
        Tab("kernels", f"Kernels ({len(r.kernels)})", lambda: _kernels(r), len(r.kernels)),
        Tab("control_flow", f"Control flow ({cf})", lambda: _control_flow(r), cf),
        Tab("profile", "Profile", lambda: _profile(r)),
        Tab("guards", f"Guards ({sum(g.count for g in r.guards)})", lambda: _guards(r),
            sum(g.count for g in r.guards)),
    ]
    return ViewModel(header(r), tabs)


def _count_nodes(nodes) -> int:
    return sum(1 + _count_nodes(n.children) for n in nodes)


# -- Summary --------------------------------------------------------------------
def _summary(r: "CompileReport") -> list[Block]:
    out: list[Block] = []
    if r.compiled_nothing:
        p = r.profile
        if p is not None and p.reused_compiled_code:
            out.append(Text("Reused compiled code: nothing was compiled in this run.", "note"))
        else:
            out.append(Text("torch.compile compiled nothing here (compiled code was reused, or no compiled code ran).", "note"))
    if r.failures:
        out.append(Text(_plural(len(r.failures), "failure"), "heading"))
        rows, details = [], []
        for f in r.failures:
            first = f.message.strip().splitlines()[0] if f.message.strip() else ""
            rows.append([str(f.compile_id or ""), f.type, r.where(f.frame.filename, f.frame.lineno), first])
            d: list[Block] = [Code("message", f.message, "text")]
            src = _source_excerpt(f.frame.filename, f.frame.lineno, f.frame.source_line)
            if src:
                d.insert(0, Code(r.where(f.frame.filename, f.frame.lineno), src, "python"))
            if f.traceback:
                d.append(Code("traceback", f.traceback, "text"))
            details.append(d)
        out.append(Table(["compile", "type", "where", "message"], rows, details=details))
    if r.compiles:
        out.append(Text(_plural(len(r.compiles), "compile"), "heading"))
        rows = []
        for c in r.compiles:
            rows.append([
                str(c.compile_id),
                c.function,
                r.where(c.filename, c.first_line),
                c.status,
                "" if c.graph_op_count is None else c.graph_op_count,
                "" if c.guard_count is None else c.guard_count,
                "" if c.entire_frame_compile_s is None else round(c.entire_frame_compile_s, 4),
                _cache_text(c.cache),
            ])
        out.append(Table(["compile", "function", "where", "status", "ops", "guards", "compile s", "caches"], rows,
                         sortable=True))
    ct = r.compile_time
    if ct.phases:
        out.append(Text(f"Compile time {fmt_seconds(ct.total_s)} by phase", "heading"))
        total = ct.total_s or sum(p.seconds for p in ct.phases) or 1.0
        rows = [[p.name, round(p.seconds, 4), f"{p.seconds / total:.1%}"] for p in sorted(ct.phases, key=lambda p: -p.seconds)]
        out.append(Table(["phase", "seconds", "share"], rows, sortable=True))
    if r.control_flow:
        out.append(Text("Control flow: " + ", ".join(sorted({n.op for n in r.control_flow}))))
    if r.stats.unknown:
        out.append(Text(f"{_plural(sum(r.stats.unknown.values()), 'trace event')} of unknown kinds kept as raw artifacts: "
                        + ", ".join(f"{k} ({v})" for k, v in sorted(r.stats.unknown.items())), "note"))
    if r.stats.parse_errors:
        out.append(Text(f"{_plural(sum(r.stats.parse_errors.values()), 'trace event')} could not be parsed: "
                        + ", ".join(f"{k} ({v})" for k, v in sorted(r.stats.parse_errors.items())), "warn"))
    out.append(Code("Text summary", r.summary(), "text"))
    return out


def _cache_text(cache) -> str:
    parts = []
    if cache.fx_graph:
        parts.append(f"fx graph {cache.fx_graph}")
    if cache.aot_autograd:
        parts.append(f"aot autograd {cache.aot_autograd}")
    return ", ".join(parts)


# -- Graph breaks -----------------------------------------------------------------
def _source_excerpt(filename: str, lineno: Optional[int], fallback: str = "", context: int = SOURCE_CONTEXT) -> str:
    """The source around ``lineno`` with that line marked ``>``; the cell source is
    in ``linecache``. Falls back to ``fallback`` (the one line torch recorded)."""
    lines = linecache.getlines(filename) if filename else []
    if lineno is None or not lines or lineno > len(lines):
        return f"> {lineno if lineno is not None else '?'} | {fallback.strip()}" if fallback.strip() else ""
    lo, hi = max(1, lineno - context), min(len(lines), lineno + context)
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        mark = ">" if n == lineno else " "
        out.append(f"{mark} {n:>{width}} | {lines[n - 1].rstrip()}")
    return "\n".join(out)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _internal_frame(filename: str) -> bool:
    """Frames of torch and of ipycompile itself: not the user's code."""
    return "/site-packages/torch/" in filename or filename.startswith(_PACKAGE_DIR) or filename == "<string>"


def _graph_breaks(r: "CompileReport") -> list[Block]:
    if not r.graph_breaks:
        return [Text("No graph breaks: each compiled function is one graph.", "note")]
    rows, details = [], []
    for b in r.graph_breaks:
        where = r.where(b.frame.filename, b.frame.lineno)
        rows.append([where, b.frame.function, b.frame.source_line.strip(), b.reason, b.gb_code, b.count])
        d: list[Block] = []
        src = _source_excerpt(b.frame.filename, b.frame.lineno, b.frame.source_line)
        if src:
            d.append(Code(where, src, "python"))
        if b.explanation:
            d.append(Text(b.explanation))
        for h in b.hints:
            d.append(Text(f"Hint: {h}", "note"))
        if b.gb_code:
            d.append(Text(f"{b.gb_code}: what it means and how to fix it", url=gb_url(b.gb_code)))
        if b.compile_ids:
            d.append(Text("Hit by compile" + ("s " if len(b.compile_ids) > 1 else " ") + ", ".join(str(c) for c in b.compile_ids)))
        user = [f for f in b.user_stack if not _internal_frame(f.filename)]
        if len(user) > 1:
            d.append(Code("user stack", "\n".join(f"{r.where(f.filename, f.lineno)} in {f.function}: {f.source_line.strip()}" for f in user), "text"))
        details.append(d)
    return [
        Text(f"{_plural(r.graph_break_count, 'graph break')} at {_plural(len(r.graph_breaks), 'site')}", "heading"),
        Table(["where", "function", "code", "reason", "GB", "count"], rows, sortable=True, details=details),
    ]


# -- Recompiles -------------------------------------------------------------------
def _recompiles(r: "CompileReport") -> list[Block]:
    if not r.recompiles:
        return [Text("No recompiles: no guard failed.", "note")]
    by_cid = {rc.compile_id: rc for rc in r.recompiles}
    # one code object per Dynamo frame id: its compiles are frame/0, frame/1, ...
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for c in r.compiles:
        groups.setdefault((c.compile_id.compiled_autograd_id, c.compile_id.frame_id), []).append(c)
    for rc in r.recompiles:  # a recompile whose compile the report lacks still shows
        if r.compile(rc.compile_id) is None:
            groups.setdefault((rc.compile_id.compiled_autograd_id, rc.compile_id.frame_id), []).append(rc)
    out: list[Block] = []
    for items in groups.values():
        rcs = [by_cid[i.compile_id] for i in items if i.compile_id in by_cid]
        if not rcs:
            continue
        function = next((i.function for i in items if i.function), "?")
        filename = next((i.filename for i in items if i.filename), "")
        first_line = next((i.first_line for i in items if getattr(i, "first_line", None) is not None), None)
        limit = next((rc for rc in rcs if rc.limit_hit), None)
        where = r.where(filename, first_line) if filename else "?"
        label = f"{function} ({where}): {_plural(len(items), 'compile')}, {_plural(len(rcs), 'recompile')}"
        if limit:
            label += " -- RECOMPILE LIMIT HIT"
        blocks: list[Block] = []
        if limit:
            msg = (limit.limit_message or "").strip().splitlines()
            blocks.append(Text(f"Recompile limit hit at compile {limit.compile_id}: torch stopped compiling "
                               f"{function} and runs it eagerly from here on"
                               + (f" ({msg[0]})" if msg else ""), "warn"))
        rows, details = [], []
        for i in sorted(items, key=lambda i: i.compile_id):
            rc = by_cid.get(i.compile_id)
            status = getattr(i, "status", "")
            if rc is None:
                rows.append([str(i.compile_id), status, "first compile (nothing failed before it)", "", ""])
                details.append([])  # the first compile: nothing failed before it
                continue
            reasons = [r.readable(reason) for reason in rc.reasons]  # cells as In [n], line L
            why = " ".join(reasons[0].strip().splitlines()[0].split()) if reasons and reasons[0].strip() else "(no reason given)"
            if len(rc.reasons) > 1:
                why += f" (+{len(rc.reasons) - 1} more)"
            rows.append([str(rc.compile_id), status or ("recompile limit" if rc.limit_hit else ""), why,
                         ", ".join(str(c) for c in rc.failed_compile_ids), "LIMIT HIT" if rc.limit_hit else ""])
            d: list[Block] = [Text(f"Compile {rc.compile_id} happened because these guards failed:", "heading")]
            for j, reason in enumerate(reasons):
                of = f"guards of compile {rc.failed_compile_ids[j]}" if j < len(rc.failed_compile_ids) else "a guard"
                if "\n" in reason.strip():
                    d.append(Code(of, reason.strip(), "text"))
                else:
                    d.append(Text(f"{of}: {reason.strip()}"))
            if not rc.reasons:
                d.append(Text("(no reason given)"))
            if rc.limit_hit:
                d.append(Text("Recompile limit hit", "warn"))
                if rc.limit_message:
                    d.append(Code("torch's message", rc.limit_message.strip(), "text"))
            details.append(d)
        blocks.append(Table(["compile", "status", "caused by (guard failure)", "failed guards of", "limit"], rows,
                            details=details))
        out.append(TreeNode(label, blocks, [], open=True))
    return out


# -- Graphs -----------------------------------------------------------------------
def _stage_order(stage: str) -> tuple:
    return (GRAPH_STAGES.index(stage), "") if stage in GRAPH_STAGES else (len(GRAPH_STAGES), stage)


def _graphs(r: "CompileReport") -> list[Block]:
    if not r.graphs:
        return [Text("No graphs were captured.", "note")]
    ordered = sorted(r.graphs, key=lambda g: (g.compile_id, _stage_order(g.stage)))
    rows = [[str(g.compile_id), g.stage, g.op_count, g.code.count("\n") + 1 if g.code else 0] for g in ordered]
    options: dict[str, list[Block]] = {}
    for g in ordered:
        key = f"{g.compile_id} · {g.stage}"
        n = 2
        while key in options:  # two graphs of one stage (e.g. several pre_grad passes)
            key = f"{g.compile_id} · {g.stage} ({n})"
            n += 1
        c = r.compile(g.compile_id)
        fn = f" of {c.function}" if c and c.function else ""
        options[key] = [
            Text(f"{g.stage} graph of compile {g.compile_id}{fn}: {_plural(g.op_count, 'op')}"),
            Code(key, g.code, "python"),
        ]
    default = next((k for k, g in zip(options, ordered) if g.stage == "dynamo"), None)
    return [
        Table(["compile", "stage", "ops", "lines"], rows, sortable=True, title="Graphs"),
        Choice("compile id · stage", options, default),
    ]


# -- Kernels ----------------------------------------------------------------------
def _kernels(r: "CompileReport") -> list[Block]:
    times = r.profile.kernel_times if r.profile is not None else []
    if not r.kernels and not times:
        return [Text("No kernels: nothing went through Inductor (or its output was not captured).", "note")]
    timed = {(t.kernel, str(t.compile_id or ""), t.graph_stage): t for t in times if t.kernel}
    rows, details = [], []
    for k in r.kernels:
        us = k.info.get("compile_time_us")
        ms = round(us / 1e3, 2) if isinstance(us, (int, float)) else ""
        rows.append([k.name, k.backend, k.kind, ", ".join(k.aten_ops), k.launches, ms,
                     str(k.compile_id or ""), k.graph_stage])
        d: list[Block] = []
        t = timed.pop((k.name, str(k.compile_id or ""), k.graph_stage), None)
        if times:
            rows[-1][4:4] = _time_cells(t)
        if t is not None:
            d.append(Text(f"profiled: {_plural(t.calls, 'kernel call')} in {_plural(r.profile.kernel_times_calls, 'call')} "
                          f"of the cell, {fmt_seconds(t.total_s)} in all"))
        info = {key: v for key, v in k.info.items() if key != "compile_time_us"}
        if info:
            d.append(Text("; ".join(f"{key}: {v}" for key, v in info.items())))
        if k.source_nodes:
            d.append(Text("from FX nodes: " + ", ".join(k.source_nodes)))
        if k.source:
            d.append(Code(k.name, k.source, "cpp" if k.backend == "cpp" else "python"))
        else:
            d.append(Text("An extern call: Inductor launches a library kernel, no generated source." if k.backend == "extern"
                          else "No source captured.", "note"))
        details.append(d)
    columns = ["kernel", "backend", "kind", "fused ATen ops", "launches", "compile ms", "compile", "stage"]
    counts = Counter((k.backend, k.kind) for k in r.kernels)
    by = ", ".join(f"{n} {b} {kd}" if b != kd else f"{n} {b}" for (b, kd), n in sorted(counts.items()))
    out: list[Block] = [Text(f"{_plural(len(r.kernels), 'kernel')}: {by}" if r.kernels
                             else "No kernels compiled in this run (compiled code was reused)", "heading")]
    if times:
        p = r.profile
        what = "device" if p.kernel_times_device == "cuda" else "CPU"
        columns[4:4] = [f"{what} time (us/call)", "share %"]
        for t in times:  # time no kernel row holds: the other time, kernels this report lacks
            if (t.kernel, str(t.compile_id or ""), t.graph_stage) in timed or not t.kernel:
                rows.append([t.name, "", "", "", *_time_cells(t), t.calls or "", "", str(t.compile_id or ""), t.graph_stage])
                details.append([Text(_untimed_note(t, what), "note")])
        order = sorted(range(len(rows)), key=lambda i: -(rows[i][4] or 0))
        rows, details = [rows[i] for i in order], [details[i] for i in order]
        total = sum(t.total_s for t in times) / max(p.kernel_times_calls, 1)
        out.append(Text(f"{what} time per kernel over {_plural(p.kernel_times_calls, 'profiled call')} after the timed "
                        f"runs: {fmt_seconds(total)} per call in all ("
                        + ("all device time" if what == "device" else "wall time of the calls") + "), longest first"))
    out.append(Table(columns, rows, sortable=True, details=details))
    return out


def _time_cells(t) -> list[Any]:
    """The time per call (us) and share (%) cells of a kernel's row; blank when it was not seen."""
    if t is None:
        return ["", ""]
    return [round(t.per_call_s * 1e6, 2), round(t.share * 100, 1)]


def _untimed_note(t, what: str) -> str:
    if t.name == OTHER_DEVICE_TIME:
        return ("Device time in no kernel of this report: kernels of eager code (outside the compiled graphs), "
                "library kernels launched where no extern kernel of the report is, copies and memsets.")
    if t.name == OTHER_CPU_TIME:
        return ("CPU time of the calls in no kernel: the compiled code's Python wrapper, guards, allocation, "
                "and eager code outside the compiled graphs.")
    return (f"A kernel the profiler saw ({what} time) that this report does not hold: its compiled code was "
            "reused, so this run did not capture its compile.")


# -- Control flow -----------------------------------------------------------------
def _cf_node(node) -> TreeNode:
    where = f" (compile {node.compile_id}" + (f", node {node.node_name})" if node.node_name else ")") if node.compile_id else ""
    blocks: list[Block] = []
    if node.operands:
        blocks.append(Text(f"operands: {node.operands}"))
    if node.source_line:
        blocks.append(Code("source", node.source_line, "python"))
    placed: set[int] = set()
    subs = []
    for s in node.subgraphs:
        kids = []
        for i, c in enumerate(node.children):  # a nested op sits in the subgraph whose code calls it
            if i not in placed and c.node_name and s.code and f"{c.node_name} =" in s.code:
                kids.append(_cf_node(c))
                placed.add(i)
        subs.append(TreeNode(f"{s.role or 'subgraph'}: {s.name} ({_plural(s.op_count, 'op')})",
                             [Code(s.name, s.code, "python")] if s.code else [], kids))
    rest = [_cf_node(c) for i, c in enumerate(node.children) if i not in placed]
    return TreeNode(f"{node.op}{where}", blocks, subs + rest)


def _control_flow(r: "CompileReport") -> list[Block]:
    if not r.control_flow:
        return [Text("No higher-order control-flow ops (cond, while_loop, scan, map, ...) in the graphs.", "note")]
    ops = Counter()

    def walk(ns):
        for n in ns:
            ops[n.op] += 1
            walk(n.children)

    walk(r.control_flow)
    head = Text("Higher-order ops: " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())), "heading")
    return [head, *(_cf_node(n) for n in r.control_flow)]


# -- Profile ----------------------------------------------------------------------
def _profile(r: "CompileReport") -> list[Block]:
    out: list[Block] = []
    ct = r.compile_time
    p = r.profile
    if ct.events or ct.phases:
        out.append(Figure("Compile time by phase", lambda: _fig_phases(r)))
    if p is None:
        if not out:
            return [Text("No compile-time events and no profile (run the cell with %%compile for one).", "note")]
        out.append(Text("No run profile: run the cell with %%compile (or ipycompile.run_cell) for run times and memory.", "note"))
        return out
    if p.run_times_s:
        out.append(Figure("Run-time distribution", lambda: _fig_runs(r)))
    if p.peak_device_bytes is not None or p.peak_host_bytes is not None:
        out.append(Figure("Peak memory", lambda: _fig_memory(r)))
    out.append(Table(["field", "value"], _profile_rows(p), title="Profile"))
    return out


def _profile_rows(p) -> list[list[Any]]:
    rows: list[list[Any]] = []

    def row(name, value):
        if value is not None and value != "" and value != [] and value != {}:
            rows.append([name, value])

    row("first call (compile + run)", fmt_seconds(p.compile_s) if p.compile_s is not None else None)
    row("run median", fmt_seconds(p.run_median_s) if p.run_median_s is not None else None)
    row("run IQR", fmt_seconds(p.run_iqr_s) if p.run_iqr_s is not None else None)
    row("run min / max", f"{fmt_seconds(p.run_min_s)} / {fmt_seconds(p.run_max_s)}" if p.run_min_s is not None else None)
    row("runs", f"{p.runs} after {p.warmup} warm-up" + (" (auto)" if p.auto_runs else ""))
    row("peak device memory, compile", fmt_bytes(p.peak_device_bytes_compile) if p.peak_device_bytes_compile is not None else None)
    row("peak device memory, steady state", fmt_bytes(p.peak_device_bytes_run) if p.peak_device_bytes_run is not None else None)
    row("peak host memory, compile", fmt_bytes(p.peak_host_bytes_compile) if p.peak_host_bytes_compile is not None else None)
    row("peak host memory, steady state", fmt_bytes(p.peak_host_bytes_run) if p.peak_host_bytes_run is not None else None)
    row("host memory method", p.host_memory_method)
    e = p.eager
    if e is not None:
        row("eager run median", fmt_seconds(e.run_median_s) if e.run_median_s is not None else None)
        row("speedup vs eager", f"{e.speedup:.2f}x" if e.speedup is not None else None)
        row("break-even", f"after {e.break_even_calls} calls" if e.break_even_calls is not None else "never (compiled is not faster)")
        row("memory vs eager", f"{e.memory_ratio:.2f}x" if e.memory_ratio is not None else None)
        row("eager peak device memory", fmt_bytes(e.peak_device_bytes) if e.peak_device_bytes is not None else None)
        row("eager peak host memory", fmt_bytes(e.peak_host_bytes) if e.peak_host_bytes is not None else None)
        if e.outputs_match is not None:
            row("outputs", "match eager" if e.outputs_match else f"DIFFER from eager ({e.message})")
        row("max abs diff", f"{e.max_abs_diff:.3g}" if e.max_abs_diff is not None else None)
    if p.kernel_times:
        what = "device" if p.kernel_times_device == "cuda" else "CPU"
        row("kernel profile", f"{_plural(p.kernel_times_calls, 'call')} under torch.profiler after the timed runs: "
                              f"{what} time per kernel in the Kernels tab")
    row("caches", ", ".join(f"{k} {v}" for k, v in p.caches.items()))
    row("reused compiled code", "yes" if p.reused_compiled_code else None)
    row("one-time start-up (not in first call)", fmt_seconds(p.one_time_s) if p.one_time_s is not None else None)
    row("trace logging in first call", fmt_seconds(p.trace_logging_s) if p.trace_logging_s is not None else None)
    row("report build", fmt_seconds(p.report_build_s) if p.report_build_s is not None else None)
    row("settings", settings_text(p))
    row("torch", p.torch_version)
    row("device", p.device)
    row("label", p.label)
    row("sweep point", ", ".join(f"{k}={v!r}" for k, v in p.params.items()) if p.params else None)
    for n in p.notes:
        row("note", n)
    row("error", p.error)
    return rows


_PHASE_COLORS = {
    "Dynamo tracing": "#4c78a8",
    "Dynamo guards": "#72b7b2",
    "AOTAutograd": "#f58518",
    "Inductor graph passes": "#e45756",
    "Inductor lowering": "#54a24b",
    "Inductor codegen": "#eeca3b",
    "Kernel compilation": "#b279a2",
    "Autotuning": "#ff9da6",
    "Cache lookups": "#9d755d",
    "GC": "#bab0ac",
    "Other": "#d3d3d3",
}


def _new_figure(w: float, h: float):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(w, h), dpi=100)


def _stack_axes(fig_w: float, left_in: float, right_in: float, panels: list) -> tuple:
    """A figure of vertically stacked axes laid out by hand (tight_layout draws the
    figure once more; this does not). ``panels``: plot heights in inches, each with
    room for a title above and an x label below."""
    top_in, bottom_in = 0.35, 0.5
    total = sum(h + top_in + bottom_in for h in panels)
    fig = _new_figure(fig_w, total)
    axes, y = [], total
    for h in panels:
        y -= top_in + h
        axes.append(fig.add_axes((left_in / fig_w, y / total, 1 - (left_in + right_in) / fig_w, h / total)))
        y -= bottom_in
    return fig, axes


def _label_width(labels) -> float:
    return 0.25 + 0.068 * max((len(str(x)) for x in labels), default=4)


def _fig_phases(r: "CompileReport"):
    """Compile time by phase (bars), above a timeline of each compile's top-level
    steps from the chromium events when the report has them."""
    ct = r.compile_time
    phases = [p for p in ct.phases if p.seconds > 0]
    events = [e for e in ct.events if isinstance(e.get("start_us"), (int, float)) and isinstance(e.get("dur_us"), (int, float))]
    deep = [e for e in events if e.get("depth", 0) <= _TIMELINE_DEPTH]
    lanes = sorted({str(e.get("compile_id")) for e in deep}, key=_cid_key)[:_TIMELINE_LANES]
    lane_labels = [f"compile {c}" for c in lanes]
    panels = ([0.26 * len(phases)] if phases else []) + ([0.36 * len(lanes) + 0.1] if lanes else [])
    if not panels:
        fig = _new_figure(6, 1)
        fig.text(0.5, 0.5, "no compile-time data", ha="center", va="center")
        return fig
    fig, axes = _stack_axes(10, _label_width([p.name for p in phases] + lane_labels), 2.6 if lanes else 0.7, panels)
    if phases:
        ax = axes.pop(0)
        names = [p.name for p in phases][::-1]
        secs = [p.seconds for p in phases][::-1]
        ax.barh(names, secs, color=[_PHASE_COLORS.get(n, "#888") for n in names])
        ax.set_xlabel("seconds", fontsize=8)
        ax.set_title(f"compile time {fmt_seconds(ct.total_s)} by phase", fontsize=10)
        for y, s in enumerate(secs):
            ax.text(s, y, " " + fmt_seconds(s), va="center", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_ylim(-0.6, len(names) - 0.4)
    if lanes:
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch

        ax = axes.pop(0)
        t0 = min(e["start_us"] for e in events)
        lane_of = {c: j for j, c in enumerate(lanes)}
        rows = _TIMELINE_DEPTH + 1
        weight = Counter()
        for e in deep:
            if str(e.get("compile_id")) in lane_of:
                weight[str(e.get("name", ""))] += e["dur_us"]
        top = [n for n, _ in weight.most_common(len(_PALETTE))]
        color_of = {n: _PALETTE[i] for i, n in enumerate(top)}
        polys, colors = [], []
        t_end = 0.0
        for e in deep:
            lane = lane_of.get(str(e.get("compile_id")))
            if lane is None:
                continue
            x0, w = (e["start_us"] - t0) / 1e6, e["dur_us"] / 1e6
            t_end = max(t_end, x0 + w)
            d = min(int(e.get("depth", 0)), _TIMELINE_DEPTH)
            y0 = lane - 0.42 + 0.84 * d / rows
            y1 = y0 + 0.84 / rows * 0.92
            name = str(e.get("name", ""))
            polys.append(((x0, y0), (x0 + w, y0), (x0 + w, y1), (x0, y1)))
            colors.append(color_of.get(name, "#d9d9d9"))
        ax.add_collection(PolyCollection(polys, facecolors=colors, edgecolors="none"))
        ax.set_xlim(0, t_end * 1.01 or 1)
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_yticks(range(len(lanes)), lane_labels)
        ax.set_xlabel("seconds since the first compile event", fontsize=8)
        n_all = len({str(e.get("compile_id")) for e in deep})
        more = f", first {_TIMELINE_LANES} of {n_all} compiles" if n_all > _TIMELINE_LANES else ""
        ax.set_title(f"timeline (events nested {rows} deep, outermost on top{more})", fontsize=10)
        ax.tick_params(labelsize=8)
        handles = [Patch(color=color_of[n], label=n) for n in top]
        if len(weight) > len(top):
            handles.append(Patch(color="#d9d9d9", label=f"{len(weight) - len(top)} other steps"))
        ax.legend(handles=handles, fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


_TIMELINE_DEPTH = 3
_TIMELINE_LANES = 24
_PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
            "#bab0ac", "#1f77b4", "#8c564b")


def _cid_key(text: str):
    from ..report.model import CompileId

    try:
        c = CompileId.parse(text)
        return (0, c.compiled_autograd_id or -1, c.frame_id, c.frame_compile_id)
    except ValueError:
        return (1, 0, 0, 0)


def _fig_runs(r: "CompileReport"):
    p = r.profile
    fig, (ax,) = _stack_axes(7, 0.7, 0.3, [2.2])
    comp = [t * 1e3 for t in p.run_times_s]
    eager = [t * 1e3 for t in p.eager.run_times_s] if p.eager is not None and p.eager.run_times_s else []
    vals = comp + eager
    lo, hi = min(vals), max(vals)
    rng = (lo, hi) if hi > lo else (lo * 0.95, hi * 1.05 + 1e-9)
    bins = 30 if hi > lo else 5
    ax.hist(comp, bins=bins, range=rng, alpha=0.7, histtype="stepfilled", color="#4c78a8",
            label=f"compiled (median {fmt_seconds(p.run_median_s)})")
    if eager:
        ax.hist(eager, bins=bins, range=rng, alpha=0.6, histtype="stepfilled", color="#f58518",
                label=f"eager (median {fmt_seconds(p.eager.run_median_s)})")
    if p.run_median_s is not None:
        ax.axvline(p.run_median_s * 1e3, color="#1f3f66", linestyle="--", linewidth=1)
    ax.set_xlabel("ms per call", fontsize=8)
    ax.set_ylabel("calls", fontsize=8)
    ax.set_title(f"run time, {len(comp)} timed calls" + (f" (eager: {len(eager)})" if eager else ""), fontsize=10)
    ax.legend(fontsize=8)
    ax.tick_params(labelsize=8)
    return fig


def _fig_memory(r: "CompileReport"):
    p = r.profile
    e = p.eager
    groups = []  # (label, [(bar label, bytes)])
    dev = [("compile", p.peak_device_bytes_compile), ("steady state", p.peak_device_bytes_run)]
    host = [("compile", p.peak_host_bytes_compile), ("steady state", p.peak_host_bytes_run)]
    if e is not None:
        dev.append(("eager", e.peak_device_bytes))
        host.append(("eager", e.peak_host_bytes))
    for name, bars in (("device", dev), ("host", host)):
        bars = [(b, v) for b, v in bars if v is not None]
        if bars:
            groups.append((name, bars))
    fig, axes = _stack_axes(7, 1.2, 0.9, [0.3 * len(b) for _, b in groups])
    colors = {"compile": "#f58518", "steady state": "#4c78a8", "eager": "#bab0ac"}
    for ax, (name, bars) in zip(axes, groups):
        bars = bars[::-1]
        labels = [b for b, _ in bars]
        vals = [v / 2**20 for _, v in bars]
        ax.barh(labels, vals, color=[colors[b] for b in labels])
        for y, (v, (_, raw)) in enumerate(zip(vals, bars)):
            ax.text(v, y, " " + fmt_bytes(raw), va="center", fontsize=8)
        ax.set_title(f"peak {name} memory: compiled (first call, steady state)" + (" vs eager" if e is not None else ""), fontsize=10)
        ax.set_xlabel("MiB", fontsize=8)
        ax.tick_params(labelsize=8)
    return fig


# -- Guards -----------------------------------------------------------------------
def _guards(r: "CompileReport") -> list[Block]:
    if not r.guards:
        return [Text("No guards were captured.", "note")]
    ordered = sorted(r.guards, key=lambda g: g.compile_id)
    rows = []
    for g in ordered:
        c = r.compile(g.compile_id)
        rows.append([str(g.compile_id), c.function if c else "", g.count])
    out: list[Block] = [Table(["compile", "function", "guards"], rows, sortable=True, title="Guards per compile")]
    for g in ordered:
        out.append(Code(f"compile {g.compile_id}: {_plural(g.count, 'guard')}", g.tree, "text"))
    return out
