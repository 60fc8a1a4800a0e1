"""The report's figures read right at a glance (issue 29 §2): inspected as matplotlib
Figure objects (labels, scales, bars, text artists), not pixels."""

from __future__ import annotations

import torch

import ipycompile
from ipycompile.views.figures import fig_runs


def _tallest(ax) -> float:
    """The tallest bar of a step-filled histogram: the highest vertex of its polygons."""
    return max(float(p.get_xy()[:, 1].max()) for p in ax.patches)


def test_run_histogram_counts_blocks_on_a_log_axis_that_spreads_one_slow_block():
    run = ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(64)}, backend="eager", runs=5, record=False)
    st = run.report.profile.steady
    assert st.run_block_calls > 0
    fig = fig_runs(run.report)
    ax = fig.axes[0]
    assert ax.get_ylabel() == f"blocks of {st.run_block_calls} calls"  # what is counted, not "calls"
    assert ax.get_xscale() == "log"
    # the shape the issue saw: 99 blocks near 22 us and one at 2 ms; a linear 30-bin axis put
    # all 99 in one bar. Log-spaced bins spread them over several.
    st.run_times_s = [22e-6 * (1 + 0.01 * (i % 20)) for i in range(99)] + [2e-3]
    st.run_median_s = sorted(st.run_times_s)[50]
    ax = fig_runs(run.report).axes[0]
    assert _tallest(ax) < 99 and ax.get_xscale() == "log"
    lo, hi = ax.get_xlim()
    assert lo <= 0.022 and hi >= 2.0  # ms: both ends shown


def test_roofline_labels_points_by_kernel_name_and_keeps_its_axis_labels_inside():
    """A CPU MLP written as ``y = lin(xx)``: every kernel's user line is that one line, which
    labelled every point alike; now each labelled point names its kernel, and the y label is
    not cut off at the figure's left edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ipycompile.analysis.roofline import roofline
    from ipycompile.views.figures import fig_roofline

    lin = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
    ns = {"lin": lin, "xx": torch.randn(64, 128)}
    run = ipycompile.run_cell("y = lin(xx)\ny", ns, profile_kernels=True, fresh=True, runs=2, record=False)
    roof = roofline(run.report)
    fig = fig_roofline(roof)
    FigureCanvasAgg(fig)
    ax = fig.axes[0]
    notes = [t.get_text() for t in ax.texts if t.get_text()[:1].isdigit() and ". " in t.get_text()]
    assert len(notes) >= 2
    names = {x.time.name for x in roof.rows}
    assert all(n.split(". ", 1)[1].rstrip("…") and any(m.startswith(n.split(". ", 1)[1].rstrip("…")) for m in names)
               for n in notes), notes
    assert len(set(notes)) == len(notes) and not any("lin(xx)" in n for n in notes)
    renderer = fig.canvas.get_renderer()
    fb = fig.bbox
    for label in (ax.yaxis.label, ax.xaxis.label, ax.title):
        bb = label.get_window_extent(renderer)
        assert fb.x0 <= bb.x0 and bb.x1 <= fb.x1 + 0.5 and fb.y0 <= bb.y0 and bb.y1 <= fb.y1 + 0.5, (label.get_text(), bb, fb)


def test_kernels_table_shows_a_dash_not_zero_where_no_flops_were_counted():
    """On the CPU the fused pointwise kernel has no FLOPs counted: its GFLOP/launch and TFLOP/s
    read "—" (not estimated); the matmul's are numbers."""
    from ipycompile.views.tabs import kernels_tab

    a, w = torch.randn(64, 128), torch.randn(128, 256)
    run = ipycompile.run_cell("torch.relu(a @ w) * 2", {"a": a, "w": w, "torch": torch}, profile_kernels=True,
                              fresh=True, runs=2, record=False)
    table = next(b for b in kernels_tab(run.report) if type(b).__name__ == "Table")
    g, t = table.columns.index("GFLOP/launch"), table.columns.index("TFLOP/s")
    rows = {row[0]: row for row in table.rows}
    mm = rows["extern_kernels.mm"]
    assert mm[g] == float(f"{2 * 64 * 128 * 256 / 1e9:.3g}") and mm[t] > 0
    (cpp,) = [row for name, row in rows.items() if name.startswith("cpp_")]
    assert cpp[g] == "—" and cpp[t] == "—"


def test_host_memory_is_what_the_cell_added_over_the_process_before_it():
    """A cell that makes a 64 MiB tensor: its own peak is at least that and far below the
    process's RSS (torch alone is hundreds of MiB); the summary says what the figure is, the
    absolute RSS stays in the record, the history has the column, and its plot starts at 0."""
    from ipycompile.report import CompileReport

    ipycompile.clear_history()
    run = ipycompile.run_cell("(torch.ones(16 * 2**20) * 2).sum()", {"torch": torch}, backend="eager", runs=2,
                              record=False)
    p = run.report.profile
    before = p.memory.host_before_bytes
    assert before is not None and before > 0
    added = p.peak_host_added_bytes
    assert added >= 64 * 2**20 and added == p.peak_host_bytes - before < p.peak_host_bytes
    from ipycompile.views.viewmodel import view_model

    chip = view_model(run.report).chip("host_memory")
    assert chip.value == added and chip.text.startswith("host +") and "before the cell" in chip.text
    assert CompileReport.from_dict(run.report.to_dict()).profile.memory.host_before_bytes == before
    for n in (1, 2):
        ipycompile.run.history_log.record(run.report, n=n)
    df = ipycompile.history()
    assert list(df["peak_host_added_bytes"]) == [added, added]
    fig = ipycompile.plot_history(df, "peak_host_added_bytes", x="n")
    assert fig.axes[0].get_ylim()[0] == 0 and fig.axes[0].get_ylabel() == "peak_host_added_bytes (MiB)"
    ipycompile.clear_history()


