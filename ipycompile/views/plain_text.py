"""The plain-text rendering of a report's view model: ``str(report)``, ``report.summary()``,
the terminal and the command line.

It lays out :class:`~.blocks.ViewModel` (the first screen's problems and chips, built by
:mod:`.first_screen` and :mod:`.viewmodel`, then every tab's blocks) as lines, and
computes nothing: a table row is its ``headline`` when the view model gives one (its
details indented below), else its cells; one fact a line, not wrapped (a terminal wraps;
``grep`` finds it whole); long code and long tables are cut with a note
of where the rest is (the medium's limit, as the compact HTML has its own). Every line
goes through :func:`ipycompile.report.text.printable` (control characters escaped).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Optional

from ..report.text import capped, printable
from .blocks import Choice, Code, Figure, Table, Text, TreeNode, ViewModel
from .phrases import CLI_HINTS, Hints

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["render_text", "render_tabs", "view_text", "render_blocks", "report_text", "MORE_API", "MORE_CLI", "MORE_BELOW", "CLI_HINTS"]

#: What the first screen's last line says about where the rest is: the Python API's words, the command line's.
MORE_API = "everything: report.summary(), report.to_html(path), or the report widget's tabs"
MORE_CLI = "everything: -o PAGE.html (the whole report), --json FILE"
#: what ``str(report)``'s first screen says of the rest: it follows
MORE_BELOW = "the whole report follows; report.to_html(path) writes it as a page"

#: The text's own limits (a terminal is no place for a 2,000-line graph): lines of one code
#: block, rows of one table. The HTML page and the widget show everything.
CODE_LINES = 12
TABLE_ROWS = 40
WIDTH = 100


def render_text(vm: ViewModel, *, more: str = MORE_API, problems: int = 8, width: int = WIDTH) -> str:
    """The first screen as text: what to fix (at most ``problems``, most costly first), the
    chips on one line each group, and where the rest is."""
    import textwrap

    def wrap(text: str, **kw) -> list[str]:  # a field of a megabyte must not make ten thousand lines
        return textwrap.wrap(capped(text, where="report.summary() shows it whole"), width, **kw)

    lines: list[str] = []
    every = vm.problems or []
    shown = every[:problems]
    if shown:
        severe = any(p.severe for p in every)
        lines.append(f"ipycompile: {'what to fix' if severe else 'to consider'} ({len(every)}, most costly first)")
    else:
        lines.append("ipycompile: nothing to fix (no graph breaks, recompiles or failures)")
    lines += [capped(n, where="report.summary() shows it whole") for n in vm.notes]
    for i, p in enumerate(shown, 1):
        cost = f" ({p.cost})" if p.cost else ""
        lines += wrap(f"{i}. {p.title}{cost}", subsequent_indent="   ")
        if p.where:
            lines.append(capped(f"   at {p.where}" + (f": {p.code}" if p.code else ""), where="report.summary() shows it whole"))
        if p.fix:
            conf = f" ({p.confidence} confidence)" if p.confidence else ""
            lines += wrap(f"{(p.fix_label or 'fix').lower()}{conf}: {p.fix}", initial_indent="   ",
                          subsequent_indent="     ")
            lines += [capped(f"   | {ln}", where="report.summary() shows it whole") for ln in p.fix_code.splitlines()]
            if p.check:
                lines += wrap(f"({p.check})", initial_indent="   ", subsequent_indent="    ")
        elif p.note:
            lines += wrap(p.note, initial_indent="   ", subsequent_indent="   ")
    if len(every) > len(shown):
        lines.append(f"   ... and {len(every) - len(shown)} more")
    chips = [c.text for c in vm.header]
    if chips:
        lines += textwrap.wrap(" | ".join(chips), width)
    lines.append(f"({more})")
    return printable("\n".join(lines))


def render_tabs(vm: ViewModel, width: int = WIDTH) -> str:
    """Every tab with something in it (a tab that counts nothing is left out), its title
    underlined, then its blocks."""
    out: list[str] = []
    for tab in vm.tabs:
        if tab.count == 0:
            continue
        lines: list[str] = []
        _blocks(tab.blocks(), lines, "", width)
        if not lines:
            continue
        out += ["", tab.title, "-" * len(tab.title), *lines]
    return printable("\n".join(out).lstrip("\n"))


def view_text(vm: ViewModel, width: int = WIDTH) -> str:
    """A view that is not one report's (a comparison of two runs): its title, its notes, its
    chips, then every tab with something in it."""
    lines = [vm.title] if vm.title else []
    lines += [capped(n, where="the HTML view shows it whole") for n in vm.notes]
    lines += textwrap.wrap(" | ".join(c.text for c in vm.header), width)
    tabs = render_tabs(vm, width)
    return printable("\n".join(lines) + ("\n\n" + tabs if tabs else ""))


def render_blocks(blocks, width: int = WIDTH) -> str:
    """A list of blocks (a tab's, a row's details) as text."""
    out: list[str] = []
    _blocks(blocks, out, "", width)
    return printable("\n".join(out))


def _wrap(text: str, indent: str, width: int, hang: str = "  ") -> list[str]:
    """``text`` after ``indent``, one line a paragraph, not wrapped: the terminal wraps, and a
    fact stays on one line for ``grep`` (the first screen, read first, is wrapped)."""
    under = " " * len(indent) + hang
    return [(indent if i == 0 else under) + para if para else indent.rstrip()
            for i, para in enumerate(text.split("\n"))]


def _blocks(blocks, out: list[str], indent: str, width: int) -> None:
    for b in blocks:
        _block(b, out, indent, width)


def _block(b, out: list[str], indent: str, width: int) -> None:
    if isinstance(b, Text):
        text = f"{b.text} ({b.url})" if b.url else b.text
        if b.kind == "heading":
            out.append("")
        out += _wrap(("** " + text + " **") if b.kind == "warn" and not indent else text, indent, width)
    elif isinstance(b, Code):
        _code(b, out, indent)
    elif isinstance(b, Table):
        _table(b, out, indent, width)
    elif isinstance(b, TreeNode):
        out.append(f"{indent}{b.label}")
        _blocks(b.blocks, out, indent + "  ", width)
        _blocks(b.children, out, indent + "  ", width)
    elif isinstance(b, Choice):
        key = b.default if b.default in b.options else next(iter(b.options), None)
        if key is not None:
            others = len(b.options) - 1
            more = f" (one of {len(b.options)}; the HTML report has the other {others})" if others else ""
            out.append(f"{indent}{b.label}: {key}{more}")
            _blocks(b.options[key], out, indent + "  ", width)
    elif isinstance(b, Figure):
        out.append(f"{indent}[figure: {b.title}: report.to_html(path) draws it]")
    else:  # a block kind this view does not know: show it, do not drop it
        out.append(f"{indent}{b}")


def _code(b: Code, out: list[str], indent: str) -> None:
    if b.title:
        out.append(f"{indent}{b.title}:")
    lines = b.code.splitlines()
    out += [f"{indent}  | {ln}" for ln in lines[:CODE_LINES]]
    if len(lines) > CODE_LINES:
        out.append(f"{indent}  | ... ({len(lines) - CODE_LINES} more lines: report.to_html(path) shows them)")


def _cell(v) -> str:
    return "" if v is None else str(v)


def _table(t: Table, out: list[str], indent: str, width: int) -> None:
    if t.title:
        out.append(f"{indent}{t.title}:")
    rows = t.rows[:TABLE_ROWS]
    if t.headlines:
        for i, _ in enumerate(rows):
            out += _wrap(t.headlines[i], indent + "  ", width, "    ")
            if t.details and i < len(t.details):
                _blocks(t.details[i], out, indent + "      ", width)
    else:
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(c)] + [len(r[j]) for r in cells if j < len(r)]) for j, c in enumerate(t.columns)]
        if sum(widths) + 2 * len(widths) + len(indent) <= width:  # one line a row: aligned columns
            out.append(indent + "  " + "  ".join(c.ljust(w) for c, w in zip(t.columns, widths)).rstrip())
            for i, row in enumerate(cells):
                out.append(indent + "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
                if t.details and i < len(t.details):
                    _blocks(t.details[i], out, indent + "      ", width)
        else:  # too wide for a line: each row as its named cells
            for i, row in enumerate(cells):
                named = [f"{c}: {v}" for c, v in zip(t.columns, row) if v != ""]
                out += _wrap("; ".join(named), indent + "  - ", width, "  ")
                if t.details and i < len(t.details):
                    _blocks(t.details[i], out, indent + "      ", width)
    if len(t.rows) > len(rows):
        out.append(f"{indent}  ... and {len(t.rows) - len(rows)} more rows (report.to_html(path) has them)")


def report_text(report: "CompileReport", hints: Optional[Hints] = None) -> str:
    """``str(report)`` and ``report.summary()`` (registered with the report by
    :func:`ipycompile.views.install`): the first screen, then every tab as text. With
    the command line's ``hints`` the notes word where the rest is in its options."""
    from .viewmodel import view_model

    vm = view_model(report, hints or Hints())
    more = MORE_CLI if hints == CLI_HINTS else MORE_BELOW
    tabs = render_tabs(vm)
    return render_text(vm, more=more) + ("\n\n" + tabs if tabs else "")
