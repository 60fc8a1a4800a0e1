"""Real TORCH_TRACE logs for the trace-file tests, made by real runs.

The distributed logs come from fresh Python processes started with ``TORCH_TRACE=DIR``
in their environment (torch reads it at import), as a user's job would run; the
feature logs from one process that writes each feature's log as ``TORCH_TRACE`` does
(``tlparse_truth.torch_trace``, checked against ``TORCH_TRACE`` itself by
``test_tlparse_truth.py``), from a reset Dynamo (compile ids from 0, as in a fresh process):

* one log per feature (:data:`FEATURES`): graph breaks (one forcing a
  restart), recompiles, the recompile limit, failures, FX-graph and AOTAutograd
  cache hits (Inductor, a cache folder of its own), control flow;
* a ``torch.distributed`` job (gloo backend, four CPU processes writing to
  one directory): every rank runs the same steps (an ``all_reduce`` inside a
  compiled function, a ``dist.barrier()`` that breaks the graph), and rank 1
  compiles differently on purpose (a graph break on rank 1 only, a recompile
  from a shape only rank 1 uses); the job of two ranks is ranks 0 and 1 of it
  (their logs in a directory of their own: what each rank compiles does not
  depend on the world's size);
* a ``DistributedDataParallel`` training job (gloo, three CPU processes): a model of
  four 1 MiB layers under ``torch.compile(DDP(model))`` with 1 MiB gradient buckets,
  so DDP's optimizer splits the compiled graph into one subgraph per bucket, except
  on rank 2, which uses 2 MiB buckets and splits differently: the ranks that split
  alike are ranks 0 and 1 (their logs in a directory of their own), the ranks that
  do not, all three.

The tests call :func:`feature_logs` and :func:`dist_logs`; both run once per
test process and share their logs; under xdist the distributed jobs run once per
test run (:func:`_once_per_run`: the first worker to ask runs the job, the other
reads its logs). Run as a script, this file is the job.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
FEATURES = ("breaks", "recompiles", "recompile_limit", "failures", "cache", "control_flow")

_WORK = None


def _work() -> Path:
    global _WORK
    if _WORK is None:
        _WORK = Path(tempfile.mkdtemp(prefix="ipycompile-trace-jobs-"))
        atexit.register(shutil.rmtree, _WORK, True)
    return _WORK


def _once_per_run(name: str, make) -> Path:
    """``make(folder)`` run once per test run: in the test process alone (``_work() / name``), or, under xdist,
    by the first worker that asks, in a folder the workers of this run share (the others wait for it, then
    read the same logs; the last worker of the run to end removes it)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        d = _work() / name
        make(d)
        return d
    shared = Path(tempfile.gettempdir()) / f"ipycompile-trace-jobs-{os.getuid()}-{run}"
    with _locked(shared):
        if shared not in _USING:  # this worker counts as a user of the folder until it exits
            _USING.add(shared)
            _users(shared, +1)
            atexit.register(_leave, shared)
    done = shared / name
    with open(shared / f"{name}.lock", "a+") as lock:  # one job at a time; the folder stays while this worker uses it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_dir():
            partial = shared / f"{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)  # a worker that failed half-way
            make(partial)
            partial.rename(done)
    return done


_USING: set[Path] = set()


