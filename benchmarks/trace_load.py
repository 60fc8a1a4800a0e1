"""How fast does ipycompile read large TORCH_TRACE logs, next to tlparse?

Builds, from the real H100 logs in ``tests/data/gpu-h100/`` (a training loop with
graph breaks and recompiles, a max-autotune and a reduce-overhead run):

* one large log (``--mb``, default 300 MB): copies of the three logs one after
  the other, each copy's compile ids made fresh (frame ids shifted, in the
  envelopes, compilation metrics, chromium events and recompile reasons, with
  payload md5s recomputed), as if one long job had compiled many frames;
* a 64-rank directory (``--ranks``): one log per rank, each a few copies of the
  training log with ``rank`` set; rank 3 compiles an extra frame, rank 5's
  compiles take twice as long, as in a job where ranks diverge.

Then times, each in a fresh process (wall time of the process, peak RSS from
``wait4``), in one run:

* ``tlparse`` (default: HTML pages) and ``tlparse --plain-text`` on the large log;
* ``load_trace(path, summary=True)``: the first summary (what ``python -m
  ipycompile report`` prints), and ``load_trace(path)``: the full report;
* ``tlparse --all-ranks-html`` and ``load_trace(dir)`` (every rank read in
  parallel, the divergence between ranks) on the directory.

Targets (2-core machine): first summary faster than the whole ``tlparse
--plain-text`` run, full report faster than tlparse's default run, peak memory
below 2x the largest file. Prints a table and writes
``benchmarks/results/trace_load-<host>.json``.

    python benchmarks/trace_load.py [--mb 300] [--ranks 64] [--copies-per-rank 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "gpu-h100"
sys.path.insert(0, str(ROOT))

from ipycompile.capture.tracefile import format_record, glog_prefix, iter_records  # noqa: E402

WORKLOADS = ("quickstart", "max_autotune", "reduce_overhead")
_CID_FIELD = re.compile(r'("compile_id": ")(!\d+/)?(\d+)/(\d+)')
_CID_LINE = re.compile(r"^(\d+)/(\d+)", re.M)


def source_records(workload: str) -> list[tuple[dict, "str | None"]]:
    """The events of one recorded log, as (metadata, payload)."""
    return [(r.metadata, r.payload) for r in iter_records(DATA / f"{workload}.log.gz")]


def frames_in(records) -> int:
    return 1 + max((m.get("frame_id", 0) for m, _ in records), default=0)


def shifted(records, offset: int, *, rank: "int | None" = None, time_scale: float = 1.0):
    """The records with every frame id moved by ``offset`` (fresh compile ids), ``rank`` set,
    and chromium durations stretched by ``time_scale``."""
    def cid(m: "re.Match[str]") -> str:
        return f"{m.group(1)}{m.group(2) or ''}{int(m.group(3)) + offset}/{m.group(4)}"

    for meta, payload in records:
        meta = {k: v for k, v in meta.items() if k != "has_payload"}
        if rank is not None and "str" not in meta:
            meta["rank"] = rank
        if "frame_id" in meta:
            meta["frame_id"] += offset
        for key in ("compilation_metrics", "bwd_compilation_metrics"):
            body = meta.get(key)
            if isinstance(body, dict) and isinstance(body.get("compile_id"), str):
                meta[key] = {**body, "compile_id": _CID_FIELD.sub(cid, f'"compile_id": "{body["compile_id"]}')[15:]}
                if time_scale != 1.0 and isinstance(body.get("entire_frame_compile_time_s"), (int, float)):
                    meta[key]["entire_frame_compile_time_s"] = body["entire_frame_compile_time_s"] * time_scale
        if payload is not None:
            if "chromium_event" in meta:
                payload = _CID_FIELD.sub(cid, payload)
                if time_scale != 1.0:
                    payload = _stretch(payload, time_scale)
            elif meta.get("artifact", {}).get("name") == "recompile_reasons":
                payload = _CID_LINE.sub(lambda m: f"{int(m.group(1)) + offset}/{m.group(2)}", payload)
        yield meta, payload


def _stretch(payload: str, scale: float) -> str:
    try:
        ev = json.loads(payload)
    except ValueError:
        return payload
    if isinstance(ev, dict) and isinstance(ev.get("ts"), (int, float)):
        ev["ts"] = ev["ts"] * scale
        return json.dumps(ev, indent=0)
    return payload


class Clock:
    """Glog prefixes with a steadily advancing time, as one process would write them."""

    def __init__(self, pid: int = 4242) -> None:
        self.t = 1_763_000_000.0
        self.pid = pid

    def prefix(self) -> str:
        self.t += 0.000137
        return glog_prefix(self.t, self.pid, "torch/_dynamo/utils.py", 2126)


def write_log(path: Path, chunks) -> int:
    """Write record chunks into one log; returns its size."""
    clock = Clock()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for records in chunks:
            for meta, payload in records:
                f.write(format_record(meta, payload, prefix=clock.prefix()))
                f.write("\n")
    return path.stat().st_size


def build_large(path: Path, mb: int) -> tuple[int, int]:
    """A ``mb`` MB log of renumbered copies of the three recorded logs; returns (size, copies)."""
    sources = [source_records(w) for w in WORKLOADS]
    one = sum(len(format_record(m, p)) + 1 for recs in sources for m, p in recs)
    copies = max(1, round(mb * 1e6 / one))

    def chunks():
        offset = 0
        for _ in range(copies):
            for recs in sources:
                yield shifted(recs, offset)
                offset += frames_in(recs)

    return write_log(path, chunks()), copies


def build_ranks(directory: Path, ranks: int, copies: int) -> list[int]:
    """A directory of rank logs (``dedicated_log_torch_trace_rank_<r>_<x>.log``) plus two
    unrelated files; returns the sizes of the rank logs."""
    directory.mkdir(parents=True, exist_ok=True)
    train = source_records("quickstart")
    extra = source_records("max_autotune")
    step = frames_in(train)
    sizes = []
    for r in range(ranks):
        def chunks(r=r):
            for i in range(copies):
                yield shifted(train, i * step, rank=r, time_scale=2.0 if r == 5 else 1.0)
            if r == 3:
                yield shifted(extra, copies * step, rank=r)

        sizes.append(write_log(directory / f"dedicated_log_torch_trace_rank_{r}_bench{r:04d}.log", chunks()))
    (directory / "README.txt").write_text("benchmark rank logs\n")
    (directory / "launcher.out").write_text("job finished\n")
    return sizes


# -- timing in fresh processes -----------------------------------------------------
def timed(cmd: list[str], **kwargs) -> dict:
    """Run ``cmd`` in a fresh process: its wall time, its own peak RSS (from ``wait4``), its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, **kwargs)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024, "stdout": out.read().decode()}  # KiB on Linux


