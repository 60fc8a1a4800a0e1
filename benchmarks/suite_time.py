"""How long does ``make test``'s pytest run take, and how fast was the machine while it ran?

Issue 39's target: the pytest run of ``make test`` under 8 minutes on two cores, on a fresh
clone (so with a fresh Inductor cache). A shared machine's speed drifts: the same tests took
460 s and 515 s within the hour here, every long test 10-15% slower in the slower run. So each
run here is measured beside a fixed reference task, run before and after it:

* ``make pytest`` in this checkout (``CI=true``, as ``.ci/run`` runs it: the browser tests
  required), each run with a new, empty ``TORCHINDUCTOR_CACHE_DIR`` (``--warm-cache``: Inductor's
  default cache instead); its wall time, pytest's own figure and counts, and the machine's busy and
  idle core-seconds over it (``/proc/stat``);
* the reference, twice before and twice after each run, each in a new process with
  this venv's Python and a new, empty ``TORCHINDUCTOR_CACHE_DIR``: import torch, a fixed pure-Python
  loop, and an Inductor compile of a small function (the C++ compiler included): the kinds of
  work the suite does. Its median wall time is shown beside each run, as a hint of how fast the
  machine was. It is no
  correction: on 2026-11-30 the reference itself varied by 15% (12.4-14.4 s) and was slower around
  the faster of two runs, so the figure to trust is the median of several runs.

Prints a table and writes ``benchmarks/results/suite_time-<host>.json``.

    python benchmarks/suite_time.py [--runs 2] [--warm-cache] [--target-s 480] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

REFERENCE = r"""
import json, resource, time
t0 = time.perf_counter()
import torch
s = 0
for i in range(2_000_000):
    s += i * i % 7

def f(x, w):
    return torch.tanh(x @ w).softmax(-1).sum(0)

torch.compile(f)(torch.randn(64, 32), torch.randn(32, 32))  # TORCHINDUCTOR_CACHE_DIR: a new, empty cache
cpu = sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for field in ("ru_utime", "ru_stime"))
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": cpu}))
"""

SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<secs>[\d.]+)s")


def _proc_stat() -> tuple[float, float]:
    """(busy, idle) core-seconds of the whole machine since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / hz, idle / hz


def reference(python: str, times: int = 2) -> list[dict]:
    out = []
    for _ in range(times):
        with tempfile.TemporaryDirectory(prefix="suite-time-ref-") as cache:
            proc = subprocess.run([python, "-c", REFERENCE], capture_output=True, text=True, cwd=ROOT,
                                  env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache})
        if proc.returncode:
            raise SystemExit(f"suite_time: the reference task failed:\n{proc.stderr[-2000:]}")
        out.append({k: round(v, 3) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()})
    return out


def suite(fresh: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="suite-time-inductor-") as cache:  # removed after the run
        env = {**os.environ, "CI": "true", **({"TORCHINDUCTOR_CACHE_DIR": cache} if fresh else {})}
        busy0, idle0 = _proc_stat()
        t0 = time.perf_counter()
        proc = subprocess.run(["make", "--no-print-directory", "pytest"], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
        busy1, idle1 = _proc_stat()
    lines = list(SUMMARY.finditer(proc.stdout))
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (\w+)", lines[-1]["counts"])) if lines else {}
    return {"rc": proc.returncode, "wall_s": round(wall, 1), "pytest_s": float(lines[-1]["secs"]) if lines else None,
            "counts": counts, "busy_core_s": round(busy1 - busy0, 1), "idle_core_s": round(idle1 - idle0, 1),
            "tail": proc.stdout[-1500:] if proc.returncode else ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--warm-cache", action="store_true", help="Inductor's default cache, not a fresh one per run")
    ap.add_argument("--target-s", type=float, default=480.0)
    ap.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/suite_time-<host>.json)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs: give 1 or more")
    python = str(ROOT / ".venv" / "bin" / "python")
    if not os.access(python, os.X_OK):
        ap.error(f"no venv at {ROOT / '.venv'}: run `make venv` first")
    sys.path.insert(0, str(HERE))
    from trace_load import host_name

    runs = []
    for i in range(args.runs):
        before = reference(python)
        run = suite(fresh=not args.warm_cache)
        after = reference(python)
        run["reference_wall_s"] = [r["wall_s"] for r in before + after]
        run["reference_cpu_s"] = [r["cpu_s"] for r in before + after]
        runs.append(run)
        print(f"run {i + 1}: {run['wall_s']} s, rc {run['rc']}, {run['counts']}", flush=True)
        if run["rc"]:
            print(run["tail"], file=sys.stderr)
    for r in runs:
        r["reference_median_s"] = round(statistics.median(r["reference_wall_s"]), 3)
    walls = [r["wall_s"] for r in runs]
    print()
    print(f"{'run':>3} {'wall s':>7} {'pytest s':>8} {'busy core-s':>11} {'idle core-s':>11} {'reference s':>11}  passed/failed")
    for i, r in enumerate(runs, 1):
        c = r["counts"]
        print(f"{i:>3} {r['wall_s']:>7} {r['pytest_s'] or '-':>8} {r['busy_core_s']:>11} {r['idle_core_s']:>11} "
              f"{r['reference_median_s']:>11}  {c.get('passed', 0)}/{c.get('failed', 0)}")
    med = statistics.median(walls)
    print(f"median {med:.1f} s against the target {args.target_s:g} s: {'under' if med < args.target_s else 'over'} "
          f"(runs {min(walls):.1f}-{max(walls):.1f} s; the reference task "
          f"{min(w for r in runs for w in r['reference_wall_s']):.2f}-{max(w for r in runs for w in r['reference_wall_s']):.2f} s)")
    out = Path(args.out) if args.out else HERE / "results" / f"suite_time-{host_name()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out.write_text(json.dumps({
        "benchmark": "suite_time", "commit": commit, "python": platform.python_version(), "cores": os.cpu_count(),
        "inductor_cache": "default" if args.warm_cache else "fresh per run", "target_s": args.target_s,
        "median_s": med, "runs": runs,
    }, indent=1) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
