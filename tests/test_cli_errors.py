"""The command line's contract: every error the suite can provoke is one line on stderr and an
exit status (2 for a usage error, 1 for an input that cannot be read or an output that cannot be
written), never a traceback, and nothing on stdout. The cases are those the other CLI tests provoke
(``test_trace_cli.py``, ``test_gather.py``'s launcher tests), gathered here with the bad flags they do
not try. One case of each command and exit status (:data:`IN_A_PROCESS`) is a real ``python -m
ipycompile`` process, as a user runs it; the others go through the same entry point in this process
(``ipycompile.cli.main``, what ``python -m ipycompile`` calls), where a traceback would fail the test.
(A log cut short or rewritten while it is read is ``test_growing_log.py``'s: it needs the moment.)
"""

from __future__ import annotations

import gzip
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trace_inputs
from cli_runs import in_this_process

ROOT = Path(__file__).resolve().parents[1]
LOG = Path(__file__).parent / "data" / "gpu-h100" / "max_autotune.log.gz"


def _job_dir(tmp: Path, *extra: str) -> Path:
    d = tmp / "job"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(LOG, d / f"dedicated_log_torch_trace_rank_{rank}_x.log.gz")
    for name in extra:
        os.symlink(d / "gone.log", d / name)
    return d


def _file(tmp: Path, name: str, data: bytes) -> Path:
    (tmp / name).write_bytes(data)
    return tmp / name


def _cut(tmp: Path) -> Path:
    data = gzip.decompress(LOG.read_bytes())
    return _file(tmp, "cut.log", data[: len(data) // 2])


def _loop(tmp: Path) -> Path:
    os.symlink(tmp / "loop.log", tmp / "loop.log")
    return tmp / "loop.log"


def _linked(tmp: Path, how) -> Path:
    log = tmp / "trace.log.gz"
    shutil.copy(LOG, log)
    how(log, tmp / "other.html")
    return log


def _notes_dir(tmp: Path) -> Path:
    (tmp / "notes").mkdir()
    (tmp / "notes" / "notes.txt").write_text("hello\n")
    return tmp / "notes"


def _job_script(tmp: Path) -> str:
    (tmp / "job.py").write_text("open('ran', 'w').write('the job ran')\n")
    (tmp / "data.txt").write_text("the job's data\n")
    (tmp / "notes.html").write_text("<!DOCTYPE html><p>the user's own page</p>\n")
    (tmp / "old").mkdir()
    (tmp / "old" / "dedicated_log_torch_trace_rank_0_abc.log").write_text("x")
    (tmp / "afile").write_text("x")
    return "job.py"


def _fsize_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))


