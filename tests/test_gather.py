"""``ipycompile.capture(ranks="gather")`` in a real ``torchrun`` job (gloo, two CPU processes),
and the launcher, ``python -m ipycompile torchrun``.

The gathered job view equals what ``load_trace`` reads from the TORCH_TRACE logs the same
processes wrote; a rank that ends its block late, or whose block raises, is named, and rank
0 waits for it no longer than the timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipycompile import load_trace
from ipycompile.analysis.ranks import rank_divergence
from ipycompile.cli.torchrun import split_arguments
from ipycompile.report import CompileReport

import written_checks
from cli_runs import in_this_process

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent
JOB = TESTS / "gather_jobs.py"
#: what a TORCH_TRACE log by itself lacks of a live capture (where code lived, the source kept, the
#: recompile limits) and where each was read from
LIVE_ONLY = {"origin", "code_layout", "source_context", "recompile_limits", "sources",
             # what capture hears beside torch's trace (Dynamo's cache hits, what it held when the capture opened)
             "ran_cached_code", "graphs_before"}


def _torchs_stats(stats: dict) -> dict:
    """A report's stats without the events ipycompile's capture adds beside torch's trace (``ipycompile_*``)."""
    ours = {k: v for k, v in stats.get("by_kind", {}).items() if k.startswith("ipycompile_")}
    out = dict(stats, by_kind={k: v for k, v in stats.get("by_kind", {}).items() if k not in ours})
    out["records"] = stats.get("records", 0) - sum(ours.values())
    return out


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("TORCH_TRACE", None)
    env.update({"OMP_NUM_THREADS": "1", **extra})
    return env


def torchrun(tmp_path: Path, mode: str, *, launcher: bool = False, env: dict | None = None, trace: Path | None = None):
    out = tmp_path / f"{mode}.json"
    if launcher:
        cmd = [sys.executable, "-m", "ipycompile", "torchrun", "--trace-dir", str(trace), "-o", str(tmp_path / "job.html")]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run"]
    cmd += ["--standalone", "--nproc-per-node", "2", str(JOB), mode, str(out)]
    proc = subprocess.run(cmd, env=_env(**(env or {})), capture_output=True, text=True, timeout=400, cwd=tmp_path)
    return proc, out


@pytest.fixture(scope="module")
def diverged(tmp_path_factory):
    """``python -m ipycompile torchrun --trace-dir trace -o job.html`` of the ``diverge`` job, run once for the
    module: (the launcher's process, the gathered JSON rank 0 wrote, the ranks' TORCH_TRACE folder, the page)."""
    tmp_path = tmp_path_factory.mktemp("diverge")
    trace = tmp_path / "trace"
    proc, out = torchrun(tmp_path, "diverge", launcher=True, trace=trace)
    return proc, out, trace, tmp_path / "job.html"


def test_the_gathered_job_equals_load_trace_of_the_same_processes(diverged):
    """What rank 0 gathered equals ``load_trace`` of the TORCH_TRACE logs the same processes wrote (the
    launcher's --trace-dir: torchrun's ranks with TORCH_TRACE set)."""
    proc, out, trace, _ = diverged
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(out.read_text())
    loaded = load_trace(trace)
    assert got["missing"] == {} and sorted(got["summaries"]) == ["0", "1"]
    assert got["divergence"] == str(rank_divergence(loaded))
    assert "2 ranks (0-1) diverge" in got["divergence"] and "only on rank 1" in got["divergence"]
    for r, summary in got["summaries"].items():
        live, logged = CompileReport.from_dict(summary).to_dict(), loaded.summaries[int(r)].to_dict()
        live["stats"] = _torchs_stats(live["stats"])
        assert {k for k in live if live[k] != logged[k]} <= LIVE_ONLY
        assert live["compiles"] and live["compiles"] == logged["compiles"]
    assert got["ranks_text"].startswith("2 ranks' reports gathered by ipycompile.capture(ranks='gather') (ranks 0-1)")


@pytest.fixture(scope="module")
def several(tmp_path_factory):
    """``python -m ipycompile torchrun --trace-dir trace -o job.html`` of the ``several`` job, run once for the
    module (gather_jobs.py: a skipped block, a failing block, a late block, run_cell in the ranks, then rank 1
    exits with status 3, in one job of two processes): the launcher's process and ``OUT``."""
    tmp_path = tmp_path_factory.mktemp("several")
    return torchrun(tmp_path, "several", launcher=True, trace=tmp_path / "trace")


