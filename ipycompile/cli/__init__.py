"""``python -m ipycompile COMMAND ...``: ipycompile on the command line.

Each command is a module of this package with ``add_parser(subparsers)``, which
adds its subparser and sets its handler (``run(args) -> exit status``); the
commands are listed once, in :data:`COMMANDS`. ``report`` is :mod:`.report_command`.

The contract, for every command: exit status 0 on success, 1 when an input
cannot be read or an output cannot be written, 2 for a usage error (a bad or
missing option or value, an unknown command, outputs that would overwrite an
input); every error is one line on stderr (``PROG: error: MESSAGE``, a usage
error ending with where the usage is: :class:`~.output.OneLineParser`), never a
traceback. Stdout closed early (``| head``) ends the command quietly, as Unix
tools end on SIGPIPE: no message, status 141; Ctrl-C (SIGINT) ends it with one
line, status 130, an output written whole or not at all.
Text from the inputs is printed through :func:`ipycompile.report.text.printable`:
a trace is untrusted input, and must not drive the terminal or forge lines.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from . import report_command

__all__ = ["main", "build_parser", "COMMANDS", "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE", "EXIT_PIPE",
           "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
#: Stdout was closed before everything was written (``| head``): 128 + SIGPIPE, as a shell reports a tool it stopped.
EXIT_PIPE = 141
#: Ctrl-C (SIGINT): 128 + SIGINT, as a shell reports a command it interrupted.
EXIT_INTERRUPTED = 130

#: The commands, each a module with ``add_parser(subparsers)``.
COMMANDS = (report_command,)


def build_parser() -> argparse.ArgumentParser:
    from .output import OneLineParser

    parser = OneLineParser(
        prog="python -m ipycompile", description="ipycompile on the command line.",
        epilog="python -m ipycompile torchrun [torchrun's arguments] SCRIPT ...: run a job under torchrun with "
               "TORCH_TRACE, then print its ranks' summary (python -m ipycompile torchrun --help).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["torchrun"]:  # torchrun's own arguments pass through unparsed: see cli/torchrun.py
        from .torchrun import main as torchrun_main

        return torchrun_main(argv[1:])
    args, extra = build_parser().parse_known_args(argv)  # a usage error exits 2 here (SystemExit, as argparse does)
    if extra:  # named by the command's own parser: its name and usage
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        status = args.run(args)
        sys.stdout.flush()  # a pipe closed early shows here, not at exit
        return status
    except BrokenPipeError:  # stdout closed early (piped into head): stop quietly, as Unix tools do
        _quiet_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:  # Ctrl-C: the rank workers ignore it and are stopped; an output is written whole or not at all
        print(f"ipycompile {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (stdout replaced in-process)
        pass
