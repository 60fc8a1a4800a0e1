"""The report's figures: compile time by phase (with a timeline of each compile's steps), the
run-time distribution, peak memory, the memory timeline and the roofline.

Each builder takes a report and returns the figure; a :class:`~ipycompile.views.blocks.Figure`
block calls it when the figure is shown. The compile-time figure, the one a trace log's page
shows, is SVG written by our own code (:mod:`.svg`, an :class:`~ipycompile.views.svg.SvgImage`):
``report LOG -o page.html`` imports no matplotlib. The figures of a measured run are
``matplotlib.figure.Figure`` (no pyplot, no global state), matplotlib imported inside the
builders only.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from ..report.model import CompileId
from ..report.text import fmt_bytes, fmt_seconds
from .svg import Drawing, SvgImage, text_width, ticks

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["fig_phases", "fig_runs", "fig_memory", "fig_memory_timeline", "fig_roofline"]

_PHASE_COLORS = {
    "Dynamo tracing": "#4c78a8",
    "Dynamo guards": "#72b7b2",
    "AOTAutograd": "#f58518",
    "Inductor graph passes": "#e45756",
    "Inductor lowering": "#54a24b",
    "Inductor codegen": "#eeca3b",
    "Kernel compilation": "#b279a2",
    "Autotuning": "#ff9da6",
    "Cache lookups": "#9d755d",
    "GC": "#bab0ac",
    "Other": "#d3d3d3",
}


def _new_figure(w: float, h: float):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(w, h), dpi=100)


def _stack_axes(fig_w: float, left_in: float, right_in: float, panels: list) -> tuple:
    """A figure of vertically stacked axes laid out by hand (tight_layout draws the
    figure once more; this does not). ``panels``: plot heights in inches, each with
    room for a title above and an x label below."""
    top_in, bottom_in = 0.35, 0.5
    total = sum(h + top_in + bottom_in for h in panels)
    fig = _new_figure(fig_w, total)
    axes, y = [], total
    for h in panels:
        y -= top_in + h
        axes.append(fig.add_axes((left_in / fig_w, y / total, 1 - (left_in + right_in) / fig_w, h / total)))
        y -= bottom_in
    return fig, axes


def _label_width(labels) -> float:
    return 0.25 + 0.068 * max((len(str(x)) for x in labels), default=4)


def fig_phases(r: "CompileReport") -> SvgImage:
    """Compile time by phase (bars, each with its time), above a timeline of each compile's
    top-level steps from the chromium events when the report has them (a lane per compile, the
    events nested :data:`_TIMELINE_DEPTH` deep, coloured by step, the most costly steps in the
    legend). Drawn as SVG by our own code (:mod:`.svg`): the page that shows it imports no
    matplotlib."""
    ct = r.compile_time
    phases = [p for p in ct.phases if p.seconds > 0]
    events = [e for e in ct.events if isinstance(e.get("start_us"), (int, float)) and isinstance(e.get("dur_us"), (int, float))]
    deep = [e for e in events if e.get("depth", 0) <= _TIMELINE_DEPTH]
    lanes = sorted({str(e.get("compile_id")) for e in deep}, key=_cid_key)[:_TIMELINE_LANES]
    lane_labels = [f"compile {c}" for c in lanes]
    if not phases and not lanes:
        d = Drawing(600, 60, "Compile time by phase: no compile-time data")
        d.text(300, 30, "no compile-time data", anchor="middle")
        return d.image()
    # the colours of the timeline's steps: the most costly get the palette, the others grey
    weight: Counter = Counter()
    lane_of = {c: j for j, c in enumerate(lanes)}
    for e in deep:
        if str(e.get("compile_id")) in lane_of:
            weight[str(e.get("name", ""))] += e["dur_us"]
    top = [n for n, _ in weight.most_common(len(_PALETTE))]
    color_of = {n: _PALETTE[i] for i, n in enumerate(top)}
    legend = [(color_of[n], n) for n in top]
    if len(weight) > len(top):
        legend.append((_OTHER_STEPS, f"{len(weight) - len(top)} other steps"))

    width = 1000.0
    left = 12 + max((text_width(x) for x in [p.name for p in phases] + lane_labels), default=40)
    right = 24 + (max(text_width(n, 10) for _, n in legend) + 18 if lanes and legend else 60)
    x0, x1 = left, width - right
    heights = ([_BAR_ROW * len(phases)] if phases else []) + ([_LANE * len(lanes) + 10] if lanes else [])
    d = Drawing(width, sum(h + _TOP + _BOTTOM for h in heights), f"compile time {fmt_seconds(ct.total_s)} by phase")
    y = 0.0
    if phases:
        y += _TOP
        d.text(width / 2, y - 16, f"compile time {fmt_seconds(ct.total_s)} by phase", size=13, anchor="middle")
        hi = max(p.seconds for p in phases)
        scale = _axis_max(hi)
        for i, p in enumerate(phases):
            cy = y + _BAR_ROW * (i + 0.5)
            w = (x1 - x0) * p.seconds / scale
            d.rect(x0, cy - _BAR_ROW * 0.4, w, _BAR_ROW * 0.8, _PHASE_COLORS.get(p.name, "#888"),
                   tip=f"{p.name}: {fmt_seconds(p.seconds)}")
            d.text(x0 - 6, cy, p.name, anchor="end", cls="label")
            d.text(x0 + w + 4, cy, fmt_seconds(p.seconds), size=10, cls="value")
        y += _BAR_ROW * len(phases)
        d.line(x0, y - _BAR_ROW * len(phases), x0, y)
        d.x_axis(x0, x1, y, scale, "seconds")
        y += _BOTTOM
    if lanes:
        rows = _TIMELINE_DEPTH + 1
        y += _TOP
        n_all = len({str(e.get("compile_id")) for e in deep})
        more = f", first {_TIMELINE_LANES} of {n_all} compiles" if n_all > _TIMELINE_LANES else ""
        d.text(width / 2, y - 16, f"timeline (events nested {rows} deep, outermost on top{more})", size=13,
               anchor="middle")
        t0 = min(e["start_us"] for e in events)
        t_end = max(((e["start_us"] - t0 + e["dur_us"]) / 1e6 for e in deep if str(e.get("compile_id")) in lane_of),
                    default=0.0)
        scale = _axis_max(t_end)
        top_y = y + 5
        for j, label in enumerate(lane_labels):
            d.text(x0 - 6, top_y + _LANE * (j + 0.5), label, anchor="end", cls="label")
        for e in deep:
            lane = lane_of.get(str(e.get("compile_id")))
            if lane is None:
                continue
            start, dur = (e["start_us"] - t0) / 1e6, e["dur_us"] / 1e6
            depth = min(int(e.get("depth", 0)), _TIMELINE_DEPTH)
            name = str(e.get("name", ""))
            row_h = _LANE * 0.84 / rows
            d.rect(x0 + (x1 - x0) * start / scale, top_y + _LANE * (lane + 0.08) + row_h * depth,
                   max((x1 - x0) * dur / scale, 0.5), row_h * 0.92, color_of.get(name, _OTHER_STEPS),
                   tip=f"compile {lanes[lane]}: {name}, {fmt_seconds(dur)}")
        y += _LANE * len(lanes) + 10
        d.line(x0, y - _LANE * len(lanes) - 10, x0, y)
        d.x_axis(x0, x1, y, scale, "seconds since the first compile event")
        for k, (color, name) in enumerate(legend):
            ly = top_y + 7 + 16 * k
            d.rect(x1 + 16, ly - 5, 10, 10, color)
            d.text(x1 + 30, ly, name, size=10, cls="legend")
        y += _BOTTOM
    return d.image()


def _axis_max(hi: float) -> float:
    """The end of an axis that shows 0 to ``hi``: the first round tick at or past it (5% past, so
    the longest bar does not touch the end)."""
    hi = hi * 1.05 if hi > 0 else 1.0
    marks = ticks(hi)
    step = marks[1] - marks[0] if len(marks) > 1 else hi
    return marks[-1] if marks[-1] >= hi else marks[-1] + step


#: Pixels: a phase's bar row, a compile's lane in the timeline, room above a panel (its
#: title) and below it (tick labels and the axis's label)
_BAR_ROW = 26.0
_LANE = 36.0
_TOP = 36.0
_BOTTOM = 48.0
#: the colour of the timeline's steps outside the legend's
_OTHER_STEPS = "#bdbdbd"
_TIMELINE_DEPTH = 3
_TIMELINE_LANES = 24
_PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
            "#bab0ac", "#1f77b4", "#8c564b")


def _cid_key(text: str):
    try:
        c = CompileId.parse(text)
        return (0, c.compiled_autograd_id or -1, c.frame_id, c.frame_compile_id)
    except ValueError:
        return (1, 0, 0, 0)


def _log_bins(vals: list[float]) -> list[float]:
    """Bin edges spaced evenly in log from the smallest value to the largest, the width by the
    Freedman-Diaconis rule on the logs (2 IQR / n^(1/3)), 5 to 80 bins: the bulk of the blocks
    gets several bars even when one slow block stretches the axis a hundredfold."""
    lo, hi = min(vals), max(vals)
    if not hi > lo:
        lo, hi = lo * 0.95, hi * 1.05
    logs = sorted(math.log10(v) for v in vals)
    n = len(logs)
    iqr = logs[(3 * n) // 4] - logs[n // 4] if n >= 4 else 0.0
    span = math.log10(hi / lo)
    count = math.ceil(span / (2 * iqr / n ** (1 / 3))) if iqr > 0 else 10
    count = max(5, min(80, count))
    return [lo * (hi / lo) ** (i / count) for i in range(count + 1)]


def fig_runs(r: "CompileReport"):
    """The run time per call of each timed block (compiled, and eager beside it), on a log
    time axis with log-spaced bins: one slow block then no longer squeezes the others into
    one bar. The y axis counts what was timed: blocks of ``run_block_calls`` calls (or calls)."""
    st = r.profile.steady
    e = r.profile.eager
    fig, (ax,) = _stack_axes(7, 0.7, 0.3, [2.2])
    comp = [t * 1e3 for t in st.run_times_s]
    eager = [t * 1e3 for t in e.run_times_s] if e is not None and e.run_times_s else []
    vals = [v for v in comp + eager if v > 0] or [1e-6]
    bins = _log_bins(vals)
    ax.hist(comp, bins=bins, alpha=0.7, histtype="stepfilled", color="#4c78a8",
            label=f"compiled (median {fmt_seconds(st.run_median_s)})")
    if eager:
        ax.hist(eager, bins=bins, alpha=0.6, histtype="stepfilled", color="#f58518",
                label=f"eager (median {fmt_seconds(e.run_median_s)})")
    if st.run_median_s is not None:
        ax.axvline(st.run_median_s * 1e3, color="#1f3f66", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("ms per call (log scale; each block's time over its calls)", fontsize=8)
    unit = f"blocks of {st.run_block_calls} calls" if st.run_block_calls else "timed calls"
    ax.set_ylabel(unit, fontsize=8)
    what = f"{len(comp)} {unit}"
    ax.set_title(f"run time per call, {what}" + (f" (eager: {len(eager)} blocks)" if eager else ""), fontsize=10)
    ax.legend(fontsize=8)
    ax.tick_params(labelsize=8)
    return fig


def fig_memory(r: "CompileReport"):
    p = r.profile
    e = p.eager
    groups = []  # (label, [(bar label, bytes)])
    dev = [("compile", p.first_call.peak_device_bytes), ("steady state", p.steady.peak_device_bytes)]
    host = [("compile", p.first_call.peak_host_bytes), ("steady state", p.steady.peak_host_bytes)]
    if e is not None:
        dev.append(("eager", e.peak_device_bytes))
        host.append(("eager", e.peak_host_bytes))
    for name, bars in (("device", dev), ("host", host)):
        bars = [(b, v) for b, v in bars if v is not None]
        if bars:
            groups.append((name, bars))
    fig, axes = _stack_axes(7, 1.2, 0.9, [0.3 * len(b) for _, b in groups])
    colors = {"compile": "#f58518", "steady state": "#4c78a8", "eager": "#bab0ac"}
    for ax, (name, bars) in zip(axes, groups):
        bars = bars[::-1]
        labels = [b for b, _ in bars]
        vals = [v / 2**20 for _, v in bars]
        ax.barh(labels, vals, color=[colors[b] for b in labels])
        for y, (v, (_, raw)) in enumerate(zip(vals, bars)):
            ax.text(v, y, " " + fmt_bytes(raw), va="center", fontsize=8)
        ax.set_title(f"peak {name} memory: compiled (first call, steady state)" + (" vs eager" if e is not None else ""), fontsize=10)
        ax.set_xlabel("MiB", fontsize=8)
        ax.tick_params(labelsize=8)
    return fig


def fig_memory_timeline(r: "CompileReport"):
    """Allocated CUDA memory over each recorded call (--memory-timeline), the peak annotated."""
    timelines = r.profile.memory.timelines
    fig, axes = _stack_axes(7.5, 0.8, 0.3, [2.0] * len(timelines))
    for ax, tl in zip(axes, timelines):
        scale = 1e3 if tl.time_unit == "us" else 1.0
        xs = [t / scale for t in tl.times_us]
        ys = [b / 2**20 for b in tl.allocated_bytes]
        ax.step(xs, ys, where="post", color="#4c78a8", linewidth=1)
        ax.fill_between(xs, ys, step="post", alpha=0.25, color="#4c78a8")
        ax.axhline(tl.baseline_bytes / 2**20, color="#bab0ac", linestyle=":", linewidth=1)
        px, py = tl.peak_time_us / scale, tl.peak_bytes / 2**20
        ax.plot([px], [py], marker="v", color="#e45756")
        top = tl.top_at_peak[0] if tl.top_at_peak else None
        where = ""
        if top is not None and top.frame.filename:
            where = f"\nlargest live: {fmt_bytes(top.size_bytes)} from {r.where(top.frame.filename, top.frame.lineno)}"
        right = bool(xs) and px > (xs[0] + xs[-1]) / 2  # keep the label inside the axes
        ax.annotate(f"peak {fmt_bytes(tl.peak_bytes)}{where}", (px, py), textcoords="offset points",
                    xytext=(-8 if right else 8, 2), fontsize=8, va="bottom", ha="right" if right else "left",
                    color="#8b1e1e")
        ax.set_ylim(0, max(ys + [1e-6]) * 1.45)
        ax.set_xlabel("ms since the call started" if tl.time_unit == "us" else "allocator event", fontsize=8)
        ax.set_ylabel("allocated MiB", fontsize=8)
        ax.set_title(f"{tl.label}: CUDA memory allocated (before it: {fmt_bytes(tl.baseline_bytes)}, dotted)"
                     + (" [history truncated]" if tl.truncated else ""), fontsize=10)
        ax.tick_params(labelsize=8)
    return fig


def _short_kernel_name(name: str, width: int = 34) -> str:
    """A kernel's name as the Kernels table shows it, cut to ``width`` characters with an ellipsis."""
    return name if len(name) <= width else name[: width - 1] + "…"


