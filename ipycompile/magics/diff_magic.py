"""``%compile_diff A B``: what changed between two runs of the history.

Thin by design: parse the two runs, call :func:`ipycompile.run.history_log.compare_runs`,
display the comparison.
"""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from ..run import history_log as _history
from .arguments import output_name

_USAGE = ("%compile_diff A B [-o NAME]: A and B are run numbers of %compile_history (-1 is the last run) "
          "or labels (--label); -o stores the comparison as NAME")


@magics_class
class DiffMagics(Magics):
    @line_magic
    def compile_diff(self, line: str) -> Any:
        """Compare two runs of the history: graph breaks fixed and introduced, recompiles,
        graphs, kernels, compile and run time and memory, and whether they are comparable.

        ``%compile_diff 3 5``, ``%compile_diff before after`` (labels), ``%compile_diff -2 -1``.
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%compile_diff: {exc}; {_USAGE}") from None
        output = None
        if "-o" in words:
            i = words.index("-o")
            if i + 1 >= len(words):
                raise UsageError(f"%compile_diff: -o needs a NAME; {_USAGE}")
            output = output_name(self.shell, words[i + 1], "compile_diff")
            del words[i:i + 2]
        if len(words) != 2:
            raise UsageError(f"%compile_diff: give two runs, got {len(words)} ({line.strip()!r}); {_USAGE}")
        try:
            comparison = _history.compare_runs(*words)
        except ValueError as exc:
            raise UsageError(f"%compile_diff: {exc}") from None
        if output:
            self.shell.user_ns[output] = comparison
        from IPython.display import display

        from ..views.compare_view import ComparisonView

        display(ComparisonView(comparison))
