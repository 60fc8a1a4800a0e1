"""A long session stays flat: fresh namespaces given to ``run_cell`` are let go, and a
re-run ``%%compile`` cell closes the widgets of the output it replaces. Counts, not
timings (the RSS figures are in ``benchmarks/leaks.py``)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

import ipycompile
from ipycompile.run import compiled_cells
from ipycompile.run import runner
from ipycompile.run.session import SESSION


CELL = "y = t + 1\nif y.sum() > 0:\n    y = y * 2\ny.sum()"  # a graph break: Dynamo installs resume functions too


def test_fresh_namespaces_given_to_run_cell_are_freed():
    ipycompile.reset()
    alive = []
    for _ in range(compiled_cells.MAX_NAMESPACES + 6):  # six more than are kept: each must go in turn
        ns = {"t": torch.ones(1024)}
        alive.append(weakref.ref(ns["t"]))
        run = ipycompile.run_cell(CELL, ns, backend="eager", runs=1, warmup=0, record=False)
        assert run.value == 4096.0
        del ns, run
    gc.collect()
    kept = sum(r() is not None for r in alive)
    assert kept <= compiled_cells.MAX_NAMESPACES, kept
    assert all(r() is None for r in alive[:-compiled_cells.MAX_NAMESPACES])  # the oldest all went
    assert SESSION.compiled.namespaces() <= compiled_cells.MAX_NAMESPACES
    ipycompile.reset()
    gc.collect()
    assert all(r() is None for r in alive)


def test_a_namespace_in_use_still_reuses_its_compiled_cell():
    ipycompile.reset()
    mine = {"t": torch.ones(8)}
    first = ipycompile.run_cell(CELL, mine, backend="eager", runs=1, warmup=0, record=False)
    for _ in range(3):  # other namespaces in between, fewer than the bound
        ipycompile.run_cell(CELL, {"t": torch.ones(8)}, backend="eager", runs=1, warmup=0, record=False)
        again = ipycompile.run_cell(CELL, mine, backend="eager", runs=1, warmup=0, record=False)
        assert again.report.profile.reused_compiled_code and again.report.compiled_nothing
    assert not first.report.profile.reused_compiled_code


def test_a_namespace_let_go_while_alive_compiles_again_and_says_so():
    ipycompile.reset()
    mine = {"t": torch.ones(8)}
    ipycompile.run_cell(CELL, mine, backend="eager", runs=1, warmup=0, record=False)
    for _ in range(compiled_cells.MAX_NAMESPACES):
        ipycompile.run_cell(CELL, {"t": torch.ones(8)}, backend="eager", runs=1, warmup=0, record=False)
    again = ipycompile.run_cell(CELL, mine, backend="eager", runs=1, warmup=0, record=False)
    assert not again.report.profile.reused_compiled_code and again.report.compiles
    assert again.value == 32.0 and torch.equal(mine["y"], torch.full((8,), 4.0))


def test_torch_alone_holds_a_namespace_until_its_code_is_reset():
    """What keeps a namespace alive besides ipycompile: Dynamo's cache on the cell
    function's code (guards, CleanupHooks of the names it installed). Letting go of our
    cell without resetting torch's cache would not free it; resetting it does."""
    ipycompile.reset()
    ns = {"t": torch.ones(1024)}
    ref = weakref.ref(ns["t"])
    ipycompile.run_cell(CELL, ns, backend="eager", runs=1, warmup=0, record=False)
    (cf, compiled), = SESSION.compiled.values()
    code = cf.fn.__code__
    del ns, cf, compiled
    SESSION.compiled._cells.clear()  # ours only, torch's cache kept
    gc.collect()
    assert ref() is not None
    torch._dynamo.reset_code(code)
    gc.collect()
    assert ref() is None


# -- widgets of re-run %%compile cells ---------------------------------------------------
W = pytest.importorskip("ipywidgets")


def _widgets() -> int:
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


def test_closing_a_report_widget_closes_every_widget_it_built():
    from ipycompile.views.widget import ReportWidget

    run = ipycompile.run_cell(CELL, {"t": torch.ones(4)}, backend="eager", runs=1, warmup=0, record=False)
    baseline = _widgets()
    w = ReportWidget(run.report)
    unopened = _widgets() - baseline
    for tab in w.view_model.tabs:  # every tab, table row and choice built
        w.select(tab.key)
    assert _widgets() - baseline > unopened
    w.close()
    assert _widgets() == baseline and w.closed
    bundle = w._repr_mimebundle_()  # a closed report still displays: its static HTML and text
    assert "text/html" in bundle and "text/plain" in bundle and "application/vnd.jupyter.widget-view+json" not in bundle


BREAKS = ("y = t.sin() * 2 + 1\nif y.sum() > 0:\n    y = y * 3\nz = y.cos()\nif z.sum() > 0:\n    z = z + 1\n"
          "w = z.exp()\nif w.sum() > 0:\n    w = w - 1\nw.sum()")  # graph breaks, a graph between each


