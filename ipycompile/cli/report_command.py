"""``python -m ipycompile report TRACE_OR_DIR [-o report.html|-] [--json PATH|-] [--rank R]``.

Reads a TORCH_TRACE log (plain or gzip) or a directory of rank logs and prints
a one-screen text summary on stdout; ``-o`` writes the report as a standalone
HTML page (a large one as its first screen and a folder of parts beside it, built
as they are opened: :mod:`ipycompile.views.page_files`), ``--json`` as
ipycompile's lossless JSON (standard JSON: ``jq`` and ``JSON.parse`` read it). ``-`` for either writes it to stdout, and the summary
then goes to stderr. For a directory without ``--rank`` it prints how the
ranks differ. A progress bar goes to stderr on large inputs.

Outputs are written atomically (a temporary file beside the target, renamed
over it): a failed write leaves an earlier file as it was. An output that is
(or resolves to) the input, or lies inside an input directory, is refused
before anything is read (exit 2), and so is one that cannot be written (its
folder missing or not writable: exit 1). Exit status: see :mod:`ipycompile.cli`.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import time
from dataclasses import asdict
from typing import IO

from .output import check_outputs, fail, open_output, output_name, say, unwritable

PROG = "ipycompile report"
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
    return os.path.getsize(path) if os.path.isfile(path) else 0


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of processes, 1 or more") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give 1 or more")
    return n


def add_parser(sub) -> argparse.ArgumentParser:
    rep = sub.add_parser(
        "report",
        help="read a TORCH_TRACE log or a directory of rank logs",
        description="Read a TORCH_TRACE log (plain or gzip) or a directory of rank logs: a one-screen "
        "summary on stdout, the report as HTML (-o) or JSON (--json). Exit status: 0 on success, 1 when "
        "the input cannot be read or an output cannot be written, 2 for a usage error.",
    )
    rep.add_argument("path", metavar="TRACE_OR_DIR", help="a TORCH_TRACE log, or a directory of rank logs")
    rep.add_argument("-o", "--output", metavar="REPORT.html",
                     help="write the report as a standalone HTML page; '-' for stdout")
    rep.add_argument("--json", metavar="PATH", help="write the report as JSON (ipycompile's lossless form); '-' for stdout")
    rep.add_argument("--rank", type=int, metavar="R", help="with a directory: read rank R's log only")
    rep.add_argument("--strict", action="store_true", help="fail on the first unreadable line (as tlparse --strict)")
    rep.add_argument("--full", action="store_true",
                     help="read everything even for the text summary (by default, without -o/--json, a quick first "
                     "pass leaves generated code and later graphs unread)")
    rep.add_argument("--workers", type=_workers, metavar="N",
                     help="processes reading a directory's rank logs (default: one per 24 MB of logs, at most one "
                     "per CPU, within a memory budget that follows the logs' size; none for a small directory), "
                     "or one log in spans, this process included (default, for the first-pass summary of a plain "
                     "log of 8 MiB or more: one per 8 MiB, at most one per idle CPU; for the page or --json: one "
                     "per 12 MiB where 3 or more CPUs are idle, within a memory budget that grows with the log; "
                     "1: no spans)")
    rep.add_argument("--timings", action="store_true",
                     help="print where the time and memory went, stage by stage (start, imports, reading, summary, "
                     "page, JSON), on stderr")
    bar = rep.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show a progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    rep.set_defaults(run=report_command, parser=rep)
    return rep


def report_command(args: argparse.Namespace) -> int:
    args.stages = None  # --timings: where the time went (_report and _write_outputs mark its stages)
    if getattr(args, "timings", False):
        from .timings import Stages

        args.stages = Stages()
    try:
        return _report(args)
    finally:
        if args.stages is not None:
            args.stages.write()


def _report(args: argparse.Namespace) -> int:
    from ..capture.tracefile import TraceFileError, check_path
    from ..run.traces import open_trace

    stages = args.stages
    if stages is not None:
        # what _write_outputs imports, imported now, so that the imports stage holds every import
        from ..report import CompileReport  # noqa: F401
        from ..views.phrases import CLI_HINTS  # noqa: F401

        stages.mark("imports")
    path = os.path.expanduser(args.path)
    check_outputs(args.parser, {"-o": args.output, "--json": args.json}, [path])  # exit 2: nothing read yet
    for target in (args.output, args.json):  # exit 1, still before anything is read
        why = target and unwritable(target)
        if why:
            return fail(PROG, why)
    try:
        check_path(path)
    except TraceFileError as exc:
        return fail(PROG, str(exc))
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
        return fail(PROG, str(exc))
    except OSError as exc:
        return fail(PROG, f"{path}: {exc.strerror or exc}")
    if stages is not None:
        stages.mark("reading")

    try:
        return _write_outputs(args, path, loaded, shown)
    except TraceFileError as exc:  # a payload its log no longer holds (cut short or rewritten since it was read)
        return fail(PROG, str(exc))


def _write_outputs(args: argparse.Namespace, path: str, loaded, shown) -> int:
    from ..report import CompileReport
    from ..views.phrases import CLI_HINTS

    to_stdout = "-" in (args.json, args.output)
    text_out = sys.stderr if to_stdout else sys.stdout
    if isinstance(shown, CompileReport):
        from ..views.plain_text import MORE_CLI, render_text
        from ..views.viewmodel import view_model

        say(render_text(view_model(shown, CLI_HINTS), more=MORE_CLI), text_out)
    else:
        say(f"{loaded}\n\n{shown}", text_out)
    stages = args.stages
    if stages is not None:
        stages.mark("summary")
    for target, write, note, stage in ((args.json, _write_json, "", "JSON"),
                                       (args.output, _write_html, " (it holds the model's code: share it as you would "
                                        "the code)", "page")):
        if not target:
            continue
        written = [target]
        try:
            if write is _write_html and target != "-" and isinstance(shown, CompileReport):
                written = _save_page(target, path, shown)  # a large page: a folder of its parts beside it
            else:
                with open_output(target) as f:
                    write(f, path, loaded, shown)
        except BrokenPipeError:
            raise  # stdout closed early: the command stops quietly (see ipycompile.cli.main)
        except FileExistsError as exc:  # a folder beside the page that is not one of ours
            return fail(PROG, f"cannot write {output_name(target)}: {exc}")
        except OSError as exc:
            return fail(PROG, f"cannot write {output_name(target)}: {(exc.strerror or str(exc)).lower()}")
        if target != "-":
            if len(written) > 1:
                from ..views.page_files import side_folder

                folder = side_folder(target)
                size = sum(os.path.getsize(p) for p in written[1:]) / 1e6
                note = (f" and its parts, built as they are opened, in {output_name(folder)} ({len(written) - 1} files, "
                        f"{size:.1f} MB: keep them together){note}")
            say(f"wrote {output_name(target)}{note}", text_out)
        if stages is not None:
            stages.mark(stage)
    return 0


def _save_page(target: str, path: str, shown) -> list[str]:
    from ..views.html import save_page

    title = f"ipycompile: {os.path.basename(os.path.normpath(path))}"
    head, tail = _page(title, "\0").split("\0")
    return save_page(shown, target, head, tail)


def _write_json(f: IO[str], path: str, loaded, shown) -> None:
    from ..report import CompileReport
    from ..report.serialize import finite_json

    if isinstance(shown, CompileReport):
        f.write(shown.to_json())
    else:
        json.dump(finite_json(_directory_json(loaded, shown)), f, allow_nan=False)
    f.write("\n")


def _write_html(f: IO[str], path: str, loaded, shown) -> None:
    """The page on stdout (every part in place), or a directory's page; a report's page in a file
    is written by :func:`_save_page`."""
    from ..report import CompileReport
    from ..views.html import write_body

    if isinstance(shown, CompileReport):
        title = f"ipycompile: {os.path.basename(os.path.normpath(path))}"
        head, tail = _page(title, "\0").split("\0")
        f.write(head)
        write_body(shown, lambda text: _write_pieces(f, text))  # each tab written as it is rendered
        f.write(tail)
    else:
        _write_pieces(f, _directory_page(loaded, shown))


def _page(title: str, body: str) -> str:
    from ..report.files import REPORT_MARKER
    from ..report.text import utf8_safe

    return utf8_safe(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{REPORT_MARKER}<title>{html.escape(title)}</title>"
                     f"</head><body>\n{body}\n</body></html>\n")


#: How much of a page's text is encoded and written at once (the page of a large log is tens of
#: MB: neither it nor its UTF-8 bytes are held whole).
_PIECE = 1 << 20


def _write_pieces(f: IO[str], text: str) -> None:
    from ..report.text import utf8_safe

    for start in range(0, len(text), _PIECE):
        f.write(utf8_safe(text[start:start + _PIECE]))


def _directory_json(reports, divergence) -> dict:
    return {
        "path": reports.path,
        "files": {str(r): p for r, p in reports.files.items()},
        "ignored": [{"name": n, "why": why} for n, why in reports.ignored],
        "divergence": asdict(divergence),
        "summaries": {str(r): s.to_dict() for r, s in reports.summaries.items()},
    }


def _directory_page(reports, divergence) -> str:
    """One page: the ranks' divergence, then the full report of one rank of each behaviour
    (:func:`ipycompile.views.ranks_view.ranks_page`)."""
    from ..views.ranks_view import ranks_page

    return ranks_page(reports, divergence)
