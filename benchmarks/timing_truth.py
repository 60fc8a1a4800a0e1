"""Do ipycompile's run times agree with independent instruments?

In ONE process, on the SAME compiled callable (the cell function ``run_cell``
compiled and returns as ``run.fn``), for each workload and mode, every instrument
once per round, in interleaved rounds whose order reverses each round (ABBA), so
that drift of the shared machine's clocks and load hits each pair alike:

* ipycompile's run time and device time, measured by the very functions the
  report's figures come from (``time_blocks``; ``time_device``, do_bench's method);
* ``torch.utils.benchmark.Timer(...).blocked_autorange(min_run_time=1)``: median;
* ``triton.testing.do_bench(fn, return_mode="median")`` (CUDA): median.

``ratio_to_autorange`` = the median over rounds of run time / blocked_autorange in
that round; ``ratio_to_do_bench`` likewise for device time / do_bench. The report's
own figures (measured once, inside ``run_cell``) are kept beside them
(``report_ratio_to_autorange``), and each instrument's spread over the rounds shows
how far the instruments themselves move. Targets: every workload within 5 % of
blocked_autorange (run time, CPU and GPU) and of do_bench (device time, GPU).
``--diagnose`` adds two variants of the run time (blocks as large as blocked_autorange's; the
garbage collector off, as ``timeit`` has it) to tell a method's gap from noise.

Workloads run from launch-bound (tens of microseconds) to compute-bound (milliseconds):
a tiny elementwise function (default and reduce-overhead), an fp16 MLP (1024-4096-1024,
batch 512) and a 4-layer transformers Llama (bf16, random weights, 4x128 tokens) in the
default mode and under max-autotune, and a training step with a graph break
(``loss.item()``) on a ResNet-18 (timm's, random weights; transformers'
``ResNetForImageClassification`` with ResNet-18's configuration where timm is missing).
On the CPU the sizes are small (MLP batch 64, Llama 1x32 tokens, 2 images of 32x32), every
workload runs in float32 (the names stay) and in the default mode only (max-autotune's
templates and CUDA graphs are GPU features; reduce-overhead on the CPU is the default mode). On a shared CPU,
``--threads 1`` keeps OpenMP barriers from stalling on descheduled threads
(``blocked_autorange`` is given the same thread count); each row records how many cores
other processes used while it was measured (``other_processes_cores``, from /proc), so a
row measured on a busy machine says so.

    python benchmarks/timing_truth.py [--quick] [--rounds 5] [--diagnose] [--only NAME[,NAME]] [--out PATH] [--append]

Prints the table and writes JSON to ``benchmarks/results/timing_truth-<device>.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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
from ipycompile.run.contention import Contention
from ipycompile.run.profile import device_name, synchronize, time_blocks, time_device

HERE = Path(__file__).parent
TARGET = 0.05
PROCESS = f"{platform.node()}:{os.getpid()}:{time.strftime('%Y-%m-%dT%H:%M:%S')}"  # which run made a row


def _resnet18(cuda: bool) -> nn.Module:
    """ResNet-18 with random weights: timm's where it is installed (the GPU machine), else
    transformers' ``ResNetForImageClassification`` with ResNet-18's configuration (basic
    blocks, depths 2-2-2-2, widths 64-512)."""
    try:
        import timm

        return timm.create_model("resnet18", pretrained=False, num_classes=10)
    except ImportError:
        from transformers import ResNetConfig, ResNetForImageClassification

        cfg = ResNetConfig(layer_type="basic", depths=[2, 2, 2, 2], hidden_sizes=[64, 128, 256, 512],
                           embedding_size=64, num_labels=10)
        return _Logits(ResNetForImageClassification(cfg))


class _Logits(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(pixel_values=x).logits


def _llama(dev: str, dtype) -> nn.Module:
    """A 4-layer Llama-style model (transformers' ``LlamaForCausalLM``, random weights)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=256)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(dev, dtype).eval()


def workloads(cuda: bool) -> list[dict]:
    """Each: name, kind, cell source, namespace, modes."""
    dev = "cuda" if cuda else "cpu"
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dev, dtype)

    half = torch.float16 if cuda else torch.float32
    bf16 = torch.bfloat16 if cuda else torch.float32
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(dev, half).eval()
    net = _resnet18(cuda).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    n_img, side = (32, 224) if cuda else (2, 32)
    step = ("opt.zero_grad(set_to_none=True)\n"
            "loss = nn.functional.cross_entropy(net(img), labels)\n"
            "last_loss = loss.item()  # logging the loss: a graph break\n"
            "loss.backward()\n"
            "opt.step()")
    tuned = ["default", "max-autotune"] if cuda else ["default"]
    tokens = torch.randint(0, 1024, (4, 128) if cuda else (1, 32), generator=g).to(dev)
    return [
        dict(name="tiny_elementwise", kind="inference", cell="(x * 2 + 1).sin()", ns={"x": rnd(1024)},
             modes=["default", "reduce-overhead"] if cuda else ["default"]),
        dict(name="mlp_fp16_1024_4096", kind="inference", cell="mlp(x)",
             ns={"mlp": mlp, "x": rnd(512 if cuda else 64, 1024, dtype=half)}, modes=tuned),
        dict(name="llama_4layer_bf16", kind="inference", cell="llama(tokens).logits",
             ns={"llama": _llama(dev, bf16), "tokens": tokens}, modes=tuned),
        dict(name="resnet18_train_step_graph_break", kind="training", cell=step,
             ns={"net": net, "opt": opt, "nn": nn, "img": rnd(n_img, 3, side, side),
                 "labels": torch.randint(0, 10, (n_img,), generator=g).to(dev)}, modes=["default"]),
    ]


