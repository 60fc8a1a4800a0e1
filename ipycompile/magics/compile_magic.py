"""``%%compile`` / ``%compile``.

Thin by design: parse arguments, call :func:`ipycompile.run.request.run_request`, display.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..run.cell import CellError
from ..run.quiet import quiet_torch_log
from ..run.request import run_request, split_options
from ..run.pipeline import CellRun
from ..run.runner import NestedRunError
from ..run.settings import MODES
from .arguments import output_name, parse_line


@magics_class
class CompileMagics(Magics):
    @magic_arguments()
    @argument("--mode", default="default", choices=MODES, help="torch.compile mode (default: %(default)s)")
    @argument("--backend", default="inductor", help="a registered torch.compile backend (default: %(default)s)")
    @argument("--dynamic", dest="dynamic", action="store_true", default=None, help="dynamic=True")
    @argument("--no-dynamic", dest="dynamic", action="store_false", help="dynamic=False (default: torch decides)")
    @argument("--fullgraph", action="store_true", help="fail on any graph break (fullgraph=True)")
    @argument("--option", action="append", default=[], metavar="KEY=VALUE",
              help="an Inductor option (repeatable); VALUE is a Python literal, e.g. --option max_autotune=True")
    @argument("--runs", type=int, default=None, help="timed steady-state calls (default: auto-ranged, like %%timeit)")
    @argument("--warmup", type=int, default=None, help="warm-up calls before timing (default: 1, 3 with CUDA graphs)")
    @argument("--budget", dest="budget_s", type=float, default=None, metavar="SECONDS",
              help="ceiling on the run-time measurement (default: 3 s, about what %%timeit takes; the eager "
              "comparison twice that); when spent, timing stops and the figure is marked NOISY")
    @argument("--fresh", action="store_true", help="reset Dynamo and use fresh Inductor caches: an honest compile time")
    @argument("--compare-eager", action="store_true", help="also run uncompiled: speedup, memory, break-even, output check")
    @argument("--observe", action="store_true", help="run the cell as ordinary code; capture torch.compile activity inside")
    @argument("--profile-kernels", action="store_true", help="profile a few calls after the timed runs: time per kernel")
    @argument("--memory-timeline", action="store_true",
              help="CUDA: record the allocator's history of the compiling call and one steady-state call")
    @argument("--verify-fixes", dest="verify_fixes", action="store_true", default=None,
              help="try each suggested fix on this cell in a scratch compile (same inputs, copied) and show beside "
              "it whether it removed the problem with the same outputs; your state is left as it was (the default "
              "in a notebook, after the report is shown; in a terminal only when asked)")
    @argument("--no-verify-fixes", dest="verify_fixes", action="store_false",
              help="do not try the fixes on this cell (a notebook's default is to try them)")
    @argument("--verify-budget", dest="verify_budget_s", type=float, default=None, metavar="SECONDS",
              help="the time trying the fixes may take (default: 5 in a notebook by default, 20 with --verify-fixes)")
    @argument("--label", default="", help="a tag for this run in the history")
    @argument("--sweep", action="append", default=[], metavar="NAME=v1,v2,...",
              help="run the cell once per value with NAME bound, each compiled afresh; repeat for a grid; "
              "returns the sweep's DataFrame")
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
        args = vars(parse_line(self.compile, line, "compile"))
        output, shell, header = output_name(self.shell, args.pop("output"), "compile"), self.shell, f"%%compile {line}".rstrip()
        notebook = in_notebook(shell)
        args.update(verify_options(args, notebook))
        running = getattr(shell.displayhook, "exec_result", None)  # the cell being run
        count = running.execution_count if running is not None else shell.execution_count
        filename = shell.compile.cache(header + "\n" + cell, count)  # tracebacks say `Cell In[n], line k`
        try:
            with quiet_torch_log() as quiet:  # torch's lines about breaks/recompiles: the report shows them
                result = run_request(cell, shell.user_ns, filename=filename, header=header, execution_count=count,
                                     **args)
        except (ValueError, CellError, NestedRunError) as exc:  # SettingsError and SweepError are ValueErrors
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt as exc:  # a stopped sweep keeps its finished points
            if output and getattr(exc, "ipycompile_sweep", None) is not None:
                shell.user_ns[output] = exc.ipycompile_sweep
            raise
        if not isinstance(result, CellRun):  # a sweep's DataFrame
            if output:
                shell.user_ns[output] = result
            return result
        result.report.torch_log = list(quiet.kept)  # kept out of the output, not lost: the report's raw log
        if output:
            shell.user_ns[output] = result.report
        shown = None
        if not args["quiet"]:
            from ..views.live import show

            # the cell's id where the frontend sends one, else its text: its earlier output's widgets close
            info = getattr(running, "info", None)
            shown = show(result.report, getattr(info, "cell_id", None) or header + "\n" + cell)
        if result.pending is not None:  # the report is shown: now its fixes are tried, and it updates in place
            log = result.report.torch_log
            with quiet_torch_log():  # the scratch compiles' own lines are not the cell's
                report = result.verify()
            report.torch_log = log
            if output:
                shell.user_ns[output] = report
            if shown is not None:
                shown.update(report)
        if result.error is not None:
            raise result.error
        return result.value


def in_notebook(shell: Any) -> bool:
    """Whether ``shell`` is a Jupyter kernel's (a notebook, JupyterLab, VS Code): it has a kernel.
    A terminal IPython, or a shell without a frontend, has none."""
    return getattr(shell, "kernel", None) is not None


def verify_options(args: dict, notebook: bool) -> dict:
    """``verify_fixes``, ``verify_budget_s`` and ``verify_later`` for a run: the fixes are tried on the
    cell by default in a notebook (after the report is shown, within
    :data:`~ipycompile.run.verify.NOTEBOOK_BUDGET_S`), and only when asked in a terminal; never by
    default in a sweep, with ``--observe`` or ``--quiet`` (nothing shown to update), or inside a rank of a multi-rank job (where each extra call
    would be a collective other ranks do not make). Asked for in a notebook, they are tried after the
    report is shown as well."""
    from ..run.verify import NOTEBOOK_BUDGET_S

    verify, budget = args.get("verify_fixes"), args.get("verify_budget_s")
    if verify is None:
        if not notebook:
            verify = budget is not None  # a budget given asks for it
        else:
            from ..run.devices import job_ranks

            verify = not (args.get("observe") or args.get("sweep") or args.get("quiet") or job_ranks() > 1)
            if verify and budget is None:
                budget = NOTEBOOK_BUDGET_S
    later = bool(verify) and notebook and not args.get("quiet") and not args.get("sweep")
    return {"verify_fixes": bool(verify), "verify_budget_s": budget, "verify_later": later}


def _split_line_magic(line: str, magic) -> tuple[str, str]:
    """Split ``%compile [options] CODE`` into the option string and the code."""

    def parses(opts: str) -> bool:
        try:
            parse_line(magic, opts, "compile")
            return True
        except (UsageError, SystemExit, argparse.ArgumentError):
            return False

    split = split_options(line, parses)
    if split is None:
        raise UsageError(f"%compile: could not read the options in {line!r}; see %compile?")
    return split
