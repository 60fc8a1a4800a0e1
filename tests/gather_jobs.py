"""A small ``torchrun`` job (gloo, CPU) for the gathered capture and the launcher tests.

``torchrun --standalone --nproc-per-node 2 tests/gather_jobs.py MODE OUT``:

* ``alike``: both ranks compile the same function;
* ``diverge``: rank 1 alone breaks the graph and recompiles on a shape of its own;
* ``slow``: rank 1 ends its block only once rank 0 has given up waiting for it (its gather timeout);
* ``fail``: rank 1's block raises (it goes on after the block, as a job that catches it);
* ``exit3``: rank 1 exits with status 3 after its block (the launcher's exit status test);
* ``skip``: rank 1 skips a gathered block under ``if rank == 0:``, then both open more (see :func:`skip_a_block`);
* ``sleep``: every rank compiles, writes its pid to ``OUT.<rank>`` and sleeps (the launcher's signal test);
* ``stubborn``: as ``sleep``, but each rank ignores SIGINT and SIGTERM (a job that saves its work on a signal,
  slowly): only a kill stops it;
* ``run_cell``: every rank runs ``ipycompile.run_cell`` on a cell with a functional all-reduce
  (aot_eager), once plainly and once asking for ``compare_eager`` (refused); each rank writes
  ``OUT.<rank>`` (its report's graphs, notes and the refusal);
* ``several``: one job for the suite, what ``skip``, ``fail``, ``slow``, ``run_cell`` and ``exit3`` do, in
  turn, in the same two processes (Dynamo reset between them, as in a job of its own): the skipped block
  (``OUT.skip``), rank 1's failing block (``OUT.fail``), rank 1's late block (``OUT.slow``), the run_cell cells
  (``OUT.<rank>``), then rank 1 exits with status 3.

Every rank opens ``ipycompile.capture(ranks="gather", timeout=GATHER_TIMEOUT)`` around the
compiles; rank 0 writes ``OUT`` (JSON: the gathered summaries, the missing ranks, the
divergence text, how long it waited).
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch
import torch.distributed as dist

import ipycompile


def odd(x):
    y = x.sin()
    if dist.get_rank() == 1 and MODE == "diverge":
        torch._dynamo.graph_break()  # <- rank-1-break
    return y.cos()


MODE = sys.argv[1]


def run_cell_in_a_rank(out: str, init: bool = True) -> int:
    import torch.distributed._functional_collectives as funcol

    nccl = os.environ.get("GATHER_BACKEND") == "nccl"  # on GPUs: NCCL, CUDA tensors, Inductor
    if init:
        dist.init_process_group("nccl" if nccl else "gloo")
    rank = dist.get_rank()
    dev = f"cuda:{rank}" if nccl else "cpu"
    if nccl:
        torch.cuda.set_device(rank)
    backend = "inductor" if nccl else "aot_eager"
    ns = {"torch": torch, "funcol": funcol, "dist": dist, "x": torch.full((4, 4), float(rank + 1), device=dev)}
    cell = "y = funcol.all_reduce(torch.relu(x), 'sum', dist.group.WORLD)\ny * 2"
    run = ipycompile.run_cell(cell, ns, backend=backend, record=False)
    try:
        ipycompile.run_cell(cell, ns, backend=backend, compare_eager=True, record=False)
        refused = ""
    except ValueError as exc:
        refused = str(exc)
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"value": run.value.tolist(), "error": repr(run.error) if run.error else "", "device": dev,
                   "kernels": [k.name for k in run.report.kernels],
                   "collectives": [g.collective_counts() for g in run.report.graphs if g.stage == "dynamo"],
                   "notes": run.report.profile.notes, "run_median_s": run.report.profile.steady.run_median_s,
                   "refused": refused}, f)
    if init:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def sleep_after_compiling(out: str) -> int:
    """Compile, write ``OUT.<rank>`` (this process's pid), then sleep: the job a signal stops."""
    import signal

    dist.init_process_group("gloo")  # before the compile: the logs are named by rank
    if MODE == "stubborn":
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    torch.compile(lambda x: x.sin().cos(), backend="eager")(torch.randn(4))
    rank = int(os.environ["RANK"])
    with open(f"{out}.{rank}.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(f"{out}.{rank}.tmp", f"{out}.{rank}")
    time.sleep(600)
    return 0


def skip_a_block(out: str, init: bool = True, timeout: float | None = None) -> int:
    """Rank 1 skips a gathered block (under ``if rank == 0:``); both ranks then open three more (two
    known by their lines, one by ``name=`` from a different line on each rank). Rank 0 writes ``OUT``:
    each block's place, wait, gathered ranks, missing ranks and mismatch."""
    if init:
        dist.init_process_group("gloo")
    rank = dist.get_rank()
    timeout = float(os.environ.get("GATHER_TIMEOUT", "60")) if timeout is None else timeout
    step = torch.compile(lambda x: x.sin() * 2, backend="eager")
    blocks = []

    def seen(label, cap):
        if rank == 0:
            blocks.append({"label": label, "place": cap.place, "waited_s": cap.gather_s, "ranks": sorted(cap.ranks.summaries),
                           "missing": {str(r): why for r, why in cap.ranks.missing.items()},
                           "mismatch": {str(r): why for r, why in cap.mismatch.items()}})

    with ipycompile.capture(ranks="gather", timeout=timeout) as cap:
        step(torch.randn(4))
    seen("first", cap)
    if rank == 0:
        with ipycompile.capture(ranks="gather", timeout=timeout) as cap:  # <- rank 0 only
            step(torch.randn(4))
        seen("rank 0 only", cap)
    with ipycompile.capture(ranks="gather", timeout=timeout) as cap:
        step(torch.randn(4))
    seen("after", cap)
    with ipycompile.capture(ranks="gather", timeout=timeout) as cap:
        step(torch.randn(4))
    seen("after again", cap)
    if rank == 0:
        with ipycompile.capture(ranks="gather", timeout=timeout, name="named") as cap:
            step(torch.randn(4))
    else:
        with ipycompile.capture(ranks="gather", timeout=timeout, name="named") as cap:
            step(torch.randn(4))
    seen("named", cap)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(blocks, f)
    if init:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def one_block(out: str, mode: str, timeout: float) -> None:
    """The gathered block of ``mode`` (``alike``, ``diverge``, ``slow``, ``fail``, ``exit3``); rank 0 writes ``OUT``."""
    rank = dist.get_rank()
    step = torch.compile(odd, backend="eager")
    try:
        with ipycompile.capture(ranks="gather", timeout=timeout) as cap:
            step(torch.randn(4))
            step(torch.randn(6 if rank == 1 and mode == "diverge" else 4))
            if rank == 1 and mode == "slow":  # late on any machine: until rank 0 has given up on it (at most 120 s)
                deadline = time.monotonic() + 120
                while not os.path.exists(f"{out}.given-up") and time.monotonic() < deadline:
                    time.sleep(0.05)
            if rank == 1 and mode == "fail":
                raise RuntimeError("rank 1 broke inside the block")
    except RuntimeError:
        pass
    if rank == 0:
        with open(f"{out}.tmp", "w") as f:
            json.dump({"summaries": {str(r): s.to_dict() for r, s in cap.ranks.summaries.items()},
                       "missing": {str(r): why for r, why in cap.ranks.missing.items()},
                       "divergence": str(cap.divergence), "waited_s": cap.gather_s,
                       "ranks_text": str(cap.ranks), "timeout": timeout}, f)
        os.replace(f"{out}.tmp", out)
        open(f"{out}.given-up", "w").close()
    else:
        assert cap.ranks is None and cap.divergence is None


def several(out: str) -> int:
    """``skip``, ``fail``, ``slow``, ``run_cell`` and ``exit3`` in one job (see the module docstring)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    skip_a_block(f"{out}.skip", init=False, timeout=30)
    for mode, timeout in (("fail", 60), ("slow", 2)):
        torch._dynamo.reset()
        one_block(f"{out}.{mode}", mode, timeout)
    torch._dynamo.reset()
    run_cell_in_a_rank(out, init=False)
    dist.barrier()
    dist.destroy_process_group()
    return 3 if rank == 1 else 0


def main(out: str) -> int:
    if MODE == "several":
        return several(out)
    if MODE == "skip":
        return skip_a_block(out)
    if MODE == "run_cell":
        return run_cell_in_a_rank(out)
    if MODE in ("sleep", "stubborn"):
        return sleep_after_compiling(out)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    one_block(out, MODE, float(os.environ.get("GATHER_TIMEOUT", "60")))
    dist.barrier()
    dist.destroy_process_group()
    return 3 if rank == 1 and MODE == "exit3" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2]))