def test_what_a_displayed_run_leaves_is_under_the_budget_and_tabs_wait_to_be_opened():
    """What %%compile displays for a run (live.show: the static copy, then the widget alone) is
    kept in the notebook and in IPython's output history: under DISPLAY_BUDGET_BYTES, with every
    tab still named in the static copy; the widget's other tabs are built only when opened."""
    import json

    from ipycompile.views.live import DISPLAY_BUDGET_BYTES
    from ipycompile.views.widget import ReportWidget

    run = ipycompile.run_cell(BREAKS, {"t": torch.randn(64)}, backend="aot_eager", runs=1, warmup=0, record=False)
    assert run.report.graph_breaks and len(run.report.graphs) >= 2, run.report
    w = ReportWidget(run.report)
    static = w.static_bundle()
    w.standalone = False  # as live.show displays it, after the static copy
    bundles = [static, w._repr_mimebundle_()]
    size = sum(len(v if isinstance(v, str) else json.dumps(v)) for b in bundles for v in b.values())
    assert size <= DISPLAY_BUDGET_BYTES, [{m: len(str(v)) for m, v in b.items()} for b in bundles]
    page = static["text/html"]
    for tab in w.view_model.tabs:  # a reopened notebook still shows every tab, cut
        assert f'data-tab="{tab.key}"' in page, tab.key
    assert w.built == ["summary"]
    w.close()


def test_a_tab_not_opened_is_one_box():
    from ipycompile.views.widget import ReportWidget

    run = ipycompile.run_cell(CELL, {"t": torch.ones(4)}, backend="eager", runs=1, warmup=0, record=False)
    w = ReportWidget(run.report)
    later = [w._boxes[i] for i in range(1, len(w.view_model.tabs))]
    assert later and all(len(box.children) == 1 and box.children[0] is later[0].children[0] for box in later)
    assert len({id(box.layout) for box in later}) == 1
    w.close()


CAP_PROBE = """import ipycompile.views.live as _live
from IPython.utils.capture import capture_output
with capture_output():
    for _i in range(5):  # five different cells
        get_ipython().run_cell(f"%%compile --backend eager --runs 1 --warmup 0\\nz = torch.ones(2) * {_i}")
print("live", _live.live())
_live.close_all_reports()
print("after", _ipyc_measure()["widgets"], _live.live())"""


@pytest.mark.notebook
def test_a_re_run_cell_in_a_kernel_keeps_no_widgets_and_at_most_max_live_stay_open():
    """8 displayed re-runs of one %%compile cell in a real kernel: the widget count and the
    logging handlers end where they started; different cells keep at most MAX_LIVE open."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("nbclient")
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "leaks.py"
    spec = importlib.util.spec_from_file_location("_ipycompile_leaks", path)
    leaks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(leaks)
    cell = "%%compile --backend eager --runs 1 --warmup 0\ny = torch.sin(x) * 2\ny.sum()"
    r = leaks.kernel_session(8, warmup=2, max_live=3, cell=cell, then=CAP_PROBE)
    before, after = r["before"], r["after"]
    # with the kernel keeping displayed outputs in IPython's output history: each run's two outputs
    from ipycompile.views.live import DISPLAY_BUDGET_BYTES

    assert 0 < sum(r["display_bytes"].values()) <= DISPLAY_BUDGET_BYTES, r["display_bytes"]
    assert 0 < sum(r["history_bytes_per_run"].values()) <= DISPLAY_BUDGET_BYTES + 1_000, r["history_bytes_per_run"]
    assert after["widgets"] == before["widgets"], r
    assert after["handlers"] == before["handlers"] and after["trace_handlers"] == before["trace_handlers"], r
    lines = r["then_output"].split("\n")
    assert "live 3" in lines, r["then_output"]
    live_after = [ln for ln in lines if ln.startswith("after ")][0].split()
    assert int(live_after[2]) == 0 and int(live_after[1]) < before["widgets"], r["then_output"]


def test_a_five_thousand_character_file_name_keeps_the_display_under_the_budget(monkeypatch):
    """A one-break report whose file name has 5,000 characters: names are cut as other fields are
    (the place as ``start...end``; torch's ``# File:`` lines in the compact page the same)."""
    import json
    import sys
    from pathlib import Path

    from ipycompile.views.live import DISPLAY_BUDGET_BYTES
    from ipycompile.views.widget import ReportWidget

    sys.path.insert(0, str(Path(__file__).parent))
    import scenarios

    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(scenarios.data_dependent_if, backend="eager")(torch.randn(8))
    long = "/tmp/" + "x" * 4990 + ".py"
    report = ipycompile.CompileReport.from_json(cap.report.to_json().replace(json.dumps(scenarios.__file__)[1:-1], long))
    assert len(report.graph_breaks) == 1 and report.graph_breaks[0].stop.filename == long
    w = ReportWidget(report)
    static = w.static_bundle()
    w.standalone = False
    bundles = [static, w._repr_mimebundle_()]
    size = sum(len(v if isinstance(v, str) else json.dumps(v)) for b in bundles for v in b.values())
    assert size <= DISPLAY_BUDGET_BYTES, [{m: len(str(v)) for m, v in b.items()} for b in bundles]
    assert "x" * 200 not in static["text/html"] and "xxx.py" in static["text/html"]
    w.close()
    from ipycompile import views

    monkeypatch.setattr(views, "_shell_shows_html", lambda: True)  # as in a kernel, whatever shell runs
    html = report._repr_mimebundle_()["text/html"]  # the notebook output of the report itself
    assert "x" * 200 not in html
