"""Do the roofline's bytes, bandwidth and FLOPs agree with Nsight Compute and the FLOP counter?

For three workloads on the GPU -- an fp16 MLP with a LayerNorm under
``max-autotune-no-cudagraphs`` (CUDA graphs off, so that the profiler and ncu see
each kernel), a ResNet-18 training step (timm, random weights, fp32), and a
transformers Llama (tiny config, random weights, bf16, inference) -- in three steps:

1. ``report``: ``ipycompile.run_cell(..., profile_kernels=True)``; per kernel the
   report's bytes and FLOPs per launch, its time per launch (torch.profiler) and
   achieved bandwidth. The FLOPs of the cell, counted independently by
   ``torch.utils.flop_counter.FlopCounterMode`` on the eager cell (matmuls,
   convolutions, attention: 2*M*N*K and its kin), are kept beside the report's sum.
2. ``target`` under ``ncu``: the same workloads compiled the same way in a new
   process (Inductor's caches make the same kernels, same names), one steady-state
   call each between ``cudaProfilerStart``/``Stop`` (``--profile-from-start off``),
   ``--clock-control none`` (the clocks as the report ran them), caches flushed
   before each kernel (ncu's default: DRAM bytes are cold, as the estimate counts
   each tensor once); metrics ``dram__bytes_read.sum``, ``dram__bytes_write.sum``,
   ``gpu__time_duration.sum``, and the kernel's own traffic at the L2
   (``lts__t_sectors_srcunit_tex_op_read.sum`` / ``_write.sum``, 32-byte sectors from the SMs).
3. ``compare`` (:func:`step_compare`, pure): per Triton kernel (matched by name), bytes
   against ncu's DRAM bytes and achieved bandwidth against ncu's (DRAM bytes /
   duration), and, where a kernel that is not compute-bound misses by more than 20 %,
   ``why_differs`` from ncu's own counters (:func:`why_differs`): under 10 us, outputs
   still in L2 at the kernel's end, L2 reuse of inputs, inputs read more than once or
   never; per workload the matmul/convolution FLOPs against the FLOP counter.

Targets: within 20 % for memory-bound kernels over 10 us (ncu's duration), within 5 %
for the FLOPs. ``all`` runs the three steps (ncu as a child process); ``compare --from
DIR[,DIR]`` runs the third again over the work folders earlier runs left (no GPU).

    python benchmarks/roofline_truth.py all [--only mlp,resnet,llama] [--out PATH]
    python benchmarks/roofline_truth.py compare --from WORK1,WORK2 [--out PATH]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

WORKLOADS = {
    "mlp": dict(mode="max-autotune-no-cudagraphs", setup="""
import torch, torch.nn as nn
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().half()
ln = nn.LayerNorm(1024).cuda().half()
x = torch.randn(8192, 1024, device="cuda", dtype=torch.half)
torch.set_grad_enabled(False)
""", cell="ln(x + mlp(x))"),
    "resnet": dict(mode="default", setup="""
import torch, torch.nn as nn, timm
torch.manual_seed(0)
torch.set_grad_enabled(True)
net = timm.create_model("resnet18", pretrained=False, num_classes=10).cuda()
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
img = torch.randn(32, 3, 224, 224, device="cuda")
labels = torch.randint(0, 10, (32,), device="cuda")
""", cell="""opt.zero_grad(set_to_none=True)
loss = nn.functional.cross_entropy(net(img), labels)
loss.backward()
opt.step()"""),
    "llama": dict(mode="default", setup="""
import torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=512, intermediate_size=1536, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=8, vocab_size=4096, max_position_embeddings=1024)
model = LlamaForCausalLM(cfg).cuda().to(torch.bfloat16).eval()
ids = torch.randint(0, 4096, (8, 512), device="cuda")
torch.set_grad_enabled(False)
""", cell="model(ids).logits"),
}
# The same MLP and Llama under max-autotune with CUDA graphs (issue 29): the profiler records no launch
# shapes for kernels replayed from a graph, so their bytes and FLOPs come from Inductor's wrapper code.
WORKLOADS["mlp_cg"] = dict(WORKLOADS["mlp"], mode="max-autotune")
WORKLOADS["llama_cg"] = dict(WORKLOADS["llama"], mode="max-autotune")
L2_READ = "lts__t_sectors_srcunit_tex_op_read.sum"  # the SMs' reads at the L2, in 32-byte sectors
METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,"
           f"{L2_READ},lts__t_sectors_srcunit_tex_op_write.sum")
SECTOR = 32.0  # bytes per L2 sector
#: the targets: bytes within this of ncu's, for kernels that are not compute-bound and run over TARGET_US
WITHIN, TARGET_US = 0.2, 10.0


def _ns(name: str) -> dict:
    ns: dict = {}
    exec(WORKLOADS[name]["setup"], ns)
    return ns


def _eager_flops(name: str, ns: dict) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    src = WORKLOADS[name]["cell"]
    with FlopCounterMode(display=False) as fc:
        exec(compile(src, "<cell>", "exec"), ns)
    return float(fc.get_total_flops())


def step_report(names: list[str], work: "Path | None" = None) -> dict:
    import torch

    import ipycompile
    from ipycompile.analysis.kernel_costs import written_bytes
    from ipycompile.analysis.roofline import roofline

    out = {}
    for name in names:
        w = WORKLOADS[name]
        ns = _ns(name)
        flop_counter = _eager_flops(name, ns)
        t0 = time.perf_counter()
        trace = {"trace_dir": str(work / f"trace_{name}")} if work is not None else {}  # the wrapper code, for replays
        run = ipycompile.run_cell(w["cell"], ns, mode=w["mode"], profile_kernels=True, record=False, **trace)
        roof = roofline(run.report)
        if work is not None:  # the report itself, for replay tests (tests/data/gpu-h100/roofline_*.json.gz)
            import gzip

            with gzip.open(work / f"report_{name}.json.gz", "wt") as f:
                f.write(run.report.to_json())
        if work is not None:  # the profiler's events of a few more calls, to replay the attribution on a CPU
            from dataclasses import asdict

            from ipycompile.run.kernel_times import profile_calls

            events = profile_calls(run.fn, 3, cuda=True)
            (work / f"events_{name}.json").write_text(json.dumps([asdict(e) for e in events], default=str))
        calls = max(run.report.profile.kernels.calls, 1)
        rows = []
        for x in roof.rows:
            t = x.time
            writes = [(written_bytes(launch, x.kernel), launch.count) for launch in t.launches]
            writes = [(w, n) for w, n in writes if w is not None]
            written = sum(w * n for w, n in writes) / max(sum(n for _, n in writes), 1) if writes else None
            rows.append(dict(name=t.name, kernel=t.kernel, kind=x.kernel.kind if x.kernel else "", written=written,
                             launches_per_call=t.calls / calls, us_per_launch=1e6 * t.total_s / max(t.calls, 1),
                             share=t.share, bytes=x.bytes_per_launch, flops=x.flops_per_launch, how=x.how,
                             dtype=x.dtype, gb_s=(x.bytes_s or 0) / 1e9 if x.bytes_s else None,
                             bw_pct=x.bw_pct, flops_pct=x.flops_pct, verdict=x.verdict,
                             shapes=[[l.op, l.shapes, l.dtypes, l.concrete, l.count] for l in t.launches][:4]))
        report_flops = sum((r["flops"] or 0) * r["launches_per_call"] for r in rows)
        out[name] = dict(rows=rows, flop_counter=flop_counter, report_flops=report_flops,
                         roofline_line=[line for line in str(run.report).splitlines() if line.startswith("roofline:")],
                         compile_and_run_s=time.perf_counter() - t0, device=torch.cuda.get_device_name())
        print(f"[report] {name}: {len(rows)} rows, report FLOPs {report_flops:.4g} vs FlopCounterMode "
              f"{flop_counter:.4g}; {out[name]['roofline_line']}", flush=True)
        ipycompile.reset()
    return out


def step_target(names: list[str]) -> None:
    """Under ncu: compile each workload as the report did, one steady-state call in the profiled range."""
    import torch

    import ipycompile

    for name in names:
        w = WORKLOADS[name]
        ns = _ns(name)
        run = ipycompile.run_cell(w["cell"], ns, mode=w["mode"], runs=3, warmup=2, record=False)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        run.fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"[target] {name} done", file=sys.stderr, flush=True)
        ipycompile.reset()


def parse_ncu_csv(text: str) -> list[dict]:
    """ncu --csv --page raw: one row per kernel launch (header line, a units line, then rows)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    out = []
    for r in rows:
        try:
            num = lambda k: float(r[k].replace(",", ""))  # noqa: E731  (ncu writes 1,024)
            read, write, ns = num("dram__bytes_read.sum"), num("dram__bytes_write.sum"), num("gpu__time_duration.sum")
        except (KeyError, ValueError):
            continue  # the units line
        l2 = {}
        for op in ("read", "write"):
            try:
                l2[op] = SECTOR * float(r[f"lts__t_sectors_srcunit_tex_op_{op}.sum"].replace(",", ""))
            except (KeyError, ValueError):  # not asked for (older runs measured L2 writes only)
                l2[op] = None
        out.append(dict(kernel=r.get("Kernel Name", ""), dram_bytes=read + write, dram_read=read, dram_write=write,
                        l2_read=l2["read"], l2_write=l2["write"], ns=ns))
    return out


