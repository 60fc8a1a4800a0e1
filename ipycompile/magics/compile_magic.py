"""``%%compile`` / ``%compile``, ``%compile_history``, ``%compile_reset`` and ``%compile_trace``.

Thin by design: parse arguments, call :func:`ipycompile.run.execute`, display.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Optional

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import traces as _traces
from ..run import runner as _run
from ..run import history as _history
from ..run import sweeps as _sweep
from ..run.cell import CellError
from ..run.settings import MODES, parse_option


@magics_class
class CompileMagics(Magics):
    @magic_arguments()
    @argument("--mode", default="default", choices=MODES, help="torch.compile mode (default: %(default)s)")
    @argument("--backend", default="inductor", help="a registered torch.compile backend (default: %(default)s)")
    @argument("--dynamic", dest="dynamic", action="store_true", default=None, help="dynamic=True")
    @argument("--no-dynamic", dest="dynamic", action="store_false", help="dynamic=False (default: torch decides)")
    @argument("--fullgraph", action="store_true", help="fail on any graph break (fullgraph=True)")
    @argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an Inductor option (repeatable); VALUE is a Python literal, e.g. --option max_autotune=True",
    )
    @argument("--runs", type=int, default=None, help="timed steady-state calls (default: auto-ranged, like %%timeit)")
    @argument("--warmup", type=int, default=None, help="warm-up calls before timing (default: 1, 3 with CUDA graphs)")
    @argument("--fresh", action="store_true", help="reset Dynamo and use fresh Inductor caches: an honest compile time")
    @argument("--compare-eager", action="store_true", help="also run uncompiled: speedup, memory, break-even, output check")
    @argument("--observe", action="store_true", help="run the cell as ordinary code; capture torch.compile activity inside")
    @argument("--profile-kernels", action="store_true", help="profile a few calls after the timed runs: time per kernel")
    @argument("--label", default="", help="a tag for this run in the history")
    @argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=v1,v2,...",
        help="run the cell once per value with NAME bound, each compiled afresh; repeat for a grid; "
        "returns the sweep's DataFrame",
    )
    @argument("-o", dest="output", default=None, metavar="NAME", help="store the report in the namespace as NAME")
    @argument("--quiet", action="store_true", help="show nothing (the run is still recorded)")
    @argument("--trace-dir", default=None, metavar="DIR", help="also write the captured events to a TORCH_TRACE log in DIR")
    @line_cell_magic
    def compile(self, line: str, cell: Optional[str] = None) -> Any:
        """Run the cell under torch.compile and show what happened and what it cost.

        The cell's code becomes the body of one function passed to torch.compile
        and called: top-level assignments land in the notebook namespace and a
        final expression is the cell's result. ``%compile EXPR`` does the same
        for one line. Every run is added to ``ipycompile.history()``.
        """
        if cell is None:
            line, cell = _split_line_magic(line, self.compile)
            if not cell.strip():
                raise UsageError("%compile: give the code to run, e.g. %compile model(x)")
        args = parse_argstring(self.compile, line)
        shell = self.shell
        header = f"%%compile {line}".rstrip()
        options = {}
        try:
            for text in args.option:
                key, value = parse_option(text)
                options[key] = value
            running = getattr(shell.displayhook, "exec_result", None)  # the cell being run
            count = running.execution_count if running is not None else shell.execution_count
            filename = shell.compile.cache(header + "\n" + cell, count)
            kwargs = dict(
                mode=args.mode,
                backend=args.backend,
                dynamic=args.dynamic,
                fullgraph=args.fullgraph,
                options=options,
                runs=args.runs,
                warmup=args.warmup,
                compare_eager=args.compare_eager,
                observe=args.observe,
                profile_kernels=args.profile_kernels,
                label=args.label,
                filename=filename,
                header=header,
                execution_count=count,
                trace_dir=args.trace_dir,
            )
            if args.sweep:
                params = dict(_sweep.parse_sweep(text) for text in args.sweep)
                if len(params) < len(args.sweep):
                    raise _sweep.SweepError("--sweep: each NAME may be swept once; give all its values in one --sweep")
                return self._sweep(cell, params, args, kwargs)
            result = _run.execute(cell, shell.user_ns, fresh=args.fresh, **kwargs)
        except (ValueError, CellError) as exc:  # SettingsError and SweepError are ValueErrors
            raise UsageError(str(exc)) from None
        if args.output:
            shell.user_ns[args.output] = result.report
        if not args.quiet:
            from IPython.display import display

            from ..widgets import report_view

            display(report_view(result.report))
        if result.error is not None:
            raise result.error
        return result.value

    def _sweep(self, cell: str, params: dict, args, kwargs: dict) -> Any:
        """``--sweep``: one fresh compile per grid point; the sweep's DataFrame is the cell's result."""
        try:
            df = _sweep.sweep_cell(cell, self.shell.user_ns, params, progress=not args.quiet, **kwargs)
        except KeyboardInterrupt as exc:
            df = getattr(exc, "ipycompile_sweep", None)
            if args.output and df is not None:
                self.shell.user_ns[args.output] = df
            raise
        if args.output:
            self.shell.user_ns[args.output] = df
        return df

    @magic_arguments()
    @argument("--plot", default=None, metavar="COLUMN", help="plot this column (e.g. compile_s, run_median_s)")
    @argument("--x", default=None, metavar="COLUMN", help="x axis column (default: run)")
    @argument("--by", default=None, metavar="COLUMN", help="one line per value of this column (e.g. label)")
    @line_magic
    def compile_history(self, line: str) -> Any:
        """Show the history of %%compile runs, or plot one of its columns."""
        args = parse_argstring(self.compile_history, line)
        df = _history.history()
        if args.plot is None:
            return df
        if df.empty:
            raise UsageError("%compile_history --plot: no runs recorded yet")
        try:
            fig = _history.plot_history(df, args.plot, x=args.x, by=args.by)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return fig  # a Figure shown as PNG

    @magic_arguments()
    @argument("path", help="a TORCH_TRACE log (plain or gzip), or a directory of rank logs")
    @argument("--rank", type=int, default=None, help="with a directory: show this rank's report")
    @argument("--strict", action="store_true", help="fail on the first unreadable line (as tlparse --strict)")
    @argument("-o", dest="output", default=None, metavar="NAME",
              help="store the report (for a directory: the RankReports, rank -> report) as NAME")
    @line_magic
    def compile_trace(self, line: str) -> None:
        """Show a TORCH_TRACE log with the usual views; for a directory of rank logs, how the ranks differ."""
        args = parse_argstring(self.compile_trace, line)
        try:
            loaded, shown = _traces.open_trace(args.path, rank=args.rank, strict=args.strict)
        except ValueError as exc:  # TraceFileError: the path and the reason
            raise UsageError(str(exc)) from None
        if args.output:
            self.shell.user_ns[args.output] = loaded
        from IPython.display import display

        from ..widgets import report_view

        display(report_view(shown) if shown is loaded else shown)

    @magic_arguments()
    @argument("--history", action="store_true", help="also clear the run history")
    @line_magic
    def compile_reset(self, line: str) -> None:
        """Reset Dynamo (drop all compiled code) and forget compiled cells."""
        args = parse_argstring(self.compile_reset, line)
        _run.reset(history=args.history)


def _split_line_magic(line: str, magic) -> tuple[str, str]:
    """Split ``%compile [options] CODE`` into the option string and the code."""
    try:
        tokens = shlex.split(line, posix=False)
    except ValueError:  # an unbalanced quote in the code
        tokens = line.split()
    pos = 0
    starts = []
    for tok in tokens:
        pos = line.index(tok, pos)
        starts.append(pos)
        pos += len(tok)
    for i in range(len(tokens) + 1):
        rest = line[starts[i]:] if i < len(tokens) else ""
        if rest.startswith("-"):
            continue
        opts = line[: starts[i]] if i < len(tokens) else line
        try:
            parse_argstring(magic, opts)
        except (UsageError, SystemExit, argparse.ArgumentError):
            continue
        return opts.strip(), rest
    raise UsageError(f"%compile: could not read the options in {line!r}; see %compile?")
