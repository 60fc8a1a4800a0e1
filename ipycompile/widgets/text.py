"""The plain-text rendering of a report's view model: the first screen, as the terminal,
``str(report)`` and the command line show it.

It renders :class:`~.blocks.ViewModel`'s problems and chips (built by
:mod:`.first_screen` and :mod:`.viewmodel`) and computes nothing; every line goes
through :func:`ipycompile.report.summary.printable` (control characters escaped).
The whole text, every section, is ``report.summary()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..report.summary import printable
from ..report.text import capped
from .blocks import ViewModel

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["render_text", "report_text", "MORE_API", "MORE_CLI"]

#: What the last line says about where the rest is: the Python API's words, the command line's.
MORE_API = "everything: report.summary(), report.to_html(path), or the report widget's tabs"
MORE_CLI = "everything: -o PAGE.html (the whole report), --json FILE"


def render_text(vm: ViewModel, *, more: str = MORE_API, problems: int = 8, width: int = 100) -> str:
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
            lines += wrap(f"fix{conf}: {p.fix}", initial_indent="   ", subsequent_indent="     ")
            lines += [capped(f"   | {ln}", where="report.summary() shows it whole") for ln in p.fix_code.splitlines()]
        elif p.note:
            lines += wrap(p.note, initial_indent="   ", subsequent_indent="   ")
    if len(every) > len(shown):
        lines.append(f"   ... and {len(every) - len(shown)} more")
    chips = [c.text for c in vm.header]
    if chips:
        lines += textwrap.wrap(" | ".join(chips), width)
    lines.append(f"({more})")
    return printable("\n".join(lines))


#: what ``str(report)``'s first screen says of the rest: it follows
MORE_BELOW = "the whole report follows; report.to_html(path) writes it as a page"


def report_text(report: "CompileReport") -> str:
    """The first screen of ``str(report)`` (registered with the report by
    :func:`ipycompile.widgets.install`; ``str`` adds the whole summary below it)."""
    from .viewmodel import view_model

    return render_text(view_model(report), more=MORE_BELOW)