def _autorange(fn, min_run_time: float = 1.0) -> float:
    timer = torch.utils.benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def _blocks_of(fn, calls: int, blocks: int = 5) -> float:
    """Diagnostic: blocks of ``calls`` calls (blocked_autorange's own block size), synchronised
    as time_blocks does; the median per call."""
    times = []
    for _ in range(blocks):
        synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def _gc_off(measure):
    def run():
        was = gc.isenabled()
        gc.disable()
        try:
            return measure()
        finally:
            if was:
                gc.enable()
    return run


def instruments(fn, cuda: bool, diagnose: bool) -> dict:
    """name -> a call returning seconds per call. ipycompile's run time and device time are
    the very functions ``run_cell`` measures with (``time_blocks``; ``time_device`` with
    its target), so every round re-measures what the report shows."""
    inst = {
        "run_time": lambda: time_blocks(fn).median_s,
        "autorange": lambda: _autorange(fn),
    }
    if cuda:
        from triton.testing import do_bench

        inst["device_time"] = lambda: statistics.median(time_device(fn, target_s=0.1))
        inst["do_bench"] = lambda: do_bench(fn, return_mode="median") / 1e3
    if diagnose:  # is a gap the block size, or Python's garbage collector (timeit turns it off)?
        inst["run_time_gc_off"] = _gc_off(lambda: time_blocks(fn).median_s)
        inst["autorange_blocks"] = lambda: _blocks_of(fn, _autorange_calls(fn))
    return inst


_CALLS: dict = {}


def _autorange_calls(fn) -> int:
    if id(fn) not in _CALLS:
        timer = torch.utils.benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
        _CALLS[id(fn)] = timer.blocked_autorange(min_run_time=0.2).number_per_run
    return _CALLS[id(fn)]


def interleaved(inst: dict, rounds: int) -> dict[str, list[float]]:
    """Every instrument once per round; the order reverses each round (ABBA), so that drift
    in clocks and load between rounds hits each pair alike."""
    seen: dict[str, list[float]] = {k: [] for k in inst}
    names = list(inst)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            seen[name].append(inst[name]())
    return seen


def _paired(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b)]


def _spread(xs: list[float]) -> float:
    return (max(xs) - min(xs)) / statistics.median(xs)


