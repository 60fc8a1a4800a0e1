"""How fast do the report views render a large report?

Builds a large, realistic synthetic report by replicating the payloads of a real
H100 trace (``tests/data/gpu-h100/quickstart.log.gz``: its FX graphs, Triton and
extern kernels, graph breaks, guard failures, guard trees and compile-time
events), at the default size

* 50 graphs of 2,000 ops (10 compiles x dynamo / aot_forward / aot_backward /
  pre_grad / post_grad), 1,000 kernels, 200 graph-break sites, 100 recompiles
  (some hitting the recompile limit), a guard tree per compile, control-flow
  nodes, a profile with 1,000 timed runs and an eager comparison,

and for half and double that size. For each it times, in one process:

* ``first paint``: ``view_model(report)`` (the header chips and the lazy tabs),
  what a view needs before it can show anything;
* each tab's blocks (``Tab.blocks()``, built on first view);
* ``render_html(report)`` from scratch (view-model, every tab, figures, highlighting):
  the full page that ``report.to_html(path)`` writes, its time and size;
* what a notebook cell's output embeds: the compact static HTML of the report
  widget's bundle (``ReportWidget._repr_mimebundle_()["text/html"]``, the same as a
  bare report's ``_repr_mimebundle_``), its time and size.

And for a real report: a ResNet-18 training step (``transformers``' ResNet, random
weights) compiled with Inductor on this machine (``benchmarks/resnet_report.py``;
``--resnet PATH`` reuses a saved one), its full page and notebook output.

Targets: first paint < 0.5 s, any tab < 1 s, full HTML of the base report < 1 s,
notebook output <= 1 MB for the base (1,000-kernel) report and <= 300 KB for the
ResNet-18 training report, size linear in the report.
Prints a table and writes ``benchmarks/results/render-<host>.json``.

    python benchmarks/render.py [--sizes 0.5,1,2] [--reps 3] [--resnet PATH]
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))

import ipycompile  # noqa: E402
from ipycompile.report import (  # noqa: E402
    CompileId,
    CompileReport,
    ControlFlowNode,
    EagerComparison,
    FirstCall,
    Graph,
    GuardSet,
    OutputCheck,
    Profile,
    Recompile,
    RunSettings,
    SteadyState,
    Subgraph,
)
from ipycompile.report.model import KernelTime  # noqa: E402
from ipycompile.views import html as html_view  # noqa: E402
from ipycompile.views.viewmodel import view_model  # noqa: E402

TARGETS = {"first_paint_s": 0.5, "tab_s": 1.0, "html_s": 1.0, "notebook_bytes": 1_000_000,
           "resnet_notebook_bytes": 300_000}
BASE = {"graphs": 50, "ops_per_graph": 2000, "kernels": 1000, "graph_breaks": 200, "recompiles": 100}
_OP = re.compile(r"^(\s+)(\w+)(: \"[^\"]*\")? = (.*)$")


def _real():
    from tracefile import gpu_records

    return ipycompile.build_report(gpu_records("quickstart"))


def _grow_graph(code: str, ops: int) -> tuple[str, int]:
    """``code`` with its op lines replicated (names suffixed) until it has ``ops`` ops."""
    lines = code.splitlines()
    first = next(i for i, l in enumerate(lines) if _OP.match(l) and "=" in l and ("torch." in l or " * " in l or " + " in l))
    ret = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].strip().startswith("return"))
    body = lines[first:ret]
    op_lines = [l for l in body if _OP.match(l)]
    names = sorted({_OP.match(l).group(2) for l in op_lines}, key=len, reverse=True)
    pat = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    out, n, k = lines[:first], 0, 0
    while n < ops:
        for l in body:
            if n >= ops:
                break
            out.append(pat.sub(lambda m: f"{m.group(1)}_r{k}", l) if (pat and k) else l)
            n += bool(_OP.match(l))
        k += 1
    out += lines[ret:]
    return "\n".join(out), n


def synthetic(scale: float = 1.0, real: CompileReport | None = None) -> CompileReport:
    real = real or _real()
    n = {key: max(1, round(v * scale)) for key, v in BASE.items() if key != "ops_per_graph"}
    ops = BASE["ops_per_graph"]
    r = CompileReport(torch_version=real.torch_version, sources={})

    # compiles: one frame per 5 graphs, plus the recompiles (frame f, compile 1..)
    frames = max(1, n["graphs"] // 5)
    template = real.compiles[0]
    per_frame = [1 + n["recompiles"] // frames + (1 if f < n["recompiles"] % frames else 0) for f in range(frames)]
    for f in range(frames):
        for c in range(per_frame[f]):
            comp = copy.deepcopy(template)
            comp.compile_id = CompileId(f, c)
            comp.function = f"{template.function}_{f}"
            comp.filename = f"/work/model/block_{f}.py"
            comp.first_line = 10 + f
            comp.is_recompile = c > 0
            comp.status = "recompile limit" if c == per_frame[f] - 1 and f % 4 == 3 else template.status
            r.compiles.append(comp)

    # graphs: real graphs of each stage, grown to `ops` ops
    stages = ("dynamo", "aot_forward", "aot_backward", "pre_grad", "post_grad")
    grown = {}
    for st in stages:
        g = max(real.graphs_for("0/0", st), key=lambda g: g.op_count)
        grown[st] = _grow_graph(g.code, ops)
    for i in range(n["graphs"]):
        st = stages[i % len(stages)]
        code, count = grown[st]
        r.graphs.append(Graph(CompileId(i // len(stages) % frames, 0), st, code.replace("gpu_traces.py", f"block_{i // 5}.py"), count))

    # kernels: the real ones, renamed (source included) and spread over the compiles
    cids = [c.compile_id for c in r.compiles]
    for i in range(n["kernels"]):
        k = copy.deepcopy(real.kernels[i % len(real.kernels)])
        if k.backend != "extern":
            new = f"{k.name}_{i}"
            k.source = k.source.replace(k.name, new)
            k.name = new
        k.compile_id = cids[i % len(cids)]
        k.launches = 1 + i % 3
        r.kernels.append(k)

    # graph breaks: the real sites, moved to distinct lines of distinct files
    for i in range(n["graph_breaks"]):
        b = copy.deepcopy(real.graph_breaks[i % len(real.graph_breaks)])
        b.frame.filename = f"/work/model/block_{i % frames}.py"
        b.frame.lineno = 20 + i
        b.count = 1 + i % 4
        b.compile_id = cids[i % len(cids)]
        b.compile_ids = [b.compile_id]
        r.graph_breaks.append(b)

    # recompiles: the real guard failures, one per non-first compile
    reasons = [x for rc in real.recompiles for x in rc.reasons]
    later = [c for c in r.compiles if c.compile_id.frame_compile_id > 0]
    for j, c in enumerate(later[: n["recompiles"]]):
        fails = [CompileId(c.compile_id.frame_id, k) for k in range(c.compile_id.frame_compile_id - 1, -1, -1)]
        limit = c.status == "recompile limit"
        r.recompiles.append(Recompile(
            c.compile_id, c.function, c.filename,
            [reasons[(j + k) % len(reasons)].replace("expected 32", f"expected {32 + k}") for k in range(len(fails))],
            fails, limit, "Dynamo recompile limit exceeded (recompile_limit = 8)" if limit else "",
        ))

    # guards: a real tree per compile
    trees = real.guards
    for i, c in enumerate(r.compiles):
        g = trees[i % len(trees)]
        r.guards.append(GuardSet(c.compile_id, g.count, g.tree))

    # control flow: a cond per frame with a nested while_loop, subgraphs from real graph code
    sub = real.graphs_for("0/0", "dynamo")[0].code
    for f in range(frames):
        inner = ControlFlowNode("while_loop", CompileId(f, 0), "while_loop", "(i, x)",
                                [Subgraph("cond_fn_0", sub, 2, "cond_fn"), Subgraph("body_fn_0", sub + "\n        while_loop = 1", 4, "body_fn")])
        r.control_flow.append(ControlFlowNode("cond", CompileId(f, 0), "cond", "(pred, (x,))",
                                              [Subgraph("cond_true_0", sub, 4, "true_fn"), Subgraph("cond_false_0", sub, 4, "false_fn")], [inner]))

    # compile time: the real events, shifted per compile
    ct = copy.deepcopy(real.compile_time)
    base_events = real.compile_time.events
    span = max(e["start_us"] + e["dur_us"] for e in base_events) - min(e["start_us"] for e in base_events)
    ct.events = []
    for i, c in enumerate(r.compiles):
        src = real.compiles[i % len(real.compiles)].compile_id
        for e in base_events:
            if e.get("compile_id") == str(src):
                e = dict(e, compile_id=str(c.compile_id), start_us=e["start_us"] + i * span / 4)
                ct.events.append(e)
    ct.by_compile = {str(c.compile_id): 1.0 for c in r.compiles}
    r.compile_time = ct
    r.stats = copy.deepcopy(real.stats)

    times = [0.0021 + 0.0001 * ((i * 7919) % 13) / 13 for i in range(1000)]
    eager = [t * 1.4 for t in times]
    r.profile = Profile(
        settings=RunSettings(torch_version=real.torch_version, device="NVIDIA H100 80GB HBM3", backend="inductor"),
        first_call=FirstCall(compile_s=ct.total_s, peak_device_bytes=3 << 30, peak_host_bytes=5 << 30),
        steady=SteadyState(run_times_s=times, run_median_s=statistics.median(times), run_iqr_s=0.00004,
                           run_min_s=min(times), run_max_s=max(times), runs=len(times), warmup=3,
                           peak_device_bytes=2 << 30, peak_host_bytes=4 << 30),
        eager=EagerComparison(run_times_s=eager, run_median_s=statistics.median(eager), peak_device_bytes=2 << 30,
                              peak_host_bytes=4 << 30, speedup=1.4, memory_ratio=1.0, break_even_calls=12000,
                              check=OutputCheck(True, "equal", max_abs_diff=0.0)),
    )
    # --profile-kernels: a time for every kernel, so the Kernels tab has its time and share columns
    weights = [1 + (i * 7919) % 97 for i in range(len(r.kernels))]
    total = sum(weights)
    r.profile.kernels.times = [
        KernelTime(k.name, k.name, k.compile_id, k.graph_stage, w * 1e-6, w * 2e-7, 5, w / total)
        for k, w in zip(r.kernels, weights)
    ]
    r.profile.kernels.device, r.profile.kernels.calls = "cuda", 5
    return r


def measure(report: CompileReport, reps: int) -> dict:
    def best(fn):
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
        return min(ts), out

    from ipycompile.views.widget import ReportWidget

    first_paint, _ = best(lambda: view_model(report))
    tabs = {}
    for key in [t.key for t in view_model(report).tabs]:
        def build(key=key):
            return view_model(report).tab(key).blocks()
        tabs[key], _ = best(build)
    widget_first_paint, _ = best(lambda: ReportWidget(report))  # header + Summary tab, as displayed
    widget_tabs = {}
    for i, key in enumerate(t.key for t in view_model(report).tabs):
        def open_tab(i=i):
            w = ReportWidget(report)
            t0 = time.perf_counter()
            w.tabs.selected_index = i  # what a click does: builds the tab's widgets
            return time.perf_counter() - t0
        widget_tabs[key] = min(open_tab() for _ in range(reps))
    html_s, page = best(lambda: html_view.render_html(report))
    notebook_s, bundle = best(lambda: ReportWidget(report)._repr_mimebundle_())
    assert bundle["text/html"] == report._repr_mimebundle_()["text/html"]  # the widget embeds what a bare report shows
    tab_render: dict = {}
    html_view.render_view_model(view_model(report), tab_render)  # where the HTML time goes, per tab
    return {
        "widget_first_paint_s": widget_first_paint,
        "widget_tabs_s": widget_tabs,
        "first_paint_s": first_paint,
        "tabs_s": tabs,
        "html_s": html_s,
        "html_tab_s": tab_render,
        "html_bytes": len(page.encode("utf-8")),
        "notebook_s": notebook_s,
        "notebook_bytes": len(bundle["text/html"].encode("utf-8")),
        "notebook_compact_note": html_view.FULL_DETAIL in bundle["text/html"],
        "size": {
            "graphs": len(report.graphs),
            "graph_ops": sum(g.op_count for g in report.graphs),
            "graph_lines": sum(g.code.count("\n") + 1 for g in report.graphs),
            "kernels": len(report.kernels),
            "kernel_lines": sum(k.source.count("\n") + 1 for k in report.kernels if k.source),
            "graph_breaks": len(report.graph_breaks),
            "recompiles": len(report.recompiles),
            "compiles": len(report.compiles),
            "events": len(report.compile_time.events),
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="0.5,1,2", help="scales of the base size (default 0.5,1,2)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions; the best is kept (default 3)")
    ap.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/render-<host>.json)")
    ap.add_argument("--resnet", default=None, help="a saved ResNet-18 report (default: compile one now, about 2 min)")
    args = ap.parse_args(argv)
    scales = [float(s) for s in args.sizes.split(",")]

    real = _real()
    html_view.render_html(real)  # import what it needs and warm the caches once, outside the timings
    results = []
    for s in scales:
        t0 = time.perf_counter()
        rep = synthetic(s, real)
        built = time.perf_counter() - t0
        m = measure(rep, args.reps)
        m["scale"] = s
        m["synthesis_s"] = built
        results.append(m)

    if args.resnet:
        resnet = CompileReport.load(args.resnet)
    else:
        from resnet_report import resnet18_training_report

        t0 = time.perf_counter()
        resnet = resnet18_training_report()
        print(f"ResNet-18 training step compiled and measured in {time.perf_counter() - t0:.0f} s")
    rn = measure(resnet, args.reps)
    rn["report"] = repr(resnet)

    keys = list(results[0]["tabs_s"])
    print(f"{'scale':>5} {'graphs':>6} {'ops':>7} {'kernels':>7} {'breaks':>6} {'recomp':>6} "
          f"{'paint':>7} " + " ".join(f"{k[:8]:>8}" for k in keys) + f" {'html':>7} {'MB':>6}")
    for m in results:
        z = m["size"]
        print(f"{m['scale']:>5} {z['graphs']:>6} {z['graph_ops']:>7} {z['kernels']:>7} {z['graph_breaks']:>6} {z['recompiles']:>6} "
              f"{m['first_paint_s']:>7.4f} " + " ".join(f"{m['tabs_s'][k]:>8.4f}" for k in keys)
              + f" {m['html_s']:>7.3f} {m['html_bytes'] / 1e6:>6.2f}")
    base = next((m for m in results if m["scale"] == 1.0), results[len(results) // 2])
    print("\nwidget (ipywidgets objects, no frontend): " + "; ".join(
        f"x{m['scale']:g} first paint {m['widget_first_paint_s']:.3f} s, slowest tab "
        f"{max(m['widget_tabs_s'].values()):.3f} s ({max(m['widget_tabs_s'], key=m['widget_tabs_s'].get)})" for m in results))
    print("\nHTML time per tab at scale 1 (s): " + ", ".join(f"{k} {v:.3f}" for k, v in base["html_tab_s"].items()))
    worst_tab = max(max(m["tabs_s"].values()) for m in results)
    ok = {
        "first_paint": max(base["first_paint_s"], base["widget_first_paint_s"]) < TARGETS["first_paint_s"],
        "tab": max(*base["tabs_s"].values(), *base["widget_tabs_s"].values()) < TARGETS["tab_s"],
        "html": base["html_s"] < TARGETS["html_s"],
    }
    print(f"first paint: view-model {base['first_paint_s']:.4f} s, widget {base['widget_first_paint_s']:.4f} s "
          f"(target < {TARGETS['first_paint_s']} s): {'met' if ok['first_paint'] else 'NOT met'}")
    print(f"slowest tab: blocks {max(base['tabs_s'].values()):.4f} s, widget {max(base['widget_tabs_s'].values()):.4f} s "
          f"(target < {TARGETS['tab_s']} s): {'met' if ok['tab'] else 'NOT met'}"
          f"  [worst at any scale {worst_tab:.4f} s]")
    ok["notebook"] = base["notebook_bytes"] <= TARGETS["notebook_bytes"]
    ok["resnet_notebook"] = rn["notebook_bytes"] <= TARGETS["resnet_notebook_bytes"]
    print(f"full HTML (report.to_html) {base['html_s']:.3f} s, {base['html_bytes'] / 1e6:.1f} MB "
          f"(target < {TARGETS['html_s']} s): {'met' if ok['html'] else 'NOT met'}")
    print(f"notebook output (compact): {base['notebook_bytes'] / 1e3:.0f} KB in {base['notebook_s']:.3f} s "
          f"(target <= {TARGETS['notebook_bytes'] / 1e3:.0f} KB): {'met' if ok['notebook'] else 'NOT met'}")
    print(f"ResNet-18 training report {rn['report']}: notebook output {rn['notebook_bytes'] / 1e3:.0f} KB "
          f"(target <= {TARGETS['resnet_notebook_bytes'] / 1e3:.0f} KB): {'met' if ok['resnet_notebook'] else 'NOT met'}; "
          f"full page {rn['html_bytes'] / 1e6:.2f} MB in {rn['html_s']:.3f} s")
    if len(results) > 1:
        lo, hi = results[0], results[-1]
        ratio = hi["scale"] / lo["scale"]
        print(f"x{ratio:g} size: HTML bytes x{hi['html_bytes'] / lo['html_bytes']:.2f}, HTML time x{hi['html_s'] / lo['html_s']:.2f}, "
              f"first paint x{hi['first_paint_s'] / lo['first_paint_s']:.2f} (linear: x{ratio:g})")

    from ipycompile.run.profile import _cpu_brand

    host = f"cpu: {_cpu_brand()}"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", host).strip("-").lower()
    out = Path(args.out) if args.out else HERE / "results" / f"render-{slug}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    import matplotlib

    out.write_text(json.dumps({
        "benchmark": "render",
        "host": host,
        "python": platform.python_version(),
        "matplotlib": matplotlib.__version__,
        "highlight_lines": html_view.HIGHLIGHT_LINES,
        "reps": args.reps,
        "base": BASE,
        "targets": TARGETS,
        "met": ok,
        "results": results,
        "resnet18_training": rn,
    }, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
