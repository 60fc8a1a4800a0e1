"""How wide are the speedup's interval and the run time's spread, quiet and loaded?

The quickstart's cells (tutorials/01_quickstart.ipynb: the model with a graph break, the
fixed model, and ``run_cell``) run with ``compare_eager`` in one process, first quiet,
then with ``--busy`` processes spinning beside them (each a ``python -c`` busy loop, killed
after the round), ``--reps`` times each. For every run it records the paired speedup, its
95 % interval's width (upper end over lower end), the run time's IQR over its median and
whether ipycompile marked it noisy; the thresholds in ``ipycompile/run/stats.py``
(``RATIO_NOISE``, ``RUN_NOISE``) were chosen from this table: above every quiet run's
figures, under the loaded runs' figures whose speedup moved by more than 1.5x.

The rule those thresholds must keep is checked on every run (the table's ``rule`` column, the
JSON's ``rule``): a quiet run is never marked noisy, and a loaded run whose speedup moved by more
than 1.5x from the quiet runs' median is marked noisy. ``--check`` exits 1 when the rule broke.
Quiet needs a quiet machine: a quiet run that other work on the machine (or a VM's neighbours)
disturbed is marked, rightly, so run it with nothing else running; the quickstart's model is
8x64, so ``--threads 1`` (with 16 OpenMP threads its eager time is erratic even on an idle
machine, which ipycompile rightly calls noisy).

    python benchmarks/noise.py [--reps 3] [--busy 2] [--threads 1] [--check] [--out PATH]

Prints a table and writes JSON to ``benchmarks/results/noise-<device>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

import ipycompile
from ipycompile.run.profile import device_name
from ipycompile.run.stats import relative_iqr

HERE = Path(__file__).parent


class Block(nn.Module):
    """The quickstart's model: a Python branch on a tensor's value (a graph break)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.LayerNorm(64))

    def forward(self, x):
        h = self.body(x)
        if h.mean() > 0:
            h = h * 2
        else:
            h = h - 1
        return h


class BlockNoBreak(Block):
    def forward(self, x):
        h = self.body(x)
        return torch.where(h.mean() > 0, h * 2, h - 1)


def quickstart_namespace() -> dict:
    torch.manual_seed(0)
    model = Block().eval()
    fixed = BlockNoBreak().eval()
    fixed.load_state_dict(model.state_dict())
    return {"model": model, "fixed": fixed, "x": torch.randn(8, 64), "torch": torch}


#: the quickstart's three timed cells: (label, source)
CELLS = (("original", "out = model(x)"), ("fixed", "out2 = fixed(x)"), ("run_cell", "out3 = fixed(x)"))


def run_cells(ns: dict) -> dict[str, dict]:
    """Each cell once with ``compare_eager``: its figures."""
    out = {}
    with torch.no_grad():
        for label, source in CELLS:
            p = ipycompile.run_cell(source, ns, compare_eager=True, label=label, record=False).report.profile
            e = p.eager
            out[label] = {"speedup": e.speedup, "ci95": e.speedup_ci95, "pairs": e.pairs,
                          "width": e.speedup_ci95[1] / e.speedup_ci95[0], "run_median_s": p.steady.run_median_s,
                          "run_spread": relative_iqr(p.steady.run_times_s), "eager_spread": relative_iqr(e.run_times_s),
                          "noise": list(p.noise), "noisy_speedup": bool(p.noisy("speedup vs eager"))}
    return out


@contextlib.contextmanager
def busy(n: int, seconds: float = 120.0):
    """``n`` processes spinning on a CPU each, for at most ``seconds``; killed on exit."""
    loop = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


#: a loaded speedup that moved by more than this factor from the quiet median must be marked noisy
MOVED = 1.5


def rule_holds(r: dict) -> bool:
    """A quiet run is not marked noisy; a loaded run whose speedup moved by more than
    :data:`MOVED` from the quiet median is (``r["vs_quiet"]``: speedup over that median)."""
    if r["state"] == "quiet":
        return not r["noise"]
    moved = max(r["vs_quiet"], 1 / r["vs_quiet"])
    return moved <= MOVED or r["noisy_speedup"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the loaded runs (default 2)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--check", action="store_true", help="exit 1 when the rule broke (see the module's text)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    ns = quickstart_namespace()
    run_cells(ns)  # compile everything once: the rounds below reuse the compiled code
    rows = []
    for rep in range(args.reps):
        for state in ("quiet", "loaded"):
            with busy(args.busy) if state == "loaded" else contextlib.nullcontext():
                for label, fig in run_cells(ns).items():
                    rows.append({"rep": rep, "state": state, "cell": label, **fig})
                    print(json.dumps(rows[-1]), flush=True)
    quiet = {r["cell"]: [] for r in rows}
    for r in rows:
        if r["state"] == "quiet":
            quiet[r["cell"]].append(r["speedup"])
    broken = []
    for r in rows:
        r["vs_quiet"] = r["speedup"] / statistics.median(quiet[r["cell"]])
        r["rule"] = rule_holds(r)
        if not r["rule"]:
            broken.append(r)
    print(f"\nquickstart cells, quiet and with {args.busy} busy processes, on {device_name()} ({os.cpu_count()} cores, "
          f"{torch.get_num_threads()} threads), torch {torch.__version__}")
    print(f"{'rep':>3} {'state':<7} {'cell':<9} {'speedup':>8} {'95% interval':>17} {'hi/lo':>6} {'pairs':>5} "
          f"{'run IQR':>8} {'eager IQR':>9} {'vs quiet':>8} {'rule':>5} noisy")
    for r in rows:
        print(f"{r['rep']:>3} {r['state']:<7} {r['cell']:<9} {r['speedup']:8.2f} [{r['ci95'][0]:6.2f}, {r['ci95'][1]:6.2f}] "
              f"{r['width']:6.2f} {r['pairs']:5d} {r['run_spread']:8.1%} {r['eager_spread']:9.1%} {r['vs_quiet']:8.2f} "
              f"{'ok' if r['rule'] else 'BROKE':>5} "
              f"{'; '.join(n.split(':')[0] for n in r['noise']) or '-'}")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", device_name()).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"noise-{slug}.json"
    out.write_text(json.dumps({"benchmark": "noise", "device": device_name(), "torch": torch.__version__,
                               "python": platform.python_version(), "busy": args.busy, "cores": os.cpu_count(),
                               "threads": torch.get_num_threads(),
                               "rule": {"held": len(rows) - len(broken), "runs": len(rows)}, "rows": rows}, indent=1))
    print(f"the rule held in {len(rows) - len(broken)} of {len(rows)} runs"
          + (": broke in " + ", ".join(f"{r['state']} {r['cell']} (rep {r['rep']})" for r in broken) if broken else ""))
    print(f"wrote {out}")
    return 1 if args.check and broken else 0


if __name__ == "__main__":
    sys.exit(main())