def fig_roofline(roof, top: int = 5):
    """The roofline (:func:`ipycompile.analysis.roofline.roofline`): arithmetic intensity against
    achieved FLOP/s, log-log, the memory roof and one compute roof per dtype present, one point
    per kernel sized by its share of the kernel time, the ``top`` longest labelled with their
    kernel's name (as the Kernels table names it; several kernels often share one user line, so
    the line would not tell them apart). Kernels with no FLOPs counted sit at the left edge.
    Laid out with ``tight_layout``, the left margin widened where the y label would still be cut off."""
    peak = roof.peak
    rows = [x for x in roof.rows if x.bytes_s is not None and x.time.total_s > 0]
    fig = _new_figure(6.4, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    total = sum(x.time.total_s for x in rows) or 1.0
    floor = min([x.intensity for x in rows if x.intensity] + [0.05]) / 4
    xs = [x.intensity if x.intensity else floor for x in rows]
    # no FLOPs counted: plot the memory side as the "FLOP/s" it would take at 1 FLOP/byte's scale (bandwidth * floor)
    ys = [x.flops_s if x.flops_s else x.bytes_s * floor for x in rows]
    colors = {"memory-bound": "#4c78a8", "compute-bound": "#e45756", "latency-bound": "#bab0ac", "": "#72b7b2"}
    ax.scatter(xs, ys, s=[20 + 600 * x.time.total_s / total for x in rows],
               c=[colors.get(x.verdict, "#72b7b2") for x in rows], alpha=0.75, edgecolors="black", linewidths=0.4)
    lo = min(xs + [floor]) / 2
    hi = max(xs + [10.0]) * 4
    if peak is not None:
        for dtype in sorted({x.dtype or "float32" for x in rows}):
            pf = peak.flops_for(dtype)
            ridge = pf / peak.dram_bytes_s
            grid = [lo * (hi / lo) ** (i / 60) for i in range(61)]
            ax.plot(grid, [min(pf, g * peak.dram_bytes_s) for g in grid], lw=1.2, color="black")
            ax.annotate(f"{dtype} {pf / 1e12:.0f} TFLOP/s", (ridge, pf), fontsize=6.5, ha="right", va="bottom",
                        xytext=(-2, 2), textcoords="offset points")
            ax.axvline(ridge, lw=0.5, ls=":", color="gray")
        ax.annotate(f"HBM {peak.dram_bytes_s / 1e12:.2f} TB/s", (lo * 1.5, lo * 1.5 * peak.dram_bytes_s), fontsize=7,
                    xytext=(0, 8), textcoords="offset points", va="bottom")
    order = sorted(range(len(rows)), key=lambda i: -rows[i].time.total_s)[:top]
    mid = (lo * hi) ** 0.5
    side = {True: 0, False: 0}
    for n, i in enumerate(order):  # labels staggered downwards, to the left of points on the right half
        text = _short_kernel_name(rows[i].time.name)
        right = xs[i] > mid
        k = side[right]
        side[right] += 1
        ax.annotate(f"{n + 1}. {text}", (xs[i], ys[i]), fontsize=6,
                    xytext=(0.97, 0.62 - 0.065 * k) if right else (0.16, 0.42 - 0.065 * k),
                    textcoords="axes fraction", ha="right" if right else "left", va="center",
                    arrowprops=dict(arrowstyle="-", lw=0.4, color="gray"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte; kernels with no FLOPs at the left edge)", fontsize=8)
    ax.set_ylabel("achieved FLOP/s", fontsize=8)
    name = peak.name if peak is not None else (roof.device or "unknown device") + " (unknown peak: no roofs)"
    ax.set_title(f"Roofline: {name} (point size: share of kernel time)", fontsize=8, loc="left")
    ax.tick_params(labelsize=7)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="", color=c, label=v) for v, c in colors.items() if v and
               any(x.verdict == v for x in rows)]
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if not math.isfinite(hi):
        ax.set_xlim(auto=True)
    fig.tight_layout(pad=0.4)
    _keep_inside(fig, ax.yaxis.label)
    return fig


def _keep_inside(fig, label, pad_px: float = 3.0) -> None:
    """Widen the left margin until ``label`` (the y label) is inside the figure: ``tight_layout``, with
    a legend outside the axes, can leave it past the left edge beside wide tick labels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    for _ in range(3):
        fig.draw_without_rendering()  # the label's place is set when the figure is drawn
        x0 = label.get_window_extent(renderer).x0
        if x0 >= pad_px:
            return
        fig.subplots_adjust(left=min(0.5, fig.subplotpars.left + (pad_px - x0) / fig.bbox.width))
