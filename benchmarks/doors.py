"""The door matrix, whole: every workload through every door, each door's report against the
reference door's (tests/doors.py holds the workloads, the doors and the fingerprint;
tests/test_doors.py runs a slice of this in the suite).

Workloads: the transformers families (Llama, Mistral, Qwen2, Gemma, Phi-3, GPT-2, GPT-NeoX, OPT,
BERT) at hidden 64 and 256 called as ``model(ids)``, and at 64 as ``model(ids).logits`` and
``model(**batch)``; the tutorials' kinds of model; a dozen user functions of the doctor's corpus.
Doors: a ``%%compile`` cell (real IPython shell, the model a global), ``run_cell``, ``capture()``
around a closure, around ``torch.compile(model)``, ``model.compile()``, a compiled ``forward``,
``DDP(torch.compile(model))``, ``torch.compile(DDP(model))``, FSDP2 (gloo, world size 1), a
``TORCH_TRACE`` log through ``load_trace`` and through the CLI, and a ``torchrun`` job of two ranks.

Each cell of the table is ``=`` (the same fingerprint as the reference door, ``cell``), ``≈`` (the
same but for the graphs' op counts, where the user's expression keeps part of a module's output and
a module door returns all of it: torch keeps more ops, never fewer), ``T`` (torch itself compiles
differently there: ``torch.compile(DDP(...))`` and FSDP2 (DDP's and FSDP's own hooks),
``DDP(torch.compile(model))`` of a model larger than DDP's first bucket (torch's DDPOptimizer
splits the graph at the buckets' boundaries: its ``ddp_split`` and ``ddp_bucket`` stages), and
``model.compile()`` of a ``torch.nn`` container, which torch does not compile at all; the JSON keeps
both fingerprints), ``x`` (a difference: a bug of that door), ``!`` (the door raised) or ``-`` (the
door does not take the workload: a module door and a plain function).

    python benchmarks/doors.py [--workloads NAME,...] [--doors NAME,...] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import torch  # noqa: E402

import doors  # noqa: E402
import shells  # noqa: E402

REFERENCE = "cell"
#: doors where torch compiles differently from a plain module by design of the wrapper
TORCH_DIFFERS = ("compile(DDP)", "FSDP2")
WHOLE_OUTPUT = ("compiled", "module.compile", "compiled forward", "DDP(compile)", "TORCH_TRACE", "CLI", "torchrun")
OUT_OF_PROCESS = ("TORCH_TRACE", "CLI", "torchrun")


def verdict(w, door: str, ref: dict, got: dict) -> str:
    if got == ref:
        return "="
    if door in TORCH_DIFFERS:
        return "T"
    if door == "DDP(compile)" and (
            (len(got["graphs"]) > len(ref["graphs"]) and sum(got["graphs"]) >= sum(ref["graphs"]))
            or set(got["stages"]) - set(ref["stages"]) <= {"ddp_bucket", "ddp_split"} < set(got["stages"])):
        # DDPOptimizer splits the graph at DDP's bucket boundaries (torch._dynamo.config.optimize_ddp); torch 2.11
        # and 2.13 log the split and its buckets as stages of the one Dynamo graph (ddp_split, ddp_bucket)
        return "T"
    if door == "module.compile" and w.name == "tutorial:sequential" and not got["graphs"]:
        return "T"  # torch compiles nothing: nn.Module._call_impl is torch's code, skipped
    a, b = dict(ref), dict(got)
    if ")." in w.expr and door in WHOLE_OUTPUT and len(a["graphs"]) == len(b["graphs"]) and all(
            x <= y for x, y in zip(a["graphs"], b["graphs"])):
        for fp in (a, b):
            fp.pop("graphs"), fp.pop("first")
        if a == b:
            return "≈"
    if w.name == "tutorial:sequential" and [x[2] for x in a["loops"]] == [x[2] for x in b["loops"]]:
        a2, b2 = dict(a), dict(b)
        for fp in (a2, b2):
            fp.pop("loops"), fp.pop("first", None)
        if a2 == b2:
            return "≈"  # the place torch records under a torch.nn container (tests/test_doors.py)
    return "x"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="", help="names, comma-separated (default: all)")
    ap.add_argument("--doors", default="", help="doors, comma-separated (default: all)")
    ap.add_argument("--quick", action="store_true", help="size 64 and call form model(ids) only; no out-of-process doors")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    ws = doors.all_workloads()
    if args.workloads:
        want = set(args.workloads.split(","))
        ws = [w for w in ws if w.name in want]
    if args.quick:
        ws = [w for w in ws if "-256-" not in w.name and not w.name.endswith(("-logits", "-batch"))]
    names = list(doors.DOORS)
    if args.doors:
        names = [d for d in names if d in args.doors.split(",")]
    if args.quick:
        names = [d for d in names if d not in OUT_OF_PROCESS]
    if REFERENCE not in names:
        names.insert(0, REFERENCE)
    results: dict = {}
    t0 = time.time()
    with shells.loaded() as ip:
        doors.SHELL = ip
        for w in ws:
            row: dict = {}
            for d in names:
                if doors.DOORS[d][1] == "module" and not w.module:
                    row[d] = {"verdict": "-"}
                    continue
                t = time.time()
                try:
                    fp = doors.through(d, w)
                    row[d] = {"fingerprint": fp, "seconds": round(time.time() - t, 2)}
                except Exception as exc:  # noqa: BLE001 - a door that raises is a result of the matrix
                    row[d] = {"verdict": "!", "error": "".join(traceback.format_exception_only(type(exc), exc)).strip()[-600:]}
            ref = row.get(REFERENCE, {}).get("fingerprint")
            for d, cell in row.items():
                if "fingerprint" in cell:
                    cell["verdict"] = verdict(w, d, ref, cell["fingerprint"]) if ref is not None else "?"
                    if cell["verdict"] != "=" and ref is not None:
                        cell["diff"] = {k: v for k, v in doors.diff(ref, cell["fingerprint"]).items()}
            results[w.name] = row
            print(f"{w.name:34s} " + " ".join(f"{row[d]['verdict']:>2s}" for d in names), flush=True)
    counts: dict = {}
    for row in results.values():
        for cell in row.values():
            counts[cell["verdict"]] = counts.get(cell["verdict"], 0) + 1
    print()
    print("doors: " + ", ".join(f"{i}={d}" for i, d in enumerate(names)))
    print("verdicts: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / (
        f"doors-{'cuda' if torch.cuda.is_available() else 'cpu'}-torch{torch.__version__.split('+')[0]}.json")
    import transformers

    doors.dump(out, {
        "torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(), "reference": REFERENCE, "doors": names,
        "seconds": round(time.time() - t0, 1), "verdicts": counts, "results": results,
        "legend": {"=": "same as the reference door", "≈": "same but for what torch keeps of a module's whole output "
                   "(or the place torch records under a torch.nn container)",
                   "T": "torch compiles differently there (its own counters agree with the report)",
                   "x": "differs: a bug of this door", "!": "the door raised", "-": "not applicable"},
    })
    print(f"wrote {out}")
    return 1 if counts.get("x") or counts.get("!") else 0


if __name__ == "__main__":
    sys.exit(main())
