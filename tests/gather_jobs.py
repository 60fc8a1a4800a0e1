"""A small ``torchrun`` job (gloo, CPU) for the gathered capture and the launcher tests.

``torchrun --standalone --nproc-per-node 2 tests/gather_jobs.py MODE OUT``:

* ``alike``: both ranks compile the same function;
* ``diverge``: rank 1 alone breaks the graph and recompiles on a shape of its own;
* ``slow``: rank 1 ends its block well after rank 0's gather timeout;
* ``fail``: rank 1's block raises (it goes on after the block, as a job that catches it);
* ``exit3``: rank 1 exits with status 3 after its block (the launcher's exit status test).

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


def main(out: str) -> int:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    timeout = float(os.environ.get("GATHER_TIMEOUT", "60"))
    step = torch.compile(odd, backend="eager")
    try:
        with ipycompile.capture(ranks="gather", timeout=timeout) as cap:
            step(torch.randn(4))
            step(torch.randn(6 if rank == 1 and MODE == "diverge" else 4))
            if rank == 1 and MODE == "slow":
                time.sleep(timeout + 5)
            if rank == 1 and MODE == "fail":
                raise RuntimeError("rank 1 broke inside the block")
    except RuntimeError:
        pass
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"summaries": {str(r): s.to_dict() for r, s in cap.ranks.summaries.items()},
                       "missing": {str(r): why for r, why in cap.ranks.missing.items()},
                       "divergence": str(cap.divergence), "waited_s": cap.gather_s,
                       "ranks_text": str(cap.ranks)}, f)
    else:
        assert cap.ranks is None and cap.divergence is None
    dist.barrier()
    dist.destroy_process_group()
    return 3 if rank == 1 and MODE == "exit3" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2]))