def written(several, part: str):
    """What the ``several`` job wrote to ``OUT.part`` (rank 0's gathered blocks, or a rank's run_cell)."""
    proc, out = several
    path = Path(f"{out}.{part}")
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(path.read_text())


def test_a_rank_that_ends_late_is_named_and_not_waited_for(several):
    """Rank 1 ends its block only once rank 0 has given up on it: rank 0 waits its timeout, no longer."""
    got = written(several, "slow")
    timeout = got["timeout"]
    assert sorted(got["summaries"]) == ["0"] and timeout <= got["waited_s"] < timeout + 5, got["waited_s"]
    assert got["missing"] == {"1": f"did not end its block within {timeout:g} s of rank 0's (slower, hung or gone)"}
    assert f"rank 1: did not end its block within {timeout:g} s" in got["divergence"]
    assert "1 ranks (0) compiled alike" in got["divergence"]


def test_a_block_one_rank_skips_is_named_and_the_later_blocks_gather_at_once(several):
    """Rank 1 skips a block under `if rank == 0:`: rank 0 names it with the block it posted instead, as
    soon as rank 1 posts that one (not after the timeout, 30 s); the later blocks are matched by their place
    in the code (or name=), so each gathers both ranks at once."""
    first, skipped, after, again, named = written(several, "skip")
    lines = {n: i for i, line in enumerate(JOB.read_text().splitlines(), 1) for n in ("rank 0 only",) if f"<- {n}" in line}
    assert skipped["place"] == f"gather_jobs.py:{lines['rank 0 only']}#1"
    assert skipped["ranks"] == [0] and skipped["waited_s"] < 15, skipped
    why = skipped["missing"]["1"]  # the blocks rank 1 posted by then: the next one, perhaps those after it
    assert why.startswith(f"did not post this block ({skipped['place']}): it posted {after['place'].split('#')[0]} (1 time)")
    assert "which rank 0 has not opened" in why, why
    assert "under `if rank == 0:`" in skipped["missing"]["1"] and skipped["mismatch"]["1"].startswith("posted blocks")
    for block in (first, after, again, named):
        assert block["ranks"] == [0, 1] and block["missing"] == {} and block["waited_s"] < 5, block
    assert named["place"] == "named#1"


def test_a_rank_whose_block_failed_is_named_with_its_error(several):
    got = written(several, "fail")
    assert sorted(got["summaries"]) == ["0", "1"]  # what rank 1 compiled before it failed is compared
    assert got["missing"]["1"].startswith("failed in the block (RuntimeError: rank 1 broke inside the block)")


def test_the_launcher_runs_the_job_with_its_trace_and_prints_the_divergence(diverged):
    proc, _, trace, page = diverged
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"the ranks' TORCH_TRACE logs go to {trace}" in proc.stderr
    assert f"2 rank logs in {trace} (ranks 0-1)" in proc.stdout
    assert str(rank_divergence(load_trace(trace))) in proc.stdout
    assert page.read_text().count('role="tablist"') == 1 + 2  # the job's tabs, one full report's per behaviour
    assert written_checks.problems(str(page)) == []  # the page's links and data whole (as conftest.py checks each page)


#: a job whose rank 1 exits with status 3, for plain torchrun: torchrun's exit status depends on its ranks' alone
EXIT3 = "import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n"


def test_the_launcher_passes_torchruns_exit_status_through(several, tmp_path):
    """The ``several`` job's rank 1 exits with status 3: the launcher exits as plain torchrun does on a job
    whose rank 1 exits with status 3, and still reports what the ranks logged."""
    proc, _ = several
    (tmp_path / "exit3.py").write_text(EXIT3)
    plain = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                            str(tmp_path / "exit3.py")], env=_env(), capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert plain.returncode != 0 and proc.returncode == plain.returncode, (plain.returncode, proc.stderr[-3000:])
    assert "2 rank logs in" in proc.stdout  # the report still covers what the ranks logged
    assert f"torchrun's exit status {plain.returncode}" in proc.stderr


def test_the_launcher_refuses_a_trace_dir_of_an_earlier_run(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "dedicated_log_torch_trace_rank_0_abc.log").write_text("x")
    proc = subprocess.run([sys.executable, "-m", "ipycompile", "torchrun", "--trace-dir", str(old), "--nproc-per-node", "2", "x.py"],
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "already holds 1 TORCH_TRACE log(s) of an earlier run" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "ipycompile", "torchrun", "--standalone"],
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no script to run" in proc.stderr


