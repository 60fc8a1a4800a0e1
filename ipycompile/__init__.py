"""ipycompile: see what torch.compile did, and what it cost, next to your code.

``import ipycompile`` imports neither torch, IPython, ipywidgets, matplotlib nor
pandas: each is loaded when a feature that needs it is used. It is light in ipycompile's
own modules too: the names below are imported when first used (:pep:`562`), so that
``python -m ipycompile report LOG`` loads only what reading a log and printing its
summary need. What it does at once is register the views (the report's HTML and text,
the comparison's, the run layer's live status line and sweep table) by callbacks that
load their modules when first called.
"""

from importlib import import_module as _import_module

from .analysis.compare import compare
from .report.lazy import lazy_names as _lazy_names
from .run.view_hooks import register_progress_view as _register_progress_view
from .run.view_hooks import register_table_view as _register_table_view
from .views import install as _install_views
from .views import progress_view as _progress_view
from .views import sweep_table_view as _sweep_table

# The capture subpackage, imported now, so that no later import of it binds ``ipycompile.capture``
# (an import binds a subpackage in its parent the first time only); the name is then the
# function, run.observe.capture, imported on first use. On a reload (``%reload_ext ipycompile``) the
# subpackage is imported already, and the import binds nothing: there is no name to drop.
_import_module(".capture", __name__)
globals().pop("capture", None)

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

#: name -> the module that defines it, imported on first use
_LAZY = {
    "capture": ".run.observe",
    "Capture": ".capture.listener",
    "build_report": ".capture.builder",
    "RankReports": ".capture.tracedir",
    "TraceFileError": ".capture.tracefile",
    "CompileReport": ".report",
    "CompileId": ".report",
    "load_trace": ".run.traces",
    "run_cell": ".run.runner",
    "CellRun": ".run.pipeline",
    "reset": ".run.runner",
    "history": ".run.history_log",
    "clear_history": ".run.history_log",
    "sweep": ".run.sweeps",
    "plot_history": ".views.plots",
    "plot_sweep": ".views.plots",
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

def load_ipython_extension(ipython) -> None:
    """``%load_ext ipycompile``: register ``%%compile``, ``%compile_history``, ``%compile_reset``, ``%compile_diff``, ``%compile_trace``."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext ipycompile``: remove the magics (reports keep their HTML display: it is not the extension's)."""
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