PY_LOAD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import ipycompile
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
path, mode = sys.argv[1], sys.argv[2]
if mode == "summary":
    r = ipycompile.load_trace(path, summary=True)
    text = r.summary()
elif mode == "full":
    r = ipycompile.load_trace(path)
    text = r.summary()
else:
    from ipycompile.analysis.ranks import rank_divergence
    reps = ipycompile.load_trace(path)
    text = str(rank_divergence(reps))
t1 = time.perf_counter()
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"inner_s": t1 - t0, "text": text, "baseline_rss_mb": baseline, "worker_peak_rss_mb": workers}))
"""


def python_load(path: Path, mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = timed([sys.executable, "-c", PY_LOAD, str(path), mode], env=env)
    data = json.loads(res.pop("stdout").strip().splitlines()[-1])
    return {**res, **{k: v for k, v in data.items()}}


def tlparse(path: Path, out: Path, *flags: str) -> dict:
    exe = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    res = timed([exe, str(path), "-o", str(out), "--overwrite", "--no-browser", *flags])
    res.pop("stdout")
    shutil.rmtree(out, ignore_errors=True)
    return res


def tlparse_version() -> str:
    exe = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    return subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()


def host_name() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    words = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-").split("-")
    return "cpu-" + "-".join(words[:3]) if words and words[0] else "cpu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=300, help="size of the large log (default: %(default)s)")
    ap.add_argument("--ranks", type=int, default=64, help="rank logs in the directory (default: %(default)s)")
    ap.add_argument("--copies-per-rank", type=int, default=4, help="training-log copies per rank (default: %(default)s)")
    ap.add_argument("--keep", default=None, metavar="DIR", help="build the traces in DIR and keep them")
    args = ap.parse_args()

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ipycompile-trace-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        big = work / "dedicated_log_torch_trace_large.log"
        t0 = time.perf_counter()
        size, copies = build_large(big, args.mb)
        ranks_dir = work / "ranks"
        shutil.rmtree(ranks_dir, ignore_errors=True)
        rank_sizes = build_ranks(ranks_dir, args.ranks, args.copies_per_rank)
        built_s = time.perf_counter() - t0
        print(f"built {big.name}: {size / 1e6:.0f} MB ({copies} copies of 3 logs), "
              f"{args.ranks} rank logs of {max(rank_sizes) / 1e6:.1f} MB at most, in {built_s:.0f} s", flush=True)

        rows = {}
        out = work / "tl_out"
        load_before = os.getloadavg()[0]
        rows["tlparse (default)"] = tlparse(big, out)
        rows["tlparse --plain-text"] = tlparse(big, out, "--plain-text")
        rows["load_trace: first summary"] = python_load(big, "summary")
        rows["load_trace: full report"] = python_load(big, "full")
        rows["tlparse --all-ranks-html (dir)"] = tlparse(ranks_dir, out, "--all-ranks-html")
        rows["load_trace(dir): ranks + divergence"] = python_load(ranks_dir, "ranks")

        largest = max(size, max(rank_sizes)) / 2**20
        met = {
            "first summary < tlparse --plain-text": rows["load_trace: first summary"]["wall_s"] < rows["tlparse --plain-text"]["wall_s"],
            "full report < tlparse default": rows["load_trace: full report"]["wall_s"] < rows["tlparse (default)"]["wall_s"],
            "peak memory < 2x largest file": all(
                rows[k]["peak_rss_mb"] < 2 * size / 2**20 for k in ("load_trace: first summary", "load_trace: full report")
            ),
            # a directory: each worker holds one log at a time, the parent a slim summary per rank
            "directory: worker peak < 2x largest rank log + interpreter": (
                rows["load_trace(dir): ranks + divergence"]["worker_peak_rss_mb"]
                < 2 * max(rank_sizes) / 2**20 + rows["load_trace(dir): ranks + divergence"]["baseline_rss_mb"]
            ),
        }
        print()
        print(f"{'':40s} {'wall s':>8s} {'peak RSS MB':>12s} {'worker peak MB':>15s}")
        for name, row in rows.items():
            worker = row.get("worker_peak_rss_mb") or 0
            print(f"{name:40s} {row['wall_s']:8.2f} {row['peak_rss_mb']:12.0f} {worker:15.0f}" if worker
                  else f"{name:40s} {row['wall_s']:8.2f} {row['peak_rss_mb']:12.0f} {'':>15s}")
        print(f"\nlarge log {size / 2**20:.0f} MiB; largest rank log {max(rank_sizes) / 2**20:.1f} MiB "
              f"({args.ranks} ranks, {sum(rank_sizes) / 2**20:.0f} MiB in all)")
        for k, ok in met.items():
            print(f"  {'met ' if ok else 'MISSED'} {k}")
        print("\nfirst summary (stdout of the CLI would be this):\n" + rows["load_trace: first summary"]["text"][:1500])
        print("\nrank divergence:\n" + rows["load_trace(dir): ranks + divergence"]["text"][:3000])

        result = {
            "benchmark": "trace_load",
            "host": host_name(),
            "cpus": os.cpu_count(),
            "load_average_1m_before_after": [load_before, os.getloadavg()[0]],
            "python": platform.python_version(),
            "tlparse": tlparse_version(),
            "large_log_bytes": size,
            "large_log_copies": copies,
            "ranks": args.ranks,
            "rank_log_bytes_max": max(rank_sizes),
            "rank_log_bytes_total": sum(rank_sizes),
            "largest_file_mib": largest,
            "results": {k: {kk: vv for kk, vv in v.items() if kk != "text"} for k, v in rows.items()},
            "met": met,
        }
        res_dir = HERE / "results"
        res_dir.mkdir(exist_ok=True)
        dest = res_dir / f"trace_load-{result['host']}.json"
        dest.write_text(json.dumps(result, indent=1) + "\n")
        print(f"\nwrote {dest.relative_to(ROOT)}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
