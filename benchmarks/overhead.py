"""What does %%compile cost on top of plain torch.compile, and is its compile time unbiased?

For each workload, in one process and interleaved (the arms in an order that rotates
and reverses from one repetition to the next), with fresh Inductor caches and a Dynamo
reset before every compile:

* compile: the first call (compile + one run, synchronised) of the same cell
  function, compiled plainly vs through ``ipycompile.run_cell`` (capture attached,
  peak-memory probes, profile). ipycompile reports ``compile_s`` net of the trace
  logging torch tallies for the capture (``structured_logging_overhead``), and keeps
  the wall time (``compile_wall_s``). Each repetition pairs one plain and one
  ipycompile compile; the figure of merit is the median over pairs of
  ``ipycompile compile_s / plain - 1``: target within +-2 % (the net figure is
  unbiased). The wall time's paired difference is reported beside it, and torch's
  own phase timings (``dynamo_timed``) of both, paired, say where a difference lies;
* steady state: the two compiled callables timed in alternating blocks of
  calls (so drift in clocks and load hits both alike), after ``run_cell`` has
  finished: anything it left attached would show here. ``run_cell``'s own
  reported median is kept in the JSON too.

One extra pair per workload is run first and not counted (the first compile of
a new model pays for cold caches of its own, whichever path comes first).

Workloads: an MLP, a conv net, a transformer block, and a model with two graph
breaks (three graphs to compile). Prints a table and writes JSON (device, torch
version, every sample) to ``benchmarks/results/overhead-<device>.json``. Targets:
net compile time within +-2 % of plain (median of paired differences),
steady-state overhead <= 0.5 %.

Each workload's median paired difference comes with a 95 % distribution-free interval, and all
workloads' pairs are pooled too (a bias of the capture would show in every workload).

An A/A control measures what the design can resolve: each repetition compiles plainly
a second time (``control``, the very same compile as ``plain``), in an order that
rotates through the three arms, and ``control / plain - 1`` is summarised like the
real difference. A workload's net difference is "within" +-2 % when its whole 95 %
interval is, "outside" when the whole interval lies beyond, and otherwise "not
resolved" (the A/A control shows how far identical compiles move on that machine).
``--summarize JSON`` prints the table of a saved run (another machine's, say) and adds
the intervals to it; ``--pool JSON JSON ...`` pools the pairs of several saved runs of
one machine, per workload and in all (more pairs, a narrower interval).

    python benchmarks/overhead.py [--reps 6] [--runs 200] [--quick] [--only NAME,...] [--no-control] [--gc-off]
    python benchmarks/overhead.py --summarize benchmarks/results/overhead-<device>.json
    python benchmarks/overhead.py --pool RUN1.json RUN2.json ...
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

import torch
from torch import nn
from ipycompile.run import fresh_inductor_cache as fresh_cache

import ipycompile
from ipycompile.run.cell import make_cell_function, placeholders
from ipycompile.run.profile import device_name, synchronize, time_calls
from ipycompile.run.stats import MIN_PAIRS, judged, median_ci, verdict  # noqa: F401 (the statistic's one home)

HERE = Path(__file__).parent


def workloads(device: str, quick: bool):
    torch.manual_seed(0)
    scale = 1 if device == "cpu" else 4
    mlp = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256), nn.LayerNorm(256)).to(device)
    conv = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)
    ).to(device)
    block = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True, dropout=0.0).to(device).eval()
    items = [
        ("mlp", mlp, torch.randn(64 * scale, 256, device=device)),
        ("convnet", conv, torch.randn(8 * scale, 3, 32, 32, device=device)),
        ("transformer_block", block, torch.randn(8 * scale, 64, 128, device=device)),
        ("graph_breaks", WithBreaks().to(device), torch.randn(64 * scale, 256, device=device)),
    ]
    return items[:1] if quick else items


class WithBreaks(nn.Module):
    """Two graph breaks: a data-dependent branch and an explicit break (three graphs)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(256, 512), nn.Linear(512, 512), nn.Linear(512, 256)

    def forward(self, x):
        h = torch.relu(self.a(x))
        if h.mean() > 0:  # graph break: a branch on a tensor's value
            h = h * 2
        h = torch.tanh(self.b(h))
        torch._dynamo.graph_break()
        return torch.nn.functional.layer_norm(self.c(h), (256,))