#: (id, how to make the command's arguments in a fresh folder, exit status, words the line holds)
CASES = [
    # -- report: usage errors (exit 2) -----------------------------------------------------------
    ("no command", lambda t: [], 2, "the following arguments are required: COMMAND"),
    ("unknown command", lambda t: ["rapport", LOG], 2, "invalid choice: 'rapport'"),
    ("only a flag", lambda t: ["--bogus"], 2, "required: COMMAND"),
    ("report without a log", lambda t: ["report"], 2, "required: TRACE_OR_DIR"),
    ("report unknown flag", lambda t: ["report", LOG, "--bogus"], 2, "unrecognized arguments: --bogus"),
    ("rank not a number", lambda t: ["report", LOG, "--rank", "one"], 2, "--rank: invalid int value: 'one'"),
    ("workers 0", lambda t: ["report", LOG, "--workers", "0"], 2, "--workers: 0: give 1 or more"),
    ("workers not a number", lambda t: ["report", LOG, "--workers", "x"], 2, "give a whole number of processes"),
    ("option without its value", lambda t: ["report", LOG, "--json"], 2, "--json: expected one argument"),
    ("progress and no progress", lambda t: ["report", LOG, "--progress", "--no-progress"], 2, "not allowed with argument"),
    ("json over its input", lambda t: ["report", _file(t, "t.log.gz", LOG.read_bytes()), "--json", t / "t.log.gz"],
     2, "--json"),
    ("html over its input", lambda t: ["report", _file(t, "t.log.gz", LOG.read_bytes()), "-o", t / "t.log.gz"], 2, "-o"),
    ("html over a symlink to its input", lambda t: ["report", _linked(t, lambda a, b: os.symlink(a, b)), "-o", t / "other.html"],
     2, "-o"),
    ("json over a hard link to its input", lambda t: ["report", _linked(t, os.link), "--json", t / "other.html"], 2, "--json"),
    ("html inside the input folder", lambda t: ["report", _job_dir(t), "-o", t / "job" / "r.html"], 2,
     "inside the input directory"),
    ("two outputs on stdout", lambda t: ["report", LOG, "-o", "-", "--json", "-"], 2, "both write to stdout"),
    ("two outputs to one file", lambda t: ["report", LOG, "-o", t / "x", "--json", t / "x"], 2, "name the same file"),
    ("empty output name", lambda t: ["report", LOG, "-o", ""], 2, "-o: give a file name"),
    # -- report: inputs that cannot be read, outputs that cannot be written (exit 1) ------------------
    ("missing log", lambda t: ["report", t / "missing.log"], 1, "no such file or directory"),
    ("not a log", lambda t: ["report", _file(t, "notes.txt", b"hello\n" * 300)], 1, "is not a TORCH_TRACE log"),
    ("empty file", lambda t: ["report", _file(t, "trace.log", b"")], 1, "not a TORCH_TRACE log"),
    ("broken gzip", lambda t: ["report", _file(t, "trace.log", b"\x1f\x8b" + b"garbage" * 20)], 1, "not a TORCH_TRACE log"),
    ("a cut log, strict", lambda t: ["report", _cut(t), "--strict"], 1, "cut.log, line "),
    ("deep JSON, strict", lambda t: ["report", trace_inputs.write_log(t / "deep.log", trace_inputs.records(),
                                                                      trace_inputs.deep_envelope_line()), "--strict"],
     1, "nested too deeply"),
    ("a folder without rank logs", lambda t: ["report", _notes_dir(t), "--json", t / "out.json"], 1, "holds no rank logs"),
    ("a broken rank log, strict", lambda t: ["report", _job_dir(t, "dedicated_log_torch_trace_rank_2_x.log"), "--strict"],
     1, "a rank log that cannot be read: a broken symlink"),
    ("a symlink loop", lambda t: ["report", _loop(t)], 1, "a symlink loop"),
    ("rank of a log without ranks", lambda t: ["report", LOG, "--rank", "3"], 1, "without a rank"),
    ("html into a missing folder", lambda t: ["report", LOG, "-o", "missing/dir/r.html"], 1, "cannot write missing/dir/r.html: no folder"),
    ("json under a file", lambda t: ["report", LOG, "--json", f"{_file(t, 'file', b'x').name}/r.json"], 1, "is not a folder"),
    ("html onto a folder", lambda t: ["report", LOG, "-o", "."], 1, "it is a folder"),
    ("a full disk", lambda t: ["report", LOG, "-o", t / "r.html", "--json", t / "r.json"], 1, "file too large"),
    # -- the launcher: usage errors (exit 2, nothing run) ---------------------------------------------
    ("torchrun without a script", lambda t: ["torchrun", "--standalone"], 2, "no script to run"),
    ("torchrun -o without its value", lambda t: ["torchrun", "-o"], 2, "-o needs a value"),
    ("torchrun unknown flag", lambda t: ["torchrun", "--bogus", _job_script(t)], 2, "torchrun: unrecognized arguments: --bogus"),
    ("torchrun bad nproc", lambda t: ["torchrun", "--nproc-per-node", "abc", _job_script(t)], 2, "nproc_per_node value: abc"),
    ("torchrun nproc 0", lambda t: ["torchrun", "--nproc-per-node", "0", _job_script(t)], 2, "give 1 or more processes"),
    ("torchrun bad nnodes", lambda t: ["torchrun", "--nnodes", "1:x", _job_script(t)], 2, "torchrun: "),
    ("torchrun -o over the script", lambda t: ["torchrun", "-o", "job.py", "--nproc-per-node", "1", _job_script(t)], 2,
     "-o job.py is the input job.py"),
    ("torchrun -o over a script's file", lambda t: ["torchrun", "-o", "data.txt", "--nproc-per-node", "1", _job_script(t),
                                                     "--data=data.txt"], 2, "-o data.txt is the input data.txt"),
    ("torchrun -o inside the trace dir", lambda t: ["torchrun", "--trace-dir", "trace", "-o", "trace/r.html",
                                                     "--nproc-per-node", "1", _job_script(t)], 2, "is inside --trace-dir trace"),
    ("torchrun -o over a page not ours", lambda t: ["torchrun", "-o", "notes.html", "--nproc-per-node", "1", _job_script(t)],
     2, "an existing file that is not an ipycompile report"),
    ("torchrun empty -o", lambda t: ["torchrun", "-o", "", "--nproc-per-node", "1", _job_script(t)], 2, "-o: give a file name"),
    ("torchrun empty trace dir", lambda t: ["torchrun", "--trace-dir=", "--nproc-per-node", "1", _job_script(t)], 2,
     "--trace-dir: give a folder name"),
    ("torchrun trace dir of an earlier run", lambda t: ["torchrun", "--trace-dir", "old", "--nproc-per-node", "1",
                                                         _job_script(t)], 2, "already holds 1 TORCH_TRACE log(s)"),
    ("torchrun trace dir a file", lambda t: ["torchrun", "--trace-dir", "afile", "--nproc-per-node", "1", _job_script(t)],
     2, "--trace-dir afile: not a folder"),
    # -- the launcher: an output that cannot be written (exit 1, nothing run) ---------------------------
    ("torchrun -o into a missing folder", lambda t: ["torchrun", "-o", "missing/r.html", "--nproc-per-node", "1",
                                                      _job_script(t)], 1, "cannot write missing/r.html: no folder"),
]


