"""torch.compile modes through ipycompile.run_cell: compile cost, run time, memory, vs eager.

One small MLP and one transformer block, each compiled with fresh caches under
every mode the device supports (CUDA: default, reduce-overhead,
max-autotune-no-cudagraphs; CPU: default), with ``--compare-eager`` semantics.
Prints a table and writes JSON to ``benchmarks/results/modes-<device>.json``.

    python benchmarks/modes.py [--runs 100]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import torch
from torch import nn

import ipycompile
from ipycompile.run.profile import device_name
from ipycompile.report.text import fmt_bytes, fmt_seconds

HERE = Path(__file__).parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    modes = ["default", "reduce-overhead", "max-autotune-no-cudagraphs"] if cuda else ["default"]
    torch.manual_seed(0)
    dtype = torch.float16 if cuda else torch.float32
    models = {
        "mlp": (nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(device, dtype).eval(), torch.randn(512, 1024, device=device, dtype=dtype)),
        "transformer_block": (
            nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.0).to(device, dtype).eval(),
            torch.randn(16, 128, 512, device=device, dtype=dtype),
        ),
    }
    rows = []
    with torch.no_grad():
        for name, (model, x) in models.items():
            for mode in modes:
                ns = {"model": model, "x": x}
                run = ipycompile.run_cell("model(x)", ns, mode=mode, fresh=True, compare_eager=True, runs=args.runs, label=f"{name}/{mode}")
                p = run.report.profile
                rows.append(
                    {
                        "model": name,
                        "mode": mode,
                        "compile_s": p.first_call.compile_s,
                        "one_time_s": p.first_call.one_time_s,
                        "autotuning_s": run.report.compile_time.phase("Autotuning"),
                        "run_median_s": p.steady.run_median_s,
                        "run_iqr_s": p.steady.run_iqr_s,
                        "eager_run_median_s": p.eager.run_median_s,
                        "speedup": p.eager.speedup,
                        "break_even_calls": p.eager.break_even_calls,
                        "outputs_match": p.eager.check.match,
                        "max_abs_diff": p.eager.check.max_abs_diff,
                        "peak_device_bytes_compile": p.first_call.peak_device_bytes,
                        "peak_device_bytes_run": p.steady.peak_device_bytes,
                        "eager_peak_device_bytes": p.eager.peak_device_bytes,
                        "peak_host_bytes_compile": p.first_call.peak_host_bytes,
                        "kernels": [(k.name, k.backend, k.kind) for k in run.report.kernels],
                        "graph_breaks": run.report.graph_break_count,
                        "caches": p.caches,
                    }
                )
                print(run.report.summary(), "\n", flush=True)
    dev = device_name()
    print(f"modes on {dev}, torch {torch.__version__} (fresh caches, {args.runs} timed calls)\n")
    print(f"{'model':<18} {'mode':<27} {'compile':>9} {'autotune':>9} {'run':>10} {'eager':>10} {'speedup':>8} {'break-even':>10} {'dev peak':>10}")
    for r in rows:
        be = str(r["break_even_calls"]) if r["break_even_calls"] is not None else "never"
        print(
            f"{r['model']:<18} {r['mode']:<27} {fmt_seconds(r['compile_s']):>9} {fmt_seconds(r['autotuning_s']):>9} "
            f"{fmt_seconds(r['run_median_s']):>10} {fmt_seconds(r['eager_run_median_s']):>10} {r['speedup'] or 0:>7.2f}x {be:>10} "
            f"{fmt_bytes(r['peak_device_bytes_run']):>10}"
        )
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"modes-{slug}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "modes", "device": dev, "torch": torch.__version__, "runs": args.runs, "results": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
