"""``python -m ipycompile torchrun [--trace-dir DIR] [-o REPORT.html] [torchrun's arguments] train.py ...``.

Runs the job under ``torchrun`` (``python -m torch.distributed.run``, the same Python)
with ``TORCH_TRACE`` set to a fresh folder (a new temporary one, or ``--trace-dir``, which
must be new or hold no trace logs), and nothing else added to the job: every other
argument goes to torchrun as given, the environment is the caller's. When torchrun ends,
the job's summary and how its ranks differ are printed (``python -m ipycompile report``
on the folder; ``-o`` also writes it as HTML), and torchrun's exit status is passed
through (the report's own failure never hides the job's).

Every output is checked before the job starts, and the job is not run when one fails:
``-o`` must not be the script, a file the script's arguments name, anything inside
``--trace-dir``, or an existing file other than an earlier report of ipycompile's
(exit 2); its folder must exist and be writable (exit 1). ``--trace-dir`` must name a
folder (an empty value is refused).

SIGTERM or SIGINT (Ctrl-C) to the launcher goes to the whole job: torchrun runs in a
process group of its own, gets the signal, and stops its ranks as it does on a signal of
its own (a third signal kills torchrun and every process under it). The report of what
the ranks had logged is still printed (and written with ``-o``), after a line saying the
job was stopped by the signal, and the exit status is 128 + the signal's number (143 for
SIGTERM, 130 for SIGINT), as a shell reports a command a signal ended.

Multi-node (``--nnodes N``): run this on every node, as torchrun itself; each node's
ranks write their logs (named by global rank) into that node's folder, and the summary a
node prints covers its own ranks. Copy the folders into one to read the whole job:
``python -m ipycompile report ALL/``.
"""

from __future__ import annotations

import os
import signal
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


