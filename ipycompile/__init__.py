"""ipycompile: see what torch.compile did, and what it cost, next to your code.

``import ipycompile`` imports neither torch, IPython, ipywidgets, matplotlib nor
pandas: each is loaded when a feature that needs it is used.
"""

from .analysis import compare
from .capture import Capture, RankReports, TraceFileError, build_report
from .report import CompileId, CompileReport
from .run.observe import capture
from .run.traces import load_trace
from .run import CellRun, clear_history, history, reset, run_cell, sweep
from .run.progress import register_progress_view as _register_progress_view
from .run.sweeps import register_table_view as _register_table_view
from .widgets import install as _install_views
from .widgets.plots import plot_history, plot_sweep
from .widgets.progress import progress_view as _progress_view
from .widgets.sweep_table import sweep_table as _sweep_table

_install_views()  # reports render as HTML in any notebook, with or without %load_ext
_register_progress_view(_progress_view)  # runs and sweeps show a live status line (the run layer draws nothing)
_register_table_view(_sweep_table)  # a sweep's result shows as a formatted table (its DataFrame is .df)

__version__ = "0.1.0"
__all__ = [
    "capture",
    "Capture",
    "build_report",
    "load_trace",
    "RankReports",
    "TraceFileError",
    "CompileReport",
    "CompileId",
    "run_cell",
    "CellRun",
    "history",
    "clear_history",
    "plot_history",
    "sweep",
    "plot_sweep",
    "reset",
    "compare",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext ipycompile``: register ``%%compile``, ``%compile_history``, ``%compile_reset``, ``%compile_diff``, ``%compile_trace``."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext ipycompile``: remove the magics (reports keep their HTML display: it is not the extension's)."""
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