def test_the_launchers_options_are_read_before_the_script_only():
    own, rest = split_arguments(["--trace-dir=d", "--nnodes", "2", "-o", "r.html", "train.py", "-o", "x", "--trace-dir", "y"])
    assert own == {"trace_dir": "d", "output": "r.html"}
    assert rest == ["--nnodes", "2", "train.py", "-o", "x", "--trace-dir", "y"]
    with pytest.raises(ValueError, match="--trace-dir needs a value"):
        split_arguments(["--trace-dir"])
    # a flag is followed by the script; a flag's abbreviation (argparse takes it) too
    assert split_arguments(["--standalone", "train.py", "-o", "x"]) == ({}, ["--standalone", "train.py", "-o", "x"])
    assert split_arguments(["--stand", "-o", "r.html", "train.py"]) == ({"output": "r.html"}, ["--stand", "train.py"])


def test_the_launchers_table_of_torchruns_flags_is_torchruns():
    """The launcher reads its arguments without torch, from its own list of torchrun's options that take no
    value: the list is the parser's of the torch installed."""
    from torch.distributed.run import get_args_parser

    from ipycompile.cli.torchrun import TORCHRUN_FLAGS

    assert TORCHRUN_FLAGS == {opt for a in get_args_parser()._actions if a.nargs == 0 for opt in a.option_strings}


def test_the_launcher_leaves_torch_to_torchruns_process(tmp_path):
    """Arguments torchrun refuses are refused by torchrun's own process, before any rank starts, as the
    launcher's usage error; the launcher itself never imports torch (it starts in a fraction of the time)."""
    code = ("import json, sys\nfrom ipycompile.cli import main\nstatus = main(['torchrun', '--nnodes', '1:x', 'job.py'])\n"
            "print(json.dumps([status, 'torch' in sys.modules]))")
    (tmp_path / "job.py").write_text("open('ran', 'w').write('the job ran')\n")
    p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [2, False], p.stdout + p.stderr
    assert p.stderr.startswith("ipycompile torchrun: error: torchrun: ") and len(p.stderr.splitlines()) == 1, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["job.py"]  # nothing ran


@pytest.mark.parametrize("kwargs, error, words", [
    ({"ranks": "all"}, ValueError, "ranks='all': give ranks='gather'"),
    ({"ranks": "gather", "timeout": -1}, ValueError, "timeout=-1: give the seconds rank 0 waits"),
    ({"ranks": "gather", "name": ""}, ValueError, "name='': give the block a name every rank uses"),
    ({"name": "step"}, ValueError, "name='step': names a gathered block; give it with ranks='gather'"),
])
def test_bad_gather_options_are_named(kwargs, error, words):
    import ipycompile

    with pytest.raises(error, match=words):
        ipycompile.capture(**kwargs)


def test_gathering_outside_a_distributed_job_says_what_is_missing():
    import logging

    import torch  # noqa: F401  (its logging set up before the handlers are compared)

    import ipycompile

    trace = logging.getLogger("torch.__trace")
    before = list(trace.handlers)
    with pytest.raises(RuntimeError, match=r"needs torch.distributed initialised \(dist.init_process_group"):
        with ipycompile.capture(ranks="gather"):
            pass
    assert trace.handlers == before  # nothing was left listening


def test_a_live_capture_shows_the_collectives_in_the_compiled_graph():
    """A functional all_reduce inside compiled code, captured live in a (one-rank, gloo) job, this
    process's: the Dynamo and AOT graphs both list it with its wait, as the NCCL logs do on GPUs."""
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    import ipycompile
    from doors import gloo

    def step(x):
        return funcol.all_reduce(torch.relu(x), "sum", dist.group.WORLD) * 2

    x = torch.randn(4, 4)
    with gloo():
        with ipycompile.capture() as cap:
            out = torch.compile(step, backend="aot_eager")(x)
    assert torch.equal(out, torch.relu(x) * 2)
    stages = {g.stage: g.collective_counts() for g in cap.report.graphs}
    assert stages["dynamo"] == stages["aot_inference"] == {"all_reduce": 1, "wait": 1}, stages


def test_run_cell_inside_each_rank_runs_the_cell_once_and_refuses_extra_calls(several):
    """run_cell in every rank of a two-rank job whose cell calls a collective: each rank compiles
    and runs the cell once, captured (its graph lists the all-reduce), with a note on why it
    was not timed; asking for more calls (the eager comparison) is refused before anything runs,
    naming the option. Nothing hangs: the job ends within the test's timeout."""
    for rank in (0, 1):
        got = written(several, str(rank))
        assert got["error"] == "" and got["value"] == [[6.0] * 4] * 4  # (1 + 2) summed over the ranks, doubled
        assert got["collectives"] == [{"all_reduce": 1, "wait": 1}]
        assert got["run_median_s"] is None
        assert any("inside a rank of a 2-rank torch.distributed job the cell ran once" in n for n in got["notes"])
        assert got["refused"].startswith("--compare-eager: not inside a rank of a 2-rank torch.distributed job")


