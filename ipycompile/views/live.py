"""The report widgets alive in a kernel, and when they close.

A widget lives in the kernel until it is closed: a notebook that re-runs ``%%compile``
cells for an afternoon would otherwise keep every report's widgets (dozens each) for
good. :func:`show` displays a report as ``%%compile`` does and keeps its widget under
the cell it was displayed for:

- re-running a cell closes the widgets of the output it replaces (the cell is known by
  the id the frontend gives it, else by its ``%%compile`` line and text: two cells of
  the same text count as one, and the older then loses its widgets; nbclient, which
  does not send cell ids, keeps stale display ids of cleared outputs, so a replaced
  output is not updated, only closed);
- at most :data:`MAX_LIVE` report widgets stay open in all; beyond that the oldest is
  closed and its output updated in place to the static HTML and text that its display
  bundle already carried, so nothing shown is lost, only the interactive tabs.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Hashable

#: report widgets kept open at once (the most recent)
MAX_LIVE = 20
#: What one displayed run of a small cell (a few graphs and breaks) may leave in the notebook
#: and in IPython's output history, every MIME type of both outputs (bytes): the static copy is
#: cut to ``html.FALLBACK``, and the widget builds a tab's content only when it is opened.
#: ``benchmarks/leaks.py`` reports what a run leaves beside it.
DISPLAY_BUDGET_BYTES = 24_000

_live: "OrderedDict[Hashable, tuple[Any, Any]]" = OrderedDict()  # cell key -> (widget, display handle)


class Shown:
    """What :func:`show` displayed for one report: the view, and the display handles of its
    outputs, so that :meth:`update` can show a newer report of the same run in place (the
    fixes tried on the cell after the report was shown)."""

    def __init__(self, view: Any, static: Any, handle: Any):
        self.view, self.static, self.handle = view, static, handle

    def update(self, report: Any) -> None:
        """Show ``report`` in place of the one shown: the widget's first screen and tabs, and the
        static copy the saved notebook keeps (or the plain report's output, where no widget is)."""
        from .widget import ReportWidget

        try:
            if isinstance(self.view, ReportWidget):
                self.view.show_report(report)
                if self.static is not None:
                    self.static.update(self.view.static_bundle(), raw=True)
                if self.view.closed and self.handle is not None:  # retired meanwhile: its output is static
                    self.handle.update(self.view)
            else:
                self.view = report
                if self.handle is not None:
                    self.handle.update(report)
        except Exception:  # no frontend to update (the output was cleared): the report object is current all the same
            pass


def show(report: Any, cell: Hashable) -> Shown:
    """Display ``report`` (:func:`ipycompile.views.report_view`) as the output of
    ``cell``, closing the widgets ``cell`` displayed before and the oldest beyond
    :data:`MAX_LIVE`. Returns what was displayed (:class:`Shown`: ``.update(report)`` shows a
    newer report of the same run in place)."""
    from IPython.display import display

    from . import report_view
    from .widget import ReportWidget

    view = report_view(report)
    earlier = _live.pop(cell, None)
    if earlier is not None:  # its output is being replaced (the frontend cleared it): close, no update
        _retire(earlier[0], None)
    static = None
    if isinstance(view, ReportWidget):
        # Two outputs: the static copy first (compact HTML and the text), then the widget alone.
        # A saved notebook reopened without the widget's state (JupyterLab saves none by default;
        # a kernel restarted before saving drops it) cannot draw the widget: JupyterLab and
        # Notebook 7 choose the widget's MIME type over any text/html beside it in the same
        # output and show "Error displaying widget: model not found". In its own output the
        # static copy always shows; its CSS (html.FALLBACK_CSS) hides it beside a drawn widget
        # and hides the widget's output where no widget was drawn. nbconvert and GitHub show it.
        static = display(view.static_bundle(), raw=True, display_id=True)
        view.standalone = False
    handle = display(view, display_id=True)
    if isinstance(view, ReportWidget):
        _live[cell] = (view, handle)
        while len(_live) > MAX_LIVE:
            _retire(*_live.popitem(last=False)[1])
    return Shown(view, static, handle)


def live() -> int:
    """How many report widgets :func:`show` keeps open now."""
    return len(_live)


def close_all_reports() -> None:
    """Close every report widget :func:`show` keeps (their outputs become static HTML)."""
    while _live:
        _retire(*_live.popitem(last=False)[1])


def _retire(widget: Any, handle: Any) -> None:
    widget.close()
    if handle is not None:
        try:
            if getattr(widget, "standalone", True):
                handle.update(widget)  # now its static HTML and text
            else:  # the static copy is the output before it: the widget's output empties
                handle.update({"text/plain": ""}, raw=True)
        except Exception:  # no frontend to update: the widgets are closed all the same
            pass
