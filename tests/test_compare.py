"""``ipycompile.compare(a, b)`` and ``%compile_diff A B``: what a fix changed.

Real compiles (backend "eager"/"aot_eager"; kernels from the recorded H100 traces),
a real IPython shell for the magic; the real Jupyter kernel is in
``test_compile_diff_in_a_kernel`` (marked ``notebook``).
"""

from __future__ import annotations

import dataclasses
import functools
import linecache
from pathlib import Path

import pytest
import torch
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import ipycompile
from ipycompile import CompileReport, build_report
from ipycompile.analysis.compare import CompareNote, Comparison, FunctionRef, MetricDelta, SettingDiff, compare
from ipycompile.views.compare_view import ComparisonView, comparison_view_model
from tracefile import gpu_records

ROOT = Path(__file__).resolve().parents[1]

# The same function, as a user writes it, then fixes it in a later cell: one graph break
# stays (graph_break()), the data-dependent `if` becomes torch.where.
STEP_BEFORE = """\
def step(x):
    y = torch.sin(x)
    torch._dynamo.graph_break()
    z = y * 2
    if z.sum() > 0:
        z = z + 1
    return z
"""
STEP_AFTER = """\
def step(x):
    y = torch.sin(x)
    torch._dynamo.graph_break()
    z = y * 2
    z = torch.where(z.sum() > 0, z + 1, z)
    return z
"""


