"""The run layer: a cell (or a function) compiled, run, measured and recorded.

One idea per module: ``cell`` (a cell's source as one function), ``settings`` (the
``torch.compile`` arguments and what each mode means, validated), ``session`` (the state
kept between runs, with ``clear()``), measurement by idea (``timing``: run time and
latency; ``device_time``; ``busy``: the GPU's busy time per call and a verdict; ``memory``;
``activity``: compile activity; ``outputs`` and ``accuracy``: output checks; ``stats``:
paired comparisons and noise; ``contention``: was the machine busy; ``profile`` gathers
their names), ``kernel_times`` (``--profile-kernels``), ``runner`` (``run_cell``: a cell compiled, measured,
diagnosed and recorded), ``pipeline`` (``measure``: the phases that profile one compiled call), ``progress`` (the phase machine of a run while it runs),
``history_log`` (one row per run) and ``sweeps`` (a grid of fresh compiles). It draws
nothing: plots and the live status line of runs and sweeps are views
(:mod:`ipycompile.views.plots`, :mod:`ipycompile.views.progress`), handed over by
callback. It sits on capture, report and analysis; the magics sit on it.
"""

from ..report.lazy import lazy_names


__all__ = [
    "CellRun",
    "execute",
    "fresh_inductor_cache",
    "measure",
    "reset",
    "run_cell",
    "history",
    "clear_history",
    "sweep",
    "sweep_params",
]

#: name -> the module that defines it, imported on first use (:pep:`562`): ``import
#: ipycompile`` and the command line load none of the runner
_LAZY = {
    **dict.fromkeys(("execute", "reset", "run_cell"), ".runner"),
    **dict.fromkeys(("CellRun", "fresh_inductor_cache", "measure"), ".pipeline"),
    **dict.fromkeys(("clear_history", "history"), ".history_log"),
    **dict.fromkeys(("sweep", "sweep_params"), ".sweeps"),
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