CELL = "out = model(x)\nout.sum()"

#: torch's own timings of the compile's phases (``dynamo_timed``), seconds summed per phase;
#: ``torch._dynamo.reset()`` clears them, so after a fresh compile they are that compile's
PHASES: dict[str, list[dict]] = {"plain": [], "control": [], "ipycompile": []}

#: the arms of a repetition; ``control`` is ``plain`` again (the A/A control)
ARMS = ("plain", "control", "ipycompile")


def arm_order(rep: int, arms: tuple[str, ...] = ARMS) -> tuple[str, ...]:
    """The order of the arms in repetition ``rep``: rotations, each also reversed, so
    that over ``2 * len(arms)`` repetitions each arm runs in each place equally often
    and after each other arm equally often."""
    k = (rep // 2) % len(arms)
    order = arms[k:] + arms[:k]
    return order if rep % 2 == 0 else order[::-1]


def _phases() -> dict[str, float]:
    from torch._dynamo.utils import compilation_time_metrics

    return {k: float(sum(v)) for k, v in compilation_time_metrics.items()}


def plain(model, x, runs: int, warmup: int, collect: bool = False, arm: str = "plain"):
    ns = {"model": model, "x": x}
    if collect:  # --gc-collect: the garbage of earlier runs is not charged to this compile
        gc.collect()
    cf = make_cell_function(CELL, ns, filename="<overhead-plain>")
    torch._dynamo.reset()
    with fresh_cache():
        fn = torch.compile(cf.fn)
        with placeholders(cf):
            synchronize()
            t0 = time.perf_counter()
            fn()
            synchronize()
            compile_s = time.perf_counter() - t0
        PHASES[arm].append(_phases())
        for _ in range(warmup):
            fn()
    return compile_s, None, fn


LOGGING: dict[str, list[float]] = {}


def ratio_ci(a: list[float], b: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval of median(b) / median(a) - 1 (many samples each: the steady state)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a_, b_ = np.asarray(a), np.asarray(b)
    ra = np.median(rng.choice(a_, (n, a_.size)), axis=1)
    rb = np.median(rng.choice(b_, (n, b_.size)), axis=1)
    lo, hi = np.percentile(rb / ra - 1, [2.5, 97.5])
    return float(lo), float(hi)


@contextlib.contextmanager
def gc_off(off: bool):
    """``--gc-off``: a full collection, then the cyclic garbage collector off for the
    whole arm (both arms alike), so that no collection lands in a compile window; a
    full collection of a process holding torch costs tens to hundreds of ms and falls
    wherever the allocation counts say."""
    if not off:
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def with_ipycompile(model, x, runs: int, warmup: int, collect: bool = False):
    ns = {"model": model, "x": x}
    if collect:
        gc.collect()
    run = ipycompile.run_cell(CELL, ns, fresh=True, runs=runs, warmup=warmup, record=False)
    p = run.report.profile
    PHASES["ipycompile"].append(_phases())
    LOGGING.setdefault("share", []).append((p.first_call.trace_logging_s or 0.0) / p.first_call.compile_wall_s)
    LOGGING.setdefault("build_s", []).append(p.report_build_s)
    LOGGING.setdefault("wall_s", []).append(p.first_call.compile_wall_s)
    return p.first_call.compile_s, p.steady.run_median_s, run.fn


def _phase_diffs(plain_: list[dict], ipy: list[dict]) -> dict[str, float]:
    """Median over pairs of ipycompile's minus plain's time in each phase torch timed, largest first."""
    keys = {k for d in plain_ + ipy for k in d}
    diffs = {k: statistics.median(i.get(k, 0.0) - p.get(k, 0.0) for p, i in zip(plain_, ipy)) for k in keys}
    return dict(sorted(diffs.items(), key=lambda kv: -abs(kv[1])))


def steady_state(fns: dict, runs: int, rounds: int = 20) -> dict[str, list[float]]:
    """Per-call times of each callable, timed in alternating blocks."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    block = max(1, runs // rounds)
    for i in range(rounds):
        for name in (list(fns) if i % 2 == 0 else list(fns)[::-1]):
            times[name] += time_calls(fns[name], runs=block, warmup=1).times_s
    return times


def _write(args, dev: str, results: list, run_env: Optional[dict] = None) -> Path:
    """Write the JSON; ``run_env`` (torch, python, threads) defaults to this process's."""
    env = run_env or {"torch": torch.__version__, "python": platform.python_version(), "threads": torch.get_num_threads()}
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"overhead-{slug}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "overhead", "device": dev, **env, "reps": args.reps, "runs": args.runs, "warmup": args.warmup, "gc_collect": args.gc_collect, "gc_off": args.gc_off,
        "control": not args.no_control,
        "targets": {"compile_overhead_abs": 0.02, "run_overhead": 0.005},
        "pooled": pooled(results) if results else None, "results": results,
    }, indent=1))
    return out


