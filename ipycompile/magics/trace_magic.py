"""``%compile_trace PATH [--rank R]``: a TORCH_TRACE log (or a job's rank logs) in the notebook."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..report.text import one_line
from ..run.traces import open_trace
from .arguments import output_name, parse_line


@magics_class
class TraceMagics(Magics):
    @magic_arguments()
    @argument("path", help="a TORCH_TRACE log (plain or gzip), or a directory of rank logs")
    @argument("--rank", type=int, default=None, help="with a directory: show this rank's report")
    @argument("--strict", action="store_true", help="fail on the first unreadable line (as tlparse --strict)")
    @argument("-o", dest="output", default=None, metavar="NAME",
              help="store the report (for a directory: the RankReports, rank -> report) as NAME")
    @line_magic
    def compile_trace(self, line: str) -> None:
        """Show a TORCH_TRACE log with the usual views; for a directory of rank logs, how the ranks differ."""
        args = parse_line(self.compile_trace, line, "compile_trace")
        output_name(self.shell, args.output, "compile_trace")
        try:
            loaded, shown = open_trace(args.path, rank=args.rank, strict=args.strict)
        except ValueError as exc:  # TraceFileError: the path and the reason
            raise UsageError(one_line(str(exc))) from None  # the path is the user's, its file names untrusted
        if args.output:
            self.shell.user_ns[args.output] = loaded
        from IPython.display import display

        from ..report import CompileReport
        from ..views import report_view
        from ..views.ranks_view import RanksView

        display(report_view(shown) if isinstance(shown, CompileReport) else RanksView(shown))
