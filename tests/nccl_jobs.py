"""Distributed training jobs, run under ``torchrun``: the source of ``tests/data/nccl-h100x2/``.

``torchrun --nproc-per-node 2 tests/nccl_jobs.py JOB`` runs one job on every rank: NCCL on
GPUs (one per rank, Inductor), gloo on CPUs (``aot_eager`` unless ``IPYC_JOB_BACKEND`` says
otherwise). The models are real model code (transformers' GPT-2, tiny configs, random
weights, nothing downloaded):

* ``ddp``: ``torch.compile(DistributedDataParallel(gpt2, bucket_cap_mb=1))``, three AdamW
  steps: DDP's optimizer splits the compiled forward at the gradient buckets;
* ``fsdp2``: ``fully_shard`` on every decoder block and at the root, then ``torch.compile``;
* ``diverge``: one compiled training step; rank 1 alone prints the loss inside it (a graph
  break there only), feeds the last loss back as a Python float, and takes a larger batch
  on the third step (recompiles there only);
* ``collective``: collectives inside the compiled region (``dist.all_reduce``, traced as a
  functional collective, and ``funcol.all_gather_tensor``), a ``dist.barrier()`` that
  breaks the graph, then a few calls under the profiler (``IPYC_JOB_OUT/events_rank<r>.json``:
  the profiled events, for ``--profile-kernels``' attribution replayed on the CPU).

``IPYC_CAPTURE=plain`` wraps the job in ``ipycompile.capture()`` on every rank and writes
what each rank's report holds to ``IPYC_JOB_OUT/capture_rank<r>.json``; ``IPYC_CAPTURE=gather``
uses ``ipycompile.capture(ranks="gather")`` and rank 0 also writes the gathered reports and
their divergence (``gathered.json``). ``IPYC_DIAG=1`` counts every trace event by the thread
that logged it (``diag_rank<r>.json``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

JOBS = ("ddp", "fsdp2", "diverge", "collective")


def _out(name: str) -> "str | None":
    d = os.environ.get("IPYC_JOB_OUT")
    if not d:
        return None
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def _setup():
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")  # before any compile: the trace log is named by rank
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    backend = os.environ.get("IPYC_JOB_BACKEND") or ("inductor" if cuda else "aot_eager")
    return torch, dist, dist.get_rank(), dev, backend


def gpt2(layers: int, dev):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_embd=128, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0, eos_token_id=0, use_cache=False)
    return GPT2LMHeadModel(cfg).to(dev)


def ddp(torch, dist, rank, dev, backend) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(gpt2(4, dev), bucket_cap_mb=1, device_ids=[dev.index] if dev.type == "cuda" else None)
    step = torch.compile(model, backend=backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        ids = torch.randint(0, 512, (4, 64), device=dev)
        step(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()


def fsdp2(torch, dist, rank, dev, backend) -> None:
    from torch.distributed.fsdp import fully_shard

    model = gpt2(2, dev)
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    step = torch.compile(model, backend=backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        ids = torch.randint(0, 512, (4, 64), device=dev)
        step(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()


VERBOSE = False  # rank 1 sets it: its compiled step prints the loss


def train_step(model, ids, scale):
    loss = model(input_ids=ids, labels=ids).loss * scale
    if VERBOSE:
        print(f"loss {loss.item():.4f}")  # <- print-loss
    return loss


def diverge(torch, dist, rank, dev, backend) -> None:
    global VERBOSE
    VERBOSE = rank == 1
    model = gpt2(1, dev)
    step = torch.compile(train_step, backend=backend)
    scale = 1.0
    for i in range(3):
        batch = 6 if rank == 1 and i == 2 else 4  # <- batch-size
        ids = torch.randint(0, 512, (batch, 32), device=dev)
        loss = step(model, ids, scale)
        loss.backward()
        if rank == 1:
            scale = loss.item() / 10  # <- float-scale
    dist.barrier()


def reduce_then_gather(x, w):
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    y = torch.relu(x @ w)
    dist.all_reduce(y)  # <- all-reduce
    z = funcol.all_gather_tensor(y, 0, dist.group.WORLD)  # <- all-gather
    return (z * 2).sum(dim=0)


def synced(x):
    import torch.distributed as dist

    y = x + 1
    dist.barrier()  # <- barrier
    return y * 2


def collective(torch, dist, rank, dev, backend) -> None:
    step = torch.compile(reduce_then_gather, backend=backend)
    sync = torch.compile(synced, backend=backend)
    x = torch.randn(256, 512, device=dev)
    w = torch.randn(512, 512, device=dev)
    for _ in range(2):
        step(x, w)
    sync(torch.ones(4, device=dev))
    path = _out(f"events_rank{rank}.json")
    if path:
        from dataclasses import asdict

        from ipycompile.run.kernel_times import profile_calls

        events = profile_calls(lambda: step(x, w), 5, cuda=dev.type == "cuda")
        with open(path, "w") as f:
            json.dump([asdict(e) for e in events], f, default=str)


class _Diag:
    """Counts every trace event by the thread that logged it (``IPYC_DIAG=1``)."""

    def __init__(self) -> None:
        import collections
        import logging

        self.seen = collections.Counter()
        diag = self

        class H(logging.Handler):
            def emit(self, record):
                meta = getattr(record, "metadata", None) or {}
                keys = [k for k in meta if k not in ("rank", "frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "has_payload")]
                diag.seen[f"{record.threadName}|{keys[0] if keys else '?'}"] += 1

        self.handler = H()
        logging.getLogger("torch.__trace").addHandler(self.handler)


def main(job: str) -> None:
    torch, dist, rank, dev, backend = _setup()
    mode = os.environ.get("IPYC_CAPTURE", "")
    diag = _Diag() if os.environ.get("IPYC_DIAG") == "1" else None
    import ipycompile

    if mode == "gather":
        ctx = ipycompile.capture(ranks="gather", timeout=float(os.environ.get("IPYC_GATHER_TIMEOUT", "120")))
    elif mode == "plain":
        ctx = ipycompile.capture()
    else:
        ctx = contextlib.nullcontext()
    with ctx as cap:
        globals()[job](torch, dist, rank, dev, backend)
    if cap is not None:
        rep = cap.report
        held = {"rank": rank, "compiles": len(rep.compiles), "graphs": len(rep.graphs), "graph_breaks": rep.graph_break_count,
                "kernels": len(rep.kernels), "ddp_splits": {str(k): v for k, v in rep.ddp_splits.items()},
                "records": len(cap.records), "summary": str(rep)[:4000]}
        path = _out(f"capture_rank{rank}.json")
        if path:
            with open(path, "w") as f:
                json.dump(held, f, indent=1)
        print(f"[rank {rank}] capture: {held['compiles']} compiles, {held['graphs']} graphs, "
              f"{held['graph_breaks']} graph breaks, {held['kernels']} kernels", flush=True)
        if mode == "gather" and rank == 0:
            path = _out("gathered.json")
            if path:
                gathered = cap.ranks
                with open(path, "w") as f:
                    json.dump({"summaries": {str(r): s.to_dict() for r, s in gathered.summaries.items()},
                               "missing": {str(r): why for r, why in gathered.missing.items()},
                               "divergence": str(cap.divergence)}, f)
    if diag is not None:
        path = _out(f"diag_rank{rank}.json")
        if path:
            with open(path, "w") as f:
                json.dump(dict(diag.seen), f, indent=1, sort_keys=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in JOBS:
        raise SystemExit(f"usage: torchrun --nproc-per-node N {sys.argv[0]} {{{'|'.join(JOBS)}}}")
    main(sys.argv[1])
