"""Jobs of 64, 512 and 4,096 ranks: reading them, gathering them, and the divergence's length.

Built from the real two-GPU NCCL logs of ``tests/data/nccl-h100x2/`` (the ``diverge`` job:
rank 1 breaks the graph and recompiles where rank 0 does not). A simulated job of N ranks
gives each rank one of three real logs (hard links: the disk holds three files however many
ranks), as perturbations of a real job:

* most ranks: rank 0's log;
* one rank in 97 (ranks 1, 98, 195, ...): rank 1's log (the diverging behaviour);
* the last rank: rank 0's log with every compile's time tripled (a slow rank).

Measured, each in a fresh process (wall time, peak RSS of the process and of its worker
processes, from ``getrusage``):

* ``load_trace(dir)`` + ``rank_divergence``: every rank's log read (summary pass, in worker
  processes, one per CPU), then compared;
* the gathered capture's rank 0 (``ipycompile.capture(ranks="gather")``): N posts, as ranks
  post them (each rank's real summary as JSON), in a torch ``HashStore``, collected by
  ``GatheredCapture._collect`` (the code rank 0 runs when its block ends) and compared;
  the bytes every rank posts through the job's store;
* the divergence text: lines and characters (it must stay one screen).

Prints a table and writes ``benchmarks/results/ranks_scale-<host>.json``::

    python benchmarks/ranks_scale.py [--ranks 64,512,4096] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from trace_load import host_name, timed  # noqa: E402

ARCHIVE = ROOT / "tests" / "data" / "nccl-h100x2" / "logs.tar.xz"
ODD_EVERY = 97


def behaviour(rank: int, world: int) -> str:
    if rank == world - 1:
        return "slow"
    return "odd" if rank % ODD_EVERY == 1 else "typical"


def variants(work: Path) -> dict[str, Path]:
    """The three real logs the simulated ranks share."""
    with tarfile.open(ARCHIVE) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("./diverge/") and m.isfile()]
        # the "data" filter from Python 3.10.12 and 3.11.4 on; earlier ones extract the repository's archive as is
        tar.extractall(work / "src", members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    logs = sorted((work / "src" / "diverge").glob("*.log"))
    typical = next(p for p in logs if "_rank_0_" in p.name)
    odd = next(p for p in logs if "_rank_1_" in p.name)
    slow = work / "slow.log"
    text = typical.read_text(encoding="utf-8")
    slow.write_text(re.sub(r'"entire_frame_compile_time_s": ([0-9.]+)',
                           lambda m: f'"entire_frame_compile_time_s": {float(m.group(1)) * 3:.6f}', text), encoding="utf-8")
    return {"typical": typical, "odd": odd, "slow": slow}


def build_dir(directory: Path, world: int, logs: dict[str, Path]) -> int:
    directory.mkdir(parents=True)
    for r in range(world):
        os.link(logs[behaviour(r, world)], directory / f"dedicated_log_torch_trace_rank_{r}_sim.log")
    return sum(logs[behaviour(r, world)].stat().st_size for r in range(world))


PY_LOAD = r"""
import json, resource, sys, time
import ipycompile
from ipycompile.analysis.ranks import rank_divergence
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
reps = ipycompile.load_trace(sys.argv[1], workers=int(sys.argv[2]) if sys.argv[2] != "0" else None)
text = str(rank_divergence(reps))
t1 = time.perf_counter()
print(json.dumps({"inner_s": t1 - t0, "text": text, "baseline_rss_mb": base,
                  "worker_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

PY_GATHER = r"""
import json, resource, sys, time
import torch.distributed as dist
from ipycompile import load_trace
from ipycompile.run.observe import GatheredRanks
src, world = sys.argv[1], int(sys.argv[2])
reps = load_trace(src)  # the two real ranks' summaries, as each rank would build its own
slow = reps.summaries[0].to_dict()
for c in slow["compiles"]:
    if c.get("entire_frame_compile_s"):
        c["entire_frame_compile_s"] *= 3
bodies = {"typical": reps.summaries[0].to_dict(), "odd": reps.summaries[1].to_dict(), "slow": slow}
def behaviour(rank):
    return "slow" if rank == world - 1 else ("odd" if rank % %(odd)d == 1 else "typical")
posts = {b: json.dumps({"rank": None, "trace_path": "", "error": None, "summary": s}) for b, s in bodies.items()}
store = dist.HashStore()
cap = GatheredRanks(timeout=60)
cap._store, cap._key, cap.rank, cap.world = store, "ipycompile/gather/0", 0, world
posted = 0
for r in range(world):  # what each rank's _post does
    body = posts[behaviour(r)].replace('"rank": null', f'"rank": {r}', 1)
    posted += len(body)
    store.set(f"{cap._key}/{r}", body)
    store.append(f"{cap._key}/posted", f"{r},")
cap._raw = None
import torch._dynamo  # noqa: F401  (imported in any job that compiled; not the gather's cost)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
cap._collect()
text = str(cap.divergence)
t1 = time.perf_counter()
print(json.dumps({"inner_s": t1 - t0, "gather_s": cap.gather_s, "text": text, "baseline_rss_mb": base,
                  "posted_bytes": posted, "missing": len(cap.ranks.missing), "ranks": len(cap.ranks)}))
""".replace("%(odd)d", str(ODD_EVERY))


def run_py(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = timed([sys.executable, "-c", code, *args], env=env)
    data = json.loads(res.pop("stdout").strip().splitlines()[-1])
    return {**res, **data}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="64,512,4096")
    ap.add_argument("--workers", type=int, default=0, help="load_trace's worker processes (default: one per CPU)")
    args = ap.parse_args()
    worlds = [int(x) for x in args.ranks.split(",")]
    work = Path(tempfile.mkdtemp(prefix="ranks-scale-"))
    rows = []
    try:
        logs = variants(work)
        for world in worlds:
            d = work / f"job{world}"
            size = build_dir(d, world, logs)
            loaded = run_py(PY_LOAD, str(d), str(args.workers))
            gathered = run_py(PY_GATHER, str(work / "src" / "diverge"), str(world))
            text = loaded["text"]
            rows.append({
                "ranks": world,
                "log_bytes": size,
                "load_trace_s": round(loaded["wall_s"], 2),
                "load_trace_inner_s": round(loaded["inner_s"], 2),
                "load_trace_peak_rss_mb": round(loaded["peak_rss_mb"], 1),
                "load_trace_worker_peak_rss_mb": round(loaded["worker_peak_rss_mb"], 1),
                "gather_collect_s": round(gathered["inner_s"], 3),
                "gather_peak_rss_mb": round(gathered["peak_rss_mb"], 1),
                "gather_posted_mb": round(gathered["posted_bytes"] / 1e6, 2),
                "gather_posted_kb_per_rank": round(gathered["posted_bytes"] / world / 1e3, 1),
                "gathered_equals_loaded": gathered["text"] == loaded["text"],
                "divergence_lines": len(text.splitlines()),
                "divergence_chars": len(text),
                "divergence": text,
            })
            shutil.rmtree(d)
            r = rows[-1]
            print(f"{world:5d} ranks: load_trace {r['load_trace_s']:7.2f} s, {r['load_trace_peak_rss_mb']:6.0f} MB "
                  f"(workers {r['load_trace_worker_peak_rss_mb']:.0f} MB); gather {r['gather_collect_s']:6.3f} s, "
                  f"{r['gather_peak_rss_mb']:6.0f} MB, {r['gather_posted_kb_per_rank']:.1f} kB/rank; divergence "
                  f"{r['divergence_lines']} lines, {r['divergence_chars']} chars; equal: {r['gathered_equals_loaded']}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "benchmarks" / "results" / f"ranks_scale-{host_name()}.json"
    out.write_text(json.dumps({"host": host_name(), "cpus": os.cpu_count(), "source": "tests/data/nccl-h100x2 diverge",
                               "odd_every": ODD_EVERY, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    print(rows[-1]["divergence"])


if __name__ == "__main__":
    main()
