"""The view of a :class:`~ipycompile.analysis.compare.Comparison` (``%compile_diff``,
``ipycompile.compare``): a header of chips and tabs, in the report's block vocabulary,
rendered by the report's static HTML renderer. It computes nothing: every figure is
the comparison's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .blocks import Block, Chip, Code, Tab, Table, Text, ViewModel

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.compare import Comparison

__all__ = ["comparison_view_model", "comparison_html", "ComparisonView"]


def header(c: "Comparison") -> list[Chip]:
    from ..analysis.compare import fmt

    chips = [Chip("comparable" if c.comparable else "NOT comparable", not c.comparable, "comparable", c.comparable,
                  "; ".join(c.differences))]
    fixed, new = len(c.breaks_fixed), len(c.breaks_introduced)
    chips.append(Chip(f"break sites: {fixed} fixed, {new} introduced", new > 0, "graph_breaks", (fixed, new)))
    ra, rb = sum(d.a for d in c.recompiles), sum(d.b for d in c.recompiles)
    chips.append(Chip(f"recompiles {ra} → {rb}", rb > ra, "recompiles", (ra, rb)))
    if c.loops_fixed or c.loops_introduced:
        chips.append(Chip(f"unrolled loops: {len(c.loops_fixed)} fixed, {len(c.loops_introduced)} introduced",
                          bool(c.loops_introduced), "unrolled_loops"))
    for name, key in (("first call (compile)", "compile_time"), ("run median", "run_time")):
        m = c.metric(name)
        if m is not None and m.delta is not None and m.ratio is not None:
            worse = m.delta > 0 and m.beyond_spread is not False
            chips.append(Chip(f"{name} {(m.ratio - 1) * 100:+.0f}% ({fmt(m.a, m.unit)} → {fmt(m.b, m.unit)})",
                              worse, key, m.delta))
    return chips


def _summary(c: "Comparison") -> list[Block]:
    from ..analysis.compare import metric_text

    out: list[Block] = [Text(f"A = {c.a}, B = {c.b}", "heading")]
    if not c.comparable:
        out.append(Text("Not comparable: " + "; ".join(c.differences), "warn"))
    out += [Text(n, "note") for n in c.notes]
    if c.metrics:
        out.append(Table(["measure", "A → B"], [[m.name, metric_text(m)] for m in c.metrics], title="Times and memory"))
    out.append(Code("Text", str(c), "text"))
    return out


def _breaks(c: "Comparison") -> list[Block]:
    rows = []
    for status, items in (("fixed", c.breaks_fixed), ("introduced", c.breaks_introduced), ("unchanged", c.breaks_unchanged)):
        rows += [[status, d.where, d.function, d.code, d.reason, d.count_a, d.count_b] for d in items]
    if not rows:
        return [Text("No graph breaks in either run.", "note")]
    return [Table(["status", "where", "function", "code", "reason", "A", "B"], rows, sortable=True)]


def _functions(c: "Comparison") -> list[Block]:
    out: list[Block] = []
    if c.recompiles:
        out.append(Table(["function", "recompiles A", "recompiles B"], [[d.function, d.a, d.b] for d in c.recompiles],
                         title="Recompiles"))
    else:
        out.append(Text("No recompiles in either run.", "note"))
    if c.limit_hit != (False, False):
        out.append(Text(f"Recompile limit hit: A {'yes' if c.limit_hit[0] else 'no'}, B {'yes' if c.limit_hit[1] else 'no'}",
                        "warn"))
    if c.graphs:
        out.append(Table(["function", "graphs A", "graphs B", "ops A", "ops B"],
                         [[d.function, d.a, d.b, d.ops_a, d.ops_b] for d in c.graphs], title="Dynamo graphs"))
    for title, items in (("Unrolled loops fixed", c.loops_fixed), ("Unrolled loops introduced", c.loops_introduced)):
        if items:
            out.append(Table(["loop"], [[x] for x in items], title=title))
    return out


def _kernels(c: "Comparison") -> list[Block]:
    rows = [["added", k] for k in c.kernels_added] + [["removed", k] for k in c.kernels_removed]
    out: list[Block] = [Text(f"{len(c.kernels_added)} added, {len(c.kernels_removed)} removed, {c.kernels_kept} in both "
                             "(kernels matched by name, without the trailing counter)")]
    if rows:
        out.append(Table(["", "kernel"], rows, sortable=True))
    return out


def comparison_view_model(c: "Comparison") -> ViewModel:
    nb = len(c.breaks_fixed) + len(c.breaks_introduced) + len(c.breaks_unchanged)
    return ViewModel(header(c), [
        Tab("summary", "Comparison", lambda: _summary(c), None, not c.comparable),
        Tab("graph_breaks", f"Graph break sites ({nb})", lambda: _breaks(c), nb, bool(c.breaks_introduced)),
        Tab("recompiles", "Recompiles and graphs", lambda: _functions(c)),
        Tab("kernels", f"Kernels (+{len(c.kernels_added)} / -{len(c.kernels_removed)})", lambda: _kernels(c)),
    ])


def comparison_html(c: "Comparison") -> str:
    from .html import render_view_model

    return render_view_model(comparison_view_model(c))


class ComparisonView:
    """What ``%compile_diff`` displays: the comparison's text and its HTML."""

    def __init__(self, comparison: "Comparison") -> None:
        self.comparison = comparison

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self.comparison), "text/html": comparison_html(self.comparison)}

    def __repr__(self) -> str:
        return str(self.comparison)
