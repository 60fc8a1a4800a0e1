"""``python -m ipycompile ARGS`` through the command line's own entry point in the test process
(``ipycompile.cli.main``, what ``python -m ipycompile`` calls), for the tests where the process
boundary is not what is tested (an argument or usage error, an input that cannot be read): its exit
status, stdout and stderr, as ``subprocess.run(..., capture_output=True, text=True)`` returns them.
A traceback is an exception here, and fails the test. Each door and exit path keeps a real process
in the tests (``test_cli_errors.py``: one case of each command and exit status)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path
from typing import Optional


def in_this_process(*args, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    from ipycompile.cli import main

    args = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    trace = os.environ.pop("TORCH_TRACE", None)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as exc:  # argparse's usage errors and --help, as python -m ipycompile exits on them
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(here)
        if trace is not None:
            os.environ["TORCH_TRACE"] = trace
    return subprocess.CompletedProcess(["python", "-m", "ipycompile", *args], status, out.getvalue(), err.getvalue())
