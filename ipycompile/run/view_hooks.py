"""Where the views hand the run layer their callbacks (it draws nothing): the factory of a
run's or sweep's live status line (:func:`register_progress_view`, read by
:mod:`.progress`) and the renderer of a sweep's table (:func:`register_table_view`, read by
:class:`.sweeps.SweepResult`). A module of its own, importing nothing of the run layer, so
that ``import ipycompile`` registers both without loading the runner."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["register_progress_view", "view_callback", "register_table_view", "table_view"]

#: factories of the views' callbacks (``factory(kind) -> show``; ``kind`` "run" or "sweep"),
#: the last registered wins
_views: list[Callable[[str], Callable[[Any], None]]] = []

_table_view: Optional[Callable[["pd.DataFrame", str], str]] = None


def register_progress_view(factory: Callable[[str], Callable[[Any], None]]) -> None:
    """Show progress with ``factory(kind)``, a callback ``show(status)`` for one run (``kind``
    ``"run"``) or one sweep (``"sweep"``)."""
    if factory not in _views:
        _views.append(factory)


def view_callback(kind: str) -> Optional[Callable[[Any], None]]:
    """The registered view's callback for a new run or sweep, or None."""
    return _views[-1](kind) if _views else None


def register_table_view(render: Callable[["pd.DataFrame", str], str]) -> None:
    """Set how a :class:`~ipycompile.run.sweeps.SweepResult` shows itself: ``render(df, medium)``
    with ``medium`` ``"html"`` or ``"text"`` (``ipycompile`` registers
    :func:`ipycompile.views.sweep_table.sweep_table`)."""
    global _table_view
    _table_view = render


def table_view() -> Optional[Callable[["pd.DataFrame", str], str]]:
    """The registered table renderer, or None (the DataFrame's own display)."""
    return _table_view
