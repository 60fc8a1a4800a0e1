"""``python -m ipycompile torchrun [--trace-dir DIR] [-o REPORT.html] [torchrun's arguments] train.py ...``.

Runs the job under ``torchrun`` (``python -m torch.distributed.run``, the same Python)
with ``TORCH_TRACE`` set to a fresh folder (a new temporary one, or ``--trace-dir``, which
must be new or hold no trace logs), and nothing else added to the job: every other
argument goes to torchrun as given, the environment is the caller's. When torchrun ends,
the job's summary and how its ranks differ are printed (``python -m ipycompile report``
on the folder; ``-o`` also writes it as HTML), and torchrun's exit status is passed
through (the report's own failure never hides the job's).

Every output is checked before the job starts, and the job is not run when one fails (nor when
torchrun refuses its arguments: torchrun's own process checks them first, where torch is imported
anyway, and the launcher says torchrun's message as a usage error; the launcher imports no torch):
``-o`` must not be the script, a file the script's arguments name, anything inside
``--trace-dir``, or an existing file other than an earlier report of ipycompile's
(exit 2); its folder must exist and be writable (exit 1). ``--trace-dir`` must name a
folder (an empty value is refused).

SIGTERM or SIGINT (Ctrl-C) to the launcher goes to the whole job: torchrun runs in a
process group of its own, gets the signal, and stops its ranks as it does on a signal of
its own (a third signal kills torchrun and every process under it; a rank torchrun left
running, killed during its own shutdown by a second signal, is killed when torchrun ends).
The report of what the ranks had logged is still printed (and written with ``-o``), after a
line saying the job was stopped by the signal, and the exit status is 128 + the signal's
number (143 for SIGTERM, 130 for SIGINT), as a shell reports a command a signal ended. A
signal while the report is read stops it with one line naming the logs' folder (an output
is written whole or not at all), the same status; torchrun's own traceback for the signal
is not printed.

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

PROG = "ipycompile torchrun"
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
            if not eq and _takes_value(name, argv[i + 1] if i + 1 < len(argv) else None):
                rest.append(argv[i + 1])  # the option's value, not the script
                i += 1
        i += 1
    return own, rest


#: torchrun's options that take no value (``torch.distributed.run``'s parser, torch 2.11 to 2.14; every other
#: option takes one). Kept here so that the launcher reads its arguments without importing torch;
#: ``tests/test_gather.py`` checks it against the parser of the torch installed.
TORCHRUN_FLAGS = frozenset({"-h", "--help", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path",
                            "--standalone", "--virtual-local-rank", "--virtual_local_rank"})


def _takes_value(option: str, following: Optional[str]) -> bool:
    """Whether torchrun's ``option`` (given without ``=``) takes ``following``, the next argument, as its
    value: an option that is not a flag (nor a flag's abbreviation, which argparse accepts), when the
    next argument is not an option itself. An option torchrun does not know is refused by torchrun."""
    return (following is not None and not following.startswith("-")
            and not any(flag.startswith(option) for flag in TORCHRUN_FLAGS))


def check_torchrun_arguments(rest: Sequence[str]) -> None:
    """``ValueError`` (a usage error: nothing is run) for arguments torchrun refuses (an unknown
    option, a bad value, ``--nnodes`` or ``--nproc-per-node`` it cannot read), with torchrun's
    message on one line, where torchrun would print its usage or a traceback after the launcher
    had set up the job. ``-h`` before the script prints torchrun's help and exits 0."""
    try:
        import torch.distributed.run as torchrun
    except ImportError:  # a torch without it: torchrun says it, when it runs
        return
    parser = torchrun.get_args_parser()
    parser.prog = "python -m ipycompile torchrun [--trace-dir DIR] [-o REPORT.html]"

    def refuse(message: str):
        raise ValueError(f"torchrun: {message}")

    parser.error = refuse  # type: ignore[method-assign]
    args = parser.parse_args(list(rest))
    checks = [(getattr(torchrun, "parse_min_max_nnodes", None), getattr(args, "nnodes", None))]
    if getattr(args, "nproc_per_node", None) not in ("auto", "cpu", "gpu", "xpu"):  # a number: read without a device
        checks.append((getattr(torchrun, "determine_local_world_size", None), getattr(args, "nproc_per_node", None)))
    for check, value in checks:
        if check is None or value is None:
            continue
        try:
            got = check(value)
        except ValueError as exc:
            raise ValueError(f"torchrun: {exc}") from None
        if isinstance(got, int) and got < 1:  # torchrun itself fails an assertion, with a traceback
            raise ValueError(f"torchrun: --nproc-per-node {value}: give 1 or more processes")


def job_files(rest: Sequence[str]) -> list[str]:
    """The files the job reads, as far as its command line names them: the script and every
    script argument (or ``--option=VALUE`` value) that names an existing file."""
    i, found, rest = 0, [], list(rest)
    while i < len(rest):  # torchrun's options, up to the script
        arg = rest[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        if "=" not in arg and _takes_value(arg, rest[i + 1] if i + 1 < len(rest) else None):
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

#: The torchrun process: :func:`torchrun_process` (its arguments: the pipe's descriptor, the launcher's notes, torchrun's).
TORCHRUN = "from ipycompile.cli.torchrun import torchrun_process; torchrun_process()"

#: What the torchrun process answers on its pipe before the job starts.
_GO, _REFUSED, _EXITED = "go", "refused", "exited"


def torchrun_process() -> None:
    """torchrun's own ``main`` (as ``python -m torch.distributed.run``), in the process the launcher starts
    (``python -c`` :data:`TORCHRUN` ``FD NOTES torchrun's arguments``), where torch is imported anyway:

    - torchrun's arguments are checked first (:func:`check_torchrun_arguments`); the answer goes to the
      launcher on the pipe ``FD``: ``go``, ``refused`` and torchrun's message (the launcher says it as a
      usage error: no rank is started), or ``exited`` and a status (``-h``: torchrun's help was printed);
    - then the launcher's ``NOTES`` are printed on stderr (after the answer, before anything of the job's);
    - a signal that stopped the job ends torchrun quietly: torchrun stops its ranks on it and then raises
      ``SignalException``, whose traceback (two, chained, for a second signal during its shutdown) tells
      the user nothing the launcher does not say.
    """
    fd, notes, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    try:
        try:
            check_torchrun_arguments(rest)
            answer = _GO
        except ValueError as exc:
            answer = f"{_REFUSED}\t{exc}"
        except SystemExit as exc:  # torchrun's -h (or --print-completion) printed what it asked and exited
            answer = f"{_EXITED}\t{exc.code if isinstance(exc.code, int) else 1}"
    except KeyboardInterrupt:  # Ctrl-C before the job started (the launcher passed it on): nothing to stop
        sys.exit(128 + signal.SIGINT)
    os.write(fd, answer.encode("utf-8", "replace"))
    os.close(fd)  # the ranks never hold it: the launcher reads until it is closed
    if answer != _GO:
        sys.exit(0)
    if notes:
        print(notes, file=sys.stderr, flush=True)
    sys.argv = ["torchrun", *rest]
    from torch.distributed.run import main as torchrun_main

    try:
        from torch.distributed.elastic.multiprocessing.api import SignalException
    except ImportError:
        SignalException = ()  # type: ignore[assignment,misc]
    try:
        torchrun_main()
    except SignalException as exc:  # type: ignore[misc]
        # the ranks are stopped: a later Ctrl-C would only cut torch's exit handlers with a traceback
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        sys.exit(128 + int(exc.sigval))


def _answer(fd: int) -> tuple[str, str]:
    """The torchrun process's answer (:func:`torchrun_process`), read until it closes the pipe: ``(kind,
    detail)``; ``("", "")`` when it ended without one (it failed before: torchrun's exit status says it)."""
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    finally:
        os.close(fd)
    kind, _, detail = data.decode("utf-8", "replace").partition("\t")
    return kind, detail


def _started_at(pid: int) -> Optional[int]:
    """When process ``pid`` started (clock ticks since boot, /proc's field 22): with its pid, names one
    process, never a later one given the same pid. None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _descendants(pid: int) -> list[tuple[int, int]]:
    """The processes under ``pid``, each as ``(pid, start time)`` (from /proc; empty where there is
    none): torchrun starts each rank in a session of its own, out of reach of a signal to
    torchrun's process group."""
    children: dict[int, list[tuple[int, int]]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append((int(entry), int(fields[19])))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


class _Interrupted(BaseException):
    """A signal to the launcher after the job ended (while its report is read or written)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """SIGTERM and SIGINT to the launcher, from start to end. While the job runs they go to the whole
    job: torchrun's process group (torchrun then stops its ranks, as it does on a signal of its own);
    a third signal kills the job outright (torchrun and every process it started), and a rank left
    running when torchrun ended (torchrun killed by a signal during its own shutdown) is killed then.
    Once the job has ended, the first signal stops the report (:class:`_Interrupted`, raised once:
    later signals are only counted, so the launcher's last words are never cut by a traceback)."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.got: list[int] = []
        self.ranks: dict[int, int] = {}  # pid -> start time, of every process seen under torchrun
        self.job_ended = False
        self._raised = False
        self._old: dict[int, object] = {}

    def __enter__(self) -> "_Signals":
        self._old = {s: signal.signal(s, self._on_signal) for s in FORWARDED}
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._old.items():
            # stopped by a signal, the launcher is on its way out: one more Ctrl-C would only cut the exit
            # handlers of what it imported with a traceback
            signal.signal(s, signal.SIG_IGN if self.got else handler)

    def started(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        for signum in list(self.got):  # a signal before torchrun started
            self._send(signum)

    def ended(self) -> None:
        """torchrun has ended: a rank it left running after a signal is killed (nothing else would stop it)."""
        self.job_ended = True
        if self.got:
            self._kill_ranks(signal.SIGKILL)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.got.append(signum)
        if self.job_ended:
            if not self._raised:
                self._raised = True
                raise _Interrupted(signum)
        elif self.proc is not None:
            self._send(signum)

    def _send(self, signum: int) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            return
        self.ranks.update(_descendants(self.proc.pid))
        kill = len(self.got) >= 3
        try:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signum)
        except (ProcessLookupError, PermissionError):
            pass
        if kill:
            self._kill_ranks(signal.SIGKILL)

    def _kill_ranks(self, signum: int) -> None:
        for pid, started in self.ranks.items():
            if _started_at(pid) != started:  # gone (its pid perhaps another process's now)
                continue
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


def main(argv: Sequence[str]) -> int:
    from .output import fail, say as _say, unwritable, usage_error

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
        return usage_error(PROG, str(exc))
    why = unwritable(own["output"]) if "output" in own else None
    if why:
        return fail(PROG, why)
    made = "trace_dir" not in own or not os.path.exists(os.path.expanduser(own["trace_dir"]))
    try:
        trace_dir = _trace_dir(own.get("trace_dir"))
    except (ValueError, OSError) as exc:
        return usage_error(PROG, str(exc))
    env = dict(os.environ)
    notes = []
    if env.get("TORCH_TRACE") and env["TORCH_TRACE"] != trace_dir:
        notes.append(f"ipycompile torchrun: TORCH_TRACE={env['TORCH_TRACE']} replaced by {trace_dir} for this job")
    env["TORCH_TRACE"] = trace_dir
    notes.append(f"ipycompile torchrun: the ranks' TORCH_TRACE logs go to {trace_dir}")
    with _Signals() as signals:
        try:
            return _run_and_report(rest, env, trace_dir, own, signals, notes, made)
        except _Interrupted as stop:
            _say(f"ipycompile torchrun: stopped by {signal.Signals(stop.signum).name} while reading the job's logs; "
                 f"they are in {trace_dir} (python -m ipycompile report {trace_dir})", sys.stderr)
            return 128 + (signals.got[0] if signals.got else stop.signum)


def _run_and_report(rest: list[str], env: dict, trace_dir: str, own: dict[str, str], signals: _Signals,
                    notes: list[str], made: bool) -> int:
    """Run torchrun (its arguments checked first, in its own process: :func:`torchrun_process`), then print
    (and write, with ``-o``) the report of what its ranks logged. ``made``: the launcher made ``trace_dir``."""
    from ..report.text import printable
    from .output import say as _say, usage_error

    read, write = os.pipe()
    # ipycompile found as the launcher found it (appended: the job's own modules come first)
    child = f"import sys; sys.path.append({os.path.dirname(os.path.dirname(os.path.dirname(__file__)))!r}); {TORCHRUN}"
    try:
        # its own process group: a signal to the launcher (or Ctrl-C at the terminal) reaches the job once, through it
        proc = subprocess.Popen([sys.executable, "-c", child, str(write), "\n".join(printable(n) for n in notes), *rest],
                                env=env, process_group=0, pass_fds=(write,))
    finally:
        os.close(write)
    signals.started(proc)
    kind, detail = _answer(read)
    if kind in (_REFUSED, _EXITED):  # nothing was run: the folder made for the job goes
        proc.wait()
        signals.ended()
        if made and os.path.isdir(trace_dir) and not os.listdir(trace_dir):
            os.rmdir(trace_dir)
        if kind == _REFUSED:
            return usage_error(PROG, detail)
        return int(detail) if detail.lstrip("-").isdigit() else 1
    status = proc.wait()
    signals.ended()
    stopped = signals.got[0] if signals.got else None
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