@contextlib.contextmanager
def _locked(shared: Path):
    """The shared folder, made if missing, under its lock (released when the file is closed, also by a worker
    that died); taken again where the last user removed the folder while this one waited."""
    while True:
        shared.mkdir(exist_ok=True)
        with open(shared / "lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = os.stat(shared / "lock").st_ino == os.fstat(lock.fileno()).st_ino
            except FileNotFoundError:
                current = False
            if current:
                yield
                return


def _users(shared: Path, change: int) -> int:
    count = shared / "users"
    n = (int(count.read_text() or 0) if count.exists() else 0) + change
    count.write_text(str(n))
    return n


def _leave(shared: Path) -> None:
    with _locked(shared):
        if _users(shared, -1) <= 0:
            for entry in shared.iterdir():  # the lock last: a worker waiting for it finds the folder gone, and makes it again
                if entry.name != "lock":
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            (shared / "lock").unlink()
            shared.rmdir()


def _env(trace_dir: Path, **extra: str) -> dict:
    env = dict(os.environ)
    env["TORCH_TRACE"] = str(trace_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("TORCH_LOGS", None)
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no pool of compile workers on a 2-core machine
    env.update(extra)
    return env


def _wait(procs: list[tuple[str, subprocess.Popen]], timeout: float = 300) -> None:
    failed = []
    for name, p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            failed.append(f"{name}: timed out\n{out[-3000:]}")
            continue
        if p.returncode != 0:
            failed.append(f"{name}: exit {p.returncode}\n{out[-3000:]}")
    if failed:
        raise RuntimeError("trace job failed:\n" + "\n".join(failed))


@functools.cache
def feature_logs() -> dict[str, Path]:
    """``{feature: its trace log}``, written by one process (one import of torch for all of them)."""
    d = _work() / "features"
    env = _env(d, TORCHINDUCTOR_CACHE_DIR=str(_work() / "features-inductor-cache"))
    del env["TORCH_TRACE"]  # each feature's log is its own file (torch_trace), not one file for the process
    _wait([("features", subprocess.Popen([sys.executable, __file__, "features", str(d)], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))])
    out: dict[str, Path] = {}
    for name in FEATURES:
        (log,) = (d / name).glob("dedicated_log_torch_trace_*.log")
        out[name] = log
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ranks(job: Path, ranks, d: Path) -> None:
    """``d``: the logs of ``ranks`` of ``job`` (hard links; copies where links cannot be made), and its other files."""
    d.mkdir(parents=True)
    for f in job.iterdir():
        rank = f.name.split("_rank_", 1)[1].split("_", 1)[0] if "_rank_" in f.name else None
        if rank is None or int(rank) in ranks:
            try:
                os.link(f, d / f.name)
            except OSError:
                shutil.copy2(f, d / f.name)


def _job(kind: str, world: int, d: Path, *args: str) -> None:
    """``world`` processes of ``python trace_jobs.py KIND RANK WORLD ARGS``, their TORCH_TRACE logs in ``d``."""
    d.mkdir(parents=True)
    extra = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "OMP_NUM_THREADS": "1"}
    procs = [
        (f"rank {r}", subprocess.Popen([sys.executable, __file__, kind, str(r), str(world), *args], env=_env(d, **extra),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for r in range(world)
    ]
    _wait(procs)


@functools.cache
def ddp_logs(uneven: bool = False) -> Path:
    """A directory with the TORCH_TRACE logs of a gloo DDP training job: ranks 0 and 1, which split the
    compiled graph alike, or, with ``uneven``, all three ranks (rank 2 splits it differently)."""
    return _ddp_job() if uneven else _once_per_run("ddp", lambda d: _ranks(_ddp_job(), (0, 1), d))


@functools.cache
def _ddp_job() -> Path:
    return _once_per_run("ddp3", lambda d: _job("ddp", 3, d))


@functools.cache
def dist_logs(world: int) -> Path:
    """A directory with the TORCH_TRACE logs of a ``world``-process gloo job (plus a stray file): 4, or 2 (ranks 0
    and 1 of the job of four)."""
    if world not in (2, 4):
        raise ValueError(f"world={world}: the job has 4 ranks; its ranks 0-1 are the job of 2")
    return _dist_job() if world == 4 else _once_per_run("dist2", lambda d: _ranks(_dist_job(), (0, 1), d))


@functools.cache
def _dist_job() -> Path:
    def make(d: Path) -> None:
        _job("dist", 4, d)
        (d / "launcher.out").write_text("torchrun-free launch: one process per rank\n")

    return _once_per_run("dist4", make)


# -- the jobs --------------------------------------------------------------------
def _features(folder: str) -> None:
    """Each feature's log in ``folder/NAME``, from a Dynamo reset as a fresh process has it."""
    import torch

    from tlparse_truth import torch_trace

    for name in FEATURES:
        torch._dynamo.reset()
        with torch_trace(Path(folder) / name):
            _feature(name)


def _feature(name: str) -> None:
    import torch

    import scenarios

    if name == "breaks":
        for key in ("ddif", "helper", "print", "loop"):  # "helper" breaks inside an inlined call: a restart
            torch.compile(scenarios.BREAKERS[key], backend="eager")(torch.randn(8))
    elif name == "recompiles":
        scenarios.run_recompiles()
    elif name == "recompile_limit":
        scenarios.run_recompile_limit()
    elif name == "failures":
        scenarios.run_fullgraph_failure()

        def broken_backend(gm, example_inputs):
            raise RuntimeError("this backend always fails")

        try:
            torch.compile(lambda x: x.sin() + 1, backend=broken_backend)(torch.randn(4))
        except Exception:
            pass
    elif name == "cache":
        def tiny(x):
            return x @ x  # an extern matmul only: no C++ kernel to build, still cached

        def same_again(x):  # another frame with the same graph: Inductor's caches have it
            return x @ x

        torch.compile(tiny)(torch.randn(4, 4))
        torch.compile(same_again)(torch.randn(4, 4))
    elif name == "control_flow":
        scenarios.run_control_flow()
    else:
        raise SystemExit(f"unknown feature {name!r}")


def _dist(rank: int, world: int) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=world)  # before any compile: the log is named by rank

    def step(x):
        y = torch.relu(x) * 2
        dist.all_reduce(y)
        return y.sum()

    def synced(x):
        y = x + 1
        dist.barrier()  # <- barrier
        return y * 2

    def odd_rank_breaks(x):
        y = x.cos()
        if dist.get_rank() == 1:
            torch._dynamo.graph_break()  # <- rank-1-break
        return y + 1

    def local(x):
        return (x * x).sum()

    cs = torch.compile(step, backend="aot_eager")
    cb = torch.compile(synced, backend="aot_eager")
    co = torch.compile(odd_rank_breaks, backend="aot_eager")
    cl = torch.compile(local, backend="aot_eager", dynamic=False)
    for _ in range(2):
        cs(torch.ones(8))
    cb(torch.ones(4))
    co(torch.ones(4))
    cl(torch.ones(8))
    cl(torch.ones(12 if rank == 1 else 8))  # a recompile on rank 1 only
    dist.barrier()
    dist.destroy_process_group()


class DDPNet:  # the model of the DDP job, built in the job's process (torch imported there)
    @staticmethod
    def build():
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList(torch.nn.Linear(512, 512) for _ in range(4))  # 1 MiB of weights each

            def forward(self, x):
                for layer in self.layers:
                    x = torch.relu(layer(x))
                return x

        return Net()


def _ddp(rank: int, world: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    bucket_mb = 2 if rank == 2 else 1  # DDP's first bucket is 1 MiB: no bucket may be smaller
    model = DDP(DDPNet.build(), bucket_cap_mb=bucket_mb)
    step = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(2):
        loss = step(torch.randn(8, 512)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] == "features":
        _features(sys.argv[2])
    elif sys.argv[1] == "dist":
        _dist(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "ddp":
        _ddp(int(sys.argv[2]), int(sys.argv[3]))
    else:
        raise SystemExit(f"usage: {sys.argv[0]} features DIR | dist RANK WORLD | ddp RANK WORLD")
