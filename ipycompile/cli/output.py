"""What every command of the command line shares: printing untrusted text, failing with
one line, and writing an output (a file, atomically, never over an input; or ``-``, stdout)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import IO, Iterable, Iterator, Optional

from ..report.files import OutputIsInputError, atomic_writer, refuse_input
from ..report.text import one_line, printable

__all__ = ["say", "fail", "usage_error", "OneLineParser", "STDOUT", "check_outputs", "unwritable", "open_output", "output_name"]

#: The output path that means stdout (as ``--json -``).
STDOUT = "-"


def say(text: str, file: IO[str]) -> None:
    """Print ``text`` with control and bidirectional characters escaped (the report's own rule)."""
    print(printable(text), file=file)


def fail(prog: str, message: str) -> int:
    """``PROG: error: MESSAGE`` on stderr, on one line (a file name cannot start another); returns 1."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return 1


def usage_error(prog: str, message: str) -> int:
    """``PROG: error: MESSAGE (usage: python -m PROG --help)`` on stderr, on one line; returns 2."""
    print(f"{prog}: error: {one_line(message)} (usage: python -m {prog} --help)", file=sys.stderr)
    return 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (:func:`usage_error`, the command's name without
    ``python -m``) and exit 2, in place of argparse's usage line followed by the message."""

    def error(self, message: str):  # type: ignore[override]
        sys.exit(usage_error(self.prog.removeprefix("python -m "), message))


def output_name(path: str) -> str:
    """How a message names an output: ``stdout``, or the path on one line."""
    return "stdout" if path == STDOUT else one_line(path)


def check_outputs(parser: argparse.ArgumentParser, outputs: dict[str, Optional[str]], inputs: Iterable[str]) -> None:
    """Usage errors (exit 2, before anything is read) for outputs that cannot all be written:
    two on stdout, two to one file, one that is (or resolves to) an input or lies inside an input
    directory. ``outputs`` maps each option (``-o``) to its path (None: not given)."""
    given = {opt: p for opt, p in outputs.items() if p is not None}
    to_stdout = [opt for opt, p in given.items() if p == STDOUT]
    if len(to_stdout) > 1:
        parser.error(f"{' and '.join(to_stdout)} both write to stdout ('-'): give one of them a file")
    files = {opt: p for opt, p in given.items() if p != STDOUT}
    inputs = list(inputs)
    for opt, path in files.items():
        if not path:
            parser.error(f"{opt}: give a file name (or '-' for stdout)")
        try:
            refuse_input(path, inputs, opt)
        except OutputIsInputError as exc:
            parser.error(one_line(str(exc)))
    real = {opt: os.path.realpath(p) for opt, p in files.items()}
    if len(set(real.values())) < len(real):
        parser.error(f"{' and '.join(real)} name the same file: give each its own")


def unwritable(path: str) -> Optional[str]:
    """Why ``path`` cannot be written, found before any work (its folder missing, not a folder,
    not writable; the path itself a folder), as ``cannot write PATH: REASON``; None when it can
    be (a full disk or a size limit still shows only when it is written)."""
    if path == STDOUT:
        return None
    target = os.path.realpath(path)  # written through a symlink, as atomic_writer does
    folder = os.path.dirname(target)
    why = None
    if os.path.isdir(target):
        why = "it is a folder"
    elif not os.path.exists(folder):
        why = f"no folder {folder}"
    elif not os.path.isdir(folder):
        why = f"{folder} is not a folder"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = f"permission denied in {folder}"
    return None if why is None else f"cannot write {output_name(path)}: {why}"


@contextlib.contextmanager
def open_output(path: str) -> Iterator[IO[str]]:
    """A text stream for an output: stdout for ``-``; else a temporary file beside ``path``,
    renamed over it when the block ends (an error leaves an earlier file as it was)."""
    if path == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_writer(path, "w", encoding="utf-8") as f:
        yield f