def measure_one(w: dict, mode: str, cuda: bool, rounds: int, diagnose: bool) -> dict:
    ns = {"torch": torch, **w["ns"]}
    grad = w["kind"] == "training"
    t0 = time.perf_counter()
    with torch.set_grad_enabled(grad):
        run = ipycompile.run_cell(w["cell"], ns, mode=mode, record=False)
        p = run.report.profile
        fn = run.fn
        with Contention() as contention:  # how busy the rest of the machine was meanwhile
            seen = interleaved(instruments(fn, cuda, diagnose), rounds)
    run_ratios = _paired(seen["run_time"], seen["autorange"])
    row = {
        "workload": w["name"], "kind": w["kind"], "mode": mode, "rounds": rounds,
        "compile_s": p.first_call.compile_s, "compile_wall_s": p.first_call.compile_wall_s,
        # the report's own figures (measured once, by run_cell)
        "report_run_time_s": p.steady.run_median_s, "report_run_iqr_s": p.steady.run_iqr_s,
        "report_device_time_s": p.steady.device_median_s, "report_latency_s": p.steady.latency_median_s,
        "run_blocks": len(p.steady.run_times_s), "run_block_calls": p.steady.run_block_calls,
        "run_dropped_blocks": p.steady.run_dropped_blocks,
        # each instrument once per round, interleaved
        "rounds_s": seen,
        "run_time_s": statistics.median(seen["run_time"]),
        "autorange_median_s": statistics.median(seen["autorange"]),
        "spread": {k: _spread(v) for k, v in seen.items()},
        "round_ratios_to_autorange": run_ratios,
        "ratio_to_autorange": statistics.median(run_ratios),
        "report_ratio_to_autorange": p.steady.run_median_s / statistics.median(seen["autorange"]),
        "cudagraphs": [f"{c.compile_id}: {c.status} {c.reason}".strip() for c in run.report.cudagraphs],
        "recorded_in_timing": p.steady.recorded_in_timing,
        "graph_breaks": run.report.graph_break_count,
        "other_processes_cores": contention.others_cores, "cores": contention.cores,
        "report_noise": list(p.noise),
    }
    if cuda:
        dev_ratios = _paired(seen["device_time"], seen["do_bench"])
        row.update(device_time_s=statistics.median(seen["device_time"]),
                   do_bench_median_s=statistics.median(seen["do_bench"]),
                   round_ratios_to_do_bench=dev_ratios, ratio_to_do_bench=statistics.median(dev_ratios),
                   report_ratio_to_do_bench=(p.steady.device_median_s / statistics.median(seen["do_bench"])
                                             if p.steady.device_median_s else None),
                   # how much of a call the device was busy: host-bound calls are well under 1
                   device_share_of_run_time=statistics.median(seen["device_time"]) / row["run_time_s"],
                   # the report's GPU busy time per call (kernels from the profiler) and its verdict
                   busy_s=p.steady.busy.busy_s if p.steady.busy else None, busy_share=p.steady.busy.share if p.steady.busy else None,
                   # the run time the share is judged against: plain blocks timed between the profiled ones
                   busy_run_s=p.steady.busy.run_s if p.steady.busy else None,
                   busy_run_times_s=list(p.steady.busy.run_times_s) if p.steady.busy else None,
                   verdict=p.steady.busy.verdict if p.steady.busy else "", advice=p.steady.busy.advice if p.steady.busy else "",
                   kernels_per_call=p.steady.busy.kernels_per_call if p.steady.busy else None)
    if diagnose:
        for k in ("run_time_gc_off", "autorange_blocks"):
            row[f"ratio_{k}_to_autorange"] = statistics.median(_paired(seen[k], seen["autorange"]))
    row["wall_s"] = time.perf_counter() - t0
    row["within_target"] = abs(row["ratio_to_autorange"] - 1) <= TARGET and (
        not cuda or abs(row["ratio_to_do_bench"] - 1) <= TARGET)
    return row


def _us(s, width: int = 10):
    return f"{s * 1e6:{width}.1f}" if isinstance(s, (int, float)) else f"{'-':>{width}}"


