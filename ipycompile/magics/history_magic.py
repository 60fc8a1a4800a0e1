"""``%compile_history`` and ``%compile_reset``: the run history, and forgetting compiled code."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..run import history_log as _history
from ..run import runner as _run
from ..views.plots import plot_history
from .arguments import parse_line


_OPTIONS = {"y": "--plot", "x": "--x", "by": "--by"}  # plot_history's arguments, as this magic's options


@magics_class
class HistoryMagics(Magics):
    @magic_arguments()
    @argument("--plot", default=None, metavar="COLUMN", help="plot this column (e.g. compile_s, run_median_s)")
    @argument("--x", default=None, metavar="COLUMN", help="x axis column (default: run)")
    @argument("--by", default=None, metavar="COLUMN", help="one line per value of this column (e.g. label)")
    @line_magic
    def compile_history(self, line: str) -> Any:
        """Show the history of %%compile runs, or plot one of its columns."""
        args = parse_line(self.compile_history, line, "compile_history")
        df = _history.history()
        if args.plot is None:
            return df
        if df.empty:
            raise UsageError("%compile_history --plot: no runs recorded yet")
        try:
            fig = plot_history(df, args.plot, x=args.x, by=args.by)
        except ValueError as exc:  # "y: ..." names plot_history's argument; say the option
            arg, _, rest = str(exc).partition(": ")
            raise UsageError(f"{_OPTIONS.get(arg, arg)}: {rest}" if rest else str(exc)) from None
        return fig  # a Figure shown as PNG

    @magic_arguments()
    @argument("--history", action="store_true", help="also clear the run history")
    @line_magic
    def compile_reset(self, line: str) -> None:
        """Reset Dynamo (drop all compiled code) and forget compiled cells."""
        args = parse_line(self.compile_reset, line, "compile_reset")
        _run.reset(history=args.history)
