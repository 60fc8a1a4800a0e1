"""Run tutorials and a training step on the GPU; keep their reports (JSON and HTML).

In one process (one Inductor start-up): tutorials 01, 04 and 07 through
``tools/run_cells.py`` (an in-process IPython shell: the GPU machine has no Jupyter
kernel), then a ``%%compile`` training step (ResNet-18 from timm, random weights,
SGD, the loss logged with ``loss.item()``: a graph break) with ``--memory-timeline``,
``--profile-kernels`` and ``--compare-eager``. Every report the runs add to
``ipycompile.history()`` is written to ``benchmarks/results/gpu/`` as
``<notebook>-<nn>-<label>.json`` and ``.html`` (sweeps: the first and the last point
of each label); ``index.json`` lists them with the device, the versions (torch,
Triton, CUDA, Python) and each notebook's wall time and status.

The training step is also timed by independent instruments on the same compiled
cell function (``torch.utils.benchmark`` ``blocked_autorange``, ``triton.testing.do_bench``),
and by the per-call CUDA-event timer ipycompile used before (a synchronise, an event,
the call, an event, a synchronise, per call), so the report's figure can be checked.

    python benchmarks/gpu_report.py [--notebooks 01,04,07] [--no-training-step] [--out DIR]
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
from typing import Optional

HERE = Path(__file__).parent
ROOT = HERE.parent
NOTEBOOKS = {"01": "01_quickstart.ipynb", "04": "04_scan_vs_loop.ipynb", "07": "07_max_autotune.ipynb"}

TRAINING_SETUP = """
import torch, torch.nn as nn
torch.set_grad_enabled(True)  # a tutorial before may have turned it off
try:
    import timm
    net = timm.create_model("resnet18", pretrained=False, num_classes=10)
except ImportError:
    net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(16, 10))
