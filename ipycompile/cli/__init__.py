"""``python -m ipycompile report TRACE_OR_DIR [-o report.html] [--json PATH] [--rank R]``.

Reads a TORCH_TRACE log (plain or gzip) or a directory of rank logs and prints
a one-screen text summary on stdout; ``-o`` writes the report as a standalone
HTML page, ``--json`` as ipycompile's lossless JSON (``-`` for stdout). For a
directory without ``--rank`` it prints how the ranks differ. A progress bar
goes to stderr on large inputs. Exit status: 0 on success, 1 when the input
cannot be read (the reason on stderr), 2 for bad arguments. Text from the
input (messages, file names) is printed with control characters escaped: a
trace is untrusted input, and must not drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from typing import IO, Optional, Sequence

#: Inputs at least this large get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 32 << 20


class ProgressBar:
    """``[#####.....]  45%  120/300 MB  3.2 s`` redrawn in place on a stream."""

    def __init__(self, stream: IO[str], label: str, width: int = 30) -> None:
        self.stream, self.label, self.width = stream, label, width
        self.t0 = time.perf_counter()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - getattr(self, "_last", 0.0) < 0.1:  # redraw at most 10 times a second
            return
        self._last = now
        frac = min(1.0, done / total) if total else 1.0
        n = int(frac * self.width)
        bar = "#" * n + "." * (self.width - n)
        self.stream.write(f"\r{self.label} [{bar}] {frac:4.0%} {done / 1e6:,.0f}/{total / 1e6:,.0f} MB "
                          f"{time.perf_counter() - self.t0:.1f} s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _input_bytes(path: str) -> int:
    try:
        return _bytes_under(path)
    except OSError:  # unreadable: the reading says why
        return 0


def _bytes_under(path: str) -> int:
    if os.path.isdir(path):
        total = 0
        for name in os.listdir(path):
            full = os.path.join(path, name)
            if os.path.isfile(full):
                total += os.path.getsize(full)
        return total
    return os.path.getsize(path) if os.path.exists(path) else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ipycompile", description="ipycompile on the command line.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rep = sub.add_parser(
        "report",
        help="read a TORCH_TRACE log or a directory of rank logs",
        description="Read a TORCH_TRACE log (plain or gzip) or a directory of rank logs: a one-screen "
        "summary on stdout, the report as HTML (-o) or JSON (--json).",
    )
    rep.add_argument("path", metavar="TRACE_OR_DIR", help="a TORCH_TRACE log, or a directory of rank logs")
    rep.add_argument("-o", "--output", metavar="REPORT.html", help="write the report as a standalone HTML page")
    rep.add_argument("--json", metavar="PATH", help="write the report as JSON (ipycompile's lossless form); '-' for stdout")
    rep.add_argument("--rank", type=int, metavar="R", help="with a directory: read rank R's log only")
    rep.add_argument("--strict", action="store_true", help="fail on the first unreadable line (as tlparse --strict)")
    rep.add_argument("--full", action="store_true",
                     help="read everything even for the text summary (by default, without -o/--json, a quick first "
                     "pass leaves generated code and later graphs unread)")
    rep.add_argument("--workers", type=int, metavar="N", help="processes reading a directory's rank logs (default: one per CPU)")
    bar = rep.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show a progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return report_command(args)
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): not an error of the input
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _say(text: str, file: IO[str]) -> None:
    """Print ``text`` with control characters escaped (the report's own rule)."""
    from ..report.summary import printable

    print(printable(text), file=file)


def _fail(message: str) -> int:
    _say(f"ipycompile report: error: {message}", sys.stderr)
    return 1


def report_command(args: argparse.Namespace) -> int:
    from ..capture.tracefile import TraceFileError, check_path
    from ..report import CompileReport
    from ..report.summary import CLI_HINTS
    from ..run.traces import open_trace

    path = os.path.expanduser(args.path)
    if args.workers is not None and args.workers < 1:
        return _fail(f"--workers {args.workers}: give 1 or more")
    try:
        check_path(path)
    except TraceFileError as exc:
        return _fail(str(exc))
    show_bar = args.progress if args.progress is not None else (
        sys.stderr.isatty() and _input_bytes(path) >= PROGRESS_MIN_BYTES)
    bar = ProgressBar(sys.stderr, f"reading {os.path.basename(os.path.normpath(path))}") if show_bar else None
    first_pass = not (args.output or args.json or args.full)
    try:
        try:
            loaded, shown = open_trace(path, rank=args.rank, strict=args.strict, summary=first_pass,
                                       workers=args.workers, progress=bar)
        finally:
            if bar is not None:
                bar.close()
    except TraceFileError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{path}: {exc.strerror or exc}")

    to_stdout = args.json == "-"
    text_out = sys.stderr if to_stdout else sys.stdout
    if isinstance(shown, CompileReport):
        from ..widgets.text import MORE_CLI, render_text
        from ..widgets.viewmodel import view_model

        _say(render_text(view_model(shown, CLI_HINTS), more=MORE_CLI), text_out)
    else:
        _say(f"{loaded}\n\n{shown}", text_out)
    try:
        if args.json:
            data = shown.to_dict() if isinstance(shown, CompileReport) else _directory_json(loaded, shown)
            if to_stdout:
                json.dump(data, sys.stdout)
                sys.stdout.write("\n")
            else:
                with open(args.json, "w", encoding="utf-8") as f:
                    json.dump(data, f)
                _say(f"wrote {args.json}", text_out)
        if args.output:
            if isinstance(shown, CompileReport):
                from ..widgets.html import save_html

                save_html(shown, args.output, title=f"ipycompile: {os.path.basename(path)}")
            else:
                _save_directory_html(loaded, shown, args.output)
            _say(f"wrote {args.output} (it holds the model's code: share it as you would the code)", text_out)
    except OSError as exc:
        return _fail(f"cannot write the output: {exc.strerror or exc} ({exc.filename or ''})")
    return 0


def _directory_json(reports, divergence) -> dict:
    return {
        "path": reports.path,
        "files": {str(r): p for r, p in reports.files.items()},
        "ignored": [{"name": n, "why": why} for n, why in reports.ignored],
        "divergence": asdict(divergence),
        "summaries": {str(r): s.to_dict() for r, s in reports.summaries.items()},
    }


def _save_directory_html(reports, divergence, path: str) -> None:
    """One page: the ranks' divergence, then the full report of one rank of each behaviour
    (:func:`ipycompile.widgets.ranks_view.save_ranks_html`)."""
    from ..widgets.ranks_view import save_ranks_html

    save_ranks_html(reports, divergence, path)
