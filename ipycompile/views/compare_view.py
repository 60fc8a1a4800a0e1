"""The view of a :class:`~ipycompile.analysis.compare.Comparison` (``%compile_diff``,
``ipycompile.compare``): its presentation, built once as the report's block vocabulary
(a :class:`~.blocks.ViewModel`: a title, notes and chips, then tabs), and rendered by the
shared renderers: :func:`.text.view_text` for ``str(comparison)`` and the terminal,
:func:`.html.render_view_model` for the notebook's HTML. The comparison holds values only;
every sentence and unit said about it is written here, and nothing is computed here that
the comparison does not hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..report.text import fmt_bytes, fmt_seconds, one_line, plural
from .blocks import Block, Chip, Place, Tab, Table, Text, ViewModel

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.compare import BreakDiff, CompareNote, Comparison, FunctionRef, MetricDelta, SettingDiff

__all__ = ["comparison_view_model", "comparison_text", "comparison_html", "comparison_bundle", "ComparisonView",
           "metric_text", "fmt_value", "function_label", "difference_text", "note_text"]

#: what the comparison's settings are called where they differ
_SETTING_NAMES = {"config": "torch config"}


# -- words ----------------------------------------------------------------------------
def fmt_value(value: Optional[float], unit: str) -> str:
    """A figure with its unit (``report.text``'s one way of writing seconds and bytes), signed."""
    if value is None:
        return "-"
    sign = "-" if value < 0 else ""
    v = abs(value)
    if unit == "s":
        return sign + fmt_seconds(v)
    if unit == "bytes":
        return sign + fmt_bytes(v)
    return f"{sign}{v:.2f}{unit}"


def _side(m: "MetricDelta", v: Optional[float], spread: Optional[float]) -> str:
    return fmt_value(v, m.unit) + (f" (IQR {fmt_value(spread, m.unit)})" if spread is not None else "")


def change_text(m: "MetricDelta") -> str:
    """``-0.40 ms (-33.3%), beyond the spread``; "" where one side is missing."""
    if m.delta is None:
        return ""
    text = ("+" if m.delta > 0 else "") + fmt_value(m.delta, m.unit)
    if m.ratio is not None:
        text += f" ({(m.ratio - 1) * 100:+.1f}%)"
    if m.beyond_spread is not None:
        text += ", beyond the spread" if m.beyond_spread else ", within the spread (noise)"
    return text


def metric_text(m: "MetricDelta") -> str:
    """``1.20 ms (IQR 0.05 ms) -> 0.80 ms (IQR 0.04 ms): -0.40 ms (-33.3%), beyond the spread``."""
    change = change_text(m)
    return f"{_side(m, m.a, m.spread_a)} -> {_side(m, m.b, m.spread_b)}" + (f": {change}" if change else "")


def function_label(f: "FunctionRef") -> str:
    """``f``, ``f (after a graph break)``, ``f (model.py)``."""
    text = f.name + (" (after a graph break)" if f.after_break else "")
    return text + (f" ({f.file.rsplit('/', 1)[-1]})" if f.file else "")


def _setting(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={x!r}" for k, x in sorted(v.items())) + "}" if v else "{}"
    return repr(v) if isinstance(v, str) else str(v)


def difference_text(d: "SettingDiff") -> str:
    """Why two runs are not comparable, one setting."""
    if d.setting == "torch":
        return f"torch {d.a} vs {d.b}"
    if d.setting == "device":
        return f"device {d.a} vs {d.b}"
    if d.setting == "profiled":
        profiled, capture = ("A", "B") if d.a else ("B", "A")
        return f"{profiled} is profiled (%%compile / run_cell), {capture} is a capture"
    if d.setting == "fresh":
        which = "A" if d.a else "B"
        return f"fresh caches: only {which} compiled from scratch (--fresh), so their compile times differ by design"
    return f"{_SETTING_NAMES.get(d.setting, d.setting)}: {_setting(d.a)} vs {_setting(d.b)}"


def note_text(n: "CompareNote") -> str:
    """What to keep in mind, in words."""
    who = n.run.upper()
    if n.kind == "unprofiled":
        return "neither run is profiled: no times or memory to compare (capture reports)"
    if n.kind == "warm_caches":
        return ("neither run used fresh caches: a compile can be faster from Inductor's caches "
                "(run with --fresh for honest compile times)")
    if n.kind == "reused":
        src = f" ({n.detail})" if n.detail else ""
        return f"{who} compiled nothing: it reused compiled code{src}; its breaks, graphs and kernels are those of that code"
    if n.kind == "raised":
        return f"{who} raised {n.detail}"
    return f"{n.kind}: {who} {n.detail}".strip()


def _counts(a: int, b: int) -> str:
    return f"A x{a}, B x{b}"


def _place(where: str, cell: Optional[int], line: Optional[int]) -> Place:
    return Place(where, cell, line)


def _yes(v: bool) -> str:
    return "yes" if v else "no"


# -- the view model -------------------------------------------------------------------
def header(c: "Comparison") -> list[Chip]:
    chips = [Chip("comparable" if c.comparable else "NOT comparable", not c.comparable, "comparable", c.comparable,
                  "; ".join(difference_text(d) for d in c.differences))]
    fixed, new, same = len(c.breaks_fixed), len(c.breaks_introduced), len(c.breaks_unchanged)
    chips.append(Chip(f"graph break sites: {fixed} fixed, {new} introduced, {same} unchanged", new > 0, "graph_breaks",
                      (fixed, new)))
    ra, rb = sum(d.a for d in c.recompiles), sum(d.b for d in c.recompiles)
    chips.append(Chip(f"recompiles {ra} → {rb}", rb > ra, "recompiles", (ra, rb)))
    if c.limit_hit != (False, False):
        chips.append(Chip(f"recompile limit hit: A {_yes(c.limit_hit[0])}, B {_yes(c.limit_hit[1])}", c.limit_hit[1],
                          "recompile_limit", c.limit_hit))
    if c.loops_fixed or c.loops_introduced:
        chips.append(Chip(f"unrolled loops: {len(c.loops_fixed)} fixed, {len(c.loops_introduced)} introduced",
                          bool(c.loops_introduced), "unrolled_loops", (len(c.loops_fixed), len(c.loops_introduced))))
    if c.failures != (0, 0):
        chips.append(Chip(f"failures {c.failures[0]} → {c.failures[1]}", c.failures[1] > c.failures[0], "failures",
                          c.failures))
    for name, key in (("first call (compile)", "compile_time"), ("run median", "run_time")):
        m = c.metric(name)
        if m is not None and m.delta is not None and m.ratio is not None:
            worse = m.delta > 0 and m.beyond_spread is not False
            chips.append(Chip(f"{name} {(m.ratio - 1) * 100:+.0f}% ({fmt_value(m.a, m.unit)} → {fmt_value(m.b, m.unit)})",
                              worse, key, m.delta))
    return chips


def _summary(c: "Comparison") -> list[Block]:
    out: list[Block] = []
    if c.differences:
        out.append(Text("Not comparable: the runs differ in what decides what torch compiles and how fast", "warn"))
        out.append(Table(["setting", "A", "B"],
                         [[_SETTING_NAMES.get(d.setting, d.setting), _setting(d.a), _setting(d.b)] for d in c.differences],
                         title="Settings that differ", headlines=[difference_text(d) for d in c.differences]))
    if c.metrics:
        out.append(Table(["measure", "A", "B", "change"],
                         [[m.name, _side(m, m.a, m.spread_a), _side(m, m.b, m.spread_b), change_text(m)] for m in c.metrics],
                         title="Times and memory", headlines=[f"{m.name}: {metric_text(m)}" for m in c.metrics]))
    if c.failures != (0, 0):
        out.append(Text(f"Failed compiles: {c.failures[0]} in A, {c.failures[1]} in B", "warn" if c.failures[1] else "plain"))
    if not out:
        out.append(Text("No times or memory in either run; nothing else differs here (see the other tabs).", "note"))
    return out


_STATUS = ("fixed", "introduced", "unchanged")


def _break_rows(c: "Comparison") -> list[tuple[str, "BreakDiff"]]:
    return [(s, d) for s, items in zip(_STATUS, (c.breaks_fixed, c.breaks_introduced, c.breaks_unchanged)) for d in items]


def _breaks(c: "Comparison") -> list[Block]:
    rows = _break_rows(c)
    if not rows:
        return [Text("No graph breaks in either run.", "note")]
    table = [[s, _place(d.where, d.cell, d.lineno), d.function, d.code, d.reason, d.count_a, d.count_b] for s, d in rows]
    heads = [f"{s}: {d.where} in {d.function}" + (f": {d.code}" if d.code else "") + f" -- {d.reason} "
             f"({_counts(d.count_a, d.count_b)})" for s, d in rows]
    return [Table(["status", "where", "function", "code", "reason", "A", "B"], table, sortable=True, headlines=heads)]


def _functions(c: "Comparison") -> list[Block]:
    out: list[Block] = []
    if c.recompiles:
        out.append(Table(["function", "recompiles A", "recompiles B"],
                         [[function_label(d.function), d.a, d.b] for d in c.recompiles], title="Recompiles",
                         headlines=[f"{function_label(d.function)}: {d.a} -> {d.b}" for d in c.recompiles]))
    else:
        out.append(Text("No recompiles in either run.", "note"))
    if c.limit_hit != (False, False):
        out.append(Text(f"Recompile limit hit: A {_yes(c.limit_hit[0])}, B {_yes(c.limit_hit[1])}", "warn"))
    if c.graphs:
        out.append(Table(["function", "graphs A", "graphs B", "ops A", "ops B"],
                         [[function_label(d.function), d.a, d.b, d.ops_a, d.ops_b] for d in c.graphs],
                         title="Dynamo graphs",
                         headlines=[f"{function_label(d.function)}: graphs {d.a} -> {d.b}, ops {d.ops_a} -> {d.ops_b}"
                                    for d in c.graphs]))
    loops = [("fixed", u) for u in c.loops_fixed] + [("introduced", u) for u in c.loops_introduced]
    if loops:
        out.append(Table(["status", "loop at", "unrolled"], [[s, _place(u.where, u.cell, u.lineno), u.repeats] for s, u in loops],
                         title="Unrolled loops",
                         headlines=[f"{s}: loop at {u.where} unrolled {plural(u.repeats, 'time')}" for s, u in loops]))
    return out


def _kernels(c: "Comparison") -> list[Block]:
    rows = [["added", k] for k in c.kernels_added] + [["removed", k] for k in c.kernels_removed]
    out: list[Block] = [Text(f"{len(c.kernels_added)} added, {len(c.kernels_removed)} removed, {c.kernels_kept} in both "
                             "(kernels matched by name, without the trailing counter)")]
    if rows:
        out.append(Table(["", "kernel"], rows, sortable=True))
    return out


def comparison_view_model(c: "Comparison") -> ViewModel:
    """The comparison's presentation: its title, whether the runs compare and what to keep in
    mind (the notes), the chips, then the tabs (built when first asked for)."""
    nb = len(c.breaks_fixed) + len(c.breaks_introduced) + len(c.breaks_unchanged)
    nk = len(c.kernels_added) + len(c.kernels_removed) + c.kernels_kept
    verdict = ("comparable: same torch, device and settings" if c.comparable
               else "NOT comparable: " + "; ".join(difference_text(d) for d in c.differences))
    return ViewModel(header(c), [
        Tab("summary", "Comparison", lambda: _summary(c), None, not c.comparable),
        Tab("graph_breaks", f"Graph break sites ({nb})", lambda: _breaks(c), nb, bool(c.breaks_introduced)),
        Tab("recompiles", "Recompiles and graphs", lambda: _functions(c), None, c.limit_hit[1]),
        Tab("kernels", f"Kernels (+{len(c.kernels_added)} / -{len(c.kernels_removed)})", lambda: _kernels(c), nk),
    ], None, [verdict] + [f"note: {note_text(n)}" for n in c.notes],
        title=f"ipycompile comparison: A = {one_line(c.a)}, B = {one_line(c.b)}")


def comparison_text(c: "Comparison") -> str:
    """``str(comparison)``: the view model as text (:func:`.text.view_text`)."""
    from .plain_text import view_text

    return view_text(comparison_view_model(c))


def comparison_html(c: "Comparison") -> str:
    from .html import render_view_model

    return render_view_model(comparison_view_model(c))


def comparison_bundle(c: "Comparison") -> dict[str, str]:
    """What a notebook shows for a comparison: its HTML and its text, from one view model."""
    from .html import render_view_model
    from .plain_text import view_text

    vm = comparison_view_model(c)
    bundle = {"text/plain": view_text(vm)}
    from . import _shell_shows_html

    if _shell_shows_html():
        bundle["text/html"] = render_view_model(vm)
    return bundle


class ComparisonView:
    """What ``%compile_diff`` displays: the comparison's text and HTML (:func:`comparison_bundle`)."""

    def __init__(self, comparison: "Comparison") -> None:
        self.comparison = comparison

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return comparison_bundle(self.comparison)

    def __repr__(self) -> str:
        return comparison_text(self.comparison)
