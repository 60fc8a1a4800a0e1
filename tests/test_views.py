"""The report views: one view-model (plain data) and its static HTML rendering,
checked on real reports (CPU scenarios, H100 trace logs, a profiled run_cell)."""

from __future__ import annotations

import copy
import functools
import re
import subprocess
import sys

import pytest
import torch

import ipycompile
from ipycompile import CompileReport, build_report
from ipycompile.report import EagerComparison
from ipycompile.views import html as html_view
from ipycompile.views.viewmodel import (
    TAB_KEYS,
    Choice,
    Code,
    Figure,
    Table,
    Text,
    TreeNode,
    gb_url,
    sort_rows,
    view_model,
)
from scenarios import captured, line_of
from tracefile import gpu_records

GPU = ("quickstart", "max_autotune", "reduce_overhead")
CPU = ("inductor", "inductor_training", "control_flow", "recompiles", "recompile_limit", "break:helper", "fullgraph_failure")
CELL = "<ipycompile-test-views-cell>"
CELL_SOURCE = "y = x * 2\nif y.sum() > 0:\n    y = y + 1\ny.cos()"


@functools.cache
def report(name: str) -> CompileReport:
    if name in GPU:
        return build_report(gpu_records(name))
    if name == "run_cell":
        torch.manual_seed(0)
        run = ipycompile.run_cell(CELL_SOURCE, {"x": torch.rand(64) + 0.1}, backend="eager", runs=5,
                                  compare_eager=True, record=False, filename=CELL, sources={CELL: "In [3]"})
        return run.report
    return captured(name).report


@functools.cache
def page(name: str) -> str:
    return html_view.render_html(report(name))


ALL = GPU + CPU + ("run_cell",)


def walk(blocks):
    """Every block, depth first (table details, tree children, choice options included)."""
    for b in blocks:
        yield b
        if isinstance(b, Table) and b.details:
            for d in b.details:
                yield from walk(d)
        elif isinstance(b, TreeNode):
            yield from walk(b.blocks)
            yield from walk(b.children)
        elif isinstance(b, Choice):
            for opts in b.options.values():
                yield from walk(opts)


def tab_blocks(name: str, key: str):
    return view_model(report(name)).tab(key).blocks()


def table(name: str, key: str) -> Table:
    return next(b for b in tab_blocks(name, key) if isinstance(b, Table))


# -- the view-model -------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_view_model_has_every_tab_of_plain_blocks(name):
    vm = view_model(report(name))
    assert tuple(t.key for t in vm.tabs) == TAB_KEYS
    assert [t.title.split(" (")[0] for t in vm.tabs] == [
        "Summary", "Graph breaks", "Recompiles", "Graphs", "Kernels", "Control flow", "Profile", "Guards"]
    for tab in vm.tabs:
        blocks = tab.blocks()
        assert blocks and tab.blocks() is blocks  # built once
        for b in walk(blocks):
            assert isinstance(b, (Text, Table, Code, Figure, TreeNode, Choice)), b
            if isinstance(b, Table):
                assert all(len(row) == len(b.columns) for row in b.rows)
                assert all(isinstance(c, (str, int, float)) for row in b.rows for c in row), b.rows
                assert b.details is None or len(b.details) == len(b.rows)
            if isinstance(b, Code):
                assert b.language in ("python", "cpp", "text")


