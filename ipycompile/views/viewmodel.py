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

from ..report.text import plural
from .phrases import Hints, limit_lines, origin_lines
from . import tabs as T
from .blocks import TAB_KEYS, Block, Chip, Choice, Code, Figure, Tab, Table, Text, TreeNode, ViewModel, figure_png, sort_rows
from .excerpts import SOURCE_CONTEXT
from .tabs import gb_url
from .first_screen import Problem, headline, problems

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["Chip", "Text", "Table", "Code", "Figure", "TreeNode", "Choice", "Block", "Tab", "ViewModel", "TAB_KEYS",
           "view_model", "header", "sort_rows", "figure_png", "gb_url", "SOURCE_CONTEXT"]


# -- header ---------------------------------------------------------------------
def header(report: "CompileReport") -> list[Chip]:
    """The strip under the problems: what happened (reused code, the recompile limit), the
    headline numbers (:func:`.first_screen.headline`), then the counts."""
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
        add(Chip(line, True, "recompile_limit", None, line))
    chips += headline(r)
    graphs = dynamo_graphs(r)
    run = r.eager_run
    if run is not None and run.kind == "nothing" and run.cached:
        add(Chip(f"{plural(graphs, 'graph')} compiled in this run (cached compiled code ran too)", True, "graphs",
                 graphs, run.title))
    elif run is not None and run.kind == "nothing":
        add(Chip(f"{plural(graphs, 'graph')}: nothing was compiled; the model ran eagerly", True, "graphs", graphs,
                 run.title))
    elif run is not None:
        add(Chip(f"{plural(graphs, 'graph')}: most of the code ran eagerly", True, "graphs", graphs, run.title))
    else:
        add(Chip(plural(graphs, "graph"), False, "graphs", graphs,
                 "graphs Dynamo captured (one per compiled region); the Graphs tab shows each at every stage"))
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
    if r.origin is not None and r.origin.summary:  # a first pass over a log: kernels are in the events it skipped
        add(Chip("kernels not read", False, "kernels", None, "a first-pass summary reads no generated code"))
    else:
        add(Chip(f"{plural(len(r.kernels), 'kernel')} ({generated} generated / {extern} extern)", False, "kernels",
                 len(r.kernels)))
    if r.failures:
        add(Chip(plural(len(r.failures), "failure"), True, "failures", len(r.failures)))
    eager = r.ran_without_compiling
    if eager:
        add(Chip(f"ran without compiling: {plural(len(eager), 'frame')}", False, "ran_without_compiling", len(eager),
                 "torch could not compile these frames and ran them as plain Python: "
                 + ", ".join(sorted({c.function for c in eager}))))
    return chips


def dynamo_graphs(r: "CompileReport") -> int:
    """Graphs Dynamo captured: what the "graphs" chip and the Graphs tab both count (the tab
    shows each of them at every later stage too)."""
    return sum(1 for g in r.graphs if g.stage == "dynamo")


# -- the view-model -------------------------------------------------------------
def view_model(report: "CompileReport", hints: Hints = Hints()) -> ViewModel:
    """The first screen (problems and header, built now) and the tabs (built when first
    asked for). ``hints`` words where the rest is, for where the report is shown."""
    r = report
    nb, nr = r.graph_break_count, len(r.recompiles)
    graphs = dynamo_graphs(r)
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
    return ViewModel(header(r), tab_list, problems(r), origin_lines(r, hints))


def _count_nodes(nodes) -> int:
    return sum(1 + _count_nodes(n.children) for n in nodes)
