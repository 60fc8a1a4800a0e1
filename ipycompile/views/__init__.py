"""Views over a report: the block vocabulary (``blocks``), the first screen
(``first_screen``: what to fix, ranked, and the headline numbers), the tab builders
(``tabs``), figures (``figures``), source excerpts (``excerpts``), the view-model that
assembles them (``viewmodel``), and its three renderings: plain text (``plain_text``:
``str(report)``, the terminal, the command line), static HTML (``html``) and the
ipywidgets view (``widget``).

``import ipycompile`` imports this package only to register the views: the report's
HTML and text (:func:`install`), the run layer's status line (:func:`progress_view`) and
sweep table (:func:`sweep_table_view`); every module above loads when first needed.
"""

from __future__ import annotations


def notebook_bundle(report) -> dict:
    """The report's HTML for a notebook output (compact; see :mod:`.html`). None where the
    IPython shell showing it does not render HTML (the terminal app turns its ``text/html``
    formatter off): IPython keeps every displayed bundle in its output history, and a page
    nobody sees would stay there for the session."""
    if not _shell_shows_html():
        return {}
    from .html import notebook_bundle as bundle

    return bundle(report)


def _shell_shows_html() -> bool:
    """False in an IPython shell whose ``text/html`` formatter is off (its
    ``DisplayFormatter.active_types``); True anywhere else (a kernel, no IPython)."""
    import sys

    if "IPython" not in sys.modules:  # not displayed by IPython: whoever asked gets the HTML
        return True
    shell = sys.modules["IPython"].get_ipython()
    formatter = getattr(getattr(shell, "display_formatter", None), "formatters", {}).get("text/html")
    return formatter is None or bool(getattr(formatter, "enabled", True))


def write_html(report, path: str) -> str:
    """The full standalone page (what ``report.to_html(path)`` writes)."""
    from .html import save_html

    return save_html(report, path)


def install() -> None:
    """Make every report render as HTML in any notebook frontend, and ``report.to_html``
    work, with no ``%load_ext``. The report layer keeps the registry; views fill it."""
    from ..report.report import register_html_writer, register_renderer, register_text_renderer, register_text_view

    register_renderer(notebook_bundle)
    register_html_writer(write_html)
    register_text_renderer(report_text)
    from ..analysis.compare import register_views

    register_views(comparison_text, comparison_bundle)
    register_text_view("rank_divergence", ranks_text)


def progress_view(kind: str):
    """The live status line of one run or sweep (:func:`ipycompile.views.progress.progress_view`),
    its module loaded when a run first shows one."""
    from .progress import progress_view as view

    return view(kind)


def sweep_table_view(df, medium: str) -> str:
    """A sweep's table (:func:`ipycompile.views.sweep_table.sweep_table`), its module loaded
    when a sweep's result is first shown."""
    from .sweep_table import sweep_table

    return sweep_table(df, medium)


def ranks_text(divergence) -> str:
    """``str(divergence)``: the ranks' divergence as text (:mod:`.ranks_view`)."""
    from .ranks_view import ranks_text as render

    return render(divergence)


def comparison_text(comparison) -> str:
    """``str(comparison)``: the comparison's view model as text (:mod:`.compare_view`)."""
    from .compare_view import comparison_text as render

    return render(comparison)


def comparison_bundle(comparison) -> dict:
    """A comparison's notebook display: its HTML and text (:mod:`.compare_view`)."""
    from .compare_view import comparison_bundle as bundle

    return bundle(comparison)


def report_text(report, hints=None) -> str:
    """``str(report)`` and ``report.summary()``: the first screen, then every tab, as text (:mod:`.plain_text`)."""
    from .plain_text import report_text as render

    return render(report, hints)


def report_view(report):
    """What ``%%compile`` displays: a :class:`~ipycompile.views.widget.ReportWidget`
    where the frontend can show widgets (its bundle also carries the static HTML and
    the text), else the report itself (text and HTML). The IPython terminal, a shell
    outside IPython, and a missing ipywidgets all get the plain report."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        return report
    if shell is None or type(shell).__name__ == "TerminalInteractiveShell":
        return report
    try:
        from .widget import ReportWidget
    except ImportError:  # no ipywidgets
        return report
    try:
        return ReportWidget(report)
    except Exception:  # a view that cannot be built must not hide the report
        return report
