"""Do ipycompile's run times agree with independent instruments?

In ONE process, on the SAME compiled callable (the cell function ``run_cell``
compiled and returns as ``run.fn``), for each workload and mode:

* ipycompile's figures, as the report shows them: run time (``run_median_s``),
  device time (``device_median_s``, CUDA) and latency (``latency_median_s``);
* ``torch.utils.benchmark.Timer(...).blocked_autorange(min_run_time=1)``: median;
* ``triton.testing.do_bench(fn, return_mode="median")`` (CUDA): median.

``ratio_to_autorange`` = run time / blocked_autorange; ``ratio_to_do_bench`` =
device time / do_bench. Targets: every workload within 10 % of blocked_autorange
(run time, CPU and GPU) and of do_bench (device time, GPU).

Workloads run from launch-bound (tens of microseconds) to compute-bound (several
milliseconds): a tiny elementwise function, an fp16 MLP (1024-4096-1024, batch
512), a 4096^2 bf16 matmul, a transformer block, a large bf16 MLP, and a
training step with a graph break (``loss.item()``) on a ResNet-18 (timm, random
weights; a small conv net where timm is missing) -- in the default mode, and
some in reduce-overhead and max-autotune (CUDA only). CPU sizes are small, and the
fp16 and bf16 workloads run in float32 there (the names stay). On a shared CPU,
``--threads 1`` keeps OpenMP barriers from stalling on descheduled threads
(``blocked_autorange`` is given the same thread count).

    python benchmarks/timing_truth.py [--quick] [--only NAME[,NAME]] [--out PATH]

Prints the table and writes JSON to ``benchmarks/results/timing_truth-<device>.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.utils.benchmark
from torch import nn

import ipycompile
from ipycompile.run.profile import device_name, time_blocks, time_device

HERE = Path(__file__).parent
TARGET = 0.10


def _resnet(cuda: bool) -> nn.Module:
    try:
        import timm

        return timm.create_model("resnet18", pretrained=False, num_classes=10)
    except ImportError:
        def block(c_in, c_out, stride):
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())

        return nn.Sequential(block(3, 16, 1), block(16, 32, 2), block(32, 64, 2), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(64, 10))


def workloads(cuda: bool) -> list[dict]:
    """Each: name, kind, cell source, namespace, modes."""
    dev = "cuda" if cuda else "cpu"
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dev, dtype)

    half = torch.float16 if cuda else torch.float32
    bf16 = torch.bfloat16 if cuda else torch.float32
    big = dict(d=8192, b=8192) if cuda else dict(d=512, b=256)
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(dev, half).eval()
    mlp_big = nn.Sequential(nn.Linear(big["d"], big["d"]), nn.GELU(), nn.Linear(big["d"], big["d"])).to(dev, bf16).eval()
    block = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True,
                                       dropout=0.0).to(dev).eval()
    net = _resnet(cuda).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    n_img, side = (32, 224) if cuda else (4, 64)
    step = ("opt.zero_grad(set_to_none=True)\n"
            "loss = nn.functional.cross_entropy(net(img), labels)\n"
            "last_loss = loss.item()  # logging the loss: a graph break\n"
            "loss.backward()\n"
            "opt.step()")
    gpu_modes = ["default", "reduce-overhead", "max-autotune"] if cuda else ["default"]
    items = [
        dict(name="tiny_elementwise", kind="inference", cell="(x * 2 + 1).sin()", ns={"x": rnd(1024)},
             modes=gpu_modes if cuda else ["default"]),
        dict(name="mlp_fp16_1024_4096", kind="inference", cell="mlp(x)",
             ns={"mlp": mlp, "x": rnd(512, 1024, dtype=half)}, modes=gpu_modes),
        dict(name="matmul_bf16_4096", kind="inference", cell="a @ b",
             ns={"a": rnd(4096, 4096, dtype=bf16) if cuda else rnd(512, 512), "b": rnd(4096, 4096, dtype=bf16) if cuda else rnd(512, 512)},
             modes=["default"]),
        dict(name="transformer_block", kind="inference", cell="block(x)",
             ns={"block": block, "x": rnd(16, 256, 512) if cuda else rnd(2, 64, 512)}, modes=["default"]),
        dict(name=f"mlp_bf16_{big['d']}", kind="inference", cell="mlp_big(x)",
             ns={"mlp_big": mlp_big, "x": rnd(big["b"], big["d"], dtype=bf16)}, modes=["default"]),
        dict(name="resnet18_train_step_graph_break", kind="training", cell=step,
             ns={"net": net, "opt": opt, "nn": nn, "img": rnd(n_img, 3, side, side),
                 "labels": torch.randint(0, 10, (n_img,), generator=g).to(dev)}, modes=["default"]),
    ]
    return items


def measure_one(w: dict, mode: str, cuda: bool) -> dict:
    ns = {"torch": torch, **w["ns"]}
    grad = w["kind"] == "training"
    t0 = time.perf_counter()
    with torch.set_grad_enabled(grad):
        run = ipycompile.run_cell(w["cell"], ns, mode=mode, record=False)
        p = run.report.profile
        fn = run.fn
        autorange = torch.utils.benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(min_run_time=1.0)
        row = {
            "workload": w["name"], "kind": w["kind"], "mode": mode,
            "compile_s": p.compile_s, "compile_wall_s": p.compile_wall_s,
            "run_time_s": p.run_median_s, "run_iqr_s": p.run_iqr_s, "run_blocks": len(p.run_times_s),
            "run_block_calls": p.run_block_calls, "run_dropped_blocks": p.run_dropped_blocks,
            "device_time_s": p.device_median_s, "latency_s": p.latency_median_s,
            "autorange_median_s": autorange.median, "autorange_block_calls": autorange.number_per_run,
            "autorange_blocks": len(autorange.raw_times),
            "cudagraphs": [f"{c.compile_id}: {c.status} {c.reason}".strip() for c in run.report.cudagraphs],
            "recorded_in_timing": p.recorded_in_timing,
            "graph_breaks": run.report.graph_break_count,
        }
        row["ratio_to_autorange"] = p.run_median_s / autorange.median
        if cuda:
            from triton.testing import do_bench

            row["do_bench_median_s"] = do_bench(fn, return_mode="median") / 1e3
            row["ratio_to_do_bench"] = p.device_median_s / row["do_bench_median_s"] if p.device_median_s else None
        # the same instruments once more, back to back: is the gap the method or drift?
        again = time_blocks(fn)
        row["run_time_again_s"] = again.median_s
        row["autorange_again_s"] = torch.utils.benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
            min_run_time=1.0).median
        if cuda:
            row["device_time_again_s"] = statistics.median(time_device(fn))
    row["wall_s"] = time.perf_counter() - t0
    row["within_target"] = abs(row["ratio_to_autorange"] - 1) <= TARGET and (
        not cuda or (row.get("ratio_to_do_bench") is not None and abs(row["ratio_to_do_bench"] - 1) <= TARGET))
    return row


def _us(s):
    return f"{s * 1e6:10.1f}" if isinstance(s, (int, float)) else f"{'-':>10}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="default mode only")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(4, device="cuda" if cuda else "cpu")}, runs=1, record=False)
    rows = []
    for w in workloads(cuda):
        if args.only and w["name"] not in args.only.split(","):
            continue
        for mode in (["default"] if args.quick else w["modes"]):
            try:
                row = measure_one(w, mode, cuda)
            except Exception as exc:  # a workload that fails is reported, not hidden
                row = {"workload": w["name"], "mode": mode, "error": f"{type(exc).__name__}: {exc}"[:500]}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if not isinstance(v, list)}, default=str), flush=True)

    dev = device_name()
    print(f"\nrun time vs blocked_autorange, device time vs do_bench, on {dev}, torch {torch.__version__} (us)")
    head = (f"{'workload':<34} {'mode':<16} {'run time':>10} {'autorange':>10} {'ratio':>6} {'device':>10} "
            f"{'do_bench':>10} {'ratio':>6} {'latency':>10}")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['workload']:<34} {r['mode']:<16} ERROR {r['error'][:80]}")
            continue
        rd = r.get("ratio_to_do_bench")
        print(f"{r['workload']:<34} {r['mode']:<16} {_us(r['run_time_s'])} {_us(r['autorange_median_s'])} "
              f"{r['ratio_to_autorange']:6.3f} {_us(r.get('device_time_s'))} {_us(r.get('do_bench_median_s'))} "
              f"{'-' if rd is None else f'{rd:6.3f}':>6} {_us(r.get('latency_s'))}")
    ok = [r for r in rows if "error" not in r]
    missed = [f"{r['workload']}/{r['mode']}" for r in ok if not r["within_target"]]
    print(f"\ntarget: within {TARGET:.0%} of blocked_autorange (run time)" + (" and do_bench (device time)" if cuda else "")
          + f": {len(ok) - len(missed)}/{len(ok)} met" + (f"; missed: {', '.join(missed)}" if missed else ""))
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"timing_truth-{slug}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "timing_truth", "device": dev, "torch": torch.__version__,
                               "python": platform.python_version(), "threads": torch.get_num_threads(),
                               "target": TARGET, "results": rows}, indent=1, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