# -- issue 37: the launcher never overwrites what it must not, and a signal stops the whole job ------------
def _launch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ipycompile", "torchrun", *args], env=_env(), capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def _launch_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m ipycompile torchrun ARGS`` through the command line's own entry point in this process."""
    return in_this_process("torchrun", *args, cwd=cwd)


def test_the_launcher_refuses_outputs_it_must_not_write_before_running_anything(tmp_path):
    """Each refusal before anything runs. The first through the whole door (a process of its own, its exit
    status); the others through the same entry point in this process."""
    job = tmp_path / "job.py"
    job.write_text("open('ran', 'w').write('the job ran')\n")
    data = tmp_path / "data.txt"
    data.write_text("the job's data\n")
    notes = tmp_path / "notes.html"
    notes.write_text("<!DOCTYPE html><p>the user's own page</p>\n")
    trace = tmp_path / "trace"
    for args, words in [
        (["-o", "job.py", "--nproc-per-node", "1", "job.py"], "-o job.py is the input job.py"),
        (["-o", "./job.py", "--nproc-per-node", "1", "job.py"], "-o ./job.py is the input job.py (the same file)"),
        (["-o", "data.txt", "--nproc-per-node", "1", "job.py", "--data", "data.txt"], "-o data.txt is the input data.txt"),
        (["-o", "data.txt", "--nproc-per-node", "1", "job.py", "--data=data.txt"], "-o data.txt is the input data.txt"),
        (["--trace-dir", "trace", "-o", "trace/r.html", "--nproc-per-node", "1", "job.py"],
         "-o trace/r.html is inside --trace-dir trace"),
        (["-o", "notes.html", "--nproc-per-node", "1", "job.py"], "-o notes.html: an existing file that is not an ipycompile report"),
        (["-o", "", "--nproc-per-node", "1", "job.py"], "-o: give a file name"),
        (["--trace-dir=", "--nproc-per-node", "1", "job.py"], "--trace-dir: give a folder name"),
    ]:
        p = _launch(*args, cwd=tmp_path) if args[1] == "job.py" else _launch_in_process(*args, cwd=tmp_path)
        assert p.returncode == 2 and not p.stdout, (args, p.stderr)
        assert p.stderr.startswith(f"ipycompile torchrun: error: {words}"), (args, p.stderr)
        assert len(p.stderr.splitlines()) == 1 and p.stderr.rstrip().endswith("(usage: python -m ipycompile torchrun --help)")
    p = _launch_in_process("-o", "missing/r.html", "--nproc-per-node", "1", "job.py", cwd=tmp_path)
    assert p.returncode == 1 and p.stderr == (f"ipycompile torchrun: error: cannot write missing/r.html: "
                                              f"no folder {tmp_path / 'missing'}\n"), p.stderr
    assert job.read_text() == "open('ran', 'w').write('the job ran')\n" and data.read_text() == "the job's data\n"
    assert notes.read_text() == "<!DOCTYPE html><p>the user's own page</p>\n"
    assert sorted(os.listdir(tmp_path)) == ["data.txt", "job.py", "notes.html"]  # nothing ran, no folder made


def test_an_earlier_report_of_ours_may_be_overwritten(tmp_path):
    from ipycompile.cli.torchrun import check_output
    from ipycompile.views.html import save_html

    page = tmp_path / "r.html"
    save_html(CompileReport(), str(page))
    check_output(str(page), None, ["--nproc-per-node", "1", "job.py"])  # no error: a report of ours
    page.write_text(page.read_text().replace('<meta name="generator" content="ipycompile">', ""))
    with pytest.raises(ValueError, match="not an ipycompile report"):
        check_output(str(page), None, ["--nproc-per-node", "1", "job.py"])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


