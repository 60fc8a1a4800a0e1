"""``python -m ipycompile torchrun [--trace-dir DIR] [-o REPORT.html] [torchrun's arguments] train.py ...``.

Runs the job under ``torchrun`` (``python -m torch.distributed.run``, the same Python)
with ``TORCH_TRACE`` set to a fresh folder (a new temporary one, or ``--trace-dir``, which
must be new or hold no trace logs), and nothing else added to the job: every other
argument goes to torchrun as given, the environment is the caller's. When torchrun ends,
the job's summary and how its ranks differ are printed (``python -m ipycompile report``
on the folder; ``-o`` also writes it as HTML), and torchrun's exit status is passed
through (the report's own failure never hides the job's).

Multi-node (``--nnodes N``): run this on every node, as torchrun itself; each node's
ranks write their logs (named by global rank) into that node's folder, and the summary a
node prints covers its own ranks. Copy the folders into one to read the whole job:
``python -m ipycompile report ALL/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Optional, Sequence

USAGE = ("usage: python -m ipycompile torchrun [--trace-dir DIR] [-o REPORT.html] "
         "[torchrun's arguments] SCRIPT [script arguments]")

#: The launcher's own options (taken out before torchrun sees the arguments); torchrun has none of these names.
_OWN = {"--trace-dir": "trace_dir", "-o": "output", "--output": "output"}


def split_arguments(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``({option: value}, torchrun's arguments)``: the launcher's options are read only
    before the first argument that is not an option (the script, for torchrun), so the
    script's own ``-o`` is left alone. Raises ``ValueError`` for an option without a value."""
    own: dict[str, str] = {}
    rest: list[str] = []
    takes_value = _torchrun_options()
    i = 0
    argv = list(argv)
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or not arg.startswith("-"):
            rest += argv[i:]
            break
        name, eq, value = arg.partition("=")
        if name in _OWN:
            if not eq:
                if i + 1 >= len(argv):
                    raise ValueError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            own[_OWN[name]] = value
        else:
            rest.append(arg)
            if not eq and takes_value.get(name, False) and i + 1 < len(argv):
                rest.append(argv[i + 1])  # the option's value, not the script
                i += 1
        i += 1
    return own, rest


def _torchrun_options() -> dict[str, bool]:
    """torchrun's option strings, each with whether it takes a value (from torchrun's own parser)."""
    try:
        from torch.distributed.run import get_args_parser

        return {opt: action.nargs != 0 for action in get_args_parser()._actions for opt in action.option_strings}
    except Exception:  # a torch without it: every option taken as a flag
        return {}


def _trace_dir(given: Optional[str]) -> str:
    """A fresh folder for the job's logs: ``given`` (created; refused when it already holds trace logs)."""
    if given is None:
        return tempfile.mkdtemp(prefix="ipycompile-torchrun-")
    path = os.path.abspath(os.path.expanduser(given))
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"--trace-dir {given}: not a folder")
    os.makedirs(path, exist_ok=True)
    old = [n for n in os.listdir(path) if n.startswith("dedicated_log_torch_trace_")]
    if old:
        raise ValueError(f"--trace-dir {given}: it already holds {len(old)} TORCH_TRACE log(s) of an earlier run "
                         "(the report would mix the two jobs); give a new or empty folder")
    return path


def main(argv: Sequence[str]) -> int:
    from .output import say as _say

    try:
        own, rest = split_arguments(argv)
        if not [a for a in rest if not a.startswith("-")] or rest in (["-h"], ["--help"]):
            if rest in (["-h"], ["--help"]):
                print(__doc__.strip().splitlines()[0].strip("`. ") + "\n\n" + USAGE)
                return 0
            raise ValueError("no script to run")
        trace_dir = _trace_dir(own.get("trace_dir"))
    except (ValueError, OSError) as exc:
        _say(f"ipycompile torchrun: error: {exc}\n{USAGE}", sys.stderr)
        return 2
    env = dict(os.environ)
    if env.get("TORCH_TRACE") and env["TORCH_TRACE"] != trace_dir:
        _say(f"ipycompile torchrun: TORCH_TRACE={env['TORCH_TRACE']} replaced by {trace_dir} for this job", sys.stderr)
    env["TORCH_TRACE"] = trace_dir
    _say(f"ipycompile torchrun: the ranks' TORCH_TRACE logs go to {trace_dir}", sys.stderr)
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *rest], env=env)
    try:
        status = proc.wait()
    except KeyboardInterrupt:  # torchrun got the same Ctrl-C (one process group): let it stop its workers
        status = proc.wait()
    if not any(n.startswith("dedicated_log_torch_trace_") for n in os.listdir(trace_dir)):
        if "trace_dir" not in own and not os.listdir(trace_dir):
            os.rmdir(trace_dir)  # the temporary folder made for a job that logged nothing
        _say(f"ipycompile torchrun: the job wrote no TORCH_TRACE log to {trace_dir} (it compiled nothing, "
             f"or failed first); torchrun's exit status: {status}", sys.stderr)
        return status
    from . import main as cli

    report_args = ["report", trace_dir, "--no-progress"] + (["-o", own["output"]] if "output" in own else [])
    report_status = cli(report_args)
    if status != 0:
        _say(f"ipycompile torchrun: torchrun's exit status {status} (the job failed; the report covers what the "
             f"ranks logged)", sys.stderr)
        return status
    return report_status