#: The cases run as a process of their own: one of each command and exit status (the torchrun launcher's
#: usage errors both before the job and from torchrun's own process), and the full disk (a size limit).
IN_A_PROCESS = {"no command", "report unknown flag", "html over its input", "missing log", "a full disk",
                "torchrun without a script", "torchrun unknown flag", "torchrun -o into a missing folder"}


@pytest.mark.parametrize("make, status, words, process", [(*c[1:], c[0] in IN_A_PROCESS) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_every_error_is_one_line_and_an_exit_status(tmp_path, make, status, words, process):
    args = [str(a) for a in make(tmp_path)]
    before = sorted(os.listdir(tmp_path))
    if process:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
        env.pop("TORCH_TRACE", None)
        p = subprocess.run([sys.executable, "-m", "ipycompile", *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=300, preexec_fn=_fsize_limit if "r.json" in " ".join(args) else None)
    else:
        p = in_this_process(*args, cwd=tmp_path)
    lines = p.stderr.splitlines()
    assert p.returncode == status, (args, p.returncode, p.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in p.stderr, (args, p.stderr[-3000:])
    prog = "ipycompile torchrun" if args[:1] == ["torchrun"] else "ipycompile report" if args[:1] == ["report"] else "ipycompile"
    assert lines[0].startswith(f"{prog}: error: ") and words in lines[0], (args, lines[0])
    if status == 2:
        assert lines[0].endswith(f"(usage: python -m {prog} --help)"), lines[0]
    if words != "file too large":  # that one is found only when the page is written: the summary was printed
        assert not p.stdout, (args, p.stdout[-2000:])
    assert sorted(os.listdir(tmp_path)) == before  # nothing written, nothing run (the job would write 'ran')