def _mean(hits: list[dict], key: str) -> "float | None":
    vals = [h[key] for h in hits if h.get(key) is not None]
    return sum(vals) / len(vals) if vals else None


def why_differs(report_bytes: float, written: "float | None", ncu: dict) -> str:
    """Why the estimate (each tensor read or written once) differs from ncu's DRAM bytes, from
    ncu's own counters (means over the kernel's launches: ``us``, ``dram_read``, ``dram_write``,
    ``l2_read``, ``l2_write``, the L2 ones the kernel's requests from the SMs); "" when the two
    agree within :data:`WITHIN`. ``written``: the estimate's written bytes (its output
    arguments), else the kernel's L2 writes stand for them. Each reason names its figures."""
    mb = lambda v: f"{v / 1e6:.2f} MB"  # noqa: E731
    dram = (ncu.get("dram_read") or 0.0) + (ncu.get("dram_write") or 0.0)
    if dram and abs(report_bytes / dram - 1) <= WITHIN:
        return ""
    reasons = []
    if ncu.get("us") is not None and ncu["us"] < TARGET_US:
        reasons.append(f"under {TARGET_US:.0f} us ({ncu['us']:.1f} us): launch and tail effects, outside the target")
    l2_w, l2_r, d_r, d_w = (ncu.get(k) for k in ("l2_write", "l2_read", "dram_read", "dram_write"))
    wrote = written if written is not None else l2_w
    if l2_w and d_w is not None and d_w < (1 - WITHIN) * l2_w:
        est = f", {mb(written)} estimated written" if written is not None else ""
        reasons.append(f"outputs still in L2 at the kernel's end (DRAM writes {mb(d_w)} of the {mb(l2_w)} "
                       f"it wrote to L2{est})")
    if l2_r and d_r is not None and d_r < (1 - WITHIN) * l2_r:
        reasons.append(f"L2 reuse of inputs (it read {mb(l2_r)} from L2, {mb(d_r)} of them from DRAM)")
    read_est = report_bytes - wrote if wrote is not None else None
    if read_est is not None and read_est > 0:
        if d_r is not None and d_r > (1 + WITHIN) * read_est:
            reasons.append(f"inputs read from DRAM more than once (DRAM reads {mb(d_r)}, estimated {mb(read_est)})")
        elif l2_r is not None and l2_r < (1 - WITHIN) * read_est:
            reasons.append(f"parts of its inputs never read (it read {mb(l2_r)} from L2 of {mb(read_est)} estimated: "
                           "masked, sliced or broadcast buffers counted whole)")
    if not reasons:
        seen = ", ".join(f"{k.replace('_', ' ')} {mb(v)}" for k, v in (("dram_read", d_r), ("dram_write", d_w),
                                                                     ("L2_read", l2_r), ("L2_write", l2_w))
                         if v is not None)
        reasons.append(f"not explained by ncu's counters ({seen})")
    return "; ".join(reasons)