def _write(out: Path, dev: str, rows: list, args) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "timing_truth", "device": dev, "torch": torch.__version__,
                               "python": platform.python_version(), "threads": torch.get_num_threads(),
                               "rounds": args.rounds, "target": TARGET, "results": rows}, indent=1, default=str))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="default mode only")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every instrument (default 5)")
    ap.add_argument("--diagnose", action="store_true",
                    help="also time blocks of blocked_autorange's size, and blocks with the garbage collector off")
    ap.add_argument("--out", default=None)
    ap.add_argument("--append", action="store_true",
                    help="keep the rows already in --out (same device) and replace only the workloads measured now: "
                         "a device's rows measured over several processes (each row names its process)")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(4, device="cuda" if cuda else "cpu")}, runs=1, record=False)
    dev = device_name()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"timing_truth-{slug}.json"
    rows = []
    if args.append and out.exists():
        old = json.loads(out.read_text())
        if old.get("device") != dev:
            print(f"--append: {out} holds rows of {old.get('device')!r}, not {dev!r}", file=sys.stderr)
            return 2
        rows = list(old.get("results", []))
    for w in workloads(cuda):
        if args.only and w["name"] not in args.only.split(","):
            continue
        for mode in (["default"] if args.quick else w["modes"]):
            try:
                row = measure_one(w, mode, cuda, args.rounds, args.diagnose)
            except Exception as exc:  # a workload that fails is reported, not hidden
                row = {"workload": w["name"], "mode": mode, "error": f"{type(exc).__name__}: {exc}"[:500]}
            row["process"] = PROCESS
            rows = [r for r in rows if (r.get("workload"), r.get("mode")) != (w["name"], mode)] + [row]
            _write(out, dev, rows, args)  # after every workload: a run stopped by a time limit keeps what it measured
            print(json.dumps({k: v for k, v in row.items() if not isinstance(v, (list, dict))}, default=str), flush=True)

    dev = device_name()
    print(f"\nrun time vs blocked_autorange, device time vs do_bench, on {dev}, torch {torch.__version__} (us;"
          f" medians of {args.rounds} interleaved rounds; ratio: median of the rounds' ratios; spread: (max-min)/median"
          " over rounds)")
    head = (f"{'workload':<32} {'mode':<15} {'run time':>9} {'autorange':>9} {'ratio':>6} {'report':>6} {'spread':>11} "
            f"{'device':>9} {'do_bench':>9} {'ratio':>6} {'spread':>11} {'dev/run':>7} {'busy':>8} {'share':>5} verdict")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['workload']:<32} {r['mode']:<15} ERROR {r['error'][:80]}")
            continue
        sp = r["spread"]
        line = (f"{r['workload']:<32} {r['mode']:<15} {_us(r['run_time_s'], 9)} {_us(r['autorange_median_s'], 9)} "
                f"{r['ratio_to_autorange']:6.3f} {r['report_ratio_to_autorange']:6.3f} "
                f"{sp['run_time']:5.0%}/{sp['autorange']:<5.0%}")
        if cuda:
            line += (f" {_us(r['device_time_s'], 9)} {_us(r['do_bench_median_s'], 9)} {r['ratio_to_do_bench']:6.3f} "
                     f"{sp['device_time']:5.0%}/{sp['do_bench']:<5.0%} {r['device_share_of_run_time']:7.2f} "
                     f"{_us(r['busy_s'], 8)} {(r['busy_share'] or 0):5.0%} {r['verdict']}")
        others = r.get("other_processes_cores")
        print(line + (f"  others {others:.1f}/{r['cores']} cores" if others is not None else ""))
    if args.diagnose:
        print("\ndiagnostics (median of the rounds' ratios to blocked_autorange): time_blocks with the garbage collector "
              "off, blocks of blocked_autorange's size")
        for r in rows:
            if "error" not in r and "ratio_run_time_gc_off_to_autorange" in r:  # rows of this run (--append keeps others)
                print(f"{r['workload']:<32} {r['mode']:<15} gc off {r['ratio_run_time_gc_off_to_autorange']:6.3f}  "
                      f"autorange-size blocks {r['ratio_autorange_blocks_to_autorange']:6.3f}")
    ok = [r for r in rows if "error" not in r]
    missed = [f"{r['workload']}/{r['mode']}" for r in ok if not r["within_target"]]
    if cuda:
        print("\ndev/run: device time (do_bench's method) over run time; busy: the GPU's busy time per call (the calls'"
              " kernels from the profiler, in the report), share: busy over the run time of plain blocks of the same calls"
              " timed between the profiled ones")
        for r in rows:
            if r.get("advice"):
                print(f"{r['workload']}/{r['mode']}: {r['advice']}")
    print(f"\ntarget: within {TARGET:.0%} of blocked_autorange (run time)" + (" and do_bench (device time)" if cuda else "")
          + f": {len(ok) - len(missed)}/{len(ok)} met" + (f"; missed: {', '.join(missed)}" if missed else ""))
    _write(out, dev, rows, args)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
