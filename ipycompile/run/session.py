"""The state one Python process keeps between runs, in one object with a public ``clear()``.

- ``compiled``: each cell's function and its ``torch.compile`` wrapper, keyed by the cell's
  code, its header, its namespace and its settings, so re-running an unchanged cell reuses
  compiled code (:func:`ipycompile.run.runner.execute`); bounded, and a cell let go is let
  go by torch too (:mod:`ipycompile.run.compiled_cells`), so namespaces are freed;
- ``warmed_backends``: backends whose one-time process start-up was paid (never cleared:
  the process keeps it);
- ``counter``: numbers the cells' file names (``<ipycompile-cell-N>``);
- the reused code's diagnoses (:mod:`ipycompile.run.reuse`) are cleared with it.

The run history (:mod:`ipycompile.run.history_log`) is the user's record, cleared only
when asked (``clear(history=True)``).
"""

from __future__ import annotations

import itertools

from . import reuse
from .compiled_cells import CompiledCells


class Session:
    def __init__(self) -> None:
        self.compiled = CompiledCells(on_release=reuse.forget)
        self.warmed_backends: set[str] = set()
        self.counter = itertools.count(1)

    def clear(self, *, history: bool = False) -> None:
        """Forget compiled cells and what was learnt from them (not the paid start-up);
        with ``history``, the run history too. Torch's own compiled code is
        :func:`ipycompile.run.runner.reset`'s to drop."""
        from . import history_log

        self.compiled.clear()
        reuse.forget()
        if history:
            history_log.clear_history()


#: this process's session
SESSION = Session()