def step_compare(report: dict, ncu_rows: list[dict], order: list[str]) -> dict:
    """ncu's launches are in workload order; Triton names repeat across workloads, so each
    workload's kernels are taken from its own slice (the launches of one call, in order)."""
    by_name: dict = {}
    for r in ncu_rows:
        by_name.setdefault(r["kernel"], []).append(r)
    result = {}
    for name in order:
        rep = report[name]
        kernels = []
        for row in rep["rows"]:
            if not row["name"].startswith("triton_") or row["bytes"] is None:
                continue
            hits = by_name.get(row["name"]) or []
            if not hits:
                continue
            ncu_bytes = _mean(hits, "dram_bytes")
            ncu_us = _mean(hits, "ns") / 1e3
            ncu_gb_s = ncu_bytes / (ncu_us * 1e3) if ncu_us else None
            ncu = dict(us=ncu_us, dram_read=_mean(hits, "dram_read"), dram_write=_mean(hits, "dram_write"),
                       l2_read=_mean(hits, "l2_read"), l2_write=_mean(hits, "l2_write"))
            # the kernel's writes as they reach L2: outputs that stay in the 50 MB L2 past the kernel's end
            # are not yet DRAM writes; DRAM reads + L2 writes is the traffic the kernel causes
            ncu_rw = ncu["dram_read"] + ncu["l2_write"] if ncu["l2_write"] is not None else None
            memory_side = row["verdict"] != "compute-bound"
            kernels.append(dict(
                kernel=row["name"], kind=row["kind"], verdict=row["verdict"], report_bytes=row["bytes"],
                report_written_bytes=row.get("written"),
                ncu_dram_bytes=ncu_bytes, bytes_ratio=row["bytes"] / ncu_bytes if ncu_bytes else None,
                ncu_dram_read=ncu["dram_read"], ncu_dram_write=ncu["dram_write"], ncu_l2_read=ncu["l2_read"],
                ncu_l2_write=ncu["l2_write"],
                ncu_dram_read_l2_write_bytes=ncu_rw, bytes_ratio_read_l2_write=row["bytes"] / ncu_rw if ncu_rw else None,
                report_us=row["us_per_launch"], ncu_us=ncu_us, time_ratio=row["us_per_launch"] / ncu_us if ncu_us else None,
                report_gb_s=row["gb_s"], ncu_gb_s=ncu_gb_s,
                bw_ratio=(row["gb_s"] / ncu_gb_s) if ncu_gb_s and row["gb_s"] else None,
                in_target=ncu_us > TARGET_US and memory_side,
                why_differs=why_differs(row["bytes"], row.get("written"), ncu) if memory_side else "",
                share=row["share"]))
        kernels.sort(key=lambda k: -k["share"])
        targeted = [k for k in kernels if k["in_target"]]
        ok = [k for k in targeted if k["bytes_ratio"] and abs(k["bytes_ratio"] - 1) <= WITHIN
              and k["bw_ratio"] and abs(k["bw_ratio"] - 1) <= WITHIN]
        ok_bytes = [k for k in targeted if k["bytes_ratio"] and abs(k["bytes_ratio"] - 1) <= WITHIN]
        ok_rw = [k for k in targeted if k["bytes_ratio_read_l2_write"] and abs(k["bytes_ratio_read_l2_write"] - 1) <= WITHIN]
        flop_ratio = rep["report_flops"] / rep["flop_counter"] if rep["flop_counter"] else None
        result[name] = dict(kernels=kernels, targeted=len(targeted), within_20pct=len(ok),
                            bytes_within_20pct=len(ok_bytes), bytes_within_20pct_read_l2_write=len(ok_rw),
                            report_flops=rep["report_flops"], flop_counter=rep["flop_counter"],
                            flops_ratio=flop_ratio, flops_within_5pct=flop_ratio is not None and abs(flop_ratio - 1) <= 0.05,
                            roofline_line=rep["roofline_line"], ncu_launches=len(ncu_rows))
    return result