def job_files(rest: Sequence[str]) -> list[str]:
    """The files the job reads, as far as its command line names them: the script and every
    script argument (or ``--option=VALUE`` value) that names an existing file."""
    takes_value = _torchrun_options()
    i, found, rest = 0, [], list(rest)
    while i < len(rest):  # torchrun's options, up to the script
        arg = rest[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        if "=" not in arg and takes_value.get(arg, False):
            i += 1
        i += 1
    for arg in rest[i:]:
        for candidate in (arg, arg.partition("=")[2] if arg.startswith("-") else ""):
            if candidate and os.path.isfile(os.path.expanduser(candidate)):
                found.append(os.path.expanduser(candidate))
    return found


def check_output(output: str, trace_dir: Optional[str], rest: Sequence[str]) -> None:
    """``ValueError`` (a usage error: nothing is run) when the report's ``-o`` would overwrite what
    it must not: the script or a file its arguments name, anything inside ``--trace-dir``, or an
    existing file that is not an earlier report of ipycompile's (:func:`~ipycompile.report.files.is_ipycompile_report`)."""
    from ..report.files import OutputIsInputError, is_ipycompile_report, refuse_input

    if not output:
        raise ValueError("-o: give a file name for the report (or '-' for stdout)")
    if output == "-":
        return
    path = os.path.expanduser(output)
    try:
        refuse_input(path, job_files(rest), "-o")
    except OutputIsInputError as exc:
        raise ValueError(f"{exc} (a file of the job)") from None
    if trace_dir is not None:
        folder = os.path.realpath(os.path.expanduser(trace_dir))
        real = os.path.realpath(path)
        if os.path.commonpath([real, folder]) == folder:
            raise ValueError(f"-o {output} is inside --trace-dir {trace_dir}, where the job's logs go: "
                             "write the report elsewhere")
    if os.path.lexists(path) and not os.path.isdir(path) and not is_ipycompile_report(path):
        raise ValueError(f"-o {output}: an existing file that is not an ipycompile report (the launcher "
                         "overwrites only its own reports): give another path, or remove it first")


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


#: The signals the launcher passes on to the job (torchrun's process group; torchrun stops its ranks).
FORWARDED = (signal.SIGTERM, signal.SIGINT)


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (from /proc; empty where there is none): torchrun starts each
    rank in a session of its own, out of reach of a signal to torchrun's process group."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class _Forwarder:
    """SIGTERM and SIGINT to the launcher go to the whole job: torchrun's process group (torchrun
    then stops its ranks, as it does on a signal of its own). A third signal kills the job outright
    (torchrun and every process it started)."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.got: list[int] = []
        self.ranks: list[int] = []
        self._old: dict[int, object] = {}

    def __enter__(self) -> "_Forwarder":
        self._old = {s: signal.signal(s, self._on_signal) for s in FORWARDED}
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)

    def started(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        for signum in list(self.got):  # a signal before torchrun started
            self._send(signum)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.got.append(signum)
        if self.proc is not None:
            self._send(signum)

    def _send(self, signum: int) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            return
        self.ranks = sorted(set(self.ranks) | set(_descendants(self.proc.pid)))
        kill = len(self.got) >= 3
        try:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signum)
        except (ProcessLookupError, PermissionError):
            pass
        if kill:
            for pid in self.ranks:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def main(argv: Sequence[str]) -> int:
    from .output import fail, say as _say, unwritable

    try:
        own, rest = split_arguments(argv)
        if not [a for a in rest if not a.startswith("-")] or rest in (["-h"], ["--help"]):
            if rest in (["-h"], ["--help"]):
                print(__doc__.strip().splitlines()[0].strip("`. ") + "\n\n" + USAGE)
                return 0
            raise ValueError("no script to run")
        if "trace_dir" in own and not own["trace_dir"].strip():
            raise ValueError("--trace-dir: give a folder name (an empty one would put the logs in the working directory)")
        if "output" in own:
            check_output(own["output"], own.get("trace_dir"), rest)
    except (ValueError, OSError) as exc:
        _say(f"ipycompile torchrun: error: {exc}\n{USAGE}", sys.stderr)
        return 2
    why = unwritable(own["output"]) if "output" in own else None
    if why:
        return fail("ipycompile torchrun", why)
    try:
        trace_dir = _trace_dir(own.get("trace_dir"))
    except (ValueError, OSError) as exc:
        _say(f"ipycompile torchrun: error: {exc}\n{USAGE}", sys.stderr)
        return 2
    env = dict(os.environ)
    if env.get("TORCH_TRACE") and env["TORCH_TRACE"] != trace_dir:
        _say(f"ipycompile torchrun: TORCH_TRACE={env['TORCH_TRACE']} replaced by {trace_dir} for this job", sys.stderr)
    env["TORCH_TRACE"] = trace_dir
    _say(f"ipycompile torchrun: the ranks' TORCH_TRACE logs go to {trace_dir}", sys.stderr)
    with _Forwarder() as forward:
        # its own process group: a signal to the launcher (or Ctrl-C at the terminal) reaches the job once, through it
        proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *rest], env=env, process_group=0)
        forward.started(proc)
        status = proc.wait()
    stopped = forward.got[0] if forward.got else None
    if stopped is not None:
        name = signal.Signals(stopped).name
        _say(f"ipycompile torchrun: the job was stopped by {name} (passed on to torchrun and its ranks); "
             "the report covers what the ranks logged until then", sys.stderr)
    if not any(n.startswith("dedicated_log_torch_trace_") for n in os.listdir(trace_dir)):
        if "trace_dir" not in own and not os.listdir(trace_dir):
            os.rmdir(trace_dir)  # the temporary folder made for a job that logged nothing
        _say(f"ipycompile torchrun: the job wrote no TORCH_TRACE log to {trace_dir} (it compiled nothing, "
             f"or failed first); torchrun's exit status: {status}", sys.stderr)
        return 128 + stopped if stopped is not None else status
    from . import main as cli

    report_args = ["report", trace_dir, "--no-progress"] + (["-o", own["output"]] if "output" in own else [])
    report_status = cli(report_args)
    if stopped is not None:
        return 128 + stopped  # as a shell reports a command a signal ended
    if status != 0:
        _say(f"ipycompile torchrun: torchrun's exit status {status} (the job failed; the report covers what the "
             f"ranks logged)", sys.stderr)
        return status
    return report_status