def test_a_y_label_tight_layout_left_outside_is_brought_inside():
    """Beside tick labels of many decades, tight_layout can leave the roofline's y label past the left edge
    (seen in the suite under xdist); the figure widens its left margin until the label is inside."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ipycompile.views.figures import _keep_inside

    fig = Figure(figsize=(6.4, 3.6), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_yscale("log")
    ax.set_ylim(1e3, 1e15)
    ax.set_ylabel("achieved FLOP/s")
    fig.subplots_adjust(left=0.02)
    FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    assert ax.yaxis.label.get_window_extent(renderer).x0 < 0  # the case: outside
    _keep_inside(fig, ax.yaxis.label)
    fig.draw_without_rendering()
    assert ax.yaxis.label.get_window_extent(renderer).x0 >= 0


# -- the compile-time figure: SVG written by ipycompile ------------------------------------------
def _svg_tree(img):
    import xml.etree.ElementTree as ET

    return ET.fromstring(img.markup)  # well-formed XML, or this raises


def _tag(e) -> str:
    return e.tag.rsplit("}", 1)[-1]


def test_the_phase_chart_is_svg_with_a_bar_and_its_time_per_phase_and_a_lane_per_compile():
    """Read from a recorded H100 log: one bar per phase (in the report's order, its length
    proportional to its seconds, its time beside it), a round axis that reaches past the longest,
    a lane per compile of the timeline and the most costly steps in the legend; text in the colour
    of the text around it (both themes)."""
    from tracefile import gpu_records

    from ipycompile.report.text import fmt_seconds
    from ipycompile.views.figures import fig_phases
    from ipycompile.views.svg import SvgImage

    r = ipycompile.build_report(gpu_records("quickstart"))
    img = fig_phases(r)
    assert isinstance(img, SvgImage) and img.markup.startswith("<svg")
    import xml.etree.ElementTree as ET

    assert _tag(ET.fromstring(img._repr_svg_())) == "svg"  # a document of its own, for a notebook
    root = _svg_tree(img)
    assert root.get("fill") == "currentColor" and root.get("role") == "img"
    texts = [e for e in root.iter() if _tag(e) == "text"]
    assert all(e.get("fill") is None for e in texts)  # every text takes the host's text colour
    phases = [p for p in r.compile_time.phases if p.seconds > 0]
    bars = [e for e in root.iter() if _tag(e) == "rect" and any(
        _tag(c) == "title" and c.text.split(":")[0] in {p.name for p in phases} for c in e)]
    assert [b[0].text for b in bars] == [f"{p.name}: {fmt_seconds(p.seconds)}" for p in phases]
    widths = [float(b.get("width")) for b in bars]
    longest = max(range(len(phases)), key=lambda i: phases[i].seconds)
    for w, p in zip(widths, phases):  # lengths in proportion (to a tenth of a pixel)
        assert abs(w - widths[longest] * p.seconds / phases[longest].seconds) <= 0.2
    labels = [e.text for e in texts if e.get("class") == "label"]
    values = [e.text for e in texts if e.get("class") == "value"]
    assert labels[:len(phases)] == [p.name for p in phases]
    assert values == [fmt_seconds(p.seconds) for p in phases]
    axis = [float(e.text) for e in texts if e.get("font-size") == "10" and e.get("class") is None]
    first_axis = axis[: axis.index(0.0, 1)] if 0.0 in axis[1:] else axis
    assert first_axis == sorted(first_axis) and first_axis[-1] >= phases[longest].seconds
    compiles = {str(e.get("compile_id")) for e in r.compile_time.events if e.get("depth", 0) <= 3
                and isinstance(e.get("dur_us"), (int, float))}
    lanes = labels[len(phases):]
    assert set(lanes) <= {f"compile {c}" for c in compiles} and len(set(lanes)) == len(lanes) == min(24, len(compiles))
    legend = [e.text for e in texts if e.get("class") == "legend"]
    assert legend and legend[0] == max(
        {str(e.get("name")) for e in r.compile_time.events if e.get("depth", 0) <= 3},
        key=lambda n: sum(e["dur_us"] for e in r.compile_time.events
                          if e.get("depth", 0) <= 3 and str(e.get("name")) == n))


def test_the_phase_chart_escapes_what_the_log_names():
    from tracefile import gpu_records

    from ipycompile.views.figures import fig_phases

    r = ipycompile.build_report(gpu_records("quickstart"))
    evil = '<script>alert("x")</script>&'
    for e in r.compile_time.events:
        e["name"] = evil
    img = fig_phases(r)
    assert "<script>" not in img.markup
    root = _svg_tree(img)
    assert evil in [e.text for e in root.iter() if _tag(e) == "text"]  # read back as it was


def test_the_phase_chart_of_a_report_without_compile_time_says_so():
    from ipycompile.report import CompileReport
    from ipycompile.views.figures import fig_phases

    img = fig_phases(CompileReport())
    assert "no compile-time data" in img.markup
    _svg_tree(img)