def _table(result: dict) -> str:
    lines = [f"{'workload':8} {'kernel':44} {'rep MB':>7} {'ncu MB':>7} {'ratio':>5} {'rd+L2w':>6} {'rep GB/s':>8} "
             f"{'ncu GB/s':>8} {'ratio':>5} {'rep us':>7} {'ncu us':>7} verdict"]
    for name, w in result.items():
        for k in w["kernels"][:12]:
            lines.append(f"{name:8} {k['kernel'][:44]:44} {k['report_bytes'] / 1e6:7.2f} {k['ncu_dram_bytes'] / 1e6:7.2f} "
                         f"{(k['bytes_ratio'] or 0):5.2f} {(k['bytes_ratio_read_l2_write'] or 0):6.2f} "
                         f"{(k['report_gb_s'] or 0):8.0f} {(k['ncu_gb_s'] or 0):8.0f} {(k['bw_ratio'] or 0):5.2f} "
                         f"{k['report_us']:7.1f} {k['ncu_us']:7.1f} {k['verdict']}{' *' if k['in_target'] else ''}"
                         + (f"  [{k['why_differs']}]" if k.get("why_differs") else ""))
        lines.append(f"{name:8} FLOPs: report {w['report_flops']:.4g}, FlopCounterMode {w['flop_counter']:.4g}, "
                     f"ratio {w['flops_ratio'] or 0:.4f}; memory-bound kernels over 10 us (*): bytes within 20 % "
                     f"{w['bytes_within_20pct']}/{w['targeted']} (DRAM r+w), {w['bytes_within_20pct_read_l2_write']}/"
                     f"{w['targeted']} (DRAM read + L2 write); bytes and GB/s both: {w['within_20pct']}/{w['targeted']}")
    return "\n".join(lines)


def document(result: dict, *, device: str, torch_version: str, metrics: str, only: str, ncu_command: str = "") -> dict:
    """The JSON written under benchmarks/results/: the comparison and how it was made."""
    ncu_command = ncu_command or (f"ncu --target-processes all --profile-from-start off --clock-control none --metrics "
                                   f"{metrics} --csv --page raw python roofline_truth.py target --only {only}")
    return dict(device=device, torch=torch_version, python=platform.python_version(), metrics=metrics,
                ncu_command=ncu_command,
                targets="bytes and achieved bandwidth within 20 % of ncu for memory-bound kernels over 10 us; "
                        "matmul/conv FLOPs within 5 % of FlopCounterMode", workloads=result,
                notes=[
                   "ncu's DRAM writes miss outputs still in the 50 MB L2 when the kernel ends; DRAM reads + the "
                   "kernel's L2 writes (lts__t_sectors_srcunit_tex_op_write x 32 B) is the traffic it causes: the "
                   "estimate (each tensor once) is compared with both",
                   "why_differs (kernels that are not compute-bound, bytes off by more than 20 %): from ncu's "
                   "counters: under 10 us; outputs still in L2 (DRAM writes below the kernel's L2 writes); L2 reuse "
                   "of inputs (DRAM reads below its L2 reads); inputs read more than once (DRAM reads above the "
                   "estimate's reads) or never (L2 reads below them); report_written_bytes: its output arguments",
                   "report GB/s uses torch.profiler's time of the steady state (inputs often still in L2 from the "
                   "producer, clocks as they run); ncu flushes the caches before each kernel: small kernels run "
                   "faster in the report, so its GB/s is higher (and may exceed the DRAM peak: L2 reuse)",
                   "extern kernels (cuBLAS, cuDNN) are not matched by name here: their FLOPs are checked in the "
                   "workload's total against FlopCounterMode",
                ])


