"""The report's presentation, built once as plain data: one view-model, two renderings.

:func:`view_model` turns a :class:`~ipycompile.report.CompileReport` into a
:class:`ViewModel`: a header strip of :class:`Chip` s and a list of :class:`Tab` s
whose content (a list of blocks, :mod:`.blocks`) is built lazily, on first use, by
the builders in :mod:`.tabs`. The static HTML rendering (:mod:`.html`) and the
ipywidgets view (:mod:`.widget`) both render this and nothing else, so neither can
show a fact the other cannot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..report.summary import fmt_bytes, fmt_seconds, limit_lines
from . import tabs as T
from .blocks import TAB_KEYS, Block, Chip, Choice, Code, Figure, Tab, Table, Text, TreeNode, ViewModel, figure_png, sort_rows
from .source import SOURCE_CONTEXT
from ..report.summary import plural
from .tabs import gb_url

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["Chip", "Text", "Table", "Code", "Figure", "TreeNode", "Choice", "Block", "Tab", "ViewModel", "TAB_KEYS",
           "view_model", "header", "sort_rows", "figure_png", "gb_url", "SOURCE_CONTEXT"]


# -- header ---------------------------------------------------------------------
def header(report: "CompileReport") -> list[Chip]:
    r = report
    p = r.profile
    chips: list[Chip] = []
    add = chips.append
    if r.compiled_nothing:
        text = "reused compiled code" if p is not None and p.reused_compiled_code else "nothing compiled"
        if r.reused_from:
            text += f" (diagnosis from {r.reused_from})"
        add(Chip(text, False, "status", None, "nothing was compiled in this run" if r.reused_from else ""))
    for line in limit_lines(r):
        add(Chip(line.replace("RECOMPILE LIMIT HIT", "recompile limit hit"), True, "recompile_limit", None, line))
    graphs = sum(1 for g in r.graphs if g.stage == "dynamo")
    add(Chip(plural(graphs, "graph"), False, "graphs", graphs))
    nb = r.graph_break_count
    add(Chip(plural(nb, "graph break"), nb > 0, "graph_breaks", nb,
             f"{len(r.graph_breaks)} site(s)" if r.graph_breaks else ""))
    nr = len(r.recompiles)
    limit = any(rc.limit_hit for rc in r.recompiles)
    add(Chip(plural(nr, "recompile") + (" (limit hit)" if limit else ""), nr > 0 or limit, "recompiles", nr))
    if r.unrolled_loops:
        add(Chip(plural(len(r.unrolled_loops), "unrolled loop"), True, "unrolled_loops", len(r.unrolled_loops),
                 "; ".join(u.suggestion.title for u in r.unrolled_loops if u.suggestion)))
    generated = sum(1 for k in r.kernels if k.backend != "extern")
    extern = len(r.kernels) - generated
    add(Chip(f"{plural(len(r.kernels), 'kernel')} ({generated} generated / {extern} extern)", False, "kernels",
             len(r.kernels)))
    if r.failures:
        add(Chip(plural(len(r.failures), "failure"), True, "failures", len(r.failures)))
    eager = r.ran_without_compiling
    if eager:
        add(Chip(f"ran without compiling: {plural(len(eager), 'frame')}", False, "ran_without_compiling", len(eager),
                 "torch could not compile these frames and ran them as plain Python: "
                 + ", ".join(sorted({c.function for c in eager}))))
    compile_s = p.compile_s if p is not None and p.compile_s is not None else (r.compile_time.total_s or None)
    if compile_s is not None:
        what = "first call" if p is not None and p.compile_s is not None else "compile"
        add(Chip(f"{what} {fmt_seconds(compile_s)}", False, "compile_time", compile_s))
    if p is not None:
        if p.run_median_s is not None:
            noisy = p.noisy("run time")
            add(Chip(f"run {fmt_seconds(p.run_median_s)} median" + (" (noisy)" if noisy else ""), bool(noisy),
                     "run_time", p.run_median_s, noisy or f"{p.runs} runs, IQR {fmt_seconds(p.run_iqr_s)}"))
        e = p.eager
        if e is not None:
            noisy = p.noisy("speedup vs eager")
            mark = " (noisy)" if noisy else ""
            if e.speedup is not None:
                ci = (f", 95 % interval {e.speedup_ci95[0]:.2f}x to {e.speedup_ci95[1]:.2f}x over {e.pairs} pairs"
                      if e.speedup_ci95 else "")
                add(Chip(f"{e.speedup:.2f}x vs eager{mark}", e.speedup < 1 or bool(noisy), "speedup", e.speedup,
                         noisy or f"eager median {fmt_seconds(e.run_median_s)}{ci}"))
            if e.run_median_s is not None or e.speedup is not None:
                if e.break_even_calls is not None:
                    add(Chip(f"break-even after {e.break_even_calls} calls{mark}", bool(noisy), "break_even",
                             e.break_even_calls, noisy))
                else:
                    add(Chip(f"never breaks even{mark}", True, "break_even", None, noisy))
            if e.outputs_match is False:
                add(Chip("outputs differ from eager", True, "outputs", False, e.message))
        if p.peak_device_bytes is not None:
            add(Chip(f"device peak {fmt_bytes(p.peak_device_bytes)}", False, "device_memory", p.peak_device_bytes))
        if p.peak_host_added_bytes is not None:  # the cell's own; the process's RSS is in the Profile tab
            add(Chip(f"host +{fmt_bytes(p.peak_host_added_bytes)} at peak (over the process's "
                     f"{fmt_bytes(p.memory.host_before_bytes)} before the cell)", False, "host_memory",
                     p.peak_host_added_bytes))
        elif p.peak_host_bytes is not None:  # reports without the RSS before the cell
            add(Chip(f"host peak {fmt_bytes(p.peak_host_bytes)} (process RSS)", False, "host_memory", p.peak_host_bytes))
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
    tab_list = [
        Tab("summary", "Summary", lambda: T.summary_tab(r), None, bool(r.failures)),
        Tab("graph_breaks", f"Graph breaks ({nb})", lambda: T.graph_breaks_tab(r), nb, nb > 0),
        Tab("recompiles", f"Recompiles ({nr})", lambda: T.recompiles_tab(r), nr, nr > 0),
        Tab("graphs", f"Graphs ({graphs})", lambda: T.graphs_tab(r), graphs),
        Tab("kernels", f"Kernels ({len(r.kernels)})", lambda: T.kernels_tab(r), len(r.kernels)),
        Tab("control_flow", f"Control flow ({cf})", lambda: T.control_flow_tab(r), cf),
        Tab("profile", "Profile", lambda: T.profile_tab(r)),
        Tab("guards", f"Guards ({sum(g.count for g in r.guards)})", lambda: T.guards_tab(r),
            sum(g.count for g in r.guards)),
    ]
    return ViewModel(header(r), tab_list)


def _count_nodes(nodes) -> int:
    return sum(1 + _count_nodes(n.children) for n in nodes)
