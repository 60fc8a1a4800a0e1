"""The run layer: a cell (or a function) compiled, run, measured and recorded.

One idea per module: ``cell`` (a cell's source as one function), ``settings`` (the
``torch.compile`` arguments, validated), ``profile`` (timing and memory primitives),
``kernel_times`` (``--profile-kernels``), ``runner`` (``run_cell``: compile, time,
measure, attach a profile), ``history_log`` (one row per run) and ``sweeps`` (a grid of
fresh compiles). It sits on capture, report and analysis; the magics sit on it.
"""

from .runner import CellRun, execute, fresh_inductor_cache, measure, reset, run_cell
from .history_log import clear_history, history, plot_history
from .sweeps import plot_sweep, sweep, sweep_params

__all__ = [
    "CellRun",
    "execute",
    "fresh_inductor_cache",
    "measure",
    "reset",
    "run_cell",
    "history",
    "clear_history",
    "plot_history",
    "sweep",
    "plot_sweep",
    "sweep_params",
]