class _Launched:
    """``python -m ipycompile torchrun`` running ``gather_jobs.py MODE`` (two ranks that compile, then sleep),
    its stdout and stderr read as they come (:meth:`wait_for` a line), its ranks' pids known once both compiled."""

    def __init__(self, tmp_path: Path, mode: str) -> None:
        import threading
        import time

        self.out, self.trace, self.page = tmp_path / "sleep.out", tmp_path / "trace", tmp_path / "job.html"
        self.proc = subprocess.Popen([sys.executable, "-m", "ipycompile", "torchrun", "--trace-dir", str(self.trace),
                                      "-o", str(self.page), "--standalone", "--nproc-per-node", "2", str(JOB), mode,
                                      str(self.out)],
                                     env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [threading.Thread(target=lambda f=f, into=into: into.extend(iter(f.readline, "")), daemon=True)
                         for f, into in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))]
        for t in self._readers:
            t.start()
        self.pids: list[int] = []
        deadline = time.monotonic() + 240
        while len(self.pids) < 2:
            assert time.monotonic() < deadline and self.proc.poll() is None, "the ranks never compiled: " + "".join(self.stderr)[-3000:]
            self.pids = [int(Path(f"{self.out}.{r}").read_text()) for r in (0, 1) if Path(f"{self.out}.{r}").exists()]
            time.sleep(0.2)
        time.sleep(1)  # the ranks' logs flushed

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        """Whether ``text`` appeared on stderr before the launcher ended (or ``timeout`` passed)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in list(self.stderr)):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.01)
        return False

    def end(self, timeout: float = 120) -> tuple[str, str]:
        self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=10)
        return "".join(self.stdout), "".join(self.stderr)

    def cleanup(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.kill()
        for pid in self.pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _launchers_tracebacks(stderr: str) -> list[str]:
    """The tracebacks on the launcher's stderr that are not a rank's own (``[rankN]:`` lines: the job's
    script reacting to the signal torchrun passed it, as it would under plain torchrun)."""
    return [line for line in stderr.splitlines() if "Traceback" in line and not line.startswith("[rank")]


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_to_the_launcher_stops_every_rank_and_reports_what_was_logged(tmp_path, sig):
    import signal
    import time

    job = _Launched(tmp_path, "sleep")
    try:
        job.proc.send_signal(getattr(signal, sig))
        t0 = time.monotonic()
        stdout, stderr = job.end()
        gone_s = time.monotonic() - t0
        assert not [p for p in job.pids if _alive(p)], f"ranks still running after the launcher ended: {stderr[-3000:]}"
        assert job.proc.returncode == 128 + getattr(signal, sig), stderr[-3000:]
        assert gone_s < 30, gone_s
        assert f"ipycompile torchrun: the job was stopped by {sig}" in stderr
        assert not _launchers_tracebacks(stderr), stderr[-3000:]
        assert "2 rank logs in" in stdout  # the report of what the ranks logged
        assert '<meta name="generator" content="ipycompile">' in job.page.read_text()
    finally:
        job.cleanup()


def test_ctrl_c_pressed_again_and_again_kills_the_job_and_stops_the_report_quietly(tmp_path):
    """An impatient user: Ctrl-C three times while ranks that ignore SIGINT and SIGTERM run (the third
    kills the job: torchrun alone would wait 30 s for them), then once more while the report is read."""
    import signal
    import time

    job = _Launched(tmp_path, "stubborn")
    try:
        t0 = time.monotonic()
        for _ in range(3):
            job.proc.send_signal(signal.SIGINT)
            time.sleep(0.3)
        assert job.wait_for("ipycompile torchrun: the job was stopped by SIGINT"), "".join(job.stderr)[-3000:]
        job.proc.send_signal(signal.SIGINT)  # while the report is read (or written)
        stdout, stderr = job.end()
        gone_s = time.monotonic() - t0
        assert not [p for p in job.pids if _alive(p)], f"ranks still running after the launcher ended: {stderr[-3000:]}"
        assert job.proc.returncode == 130, stderr[-3000:]
        assert gone_s < 20, gone_s
        assert not _launchers_tracebacks(stderr), stderr[-3000:]
        last = stderr.splitlines()[-1]
        if "wrote " in stdout:  # the report was done before the last Ctrl-C
            assert "2 rank logs in" in stdout and job.page.read_text().rstrip().endswith("</html>")
        else:
            assert last == (f"ipycompile torchrun: stopped by SIGINT while reading the job's logs; they are in "
                            f"{job.trace} (python -m ipycompile report {job.trace})"), stderr[-3000:]
            # the last Ctrl-C can land between the page's write (atomic: a temporary file renamed) and the line
            # that says so: then the page is whole; never a half-written page or a temporary file left behind
            assert not job.page.exists() or job.page.read_text().rstrip().endswith("</html>")
            assert not [n for n in os.listdir(tmp_path) if n.startswith("job.html") and n != "job.html"]
    finally:
        job.cleanup()
