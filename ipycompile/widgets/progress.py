"""A sweep's progress in a notebook: one display that updates in place (an HTML
``<progress>`` bar and a line of text); lines on stderr outside a Jupyter kernel.

:func:`notebook_progress` is the factory :func:`ipycompile.widgets.install` registers with
the run layer (:func:`ipycompile.run.sweeps.register_progress_view`), which tracks the
sweep and hands each change to the callback it returns.
"""

from __future__ import annotations

import html
import sys
from typing import Callable


class ProgressView:
    def __init__(self, text: str, done: int, total: int) -> None:
        self.text, self.done, self.total = text, done, total

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return (
            f'<div class="ipycompile-progress"><progress value="{self.done}" max="{self.total}" '
            f'style="width:16em;vertical-align:middle"></progress> <code>{html.escape(self.text)}</code></div>'
        )


def _display_handle(total: int):
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    ip = get_ipython()
    if ip is None or getattr(ip, "kernel", None) is None:
        return None
    from IPython.display import display

    return display(ProgressView("", 0, total), display_id=True)


def notebook_progress(total: int) -> Callable[[str, int, int], None]:
    """A callback ``show(text, done, total)``: an updating display in a Jupyter kernel, else
    a line on stderr per call."""
    handle = _display_handle(total)

    def show(text: str, done: int, total: int) -> None:
        if handle is not None:
            handle.update(ProgressView(text, done, total))
        else:
            print(text, file=sys.stderr, flush=True)
    return show