def _write(doc: dict, out_arg: str, work: "Path | None") -> Path:
    device = doc["device"]
    out = Path(out_arg) if out_arg else ROOT / "benchmarks" / "results" / f"roofline_truth-{re.sub(r'[^a-z0-9]+', '-', device.lower()).strip('-')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=str))
    if work is not None:
        (work / out.name).write_text(out.read_text())
    return out


def step_compare_saved(works: list[Path], out_arg: str) -> dict:
    """``compare``: the comparison again from the work folders of earlier ``all`` runs (each
    its ``roofline_report.json`` and ``ncu_stdout.csv``; gzipped too), e.g. after the compare
    step changed, or to join workloads measured in separate runs; no GPU needed."""
    import gzip

    def read(folder: Path, name: str) -> str:
        plain, packed = folder / name, folder / (name + ".gz")
        return plain.read_text() if plain.exists() else gzip.decompress(packed.read_bytes()).decode()

    result, device, metrics, only = {}, "", "", []
    for folder in works:
        report = json.loads(read(folder, "roofline_report.json"))
        ncu_text = read(folder, "ncu_stdout.csv")
        names = list(report)
        result.update(step_compare(report, parse_ncu_csv(ncu_text), names))
        device = device or next((w.get("device", "") for w in report.values()), "")
        metrics = metrics or ",".join(m for m in METRICS.split(",") if m in ncu_text)
        only += names
    torch_version = ""
    for folder in works:  # the reports kept beside (report_<name>.json.gz) name torch's version
        for path in sorted(folder.glob("report_*.json.gz")):
            profile = json.loads(gzip.decompress(path.read_bytes())).get("profile") or {}
            torch_version = profile.get("torch_version") or (profile.get("settings") or {}).get("torch_version", "")
            break
    doc = document(result, device=device, torch_version=torch_version, metrics=metrics, only=",".join(only))
    doc["compared_from"] = [str(f) for f in works]
    out = _write(doc, out_arg, None)
    print(_table(result))
    print(f"wrote {out}")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["all", "report", "target", "compare"])
    ap.add_argument("--only", default="mlp,resnet,llama")
    ap.add_argument("--out", default="")
    ap.add_argument("--work", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--from", dest="works", default="", help="compare: the work folders of earlier runs, comma-separated")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n]
    if a.step == "compare":
        if not a.works:
            ap.error("compare needs --from DIR[,DIR...]: the work folders of earlier 'all' runs")
        step_compare_saved([Path(w) for w in a.works.split(",")], a.out)
        return
    if a.step == "target":
        step_target(names)
        return
    work = Path(a.work)
    report = step_report(names, work)
    (work / "roofline_report.json").write_text(json.dumps(report, indent=1, default=str))
    if a.step == "report":
        return
    metrics = METRICS
    for attempt in range(2):
        cmd = [a.ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none",
               "--metrics", metrics, "--csv", "--page", "raw", sys.executable, __file__, "target", "--only", a.only]
        print("[ncu] " + " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        (work / "ncu_stdout.csv").write_text(p.stdout)
        (work / "ncu_stderr.txt").write_text(p.stderr[-200000:])
        ncu_rows = parse_ncu_csv(p.stdout)
        print(f"[ncu] rc {p.returncode}, {len(ncu_rows)} kernel launches, {time.perf_counter() - t0:.0f} s", flush=True)
        if p.returncode != 0 or not ncu_rows:
            print(p.stderr[-3000:], p.stdout[-2000:])
        if ncu_rows or attempt or L2_READ not in p.stdout + p.stderr:
            break
        # an ncu that does not know the L2-read counter names it and measures nothing: again without it
        metrics = ",".join(m for m in METRICS.split(",") if m != L2_READ)
    result = step_compare(report, ncu_rows, names)
    import torch

    doc = document(result, device=torch.cuda.get_device_name(), torch_version=torch.__version__, metrics=metrics,
                   only=a.only, ncu_command=" ".join(cmd[:-5] + ["python", "roofline_truth.py", "target", "--only", a.only]))
    _write(doc, a.out, work)
    print(_table(result))


if __name__ == "__main__":
    main()