def pooled(results: list[dict]) -> dict:
    """Every workload's paired net differences together: is there a bias common to all?"""
    return judged([d for r in results for d in r["paired_net_diffs"]],
                  [d for r in results for d in r.get("control_paired_diffs", [])])


def summarize(results: list[dict], dev: str, torch_version: str, reps: int, runs: int) -> None:
    """Print the table of the results (rows with their ``compile_overhead_ci95``)."""
    print(f"\n%%compile vs plain torch.compile on {dev}, torch {torch_version}")
    print(f"(compile: median over {reps} pairs with fresh caches of ipycompile/plain - 1; run: {runs} calls each, alternating blocks)\n")
    head = (
        f"{'workload':<18} {'plain compile':>13} {'net':>10} {'paired net':>10} {'95% interval':>17} {'A/A control':>27} {'paired wall':>11} {'logging':>8} "
        f"{'report':>8} {'plain run':>11} {'%%compile':>11} {'A/B':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        print(
            f"{r['workload']:<18} {statistics.median(r['plain_compile_s']):>12.3f}s {statistics.median(r['ipycompile_compile_s']):>9.3f}s "
            f"{r['compile_overhead']:>+10.1%} [{r['compile_overhead_ci95'][0]:+6.1%}, {r['compile_overhead_ci95'][1]:+6.1%}] {_control(r):>27} {r['compile_wall_overhead']:>+11.1%} {r['trace_logging_share']:>8.2%} "
            f"{r['report_build_s'] * 1e3:>6.1f}ms {r['plain_run_median_s'] * 1e6:>9.1f}us "
            f"{r['ipycompile_run_median_s'] * 1e6:>9.1f}us {r['run_overhead']:>+7.2%}"
        )
    missed = [r["workload"] for r in results if abs(r["compile_overhead"]) > 0.02]
    worst_r = max(r["run_overhead"] for r in results)
    print("\npaired net: median over pairs of (ipycompile compile_s, net of torch's logging tally) / plain - 1;")
    print("paired wall: the same with the wall time; logging: torch's tally as a share of the wall time; report: building it after")
    print("A/A control: a second plain compile against the first, summarised alike (what identical compiles differ by here)")
    print(f"median net difference within +-2 % of plain: {len(results) - len(missed)}/{len(results)} workloads"
          + (f" (missed: {', '.join(missed)})" if missed else ""))
    print("by the 95% interval (within +-2 % / outside / not resolved): "
          + ", ".join(f"{r['workload']} {r['verdict']}" for r in results))
    print(f"worst steady-state overhead {worst_r:+.2%} (target <= 0.5%): {'met' if worst_r <= 0.005 else 'NOT met'}")
    print("steady-state 95% intervals (bootstrap): " + ", ".join(
        f"{r['workload']} [{r['run_overhead_ci95'][0]:+.2%}, {r['run_overhead_ci95'][1]:+.2%}]" for r in results))
    print("largest paired phase differences (ipycompile - plain, torch's dynamo_timed phases, ms): " + "; ".join(
        f"{r['workload']}: " + ", ".join(f"{k} {v * 1e3:+.1f}" for k, v in list(r["phase_paired_diffs_s"].items())[:3])
        for r in results))
    print("noise of plain alone: compile (max-min)/median, run IQR/median: "
          + ", ".join(f"{r['workload']} {r['compile_spread']:.1%} / {r['run_spread']:.1%}" for r in results))
    pool = pooled(results)
    print(f"all workloads' pairs together ({pool['pairs']}): median paired net difference {pool['compile_overhead']:+.1%}, "
          f"95% interval [{pool['compile_overhead_ci95'][0]:+.1%}, {pool['compile_overhead_ci95'][1]:+.1%}]: "
          f"{pool['verdict']}"
          + (f"; A/A control {pool['control_overhead']:+.1%} [{pool['control_ci95'][0]:+.1%}, {pool['control_ci95'][1]:+.1%}]"
             if "control_overhead" in pool else ""))


