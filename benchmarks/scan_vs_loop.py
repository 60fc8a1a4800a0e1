"""scan against an unrolled Python loop, as the trip count grows (control-flow paper, Figures 1 and 5).

Two workloads from the paper's appendix F, each as a Python loop (which Dynamo
unrolls: the graph grows with the trip count) and with ``scan`` (one combine
function, whatever the trip count):

* ``chunked_ce`` (F.3): a linear layer fused with cross-entropy, computed chunk
  by chunk with ``torch.func.grad_and_value`` so that only one chunk's logits
  live at a time; swept over the chunk count.
* ``rnn`` (F.4): a classic RNN cell, ``h = tanh(x W + h H)``, over a sequence;
  swept over the sequence length. (The paper's listing multiplies ``xs`` by
  ``H``; the recurrence needs ``prev_h``, and its ``return h, h`` fails under
  scan: a combine function must not return one tensor twice, so it returns
  ``h, h.clone()``.)

Every point runs in a process of its own (``--point``), so one-time process
start-up never lands on a point. In that process the implementation is first
compiled once at the smallest trip count (untimed: Inductor, compiler and
Triton start-up, and the first use of ``scan``), then the point is measured
with ``ipycompile.sweep``: Dynamo reset, fresh Inductor caches, ``fullgraph=True``,
the first call's wall time (compile s), steady-state runs (median and IQR,
synchronised), peak device memory (CUDA allocator) and peak host memory
(VmHWM), for the compile call and the steady state, and a check of the compiled
outputs against eager.

The parent prints a table, checks the expected shape and writes JSON (device,
torch version, every figure, the checks) to
``benchmarks/results/scan_vs_loop-<device>.json``:

* loop compile time grows >= 4x from the smallest to the largest trip count,
  scan's < 1.5x;
* at the largest chunk count, scan's peak memory (device memory on GPU, host
  memory growth during the compile on CPU) is far below the loop's (<= 0.5x);
* where scan runs slower than the loop at steady state, by how much.

    python benchmarks/scan_vs_loop.py [--quick] [--workload NAME] [--out PATH] [--timeout 900]

``--workload`` and ``--trips 2,32`` run some points and keep the results of the
other points already in the JSON (same device and torch), so a long run can be
split over several sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent

# Trip counts (the paper's axes) and sizes: small on CPU, larger on a GPU.
TRIPS = {"chunked_ce": [2, 4, 8, 16, 32], "rnn": [16, 64, 256]}
QUICK_TRIPS = {"chunked_ce": [2, 8], "rnn": [16, 64]}
PARAM = {"chunked_ce": "chunks", "rnn": "steps"}
SIZES = {
    "cpu": {"chunked_ce": dict(tokens=1024, dim=64, vocab=2048, dtype="float32"),
            "rnn": dict(batch=8, inputs=32, hidden=64)},
    "cuda": {"chunked_ce": dict(tokens=8192, dim=1024, vocab=32768, dtype="bfloat16"),
             "rnn": dict(batch=64, inputs=128, hidden=256)},
}


# --------------------------------------------------------------------------- the workloads


def chunked_ce(impl: str, device: str, tokens: int, dim: int, vocab: int, dtype: str):
    """(function, make_args): the chunked cross-entropy loss and its gradients, loop or scan."""
    import torch
    import torch.nn.functional as F
    from torch._higher_order_ops.scan import scan

    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, dim, generator=gen).to(device, dt)
    weight = (torch.randn(vocab, dim, generator=gen) * dim**-0.5).to(device, dt)
    bias = torch.zeros(vocab).to(device, dt)
    target = torch.randint(0, vocab, (tokens,), generator=gen).to(device)

    def compute_loss(input_chunk, weight, bias, target):
        logits = torch.addmm(bias, input_chunk, weight.t()).float()
        return F.cross_entropy(logits, target)

    grad_and_loss = torch.func.grad_and_value(compute_loss, argnums=(0, 1, 2))

    def loop(x, weight, bias, target, chunks: int):
        grad_w, grad_b = torch.zeros_like(weight), torch.zeros_like(bias)
        loss = torch.zeros((), device=x.device)
        grad_x = []
        for xc, tc in zip(x.chunk(chunks), target.chunk(chunks)):
            (gx, gw, gb), chunk_loss = grad_and_loss(xc, weight, bias, tc)
            grad_w, grad_b, loss = grad_w + gw, grad_b + gb, loss + chunk_loss
            grad_x.append(gx)
        return loss / chunks, grad_w / chunks, grad_b / chunks, torch.cat(grad_x) / chunks

    def with_scan(x, weight, bias, target, chunks: int):
        init = (torch.zeros_like(weight), torch.zeros_like(bias), torch.zeros((), device=x.device))

        def combine(carry, xs):
            grad_w, grad_b, loss = carry
            (gx, gw, gb), chunk_loss = grad_and_loss(xs[0], weight, bias, xs[1])
            return (grad_w + gw, grad_b + gb, loss + chunk_loss), gx

        xs = (x.view(chunks, -1, x.shape[-1]), target.view(chunks, -1))
        (grad_w, grad_b, loss), grad_x = scan(combine, init, xs)
        return loss / chunks, grad_w / chunks, grad_b / chunks, grad_x.reshape(x.shape) / chunks

    fn = loop if impl == "loop" else with_scan
    return fn, lambda chunks: (x, weight, bias, target, chunks)


def rnn(impl: str, device: str, batch: int, inputs: int, hidden: int):
    """(function, make_args): a classic RNN over a sequence, loop or scan."""
    import torch
    from torch._higher_order_ops.scan import scan

    gen = torch.Generator().manual_seed(0)
    W = (torch.randn(inputs, hidden, generator=gen) * inputs**-0.5).to(device)
    H = (torch.randn(hidden, hidden, generator=gen) * hidden**-0.5).to(device)

    def combine_fn(prev_h, x):
        h = torch.tanh(x @ W + prev_h @ H)
        return h, h.clone()  # not `return h, h`: scan refuses outputs that alias each other

    def loop(h, xs):
        outs = []
        for x in xs:
            h, o = combine_fn(h, x)
            outs.append(o)
        return h, torch.stack(outs)

    def with_scan(h, xs):
        return scan(combine_fn, h, xs)

    def make_args(steps):
        g = torch.Generator().manual_seed(steps)
        return torch.zeros(batch, hidden, device=device), torch.randn(steps, batch, inputs, generator=g).to(device)

    return (loop if impl == "loop" else with_scan), make_args


WORKLOADS = {"chunked_ce": chunked_ce, "rnn": rnn}


# --------------------------------------------------------------------------- one point, in its own process


def run_point(workload: str, impl: str, trip: int, smallest: int, runs: int | None) -> dict:
    import torch

    import ipycompile
    from ipycompile.run.profile import _current_rss

    device = "cuda" if torch.cuda.is_available() else "cpu"
    fn, make_args = WORKLOADS[workload](impl, device, **SIZES[device][workload])
    param = PARAM[workload]
    quiet = dict(fullgraph=True, progress=False, record=False, warm_start=False)
    t0 = time.perf_counter()
    warm = ipycompile.sweep({impl: fn}, make_args=make_args, params={param: [smallest]}, runs=1, **quiet)
    warm_up_s = time.perf_counter() - t0
    rss_before = _current_rss()
    df = ipycompile.sweep({impl: fn}, make_args=make_args, params={param: [trip]}, runs=runs, compare_eager=True, **quiet).df
    row = df.iloc[0]
    report = row["report"]
    p = report.profile
    e = p.eager
    return {
        "workload": workload,
        "impl": impl,
        param: trip,
        "status": row["status"],
        "error": row["error"],
        "warm_up_status": warm["status"].iloc[0],
        "warm_up_s": warm_up_s,
        "compile_s": p.first_call.compile_s,
        "compile_phases_s": {ph.name: ph.seconds for ph in report.compile_time.phases} if report.compile_time else {},
        "run_median_s": p.steady.run_median_s,
        "run_iqr_s": p.steady.run_iqr_s,
        "runs": p.steady.runs,
        "peak_device_bytes_compile": p.first_call.peak_device_bytes,
        "peak_device_bytes_run": p.steady.peak_device_bytes,
        "peak_host_bytes_compile": p.first_call.peak_host_bytes,
        "peak_host_bytes_run": p.steady.peak_host_bytes,
        "host_bytes_before": rss_before,
        "host_growth_bytes_compile": (p.first_call.peak_host_bytes - rss_before)
        if p.first_call.peak_host_bytes and rss_before else None,
        "graph_ops": sum(g.op_count for g in report.graphs if g.stage == "dynamo"),
        "kernels": len(report.kernels),
        "caches": p.caches,
        "eager_run_median_s": e.run_median_s if e else None,
        "outputs_match_eager": e.check.match if e and e.check else None,
        "max_abs_diff_vs_eager": e.check.max_abs_diff if e and e.check else None,
    }


# --------------------------------------------------------------------------- the parent: points, table, checks


def _point_in_subprocess(workload, impl, trip, smallest, runs, timeout) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "point.json"
        cmd = [sys.executable, __file__, "--point", workload, impl, str(trip), "--smallest", str(smallest), "--json", str(out)]
        if runs:
            cmd += ["--runs", str(runs)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"workload": workload, "impl": impl, PARAM[workload]: trip, "status": "timeout",
                    "error": f"no result within {timeout} s"}
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            return {"workload": workload, "impl": impl, PARAM[workload]: trip, "status": "crashed",
                    "error": f"exit {proc.returncode}: " + " | ".join(tail)}
        row = json.loads(out.read_text())
        row["process_s"] = time.perf_counter() - t0
        return row


def _ratio(a, b):
    return a / b if a and b else None


def checks(rows: list[dict], trips: dict[str, list[int]], device: str) -> list[dict]:
    """The expected shape, as pass/fail lines with the figures behind them."""
    def get(workload, impl, trip):
        for r in rows:
            if r["workload"] == workload and r["impl"] == impl and r.get(PARAM[workload]) == trip and r["status"] == "ok":
                return r
        return None

    out = []
    for workload, ts in trips.items():
        lo, hi = ts[0], ts[-1]
        for impl, want, op in (("loop", 4.0, ">="), ("scan", 1.5, "<")):
            a, b = get(workload, impl, lo), get(workload, impl, hi)
            growth = _ratio(b and b["compile_s"], a and a["compile_s"])
            ok = growth is not None and (growth >= want if op == ">=" else growth < want)
            out.append({
                "check": f"{workload}: {impl} compile time grows {op} {want}x from {lo} to {hi} {PARAM[workload]}",
                "value": growth, "passed": ok,
            })
        loop_hi, scan_hi = get(workload, "loop", hi), get(workload, "scan", hi)
        if workload == "chunked_ce":
            key = "peak_device_bytes_run" if device == "cuda" else "host_growth_bytes_compile"
            what = "peak device memory (steady state)" if device == "cuda" else "host memory growth while compiling"
            r = _ratio(scan_hi and scan_hi.get(key), loop_hi and loop_hi.get(key))
            out.append({"check": f"{workload}: scan's {what} at {hi} chunks <= 0.5x the loop's", "value": r,
                        "passed": r is not None and r <= 0.5})
        for t in ts:
            lp, sc = get(workload, "loop", t), get(workload, "scan", t)
            r = _ratio(sc and sc["run_median_s"], lp and lp["run_median_s"])
            if r is not None and r > 1:
                out.append({
                    "check": f"{workload} at {t} {PARAM[workload]}: scan runs {r:.2f}x slower than the loop "
                    f"({lp['run_median_s'] * 1e3:.3g} ms vs {sc['run_median_s'] * 1e3:.3g} ms) while compiling "
                    f"{lp['compile_s']:.1f} s vs {sc['compile_s']:.1f} s",
                    "value": r, "passed": None,
                })
    return out


def _mib(b):
    return f"{b / 2**20:.0f}" if b else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="two trip counts per workload, for a smoke test")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), action="append", help="only these (default: both)")
    ap.add_argument("--trips", default=None, help="comma-separated trip counts, instead of the defaults (e.g. 2,32)")
    ap.add_argument("--runs", type=int, default=None, help="timed calls per point (default: auto-ranged)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds allowed per point (default 900)")
    ap.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/scan_vs_loop-<device>.json)")
    ap.add_argument("--point", nargs=3, metavar=("WORKLOAD", "IMPL", "TRIP"), help=argparse.SUPPRESS)
    ap.add_argument("--smallest", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.point:
        workload, impl, trip = args.point
        row = run_point(workload, impl, int(trip), args.smallest or int(trip), args.runs)
        Path(args.json).write_text(json.dumps(row, default=str))
        return 0

    import torch

    from ipycompile.run.profile import device_name

    device = "cuda" if torch.cuda.is_available() else "cpu"
    trips = {w: (QUICK_TRIPS if args.quick else TRIPS)[w] for w in (args.workload or list(TRIPS))}
    if args.trips:
        trips = {w: sorted(int(t) for t in args.trips.split(",")) for w in trips}
    rows = []
    started = time.perf_counter()
    for workload, ts in trips.items():
        for trip in ts:
            for impl in ("loop", "scan"):
                print(f"[{time.perf_counter() - started:6.0f} s] {workload} {impl} {PARAM[workload]}={trip} ...", flush=True)
                rows.append(_point_in_subprocess(workload, impl, trip, ts[0], args.runs, args.timeout))
                if rows[-1]["status"] != "ok":
                    print(f"    {rows[-1]['status']}: {rows[-1]['error']}", flush=True)
    dev = device_name()
    print(f"\nscan vs unrolled loop on {dev}, torch {torch.__version__} (one process per point, fresh caches)\n")
    head = (f"{'workload':<11} {'trip':>5} {'impl':<5} {'compile s':>9} {'run ms':>9} {'IQR ms':>7} {'vs eager':>8} "
            f"{'ops':>5} {'dev MiB':>8} {'host MiB':>8} {'host +MiB':>9} {'ok':>3}")
    print(head)
    print("-" * len(head))
    for r in rows:
        trip = r.get(PARAM[r["workload"]])
        if r["status"] != "ok":
            print(f"{r['workload']:<11} {trip:>5} {r['impl']:<5} {r['status']}: {r['error'][:80]}")
            continue
        dev_peak = max(filter(None, [r["peak_device_bytes_compile"], r["peak_device_bytes_run"]]), default=None)
        vs = _ratio(r["eager_run_median_s"], r["run_median_s"])
        print(
            f"{r['workload']:<11} {trip:>5} {r['impl']:<5} {r['compile_s']:>9.2f} {r['run_median_s'] * 1e3:>9.3f} "
            f"{(r['run_iqr_s'] or 0) * 1e3:>7.3f} {f'{vs:.2f}x' if vs else '-':>8} {r['graph_ops']:>5} "
            f"{_mib(dev_peak):>8} {_mib(r['peak_host_bytes_compile']):>8} {_mib(r['host_growth_bytes_compile']):>9} "
            f"{'yes' if r['outputs_match_eager'] else 'NO':>3}"
        )
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"scan_vs_loop-{slug}.json"
    if (args.workload or args.trips) and out.exists():  # keep earlier results of other points on this device
        earlier = json.loads(out.read_text())
        if earlier.get("device") == dev and earlier.get("torch") == torch.__version__:
            done = {(r["workload"], r.get(PARAM[r["workload"]])) for r in rows}
            kept = [r for r in earlier["results"] if (r["workload"], r.get(PARAM[r["workload"]])) not in done]
            rows = sorted(kept + rows, key=lambda r: (list(TRIPS).index(r["workload"]), r.get(PARAM[r["workload"]]), r["impl"]))
            trips = {w: sorted(set(earlier["trips"].get(w, [])) | set(trips.get(w, []))) for w in TRIPS
                     if w in earlier["trips"] or w in trips}
            print(f"(kept {len(kept)} earlier results of other points from {out})")
    results = checks(rows, trips, device)
    print("\nexpected shape:")
    for c in results:
        mark = {True: "PASS", False: "FAIL", None: "NOTE"}[c["passed"]]
        value = f" ({c['value']:.2f}x)" if isinstance(c["value"], float) and c["passed"] is not None else ""
        print(f"  {mark} {c['check']}{value}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "scan_vs_loop",
        "device": dev,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "sizes": SIZES[device],
        "trips": trips,
        "quick": args.quick,
        "wall_s": time.perf_counter() - started,  # of this invocation
        "results": rows,
        "checks": results,
    }, indent=1, default=str))
    print(f"\nwrote {out}")
    return 0 if all(c["passed"] is not False for c in results) else 1


if __name__ == "__main__":
    sys.exit(main())
