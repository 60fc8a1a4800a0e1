"""Views over a report: the view-model (``viewmodel``), static HTML (``html``) and
the ipywidgets view (``widget``). Nothing here is imported by ``import ipycompile``."""

from __future__ import annotations


def report_view(report):
    """What ``%%compile`` displays: a :class:`~ipycompile.widgets.widget.ReportWidget`
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