def pool_runs(paths: list[str]) -> dict:
    """The paired differences of several saved runs (of one machine), per workload and in all,
    with their medians, intervals and verdicts; printed as a table."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    devices = {r["device"] for r in runs}
    if len(devices) != 1:
        raise SystemExit(f"--pool: the runs are of different machines ({', '.join(sorted(devices))}); pool one machine's runs")
    ab: dict[str, list[float]] = {}
    aa: dict[str, list[float]] = {}
    for run in runs:
        for r in run["results"]:
            ab.setdefault(r["workload"], []).extend(r["paired_net_diffs"])
            aa.setdefault(r["workload"], []).extend(r.get("control_paired_diffs", []))
    ab["all"] = [d for w in list(ab) for d in ab[w]]
    aa["all"] = [d for w in list(aa) for d in aa[w]]
    out = {"device": devices.pop(), "runs": [str(p) for p in paths], "workloads": {}}
    print(f"\npooled over {len(runs)} runs on {out['device']}: median paired net difference, 95 % interval, verdict; A/A control")
    for w, diffs in ab.items():
        row = out["workloads"][w] = judged(diffs, aa.get(w, []))
        ci = row["compile_overhead_ci95"]
        line = f"{w:<18} {len(diffs):>4} pairs {row['compile_overhead']:>+7.1%} [{ci[0]:+6.1%}, {ci[1]:+6.1%}] {row['verdict']:<13}"
        if "control_ci95" in row:
            cci = row["control_ci95"]
            line += f" A/A {row['control_pairs']:>3} pairs {row['control_overhead']:+.1%} [{cci[0]:+.1%}, {cci[1]:+.1%}]"
        print(line)
    return out


def _control(r: dict) -> str:
    if "control_overhead" not in r:
        return "-"
    lo, hi = r["control_ci95"]
    return f"{r['control_overhead']:+.1%} [{lo:+6.1%}, {hi:+6.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=6, help="repetitions per workload (default 6: each arm in each place twice)")
    ap.add_argument("--no-control", action="store_true", help="leave out the A/A control arm (a second plain compile)")
    ap.add_argument("--runs", type=int, default=200, help="timed steady-state calls per measurement (default 200)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one workload, for a smoke test")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/overhead-<device>.json)")
    ap.add_argument("--gc-off", action="store_true",
                    help="gc.collect(), then the garbage collector off for each arm (compile and runs), both sides alike")
    ap.add_argument("--gc-collect", action="store_true",
                    help="gc.collect() before each timed compile on both sides (garbage of earlier runs not charged to the next)")
    ap.add_argument("--summarize", metavar="JSON", default=None,
                    help="measure nothing: print the table of a saved run (and add its intervals to the file)")
    ap.add_argument("--pool", metavar="JSON", nargs="+", default=None,
                    help="measure nothing: pool the pairs of several saved runs of one machine")
    args = ap.parse_args(argv)
    if args.pool:
        pooled_runs = pool_runs(args.pool)
        if args.out:
            Path(args.out).write_text(json.dumps(pooled_runs, indent=1))
        return 0
    if args.summarize:
        path = Path(args.summarize)
        saved = json.loads(path.read_text())
        args.reps, args.runs, args.warmup, args.out = saved["reps"], saved["runs"], saved["warmup"], str(path)
        args.gc_collect = saved.get("gc_collect", False)
        args.gc_off = saved.get("gc_off", False)
        args.no_control = not saved.get("control", False)
        for r in saved["results"]:  # the intervals (and verdicts) by this version's method
            r.update(judged(r["paired_net_diffs"], r.get("control_paired_diffs", [])))
        summarize(saved["results"], saved["device"], saved["torch"], saved["reps"], saved["runs"])
        _write(args, saved["device"], saved["results"], {k: saved[k] for k in ("torch", "python", "threads")})
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.no_grad():
        # one-time process start-up, paid before anything is measured
        ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(4, device=device)}, runs=1, record=False)
        results = []
        for name, model, x in workloads(device, args.quick):
            if args.only and name not in args.only.split(","):
                continue
            with gc_off(args.gc_off):  # the uncounted first pair
                plain(model, x, args.runs, args.warmup, args.gc_collect)
            with gc_off(args.gc_off):
                with_ipycompile(model, x, args.runs, args.warmup, args.gc_collect)
            LOGGING.clear()
            for phases in PHASES.values():
                phases.clear()
            arms = ("plain", "ipycompile") if args.no_control else ARMS
            pairs = []
            control = []
            fns = {}
            reported = []
            for rep in range(args.reps):
                got = {}
                for which in arm_order(rep, arms):
                    with gc_off(args.gc_off):
                        if which == "ipycompile":
                            compile_s, reported_run_s, fns[which] = with_ipycompile(model, x, args.runs, args.warmup, args.gc_collect)
                            reported.append(reported_run_s)
                        else:
                            compile_s, _, fns[which] = plain(model, x, args.runs, args.warmup, args.gc_collect, arm=which)
                    got[which] = compile_s
                pairs.append((got["plain"], got["ipycompile"], LOGGING["wall_s"][-1]))
                if "control" in got:
                    control.append(got["control"])
            fns.pop("control", None)
            times = steady_state(fns, args.runs)
            net_diffs = [i / p - 1 for p, i, _ in pairs]
            wall_diffs = [w / p - 1 for p, _, w in pairs]
            pr, ir = statistics.median(times["plain"]), statistics.median(times["ipycompile"])
            q = statistics.quantiles(times["plain"], n=4)
            plain_c = [p for p, _, _ in pairs]
            control_diffs = [c / p - 1 for c, p in zip(control, plain_c)]
            row = {
                "workload": name,
                "plain_compile_s": plain_c,
                "ipycompile_compile_s": [i for _, i, _ in pairs],
                "ipycompile_compile_wall_s": [w for _, _, w in pairs],
                "paired_net_diffs": net_diffs,
                "paired_wall_diffs": wall_diffs,
                **judged(net_diffs, control_diffs),
                "compile_wall_overhead": statistics.median(wall_diffs),
                **({"control_compile_s": control, "control_paired_diffs": control_diffs,
                    "control_phases_s": list(PHASES["control"])} if control else {}),
                "plain_run_times_s": times["plain"],
                "ipycompile_run_times_s": times["ipycompile"],
                "ipycompile_reported_run_median_s": reported,
                "run_overhead_ci95": ratio_ci(times["plain"], times["ipycompile"]),
                "trace_logging_share": statistics.median(LOGGING["share"]),
                "report_build_s": statistics.median(LOGGING["build_s"]),
                "plain_run_median_s": pr,
                "ipycompile_run_median_s": ir,
                "run_overhead": ir / pr - 1,
                "compile_spread": (max(plain_c) - min(plain_c)) / statistics.median(plain_c),
                # where a difference lies: torch's own phase timings, paired (ipycompile - plain, seconds)
                "phase_paired_diffs_s": _phase_diffs(PHASES["plain"], PHASES["ipycompile"]),
                "plain_phases_s": list(PHASES["plain"]),
                "ipycompile_phases_s": list(PHASES["ipycompile"]),
                "run_spread": (q[2] - q[0]) / pr,
            }
            results.append(row)
            _write(args, device_name(), results)  # after every workload: a run stopped by a time limit keeps what it measured
            print(json.dumps({k: v for k, v in row.items() if not isinstance(v, list)}, default=str), flush=True)

    summarize(results, device_name(), torch.__version__, args.reps, args.runs)
    out = _write(args, device_name(), results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