def test_view_model_imports_no_notebook_or_plotting_module():
    code = ("import sys, ipycompile.views.viewmodel, ipycompile.views.html; "
            "print([m for m in ('IPython', 'ipywidgets', 'matplotlib', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


EXPECTED = {  # name: graphs, graph breaks, recompiles, kernels (generated, extern), failures
    "quickstart": (4, 2, 2, (20, 8), 0),
    "max_autotune": (1, 0, 0, (2, 0), 0),
    "reduce_overhead": (3, 1, 0, (3, 1), 0),
    "recompiles": (4, 0, 3, (0, 0), 0),
    "recompile_limit": (2, 0, 2, (0, 0), 1),
    "fullgraph_failure": (0, 0, 0, (0, 0), 1),
}


@pytest.mark.parametrize("name", ALL)
def test_header_chips_count_and_warn(name):
    r = report(name)
    vm = view_model(r)
    chip = vm.chip
    graphs = sum(1 for g in r.graphs if g.stage == "dynamo")
    generated = sum(1 for k in r.kernels if k.backend != "extern")
    assert chip("graphs").value == graphs and chip("graphs").text.startswith(f"{graphs} graph")
    assert chip("graph_breaks").value == r.graph_break_count
    assert chip("graph_breaks").warn == (r.graph_break_count > 0)
    assert chip("recompiles").value == len(r.recompiles) and chip("recompiles").warn == bool(r.recompiles)
    assert chip("kernels").text.endswith(f"({generated} generated / {len(r.kernels) - generated} extern)")
    assert (chip("failures") is not None) == bool(r.failures)
    if r.failures:
        assert chip("failures").warn and chip("failures").value == len(r.failures)
    assert chip("compile_time") is not None
    if name in EXPECTED:
        g, b, rc, (gen, ext), f = EXPECTED[name]
        assert (chip("graphs").value, chip("graph_breaks").value, chip("recompiles").value) == (g, b, rc)
        assert chip("kernels").text == f"{gen + ext} kernel{'s' if gen + ext != 1 else ''} ({gen} generated / {ext} extern)"
        assert (chip("failures").value if f else 0) == f
    if name == "recompile_limit":
        assert "limit hit" in chip("recompiles").text


def test_header_with_a_profile_shows_run_time_speedup_break_even_and_memory():
    r = report("run_cell")
    p = r.profile
    vm = view_model(r)
    assert vm.chip("run_time").value == p.steady.run_median_s
    assert vm.chip("compile_time").value == p.first_call.compile_s and vm.chip("compile_time").text.startswith("first call")
    assert vm.chip("speedup").value == pytest.approx(p.eager.speedup)
    assert vm.chip("break_even") is not None
    assert vm.chip("host_memory").value == p.peak_host_added_bytes  # the cell's own, over the RSS before it
    assert vm.chip("speedup").warn == (p.eager.speedup < 1 or bool(p.noisy("speedup vs eager")))
    # a compiled cell slower than eager warns; one that never breaks even says so
    slow = copy.deepcopy(r)
    slow.profile.noise = []  # a quiet run (the fixture's may have been measured on a busy machine)
    slow.profile.eager = EagerComparison(run_median_s=p.steady.run_median_s / 2, speedup=0.5, break_even_calls=None)
    vm = view_model(slow)
    assert vm.chip("speedup").warn and vm.chip("speedup").text == "0.50x vs eager"
    assert vm.chip("break_even").warn and vm.chip("break_even").text == "never breaks even"
    fast = copy.deepcopy(r)
    fast.profile.noise = []
    fast.profile.eager = EagerComparison(run_median_s=p.steady.run_median_s * 3, speedup=3.0, break_even_calls=40)
    vm = view_model(fast)
    assert not vm.chip("speedup").warn and vm.chip("break_even").text == "break-even after 40 calls"
    # a noisy speedup says so, in the chips and the summary, with what was noisy
    fast.profile.noise = ["speedup vs eager: the pairs disagree (95 % interval 1.10x to 9.00x over 12 pairs, ...)"]
    fast.profile.eager.speedup_ci95, fast.profile.eager.pairs = [1.1, 9.0], 12
    vm = view_model(fast)
    assert vm.chip("speedup").warn and vm.chip("speedup").text == "3.00x vs eager [1.10x, 9.00x] (noisy)"
    assert vm.chip("speedup").tooltip.startswith("speedup vs eager: the pairs disagree")
    assert vm.chip("break_even").text == "break-even after 40 calls (noisy)"
    text = fast.summary()
    assert "3.00x [1.10x, 9.00x over 12 pairs] NOISY speedup" in text and "noisy: speedup vs eager: the pairs" in text


# -- Graph breaks -------------------------------------------------------------------
def test_graph_break_rows_name_the_cell_line_and_show_its_source():
    t = table("run_cell", "graph_breaks")
    (row,) = t.rows
    assert row[t.columns.index("where torch stopped")] == "In [3], line 2"
    assert row[t.columns.index("reached from")] == ""  # the break is in the cell itself: one place
    assert row[t.columns.index("code")] == "if y.sum() > 0:"
    assert row[t.columns.index("GB")] == "GB0170" and row[t.columns.index("count")] == 1
    (details,) = t.details
    src = next(b for b in details if isinstance(b, Code))
    assert src.language == "python" and src.title == "where torch stopped: In [3], line 2"
    assert "> 2 | if y.sum() > 0:" in src.code and "  1 | y = x * 2" in src.code  # the cell, line marked
    links = [b for b in details if isinstance(b, Text) and b.url]
    assert [b.url for b in links] == ["https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"]
    assert any(isinstance(b, Text) and b.text.startswith("torch's hint: ") for b in details)
    assert any(isinstance(b, Text) and "data-dependent" in b.text.lower() for b in details)  # the explanation


def test_graph_breaks_in_a_file_and_in_a_trace_from_another_machine(tmp_path):
    t = table("break:helper", "graph_breaks")
    wheres = [row[0] for row in t.rows]
    assert f"scenarios.py:{line_of('helper-if')}" in wheres
    i = wheres.index(f"scenarios.py:{line_of('helper-if')}")
    src = next(b for b in t.details[i] if isinstance(b, Code))
    assert f"> {line_of('helper-if')} | " in src.code and "return x.cos()" in src.code  # read through linecache
    # the GPU trace's file is not on this machine (a path this test controls): the line torch recorded stands in
    absent = tmp_path / "not here" / "gpu_traces.py"
    t = next(b for b in view_model(_gpu_report_at(str(absent))).tab("graph_breaks").blocks() if isinstance(b, Table))
    (row,) = t.rows
    assert row[0] == "gpu_traces.py:17" and row[t.columns.index("count")] == 2
    src = next(b for b in t.details[0] if isinstance(b, Code))
    assert src.code.startswith("> 17 | if h.mean() > 0:")
    assert gb_url("GB0124").endswith("/gb/gb0124.html")


GPU_SCRIPT = "/work/steering/probe/gpu_traces.py"  # where the H100 quickstart trace was recorded


def _gpu_report_at(path: str) -> CompileReport:
    """The H100 quickstart trace, as if its script had been recorded at ``path``."""
    import json

    records = [(json.loads(json.dumps(meta).replace(GPU_SCRIPT, path)), payload and payload.replace(GPU_SCRIPT, path))
               for meta, payload in gpu_records("quickstart")]
    return build_report(records)


def _break_excerpt(r: CompileReport) -> tuple[str, list[str]]:
    t = view_model(r).tab("graph_breaks").blocks()[1]
    det = t.details[0]
    code = next(b.code for b in det if isinstance(b, Code))
    notes = [b.text for b in det if isinstance(b, Text) and b.kind == "note" and "hint" not in b.text.lower()[:14]]
    return code, notes


@pytest.mark.parametrize("content", ["other", "same"])
def test_a_local_file_at_a_traces_path_is_shown_only_when_it_matches_what_torch_recorded(tmp_path, content):
    """A trace from another machine names a path that holds a different file here (a later
    version of the script): the view must not show that file's lines at the recorded line."""
    path = str(tmp_path / "gpu_traces.py")
    r = _gpu_report_at(path)
    (b,) = r.graph_breaks
    recorded = b.frame.source_line.strip()
    assert b.frame.filename == path and b.frame.lineno == 17 and recorded.startswith("if h.mean() > 0:")
    lines = [f"# line {i}" for i in range(1, 30)]
    if content == "same":
        lines[16] = "        " + recorded  # torch recorded this line at 17: the file is the one that ran
    else:
        lines[16] = "        return self.head(h)  # the script was edited since the trace was recorded"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    import linecache

    linecache.checkcache(path)
    code, notes = _break_excerpt(r)
    if content == "same":
        assert f"> 17 |         {recorded}" in code and "  14 | # line 14" in code and not notes
    else:
        assert code == f"> 17 | {recorded}" and "# line" not in code and "return self.head" not in code
        assert notes == [f"{path} on this machine does not match what torch recorded at line 17: showing the recorded line."]
    page = html_view.render_html(r)
    assert ("return self.head" in page) is False


@pytest.mark.parametrize("content", ["other", "same"])
def test_the_report_keeps_source_only_from_a_file_that_matches_what_torch_recorded(tmp_path, content):
    """The source kept in the report at capture (source_context, which the doctor and the
    views read later, anywhere) follows the same rule as the views."""
    import linecache

    from ipycompile.capture.kept_source import source_context

    path = str(tmp_path / "gpu_traces.py")
    r = _gpu_report_at(path)
    recorded = r.graph_breaks[0].frame.source_line.strip()
    frames = [f for b in r.graph_breaks for f in (b.frame, b.break_frame, *b.user_stack) if f.filename == path]
    lines = [f"# line {i}" for i in range(1, 1 + max(f.lineno for f in frames))]
    for f in frames:  # the script as it was: every line torch recorded of it
        lines[f.lineno - 1] = "    " + f.source_line.strip()
    if content == "other":
        lines[16] = "        return self.head(h)  # edited since"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    linecache.checkcache(path)
    spans = [sp for sp in source_context(r) if sp.filename == path]
    if content == "same":
        assert spans and any(recorded in line for sp in spans for line in sp.lines)
    else:
        assert spans == []


def test_a_missing_file_says_so_and_shows_the_recorded_line(tmp_path):
    code, notes = _break_excerpt(_gpu_report_at(str(tmp_path / "absent.py")))
    assert code.startswith("> 17 | if h.mean() > 0:")
    assert notes == [f"{tmp_path / 'absent.py'} is not available on this machine: showing the line torch recorded."]


def test_cell_files_are_content_addressed_so_their_source_is_shown_without_a_recorded_line(tmp_path):
    from ipycompile.views.excerpts import is_cell_file, source_excerpt
    import linecache

    cell = "/tmp/ipykernel_4242/1234567.py"
    linecache.cache[cell] = (30, None, ["a = 1\n", "b = a + 1\n", "c = b * 2\n"], cell)
    try:
        assert is_cell_file(cell) and is_cell_file("<ipython-input-3-0a1b2c3d4e5f>") and not is_cell_file(str(tmp_path / "x.py"))
        ex = source_excerpt(cell, 2)
        assert ex.local and ex.code.splitlines()[1] == "> 2 | b = a + 1"
        other = str(tmp_path / "script.py")  # a plain file with no recorded line: not shown
        linecache.cache[other] = (30, None, ["a = 1\n", "b = a + 1\n"], other)
        ex = source_excerpt(other, 2)
        assert not ex.code and "torch recorded no source line" in ex.note
    finally:
        linecache.cache.pop(cell, None)
        linecache.cache.pop(str(tmp_path / "script.py"), None)


# -- Recompiles ------------------------------------------------------------------------
def test_recompiles_show_each_compile_with_the_guard_failures_that_caused_it():
    (node,) = tab_blocks("recompiles", "recompiles")
    assert node.label.startswith("scaled (scenarios.py:") and "4 compiles, 3 recompiles" in node.label
    t = next(b for b in node.blocks if isinstance(b, Table))
    assert [row[0] for row in t.rows] == ["0/0", "0/1", "0/2", "0/3"]
    assert t.rows[0][2].startswith("first compile")
    assert t.rows[1][2] == "tensor 'x' size mismatch at index 0. expected 8, actual 16"
    assert "dtype mismatch" in t.rows[2][2] and t.rows[2][3] == "0/1, 0/0"
    texts = [b.text for b in walk(t.details[1]) if isinstance(b, Text)]
    assert "guards of compile 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16" in texts


def test_the_recompile_limit_is_one_problem_of_the_first_screen():
    r = report("recompile_limit")
    (limit,) = [rc for rc in r.recompiles if rc.limit_hit]
    assert [f.compile_id for f in r.failures] == [limit.compile_id]  # torch records it as a failed compile too
    probs = view_model(r).problems
    assert [p.kind for p in probs] == ["recompile"] and probs[0].title.startswith("Recompile limit hit: scaled")
    assert "Dynamo recompile limit exceeded" in r.summary()  # the failure is still in the Summary tab


def test_recompile_limit_is_marked():
    blocks = tab_blocks("recompile_limit", "recompiles")
    (node,) = blocks  # the limit compile (no function name in its event) joins its frame's group
    assert node.label.startswith("scaled ") and node.label.endswith(": recompile limit hit")
    warn = [b for b in node.blocks if isinstance(b, Text) and b.kind == "warn"]
    assert warn and "Recompile limit hit at compile 0/2" in warn[0].text
    t = next(b for b in node.blocks if isinstance(b, Table))
    assert t.rows[-1][0] == "0/2" and t.rows[-1][-1] == "LIMIT HIT"


# -- Graphs, kernels, guards --------------------------------------------------------------
def test_graphs_choice_has_every_stage_with_op_counts():
    blocks = tab_blocks("quickstart", "graphs")
    choice = next(b for b in blocks if isinstance(b, Choice))
    keys = list(choice.options)
    for stage in ("dynamo", "aot_forward", "aot_backward", "aot_joint", "pre_grad", "post_grad"):
        assert f"0/0 · {stage}" in keys, keys
    assert choice.default == "0/0 · dynamo"
    text, code = choice.options["0/0 · aot_backward"]
    g = report("quickstart").graphs_for("0/0", "aot_backward")[0]
    assert text.text.endswith(f": {g.op_count} ops") and code.code == g.code and code.language == "python"
    t = next(b for b in blocks if isinstance(b, Table))
    assert ["0/0", "aot_backward", g.op_count, g.code.count("\n") + 1] in t.rows
    assert any(k.endswith("· aot_inference") for k in next(b for b in tab_blocks("max_autotune", "graphs") if isinstance(b, Choice)).options)


def test_kernels_table_lists_triton_kinds_on_gpu_and_cpp_extern_on_cpu():
    kinds = set()
    for name in GPU:
        t = table(name, "kernels")
        assert t.sortable and t.columns[:6] == ["kernel", "backend", "kind", "fused ATen ops", "launches", "compile ms"]
        for row, details in zip(t.rows, t.details):
            kinds.add((row[1], row[2]))
            code = [b for b in details if isinstance(b, Code)]
            if row[1] == "triton":
                assert code and code[0].language == "python" and "@triton.jit" in code[0].code
                assert isinstance(row[5], float) and row[5] > 0  # compile time from triton_kernel_info
    assert {("triton", "pointwise"), ("triton", "template"), ("extern", "extern")} <= kinds
    assert ("triton", "reduction") in kinds or ("triton", "persistent_reduction") in kinds
    t = table("quickstart", "kernels")
    assert ["triton_red_fused_mean_1", "triton", "reduction", "aten.mean"] == t.rows[1][:4]
    for name in ("inductor", "inductor_training"):
        t = table(name, "kernels")
        backends = {row[1] for row in t.rows}
        assert backends == {"cpp", "extern"}, backends
        for row, details in zip(t.rows, t.details):
            if row[1] == "cpp":
                (code,) = [b for b in details if isinstance(b, Code)]
                assert code.language == "cpp" and code.title == row[0] and 'extern "C"' in code.code


def test_sort_rows_sorts_numbers_and_text_with_missing_last():
    t = Table(["name", "ms"], [["b", 2.5], ["a", ""], ["C", 10], ["d", 1]], sortable=True)
    assert sort_rows(t, 1) == [3, 0, 2, 1]
    assert sort_rows(t, 1, descending=True) == [2, 0, 3, 1]
    assert sort_rows(t, 0) == [1, 0, 2, 3]


def test_guards_tab_has_each_compiles_tree_with_counts():
    r = report("quickstart")
    blocks = tab_blocks("quickstart", "guards")
    codes = [b for b in blocks if isinstance(b, Code)]
    assert len(codes) == len(r.guards) and all(c.language == "text" for c in codes)
    g = min(r.guards, key=lambda g: g.compile_id)
    assert codes[0].title == f"compile {g.compile_id}: {g.count} guards" and codes[0].code == g.tree
    assert view_model(r).tab("guards").count == sum(g.count for g in r.guards)


# -- Control flow ----------------------------------------------------------------------
def test_control_flow_tree_nests_ops_in_the_subgraphs_that_call_them():
    blocks = tab_blocks("control_flow", "control_flow")
    nodes = [b for b in blocks if isinstance(b, TreeNode)]
    ops = [n.label.split(" ")[0] for n in nodes]
    assert {"cond", "while_loop", "scan", "map"} <= set(ops), ops

    def op(label):
        return next(n for n in nodes if n.label.split(" ")[0] == label)

    cond = op("cond")
    assert [c.label.split(":")[0] for c in cond.children] == ["true_fn", "false_fn"]
    assert all(isinstance(c.blocks[0], Code) and "class" in c.blocks[0].code for c in cond.children)
    assert re.search(r"\(\d+ ops?\)$", cond.children[0].label)
    body = next(c for c in op("while_loop").children if c.label.startswith("body_fn"))
    assert [k.label.split(" ")[0] for k in body.children] == ["cond"]  # the nested cond, inside body_fn
    combine = next(c for c in op("scan").children if c.label.startswith("combine_fn"))
    assert [k.label.split(" ")[0] for k in combine.children] == ["cond"]
    assert view_model(report("control_flow")).tab("control_flow").count == 7


# -- Profile ---------------------------------------------------------------------------
def test_profile_figures_build_for_a_profiled_run():
    from matplotlib.figure import Figure as MplFigure

    from ipycompile.views.svg import SvgImage

    blocks = tab_blocks("run_cell", "profile")
    figures = [b for b in blocks if isinstance(b, Figure)]
    assert [f.title for f in figures] == ["Compile time by phase", "Run-time distribution", "Peak memory"]
    phases = figures[0].build()  # SVG of our own: tests/test_figures.py reads its bars and labels
    assert isinstance(phases, SvgImage) and "by phase" in phases.markup
    for f in figures[1:]:
        fig = f.build()
        assert isinstance(fig, MplFigure) and fig.axes
    runs = figures[1].build().axes[0]
    assert "eager" in " ".join(t.get_text() for t in runs.get_legend().get_texts())
    t = next(b for b in blocks if isinstance(b, Table))
    fields = dict(t.rows)
    assert {"run time (median)", "latency (median)", "timing method", "runs", "speedup vs eager", "break-even", "settings", "torch"} <= set(fields)
    assert fields["runs"].startswith("5 after")


@pytest.mark.parametrize("name", ["quickstart", "inductor"])
def test_profile_without_a_run_shows_the_phase_chart(name):
    blocks = tab_blocks(name, "profile")
    (fig,) = [b for b in blocks if isinstance(b, Figure)]
    assert fig.title == "Compile time by phase"
    drawn = fig.build().markup  # phases and the event timeline
    assert "by phase" in drawn and "timeline (events nested" in drawn
    assert any(isinstance(b, Text) and b.kind == "note" for b in blocks)


# -- static HTML ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_html_is_self_contained_and_shows_the_same_facts(name):
    r, text = report(name), page(name)
    vm = view_model(r)
    # one script, the tabs' (without it every panel shows); no external request
    assert text.lower().count("<script") == 1 and html_view.TABS_SCRIPT in text
    assert 'src="http' not in text and "@import" not in text
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", text))
    hrefs = set(re.findall(r'href="([^"]+)"', text))
    anchors = {h for h in hrefs if h.startswith("#")}  # a problem's link to the tab with its details, on this page
    assert all(f'id="{a[1:]}"' in text for a in anchors), anchors
    hrefs -= anchors
    assert all(re.fullmatch(r"https://meta-pytorch\.github\.io/compile-graph-break-site/gb/gb\d+\.html", u) for u in hrefs), hrefs
    assert all(u in hrefs or u.startswith("https://docs.pytorch.org") or "compile-graph-break-site" in u for u in urls), urls
    assert '<figcaption>Compile time by phase</figcaption><svg' in text  # the phase chart, inline SVG
    for c in vm.header:
        assert f">{html_view._e(c.text)}</span>" in text
    for t in vm.tabs:  # every tab rendered: a tab in the tablist and its panel, under its heading
        assert f'data-tab="{t.key}"' in text and f">{html_view._e(t.title)}</button>" in text
        assert f">{html_view._e(t.title)}</h3>" in text
    assert text.count('role="tabpanel"') == text.count('role="tab" ') == len(TAB_KEYS)
    selected = re.findall(r'<button role="tab" id="[^"]+" aria-controls="[^"]+" data-tab="(\w+)" aria-selected="true"', text)
    assert selected == ["summary"]  # the first selected (the script sets the others)
    # the first screen comes first: every problem, in the view model's order, before any tab
    first, _, _ = text.partition('<div class="tabs">')
    at = [first.index(html_view._e(p.title)) for p in vm.problems]
    assert at == sorted(at) and (vm.problems or "Nothing to fix" in first)
    for k in r.kernels:
        assert html_view._e(k.name) in text
    for b in r.graph_breaks:
        assert html_view._e(r.where(b.frame.filename, b.frame.lineno)) in text
    if r.control_flow:
        assert "<summary>cond (compile" in text and "while_loop" in text
    assert text.count("<details") == text.count("</details>")
    assert text.count("<table") == text.count("</table>")


def test_html_graph_break_row_has_the_cell_line_and_its_code():
    text = page("run_cell")
    rows = re.findall(r"<tr\b[^>]*>(.*?)</tr>", text, re.S)
    assert any("In [3], line 2" in row and "if y.sum() &gt; 0:" in row for row in rows)
    assert 'href="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"' in text
    assert text.count('src="data:image/png;base64,') == 2  # run times, memory
    assert text.count('<svg class="ipyc-chart"') == 1  # phases


def test_html_escapes_everything():
    r = copy.deepcopy(report("break:helper"))
    evil = '<img src=x onerror="alert(1)">'
    b = r.graph_breaks[0]
    b.reason, b.frame.function, b.break_frame.function, b.hints = evil, evil, evil, [evil]
    r.graphs[0].code += f"\n# {evil}"
    r.guards[0].tree += evil
    text = html_view.render_html(r)
    assert evil not in text and not re.search(r'<img[^>]*onerror', text)
    assert text.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 3  # reason, function, hint
    assert text.count("&lt;img src=x onerror=") >= 5  # and in code: the guard tree, the graph, the text summary


def test_html_code_is_highlighted_and_long_code_stays_whole(monkeypatch):
    r = copy.deepcopy(report("quickstart"))
    text = html_view.render_html(r)
    assert '<pre class="hl"><span class="k">class</span>' in text  # pygments' classes, from one inline stylesheet
    # the report's own token colours, light or dark as JupyterLab's theme is (its editor colours are not AA:
    # tests/test_code_contrast.py)
    assert ".ipyc .hl [class^=k]" in text and 'body[data-jp-theme-light="false"]' in text
    assert "--jp-mirror-editor" not in text
    assert '<span class="nd">@triton</span>.jit' in text
    # past the page's budget, code is escaped only
    monkeypatch.setattr(html_view, "HIGHLIGHT_BUDGET", 0)
    plain = html_view.render_html(r)
    assert '<pre class="hl">class ' in plain and '<span class="k">' not in plain
    monkeypatch.undo()
    # past HIGHLIGHT_LINES, the rest of a block is shown whole, escaped, unhighlighted
    monkeypatch.setattr(html_view, "HIGHLIGHT_LINES", 3)
    code = "\n".join(f"x{i} = f(a < {i})" for i in range(10))
    out = html_view._highlight(code, "python", html_view._Page(html_view.FULL))
    head, _, tail = out.partition("x3 = ")
    assert '<span class="mi">2</span>' in head and "<span" not in tail
    assert tail.endswith("x9 = f(a &lt; 9)") and out.count("\n") == 9


def test_fast_highlighter_escapes_and_marks_tokens():
    out = html_view._fast_highlight('def f(x):  # a <b>\n    return "s<" if x else 1.5', "python")
    assert out == ('<span class="k">def</span> <span class="nf">f</span>(x):  <span class="c1"># a &lt;b&gt;</span>\n    '
                   '<span class="k">return</span> <span class="s">"s&lt;"</span> <span class="k">if</span> x '
                   '<span class="k">else</span> <span class="mi">1.5</span>')
    out = html_view._fast_highlight("class <lambda>(M): x = rb'\\x00' + 0x1F", "python")
    assert out == ('<span class="k">class</span> &lt;<span class="nc">lambda</span>&gt;(M): x = '
                   '<span class="s">rb\'\\x00\'</span> + <span class="mi">0x1F</span>')
    out = html_view._fast_highlight("#include <a.h>\nfor(int64_t i=0; i<4; i++) {} // x", "cpp")
    assert out.startswith('<span class="c1">#include &lt;a.h&gt;</span>') and '<span class="k">int64_t</span>' in out


#: the colour the page's CSS gives a pygments token class (html._THEME's ``.hl`` rules), "-": none
def _colour_role(cls: str) -> str:
    if cls in ("ow", "il", "nd", "nf", "fm", "nc"):
        return {"ow": "k", "il": "m", "nd": "d"}.get(cls, "f")
    return next((p for p in "kscm" if cls.startswith(p)), "-")


def _colours(markup: str) -> str:
    """One colour role per character of the highlighted code."""
    import html as htmllib

    out, stack = [], ["-"]
    for m in re.finditer(r'<span class="([^"]*)">|</span>|([^<]+)', markup):
        if m.group(1) is not None:
            stack.append(_colour_role(m.group(1)))
        elif m.group(2) is None:
            stack.pop()
        else:
            out.append(stack[-1] * len(htmllib.unescape(m.group(2))))
    return "".join(out)


def test_the_highlighter_colours_the_recorded_code_as_pygments_does():
    """The page highlights without pygments (its import and lexers cost 0.3 s a page); every
    Python and C++ block of the recorded logs' reports (Dynamo's graphs, Inductor's Triton and
    C++ kernels, the user's code) gets the colours pygments' classes would give it, character by
    character, but for a few pygments quirks (it colours the minus of ``-1L`` as the number)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CppLexer, PythonLexer

    lexers = {"python": PythonLexer(stripnl=False, ensurenl=False), "cpp": CppLexer(stripnl=False, ensurenl=False)}
    seen: dict = {}
    for name in GPU + CPU:
        for t in view_model(report(name)).tabs:
            for b in walk(t.blocks()):
                if isinstance(b, Code) and b.language in lexers and b.code not in seen:
                    seen[b.code] = b.language
    checked = {"python": 0, "cpp": 0}
    differ = {"python": [], "cpp": []}
    for code, language in seen.items():
        want = _colours(highlight(code, lexers[language], HtmlFormatter(nowrap=True)))
        got = _colours(html_view._fast_highlight(code, language))
        assert got[: len(code)] == got and len(got) == len(code)
        for i, (a, b) in enumerate(zip(want, got)):
            if code[i].isspace():
                continue
            checked[language] += 1
            if a != b:
                start = code.rfind("\n", 0, i) + 1
                differ[language].append(f"{a}->{b} at {code[i]!r} in {code[start:code.find(chr(10), i)][:100]!r}")
    assert checked["python"] > 100_000 and checked["cpp"] > 5_000, checked  # the logs hold both
    for language, bad in differ.items():
        assert len(bad) <= 0.005 * checked[language], (language, len(bad), checked[language], bad[:10])


def test_to_html_writes_the_page_and_warns(tmp_path):
    r = report("run_cell")
    path = tmp_path / "report.html"
    with pytest.warns(UserWarning, match="contains your model's code"):
        assert r.to_html(str(path)) == str(path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in text and text.rstrip().endswith("</html>")
    assert "In [3], line 2" in text and text.count("<script") == 1  # the tabs' script only


def test_notebook_display_keeps_the_first_screen_as_text(shows_html):
    r = report("break:helper")
    bundle = r._repr_mimebundle_()  # no %load_ext: `import ipycompile` registered the HTML view
    assert bundle["text/plain"] == str(r) == r.summary()  # one text: the first screen, then every tab
    (b,) = r.graph_breaks
    text = str(r)  # what to fix first: the break at the user's line, its fix, then the numbers
    assert text.startswith("ipycompile: what to fix (1") and "1. Graph break: " in text
    assert f"at {r.where(b.frame.filename, b.frame.lineno)}: {b.frame.source_line.strip()}" in text
    assert text.index("fix (") < text.index(f"{r.graph_break_count} graph break")
    assert bundle["text/html"].startswith("<style>") and 'class="ipyc"' in bundle["text/html"]


def test_figure_failures_do_not_lose_the_page():
    def boom():
        raise RuntimeError("no display <here>")

    assert html_view._figure(Figure("Broken", boom)) == (
        '<p class="warn">Broken: could not draw the figure (RuntimeError: no display &lt;here&gt;)</p>')


# -- Notebook output stays small ------------------------------------------------------------
def test_the_notebook_output_is_compact_and_says_where_the_full_report_is(tmp_path, shows_html):
    """A cell's output embeds a compact page (long code, tables and lists cut); the full
    page (report.to_html) keeps every line; both come from the same view-model."""
    r = report("quickstart")  # H100 training trace: AOT graphs of hundreds of lines, Triton kernels
    full = html_view.render_html(r)
    compact = r._repr_mimebundle_()["text/html"]
    assert len(compact) < len(full) / 2
    assert html_view.FULL_DETAIL in compact and html_view.FULL_DETAIL not in full
    assert "more lines (see the note at the top for the full report)" in compact
    # every kernel row and the header are still there; the summary is whole
    for k in r.kernels:
        assert re.search(rf'<td class="[sl]">{re.escape(k.name)}</td>', compact), k.name
    import html

    assert 'src="data:image' not in compact and "figure: Compile time by phase" in compact  # figures: widget and full page
    # a line deep in the longest graph (past the compact cut), found in no other graph: only in the full page
    g = max(r.graphs, key=lambda g: g.code.count("\n"))
    others = "".join(o.code for o in r.graphs if o is not g) + "".join(k.source or "" for k in r.kernels)
    deep = g.code.splitlines()[html_view.COMPACT.code_lines + 5:]
    last = html.escape(next(l.strip() for l in deep if len(l.strip()) > 20 and l.strip() not in others), False)
    text_of = lambda page: re.sub(r"<[^>]+>", "", page)  # noqa: E731 - highlighting splits lines into spans
    assert last in text_of(full) and last not in text_of(compact)
    # a compact limit that truly bounds: no code block in the compact page is longer than its limit
    for pre in re.findall(r'<pre class="hl">(.*?)</pre>', compact.split('data-tab="graph_breaks"', 1)[1], re.S):
        assert pre.rstrip("\n").count("\n") < html_view.COMPACT.code_lines
    path = tmp_path / "full.html"
    with pytest.warns(UserWarning):
        r.to_html(str(path))
    assert html_view.FULL_DETAIL not in path.read_text() and last in text_of(path.read_text())

