"""Plots of the run history and of sweeps (matplotlib), from their DataFrames.

``plot_history(df, y, x=, by=)`` draws any column of :func:`ipycompile.history` (or of a
sweep's DataFrame) against another; ``plot_sweep`` is the same for a sweep, with its
parameter on the x axis and failed points left out. The figures show themselves as PNGs
in any frontend, with no pyplot backend set up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_history", "plot_sweep"]


_UNITS = {"_s": ("seconds", 1.0), "_bytes": ("MiB", 1 / 2**20)}


def _plot_figure_class():
    """A matplotlib Figure that shows itself as a PNG in any frontend, with no pyplot backend set up."""
    from matplotlib.figure import Figure

    class PlotFigure(Figure):
        def _repr_png_(self) -> bytes:
            import io

            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=100)
            return buf.getvalue()

        def __repr__(self) -> str:
            ax = self.axes[0] if self.axes else None
            return f"<ipycompile plot: {ax.get_ylabel()} by {ax.get_xlabel()}>" if ax else "<ipycompile plot>"

    return PlotFigure


def numeric_columns(df: "pd.DataFrame") -> list[str]:
    """The columns that can be plotted on an axis: numbers (or missing) in every row."""
    import numbers

    import pandas as pd

    names = []
    for col in df.columns:
        values = df[col]
        if pd.api.types.is_numeric_dtype(values):
            names.append(str(col))
        elif values.dtype == object and values.notna().any() and all(
                isinstance(v, numbers.Real) for v in values.dropna()):
            names.append(str(col))
    return names


def plot_history(df: "pd.DataFrame", y: str, *, x: Optional[str] = None, by: Optional[str] = None) -> "Figure":
    """Plot column ``y`` against ``x`` (default: run number), one line per value of ``by``.

    Returns a matplotlib Figure, shown as a PNG when it is a cell's result. ``y`` must be
    a numeric column (:func:`numeric_columns`), ``x`` numeric
    or text; otherwise a one-line ``ValueError`` starts with the argument's name (``y:``)
    and lists the numeric columns.
    """
    Figure = _plot_figure_class()

    for arg, col in (("y", y), ("x", x), ("by", by)):
        if col is not None and col not in df.columns:
            raise ValueError(f"{arg}: no column {col!r}; columns are {', '.join(map(str, df.columns))}")
    numeric = numeric_columns(df)
    if y not in numeric:
        raise ValueError(f"y: {y!r} is not a numeric column; numeric columns are {', '.join(numeric)}")
    if x is not None and x not in numeric and not all(isinstance(v, str) for v in df[x].dropna()):
        raise ValueError(f"x: {x!r} holds neither numbers nor text; numeric columns are {', '.join(numeric)}")
    x = x or "run"
    unit, scale = next(((u, s) for suffix, (u, s) in _UNITS.items() if y.endswith(suffix)), ("", 1.0))
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.subplots()
    groups = [(None, df)] if by is None else list(df.groupby(by, sort=False))
    for name, part in groups:
        part = part.dropna(subset=[y]).sort_values(x)
        ax.plot(part[x], part[y] * scale, marker="o", label=None if name is None else str(name))
    xs = [v for v in df[x].dropna() if isinstance(v, (int, float))]
    if len(xs) > 2 and all(v > 0 and (int(v) & (int(v) - 1)) == 0 and v == int(v) for v in xs):
        from matplotlib.ticker import NullLocator, ScalarFormatter

        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(xs)))  # the swept values, written as numbers (16, not 2^4)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
    from matplotlib.ticker import MaxNLocator

    if str(df[y].dtype).startswith(("int", "Int")):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.25 ticks
    if str(df[x].dtype).startswith(("int", "Int")) and ax.get_xscale() == "linear":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # run numbers: no 1.5
    if unit:  # an amount (seconds, bytes): from 0, so the lines' gap reads at its true size
        ax.set_ylim(bottom=0)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{y} ({unit})" if unit else y)
    ax.grid(True, alpha=0.3)
    if by is not None:
        ax.legend(title=by)
    return fig


def plot_sweep(df: "pd.DataFrame", y: str, x: Optional[str] = None, by: Optional[str] = "label") -> "Figure":
    """Plot column ``y`` against parameter ``x``, one line per ``by`` (default: label).

    ``x`` defaults to the sweep's parameter when there is one. Seconds and
    bytes get units; powers-of-two x values get a log2 axis. Failed points are
    left out, and the title says how many.
    """
    if x is None:
        names = df.attrs.get("params") or []
        if len(names) != 1:
            raise ValueError(f"x: give the parameter to plot against; the sweep's parameters are {names or 'unknown'}")
        x = names[0]
    if by == "label" and "label" in df.columns and (df["label"] == "").all():
        by = None  # unlabelled: one line, no legend
    if y in df.columns and df[y].dropna().empty:
        hint = " (nothing ran on a CUDA device)" if "device" in y else ""
        raise ValueError(f"y: column {y!r} has no values{hint}")
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    fig = plot_history(ok if not ok.empty else df, y, x=x, by=by)
    failed = len(df) - len(ok)
    if failed:
        fig.axes[0].set_title(f"{failed} failed point{'s' if failed > 1 else ''} not shown", fontsize=9)
    return fig