def define(source: str, filename: str):
    """Run ``source`` as a notebook cell would (its own file, its lines in linecache); its ``step``."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns = {"torch": torch}
    exec(compile(source, filename, "exec"), ns)
    return ns["step"]


@functools.cache
def step_reports() -> tuple[CompileReport, CompileReport, list]:
    x = torch.randn(16)
    outs, reports = [], []
    for i, src in enumerate((STEP_BEFORE, STEP_AFTER)):
        torch._dynamo.reset()
        if i == 1:  # another function first: `step` gets another frame id than before
            torch.compile(lambda t: t.cos(), backend="eager")(x)
        fn = torch.compile(define(src, f"/tmp/ipykernel_0/cell{i}.py"), backend="eager")
        with ipycompile.capture() as cap:
            outs.append(fn(x))
        reports.append(cap.report)
    return reports[0], reports[1], outs


def test_breaks_fixed_and_unchanged_are_matched_by_function_and_source_not_frame_id():
    a, b, (out_a, out_b) = step_reports()
    torch.testing.assert_close(out_a, out_b)
    frame_ids = {c.compile_id.frame_id for c in a.compiles if c.function == "step"}
    assert frame_ids != {c.compile_id.frame_id for c in b.compiles if c.function == "step"}
    c = compare(a, b)
    assert [d.code for d in c.breaks_fixed] == ["if z.sum() > 0:"]
    assert [d.code for d in c.breaks_unchanged] == ["torch._dynamo.graph_break()"]
    assert not c.breaks_introduced and c.breaks_unchanged[0].function == "step"
    back = compare(b, a)  # the other way round, the fixed break is introduced
    assert [d.code for d in back.breaks_introduced] == ["if z.sum() > 0:"] and not back.breaks_fixed
    text = str(c)
    assert "graph break sites: 1 fixed, 0 introduced, 1 unchanged" in text
    assert "neither run is profiled" in text and c.comparable


def test_graphs_per_function_and_continuations_are_named_after_their_function():
    a, b, _ = step_reports()
    c = compare(a, b)
    names = {d.function for d in c.graphs}
    assert FunctionRef("step") in names and FunctionRef("step", after_break=True) in names
    assert all(d.a >= 1 for d in c.graphs if d.function.name == "step")
    (after,) = [d for d in c.graphs if d.function.after_break]
    assert f"step (after a graph break): graphs {after.a} -> {after.b}, ops {after.ops_a} -> {after.ops_b}" in str(c)


def test_recompiles_per_function_and_the_limit():
    def scaled(x, k):
        return x * k

    reports = []
    for values in ((2, 3, 4), (2,)):
        torch._dynamo.reset()
        f = torch.compile(scaled, backend="eager", dynamic=False)
        with ipycompile.capture() as cap:
            for k in values:
                f(torch.ones(4), k)
        reports.append(cap.report)
    c = compare(*reports)
    (d,) = c.recompiles
    assert (d.function, d.a, d.b) == (FunctionRef("scaled", False, __file__), 2, 0)  # a real file is part of the key
    assert "scaled (test_compare.py): 2 -> 0" in str(c) and "recompiles 2 → 0" in str(c)


@functools.cache
def cell_runs():
    ns = {"torch": torch, "x": torch.randn(64, 32)}
    a = ipycompile.run_cell("y = torch.relu(x @ x.T)\ny.sum()", ns, backend="aot_eager", runs=5, record=False)
    b = ipycompile.run_cell("y = torch.relu(x @ x.T)\ny.sum()", ns, backend="eager", runs=5, record=False, fresh=True)
    c = ipycompile.run_cell("y = torch.relu(x @ x.T) * 2\ny.sum()", ns, backend="aot_eager", runs=5, record=False)
    return a, b, c


def test_settings_that_differ_make_runs_not_comparable():
    a, b, same_settings = cell_runs()
    c = compare(a, b)
    assert not c.comparable
    assert SettingDiff("backend", "aot_eager", "eager") in c.differences
    assert SettingDiff("fresh", False, True) in c.differences
    line = str(c).splitlines()[1]
    assert line.startswith("NOT comparable: ") and "backend: 'aot_eager' vs 'eager'" in line
    assert "fresh caches: only B compiled from scratch" in line
    ok = compare(a, same_settings)
    assert ok.comparable and not ok.differences and CompareNote("warm_caches") in ok.notes
    assert "neither run used fresh caches" in str(ok)


def test_times_and_memory_come_from_the_profiles_with_their_spread():
    a, _, b = cell_runs()
    c = compare(a, b)
    run = c.metric("run median")
    assert (run.a, run.b) == (a.report.profile.steady.run_median_s, b.report.profile.steady.run_median_s)
    assert (run.spread_a, run.spread_b) == (a.report.profile.steady.run_iqr_s, b.report.profile.steady.run_iqr_s)
    assert run.delta == pytest.approx(run.b - run.a) and run.beyond_spread is not None
    first = c.metric("first call (compile)")
    assert (first.a, first.b) == (a.report.profile.first_call.compile_s, b.report.profile.first_call.compile_s) and first.spread_a is None
    host = c.metric("peak host memory, steady")
    assert host.a == a.report.profile.steady.peak_host_bytes
    assert f"run median" in str(c) and "(IQR " in str(c)


def test_the_spread_decides_what_is_noise():
    assert MetricDelta("run median", "s", 1.0e-3, 0.5e-3, 0.1e-3, 0.1e-3).beyond_spread is True
    assert MetricDelta("run median", "s", 1.0e-3, 0.95e-3, 0.1e-3, 0.2e-3).beyond_spread is False
    assert MetricDelta("first call", "s", 1.0, 2.0).beyond_spread is None


def test_kernels_added_and_removed_are_matched_by_name_without_the_counter():
    q, m = build_report(gpu_records("quickstart")), build_report(gpu_records("max_autotune"))
    c = compare(q, m)
    assert c.kernels_added and c.kernels_removed
    assert all(not k[-1].isdigit() or not k.rsplit("_", 1)[-1].isdigit() for k in c.kernels_added)
    same = compare(q, q)
    assert not same.kernels_added and not same.kernels_removed and same.kernels_kept == len(q.kernels)
    assert not same.breaks_fixed and not same.breaks_introduced and len(same.breaks_unchanged) == len(q.graph_breaks)


def test_compare_refuses_what_is_not_a_run():
    with pytest.raises(TypeError, match="expected a CompileReport or a CellRun, got int"):
        compare(1, 2)


def test_view_has_chips_and_tabs_and_html(shows_html):
    a, b, _ = step_reports()
    c = compare(a, b, names=("before", "after"))
    vm = comparison_view_model(c)
    assert vm.chip("graph_breaks").value == (1, 0) and vm.chip("comparable").value is True
    assert [t.key for t in vm.tabs] == ["summary", "graph_breaks", "recompiles", "kernels"]
    rows = vm.tab("graph_breaks").blocks()[0].rows
    assert ["fixed", "unchanged"] == sorted(r[0] for r in rows)
    bundle = ComparisonView(c)._repr_mimebundle_()
    assert bundle["text/plain"] == str(c) and "A = before, B = after" in bundle["text/html"]


@pytest.mark.parametrize("which", ["captures", "profiled runs"])
def test_text_and_html_render_the_one_view_model_alike(which):
    """The comparison is values; its one view model is rendered as text (``str``) and HTML by
    the report's shared renderers, and both say every fact of it: the title, the verdict and
    notes, each chip, each table row (the text prints a row's headline; the HTML its cells)."""
    import html as H
    import re

    from ipycompile.views.blocks import Table
    from ipycompile.views.compare_view import comparison_html

    if which == "captures":
        a, b, _ = step_reports()
    else:
        a, b, _ = cell_runs()
    c = compare(a, b, names=("before <fix>", "after"))
    vm = comparison_view_model(c)
    text = str(c)
    page = comparison_html(c)
    shown = H.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>")[-1]))
    shown = " ".join(shown.split())
    assert text.splitlines()[0] == vm.title == "ipycompile comparison: A = before <fix>, B = after"
    assert "before &lt;fix&gt;" in page and "<fix>" not in page  # escaped in the page
    for line in [vm.title, *vm.notes, *(chip.text for chip in vm.header)]:
        assert " ".join(line.split()) in shown
        assert line in text or line in " ".join(text.split())  # the chips are wrapped at 100 characters
    tables = [b for tab in vm.tabs for b in tab.blocks() if isinstance(b, Table)]
    assert tables
    for t in tables:
        for i, row in enumerate(t.rows):
            if t.headlines:
                assert t.headlines[i] in text
            for cell in row:
                assert " ".join(str(cell).split()) in shown
    m = c.metric("compile time (torch)")
    assert m is not None and ("compile time (torch): " in text) and "compile time (torch)" in shown


# -- the history and the magic -----------------------------------------------------------
def test_find_run_by_number_index_and_label_with_clear_errors():
    from ipycompile.run import history_log

    saved = list(history_log._ROWS)
    history_log.clear_history()
    try:
        with pytest.raises(ValueError, match="no runs recorded yet"):
            history_log.find_run(1)
        a, _, b = cell_runs()
        history_log.record(a.report, execution_count=3)
        fixed = dataclasses.replace(b.report.profile.settings, label="fixed")
        history_log.record(dataclasses.replace(b.report, profile=dataclasses.replace(b.report.profile, settings=fixed)))
        assert history_log.find_run("1")[1] == "run 1 (In [3])"
        assert history_log.find_run(-1)[1] == "run 2 (fixed)" and history_log.find_run("fixed")[0] is history_log._ROWS[1]["report"]
        with pytest.raises(ValueError, match=r"no run 7: runs are numbered 1 to 2"):
            history_log.find_run(7)
        with pytest.raises(ValueError, match=r"no run labelled 'nope': labels are 'fixed'"):
            history_log.find_run("nope")
        c = history_log.compare_runs(1, "fixed")
        assert isinstance(c, Comparison) and (c.a, c.b) == ("run 1 (In [3])", "run 2 (fixed)")
    finally:
        history_log._ROWS[:] = saved


def test_compile_diff_in_an_ipython_shell(ip, shows_html):
    ipycompile.clear_history()
    ip.run_cell("x = torch.arange(8.0)")
    before = "%%compile --backend eager --runs 2 --label before\ny = x * 2\nif y.sum() > 0:\n    y = y + 1\ny.sum()"
    after = "%%compile --backend eager --runs 2 --label after\ny = x * 2\ny = torch.where(y.sum() > 0, y + 1, y)\ny.sum()"
    for cell in (before, after):
        with capture_output():
            assert ip.run_cell(cell, store_history=True).success
    with capture_output() as out:
        res = ip.run_cell("%compile_diff before after -o cmp", store_history=True)
    assert res.success and res.result is None  # shown once, by display
    (shown,) = out.outputs
    text = shown.data["text/plain"]
    page = shown.data["text/html"]
    assert "break sites: 1 fixed, 0 introduced" in page
    # the fixed break's place links to its cell and line as the editor numbers it (%%compile is line 1)
    fixed = ip.user_ns["cmp"].breaks_fixed[0]
    assert (fixed.where, fixed.lineno) == (f"In [{fixed.cell}], line 3", 3)
    assert f'data-cell="{fixed.cell}" data-line="3"' in page
    assert "A = run 1 (" in text and "before)" in text and "B = run 2 (" in text
    assert "graph break sites: 1 fixed, 0 introduced, 0 unchanged" in text and "if y.sum() > 0:" in text
    cmp = ip.user_ns["cmp"]
    assert isinstance(cmp, Comparison) and len(cmp.breaks_fixed) == 1 and cmp.comparable
    with capture_output():
        assert ip.run_cell("%compile_diff -2 -1", store_history=True).success
    for line, words in (("%compile_diff before", "give two runs, got 1"),
                        ("%compile_diff before nope", "no run labelled 'nope': labels are 'after', 'before'"),
                        ("%compile_diff 1 9", "no run 9: runs are numbered 1 to 2")):
        with pytest.raises(UsageError, match=words):
            ip.run_line_magic("compile_diff", line.split(" ", 1)[1])


# -- a real Jupyter kernel -------------------------------------------------------------------
@pytest.mark.notebook
def test_compile_diff_in_a_kernel(tmp_path):
    pytest.importorskip("nbclient")
    from test_kernel import run_in_kernel

    cells, _ = run_in_kernel([
        "%load_ext ipycompile\nimport torch, ipycompile\nprint(ipycompile.__file__)",
        "x = torch.arange(8.0)",
        "%%compile --backend eager --runs 2 --label before --quiet\ny = x * 2\nif y.sum() > 0:\n    y = y + 1\ny.sum()",
        "%%compile --backend eager --runs 2 --label after --quiet\ny = x * 2\ny = torch.where(y.sum() > 0, y + 1, y)\ny.sum()",
        "%compile_diff before after",
    ], tmp_path)
    where = "".join(o.get("text", "") for o in cells[0].outputs)
    assert where.strip().startswith(str(ROOT / "ipycompile")), where  # this checkout's ipycompile
    (shown,) = [o for o in cells[-1].outputs if o.output_type == "display_data"]
    assert "graph break sites: 1 fixed, 0 introduced, 0 unchanged" in shown.data["text/plain"]
    page = shown.data["text/html"]
    assert "break sites: 1 fixed, 0 introduced" in page and "if y.sum() &gt; 0:" in page
