"""The view of a :class:`~ipycompile.analysis.ranks.RankDivergence` (``%compile_trace DIR``,
``ipycompile.load_trace(DIR)``): where the ranks of a job compiled differently, as header
chips and tabs in the report's block vocabulary, rendered by the static HTML renderer.
It computes nothing: every figure is the divergence's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .blocks import Block, Chip, Code, Tab, Table, Text, ViewModel

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.ranks import RankDivergence

__all__ = ["ranks_view_model", "ranks_html", "RanksView"]


def _ranks(rs: list[int]) -> str:
    from ..report.text import fmt_ranks

    return fmt_ranks(rs)


def header(d: "RankDivergence") -> list[Chip]:
    chips = [Chip(f"{len(d.ranks)} ranks", False, "ranks", len(d.ranks)),
             Chip(f"{len(d.behaviours)} behaviours" if d.diverged else "all ranks compiled alike", d.diverged,
                  "behaviours", len(d.behaviours))]
    if d.compiles:
        chips.append(Chip(f"{len(d.compiles)} compiles on some ranks only", True, "compiles", len(d.compiles)))
    if d.graph_breaks:
        chips.append(Chip(f"{len(d.graph_breaks)} graph-break sites differ", True, "graph_breaks", len(d.graph_breaks)))
    if d.collective_breaks:
        chips.append(Chip(f"{len(d.collective_breaks)} breaks at collectives", True, "collective_breaks",
                          len(d.collective_breaks)))
    t = d.compile_time
    if t is not None and len(t.per_rank) > 1:
        chips.append(Chip(f"slowest rank {t.slowest}: {t.ratio:.2f}x the median compile time", t.ratio > 1.2,
                          "compile_time", t.ratio))
    if d.unreadable:
        chips.append(Chip(f"unreadable events on {len(d.unreadable)} ranks", True, "unreadable", sum(d.unreadable.values())))
    return chips


def _summary(d: "RankDivergence") -> list[Block]:
    out: list[Block] = []
    if d.behaviours:
        out.append(Table(["ranks", "how many", "behaviour"], [[_ranks(g.ranks), len(g.ranks), g.text] for g in d.behaviours],
                         title="Ranks grouped by how they compiled (largest group first)"))
    for title, groups in (("Recompiles differ", d.recompiles), ("Failures differ", d.failures), ("Caches differ", d.cache)):
        if groups:
            out.append(Table(["ranks", "what"], [[_ranks(g.ranks), g.text] for g in groups], title=title))
    if d.compile_time is not None:
        out.append(Text("Compile time: " + d.compile_time.describe().replace("\n", " ")))
    out.append(Code("Text", str(d), "text"))
    return out


def _counts_table(items, ranks: list[int], title: str) -> list[Block]:
    rows = []
    for c in items:
        rows.append([c.what, *[c.counts.get(r, 0) for r in ranks]])
    return [Table(["site", *[f"rank {r}" for r in ranks]], rows, sortable=True, title=title)] if rows else []


def _compiles(d: "RankDivergence") -> list[Block]:
    if not d.compiles and not d.compile_ids:
        return [Text("Every rank made the same compiles.", "note")]
    out: list[Block] = []
    if d.compiles:
        out.append(Table(["compile", "on ranks", "compile ids"],
                         [[p.what, _ranks(p.ranks), ", ".join(p.compile_ids)] for p in d.compiles],
                         title="Compiles on some ranks only (matched by function and line: ids are numbered per process)"))
    if d.compile_ids:
        out.append(Table(["compile ids", "on ranks"], [[", ".join(p.compile_ids) or p.what, _ranks(p.ranks)]
                                                       for p in d.compile_ids],
                         title="Compile ids not on every rank (tlparse's check)"))
    return out


def _breaks(d: "RankDivergence") -> list[Block]:
    ranks = d.ranks if len(d.ranks) <= 16 else []  # one column per rank while it fits
    out = []
    if ranks:
        out += _counts_table(d.graph_breaks, ranks, "Graph-break sites hit a different number of times")
        out += _counts_table(d.collective_breaks, ranks, "Graph breaks at collectives (every rank waits for the slowest)")
    else:
        out += [Text(c.describe()) for c in d.graph_breaks + d.collective_breaks]
    return out or [Text("Every rank broke its graphs at the same sites, the same number of times.", "note")]


def _times(d: "RankDivergence") -> list[Block]:
    t = d.compile_time
    if t is None:
        return [Text("No compile time recorded.", "note")]
    rows = [[r, round(s, 3), round(s / t.median_s, 2) if t.median_s else ""] for r, s in sorted(t.per_rank.items())]
    out: list[Block] = [Text(t.describe().replace("\n", " ")),
                        Table(["rank", "compile s", "x median"], rows, sortable=True, title="Compile time per rank")]
    if t.spread_compile and t.spread_times:
        out.append(Table(["rank", "s"], [[r, round(s, 3)] for r, s in sorted(t.spread_times.items())],
                         sortable=True, title=f"The compile that differs most: {t.spread_compile}"))
    return out


#: How many entries each list of the text shows (all are in the values).
SHOWN = 8


def _listing(items: list, fmt) -> list[str]:
    """The first SHOWN items, formatted and indented, then how many were left out."""
    out = [f"  {fmt(x)}" for x in items[:SHOWN]]
    if len(items) > SHOWN:
        out.append(f"  ... and {len(items) - SHOWN} more")
    return out


def ranks_text(d: "RankDivergence") -> str:
    """The divergence as a short text (one screen): ``str(d)``, ``python -m ipycompile report DIR``."""
    from ..analysis.ranks import CountDifference, cid_key, ranks_word, short_ranks
    from ..report.text import printable

    all_ranks = d.ranks
    lines = []
    head = f"{len(all_ranks)} ranks ({short_ranks(all_ranks)})"
    if not d.diverged:
        lines.append(f"{head} compiled alike: the same compile ids, graph breaks, recompiles, caches and failures")
    else:
        lines.append(f"{head} diverge: {len(d.behaviours)} behaviours")
        lines += _listing(d.behaviours, lambda g: f"{ranks_word(g.ranks)} ({len(g.ranks)}): {g.text}")
    if d.compiles:
        lines.append("Compiles on some ranks only (matched by function and line; ids are numbered per process):")
        lines += _listing(d.compiles, lambda p: p.describe(all_ranks))
    if d.compile_ids:
        ids = sorted({cid for p in d.compile_ids for cid in p.compile_ids}, key=cid_key)
        shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(f"Compile ids not on every rank (tlparse's check): {shown}")
    if d.graph_breaks:
        lines.append("Graph breaks that differ:")
        lines += _listing(d.graph_breaks, CountDifference.describe)
    if d.ddp_alike:
        lines.append(f"DDP graph splits (not graph breaks), alike on every rank: {d.ddp_alike}")
    for title, groups in (("Recompiles", d.recompiles), ("Failures", d.failures), ("Caches", d.cache),
                          ("DDP graph splits", d.ddp_splits)):
        if groups:
            lines.append(f"{title} differ:")
            lines += _listing(groups, lambda g: f"{ranks_word(g.ranks)}: {g.text}")
    if d.compile_time is not None:
        lines.append("Compile time: " + d.compile_time.describe())
    if d.collective_breaks:
        lines.append("Graph breaks at collectives (every rank waits for the slowest one):")
        lines += _listing(d.collective_breaks, CountDifference.describe)
    if d.missing:
        lines.append("Ranks not compared, or compared as far as they got:")
        lines += _listing(sorted(d.missing.items()), lambda kv: f"rank {kv[0]}: {kv[1]}")
    if d.unreadable:
        lines.append("Unreadable events skipped: " + ", ".join(f"rank {r}: {n}" for r, n in sorted(d.unreadable.items())))
    return printable("\n".join(lines))  # reasons and names come from traces: escaped


def ranks_view_model(d: "RankDivergence") -> ViewModel:
    nb = len(d.graph_breaks) + len(d.collective_breaks)
    return ViewModel(header(d), [
        Tab("summary", "Ranks", lambda: _summary(d), None, d.diverged),
        Tab("compiles", f"Compiles ({len(d.compiles)})", lambda: _compiles(d), len(d.compiles), bool(d.compiles)),
        Tab("graph_breaks", f"Graph breaks ({nb})", lambda: _breaks(d), nb, nb > 0),
        Tab("compile_time", "Compile time", lambda: _times(d)),
    ])


def ranks_html(d: "RankDivergence") -> str:
    from .html import COMPACT, render_view_model

    return render_view_model(ranks_view_model(d), limits=COMPACT)


def ranks_page(reports, d: "RankDivergence") -> str:
    """One page: the ranks' divergence (this view, every detail), then the full report of one rank
    of each behaviour (the report's view, :mod:`.html`)."""
    import html as htmllib
    import os

    from ..report.files import REPORT_MARKER
    from .html import render_html, render_view_model

    e = htmllib.escape
    name = os.path.basename(os.path.normpath(reports.path))
    parts = ['<!DOCTYPE html>\n<html><head><meta charset="utf-8">' + REPORT_MARKER + '<meta name="color-scheme" content="light dark">',
             f"<title>ipycompile: {e(name)}</title></head><body class=\"ipyc standalone\">",
             f"<h2>{e(reports.path)}</h2>", f'<pre>{e(str(reports))}</pre>', render_view_model(ranks_view_model(d))]
    for group in d.behaviours or []:
        r = group.ranks[0]
        more = ", ".join(map(str, group.ranks[1:6])) + (" ..." if len(group.ranks) > 6 else "")
        who = f"rank {r}" + (f" (as ranks {more})" if len(group.ranks) > 1 else "")
        parts.append(f"<h3>{e(who)}: {e(group.text)}</h3>")
        parts.append(render_html(reports[r]))
    parts.append("</body></html>\n")
    return "\n".join(parts)


class RanksView:
    """What ``%compile_trace DIR`` displays: the divergence's text and its HTML."""

    def __init__(self, divergence: "RankDivergence") -> None:
        self.divergence = divergence

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self.divergence), "text/html": ranks_html(self.divergence)}

    def __repr__(self) -> str:
        return str(self.divergence)