dev = "cuda" if torch.cuda.is_available() else "cpu"
n_img, side = (32, 224) if dev == "cuda" else (4, 64)
net = net.to(dev)
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
img = torch.randn(n_img, 3, side, side, device=dev)
labels = torch.randint(0, 10, (n_img,), device=dev)
"""
TRAINING_CELL = """%%compile --profile-kernels --compare-eager {TIMELINE} --label training-step -o rep_train
opt.zero_grad(set_to_none=True)
loss = nn.functional.cross_entropy(net(img), labels)
last_loss = loss.item()  # logging the loss: a graph break
loss.backward()
opt.step()"""


def _versions() -> dict:
    import torch

    out = {"torch": torch.__version__, "python": platform.python_version(), "cuda": torch.version.cuda}
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = None
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "run"


def _save(rows, prefix: str, out: Path, done: Optional[set] = None) -> list[dict]:
    """Write the reports of history rows (sweeps: first and last point per label); rows whose
    run number is in ``done`` were written before and are skipped (and ``done`` is updated)."""
    done = set() if done is None else done
    keep = []
    by_sweep: dict[tuple, list] = {}
    for row in rows:
        sweep = row.get("sweep")
        if sweep is None or sweep != sweep:  # not a sweep point (NaN in the DataFrame)
            keep.append(row)
        else:
            by_sweep.setdefault((sweep, row.get("label")), []).append(row)
    for points in by_sweep.values():
        keep.extend([points[0]] if len(points) == 1 else [points[0], points[-1]])
    keep.sort(key=lambda r: r["run"])
    saved = []
    for row in keep:
        if row["run"] in done:
            continue
        done.add(row["run"])
        r = row["report"]
        p = r.profile
        name = f"{prefix}-{int(row['run']):02d}-{_slug(p.settings.label or p.settings.mode)}"
        params = {k: row[k] for k in (p.settings.params or {})}
        if params:
            name += "-" + "-".join(f"{k}{v}" for k, v in params.items())
        (out / f"{name}.json").write_text(r.to_json())
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "contains your model's code": it is ours
            r.to_html(str(out / f"{name}.html"))
        saved.append({
            "report": name, "label": p.settings.label, "mode": p.settings.mode, "params": params, "status": row["status"],
            "device": p.settings.device, "torch": p.settings.torch_version, "compile_s": p.first_call.compile_s, "compile_wall_s": p.first_call.compile_wall_s,
            "run_time_s": p.steady.run_median_s, "device_time_s": p.steady.device_median_s, "latency_s": p.steady.latency_median_s,
            "speedup": p.eager.speedup if p.eager else None,
            "outputs_match": p.eager.check.match if p.eager and p.eager.check else None,
            "output_check": p.eager.check.method if p.eager and p.eager.check else None,
            "autotuned_ops": len(r.autotuning), "cudagraphs": [f"{c.compile_id}: {c.status}" for c in r.cudagraphs],
            "memory_timelines": [t.label for t in p.memory.timelines],
        })
    return saved


def _old_per_call_timer(fn, runs: int = 50) -> list[float]:
    """ipycompile's earlier run-time method: synchronise, event, call, event, synchronise, per call
    (the run layer's own per-call CUDA-event timer, kept for latency)."""
    from ipycompile.run.timing import _time_with_cuda_events

    return _time_with_cuda_events(fn, runs)


def training_step(shell, out: Path) -> dict:
    import torch
    import torch.utils.benchmark

    import ipycompile
    from ipycompile.run.session import SESSION

    shell.run_cell(TRAINING_SETUP, store_history=True)
    timeline = "--memory-timeline" if torch.cuda.is_available() else ""
    t0 = time.perf_counter()
    res = shell.run_cell(TRAINING_CELL.replace("{TIMELINE}", timeline), store_history=True)
    info: dict = {"ok": res.success, "wall_s": time.perf_counter() - t0}
    if not res.success:
        info["error"] = repr(res.error_in_exec or res.error_before_exec)
        return info
    rep = shell.user_ns["rep_train"]
    p = rep.profile
    fn = next(SESSION.compiled[key][1] for key in SESSION.compiled if "last_loss = loss.item()" in key[0])
    autorange = torch.utils.benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(min_run_time=1.0)
    info.update(reported_run_time_s=p.steady.run_median_s, reported_device_time_s=p.steady.device_median_s,
                reported_latency_s=p.steady.latency_median_s, run_block_calls=p.steady.run_block_calls,
                graph_breaks=rep.graph_break_count, autorange_median_s=autorange.median,
                ratio_to_autorange=p.steady.run_median_s / autorange.median)
    if torch.cuda.is_available():
        from triton.testing import do_bench

        info["do_bench_median_s"] = do_bench(fn, return_mode="median") / 1e3
        info["ratio_to_do_bench"] = (p.steady.device_median_s or 0) / info["do_bench_median_s"]
        old = _old_per_call_timer(fn)
        info.update(old_timer_median_s=statistics.median(old), old_timer_min_s=min(old), old_timer_max_s=max(old))
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notebooks", default="01,04,07", help="which tutorials (comma-separated numbers)")
    ap.add_argument("--no-training-step", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "gpu"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tools"))
    import run_cells
    import torch

    import ipycompile
    from IPython.core.interactiveshell import InteractiveShell
    from ipycompile.run.profile import device_name

    out = Path(args.out).resolve()  # the tutorials run in their own folder
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"runs": {}}
    index.update(device=device_name(), versions=_versions(), benchmark="gpu_report")
    for key in [k.strip() for k in args.notebooks.split(",") if k.strip()]:
        path = ROOT / "tutorials" / NOTEBOOKS[key]
        ipycompile.reset(history=True)
        t0 = time.perf_counter()
        done: set = set()
        entry = index["runs"][path.stem] = {"ok": None, "wall_s": None, "reports": []}

        def keep_reports(cell: int) -> None:  # after every cell: a stopped run keeps what finished
            hist = ipycompile.history()
            if not hist.empty:
                entry["reports"] += _save(hist.to_dict("records"), path.stem, out, done)
            entry["cells_run"] = cell
            index_path.write_text(json.dumps(index, indent=1, default=str))

        ok = run_cells.run(path, after_cell=keep_reports)
        wall = time.perf_counter() - t0
        keep_reports(entry.get("cells_run", 0))
        entry.update(ok=ok, wall_s=round(wall, 1))
        index_path.write_text(json.dumps(index, indent=1, default=str))
        saved = entry["reports"]
        print(f"gpu_report: {path.name}: {'ok' if ok else 'FAILED'} in {wall:.0f} s, {len(saved)} reports", flush=True)
    if not args.no_training_step:
        ipycompile.reset(history=True)
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "ipycompile")
        info = training_step(shell, out)
        hist = ipycompile.history()
        info["reports"] = _save(hist.to_dict("records"), "training_step", out) if not hist.empty else []
        index["runs"]["training_step"] = info
        index_path.write_text(json.dumps(index, indent=1, default=str))
        print("gpu_report: training step:", json.dumps({k: v for k, v in info.items() if k != "reports"}, default=str))
    print(f"wrote {index_path}")
    return 0 if all(r.get("ok") for r in index["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
