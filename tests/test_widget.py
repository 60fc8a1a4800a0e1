"""The ipywidgets view (``ipycompile.views.widget.ReportWidget``) of real reports.

No frontend here: the widgets are built in this process (ipywidgets works without
a kernel) and inspected as Python objects. tests/test_browser.py shows the same
widget in a real JupyterLab.
"""

from __future__ import annotations

import re

import pytest

W = pytest.importorskip("ipywidgets")

import ipycompile  # noqa: E402
from ipycompile.views import report_view  # noqa: E402
from ipycompile.views.viewmodel import view_model  # noqa: E402
from ipycompile.views.widget import ChoiceView, ReportWidget, TableView, TreeView  # noqa: E402
from scenarios import captured  # noqa: E402

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def walk(widget):
    """Every widget under ``widget`` (itself included), depth first."""
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def html_of(widget) -> str:
    return "\n".join(w.value for w in walk(widget) if isinstance(w, W.HTML))


def tab_index(w: ReportWidget, key: str) -> int:
    return [t.key for t in w.view_model.tabs].index(key)


@pytest.fixture(scope="module")
def inductor():
    return captured("inductor").report


@pytest.fixture(scope="module")
def control_flow():
    return captured("control_flow").report


@pytest.fixture(scope="module")
def graph_break():
    return captured("break:ddif").report


@pytest.fixture(scope="module")
def profiled():
    """A report with a profile (run times, memory): what %%compile displays."""
    import torch

    ns = {"torch": torch}
    return ipycompile.run_cell("x = torch.arange(8.0)\ny = (x * 2).sin()", ns, backend="eager", runs=5).report


def test_only_the_first_tab_is_built_at_construction(inductor):
    w = ReportWidget(inductor)
    vm = w.view_model
    assert w.built == ["summary"]
    assert [t.key for t in vm.tabs][0] == "summary"
    # the view-model itself built only the Summary tab's blocks
    assert [t.key for t in vm.tabs if t._cache is not None] == ["summary"]
    assert w.tabs.selected_index == 0
    assert tuple(w.tabs.titles) == tuple(t.title for t in vm.tabs)
    assert len(w.tabs.children) == len(vm.tabs)
    # unbuilt tabs hold a placeholder only
    k = tab_index(w, "kernels")
    assert "building this tab" in html_of(w.tabs.children[k])


def test_selecting_a_tab_builds_it_once(inductor):
    w = ReportWidget(inductor)
    k = tab_index(w, "kernels")
    w.tabs.selected_index = k  # what a click on the tab does (the frontend syncs selected_index)
    assert w.built == ["summary", "kernels"]
    content = w.tabs.children[k]
    page = html_of(content)
    for kernel in inductor.kernels:
        assert kernel.name in page
    first = w._built[k]
    w.tabs.selected_index = 0
    w.tabs.selected_index = k
    assert w._built[k] is first  # cached, not rebuilt
    assert w.built == ["summary", "kernels"]


def test_first_screen_leads_with_the_problem_then_the_view_model_header(graph_break, inductor):
    for report in (graph_break, inductor):
        w = ReportWidget(report)
        vm = view_model(report)
        first = w.first.value
        chips = re.findall(r'<span class="chip( warn)?" data-key="([^"]*)"[^>]*>([^<]*)</span>', first)
        assert [(key, text) for _, key, text in chips] == [(c.key, __import__("html").escape(c.text)) for c in vm.header]
        assert [bool(warn) for warn, _, _ in chips] == [c.warn for c in vm.header]
        assert w.children[1] is w.first and w.children[2] is w.tabs  # the first screen above the tabs
    first = ReportWidget(graph_break).first.value
    (b,) = graph_break.graph_breaks
    # what is wrong and where, before the numbers: the break, the user's line, the fix with a copy button
    assert first.index("Graph break:") < first.index('class="strip"')
    assert graph_break.where(b.frame.filename, b.frame.lineno) in first and 'class="copy"' in first
    assert '1 graph break</span>' in first and 'class="chip warn" data-key="graph_breaks"' in first


def test_bundle_has_widget_view_html_and_text(inductor):
    w = ReportWidget(inductor)
    bundle = w._repr_mimebundle_()
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(bundle)
    assert bundle[WIDGET_VIEW]["model_id"] == w.model_id
    # the first screen as text (what str(report) opens with; print(report) has every tab too)
    text = bundle["text/plain"]
    assert text.splitlines()[:-1] == str(inductor).split("\n\n")[0].splitlines()[:-1]
    assert text.splitlines()[-1] == "(everything: print(report), or the tabs)"
    page = bundle["text/html"]
    assert 'class="ipyc ipyc-static"' in page and "<script" not in page
    assert all(k.name in page for k in inductor.kernels)


def test_graph_break_tab_lists_the_site_and_expands_to_details(graph_break):
    w = ReportWidget(graph_break)
    content = w.select("graph_breaks")
    (table,) = [x for x in walk(content) if isinstance(x, TableView)]
    (b,) = graph_break.graph_breaks
    where = graph_break.where(b.frame.filename, b.frame.lineno)
    assert where in table.html.value and "if y.sum() &gt; 0:" in table.html.value
    rows = table.rows
    assert isinstance(rows, W.Accordion) and len(rows.children) == 1
    assert where in rows.titles[0]
    assert rows.children[0].children == ()  # details are built when the row is opened
    rows.selected_index = 0
    details = html_of(rows.children[0])
    assert "if y.sum() &gt; 0:" in details and b.gb_code in details


def test_sortable_table_resorts_on_the_dropdowns(profiled):
    w = ReportWidget(profiled)
    tables = [x for x in walk(w.tabs.children[0]) if isinstance(x, TableView) and x.sort_column is not None]
    table = next(t for t in tables if "phase" in t.table.columns)
    col = table.table.columns.index("seconds")
    table.sort_column.value = col
    table.sort_order.value = "ascending"
    shown = [float(v) for v in re.findall(r'<td class="n">([0-9.]+)</td>', table.html.value)]
    assert shown == sorted(shown) and len(shown) == len(table.table.rows)
    table.sort_order.value = "descending"
    shown = [float(v) for v in re.findall(r'<td class="n">([0-9.]+)</td>', table.html.value)]
    assert shown == sorted(shown, reverse=True)
    table.sort_column.value = -1  # back to the order listed
    assert table.order == list(range(len(table.table.rows)))


def test_code_is_highlighted_and_choice_switches_graphs(inductor):
    w = ReportWidget(inductor)
    content = w.select("graphs")
    (choice,) = [x for x in walk(content) if isinstance(x, ChoiceView)]
    options = list(choice.choice.options)
    assert choice.dropdown.value == choice.choice.default
    first = html_of(choice.content)
    assert '<pre class="hl">' in first and '<span class="k">' in first  # pygments' classes
    other = next(o for o in options if o != choice.dropdown.value)
    choice.dropdown.value = other
    assert html_of(choice.content) != first and other.split(" · ")[1] in html_of(choice.content)


def test_control_flow_tab_is_nested_accordions(control_flow):
    w = ReportWidget(control_flow)
    assert w.built == ["summary"]
    w.tabs.selected_index = tab_index(w, "control_flow")
    content = w._built[tab_index(w, "control_flow")]
    trees = [x for x in content.children if isinstance(x, TreeView)]
    assert [t.titles[0].split(" ")[0] for t in trees] == [n.op for n in control_flow.control_flow]
    cond = next(t for t in trees if t.titles[0].startswith("cond"))
    assert cond.selected_index is None and cond.children[0].children == ()
    cond.selected_index = 0  # open it: its subgraphs appear as nested accordions
    subs = [x for x in cond.children[0].children if isinstance(x, TreeView)]
    assert any(s.titles[0].startswith(("true_fn", "false_fn", "subgraph")) for s in subs), [s.titles for s in subs]
    subs[0].selected_index = 0
    assert ">forward<" in html_of(subs[0])  # the subgraph's code, highlighted


def test_profile_tab_draws_figures_as_png(profiled):
    w = ReportWidget(profiled)
    content = w.select("profile")
    images = [x for x in walk(content) if isinstance(x, W.Image)]
    assert images and all(i.value[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert "run time (median)" in html_of(content)


def test_a_displayed_report_draws_no_figure_and_builds_no_lexer_until_a_tab_is_opened(profiled, graph_break,
                                                                                         monkeypatch):
    """What %%compile shows at once (the widget's first screen and Summary, and the static copy
    beside it) draws no figure: the Profile tab's figures are drawn when that tab is first opened,
    and the static copy only names them."""
    from ipycompile.views import tabs

    drawn: list[str] = []
    for name in ("fig_phases", "fig_runs", "fig_memory"):  # spies: each calls the real builder
        real = getattr(tabs, name)
        monkeypatch.setattr(tabs, name, lambda r, real=real, name=name: (drawn.append(name), real(r))[1])

    w = ReportWidget(profiled)
    static = w.static_bundle()["text/html"]
    assert drawn == [] and w.built == ["summary"]
    assert "figure: Run-time distribution" in static and "data:image/png" not in static  # named, not drawn
    content = w.select("profile")  # the first open draws them: the phases as SVG, the others as PNGs
    assert "fig_runs" in drawn and any(isinstance(x, W.Image) for x in walk(content))
    assert "<svg" in html_of(content)
    n = len(drawn)
    w.tabs.selected_index = 0
    w.select("profile")
    assert len(drawn) == n  # kept, not drawn again

    shown = ReportWidget(graph_break)  # its Summary tab shows the user's code
    code_page = shown.static_bundle()["text/html"]
    for page in (code_page, html_of(shown)):
        assert '<pre class="hl">' in page and '<span class="k">' in page  # highlighted


def test_every_tab_builds_for_a_failed_compile():
    report = captured("fullgraph_failure").report
    w = ReportWidget(report)
    for i in range(len(w.view_model.tabs)):
        w.tabs.selected_index = i
    assert w.built == [t.key for t in w.view_model.tabs]
    assert "could not show" not in html_of(w)
    assert any("failure" in c.text and c.warn for c in w.chips)
    assert "Compile failed:" in w.first.value  # the failure leads the first screen


def test_report_view_picks_the_widget_only_where_widgets_show(monkeypatch, inductor):
    import IPython

    class ZMQInteractiveShell:  # the kernel's shell, by name
        pass

    class TerminalInteractiveShell:
        pass

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert report_view(inductor) is inductor
    monkeypatch.setattr(IPython, "get_ipython", lambda: TerminalInteractiveShell())
    assert report_view(inductor) is inductor
    monkeypatch.setattr(IPython, "get_ipython", lambda: ZMQInteractiveShell())
    shown = report_view(inductor)
    assert isinstance(shown, ReportWidget) and shown.report is inductor


def test_long_tables_pick_the_detail_row_with_a_dropdown():
    from ipycompile.views.viewmodel import Code, Figure, Table, Text
    from ipycompile.views.widget import ACCORDION_ROWS, build_blocks

    n = ACCORDION_ROWS + 10
    table = Table(["name", "size"], [[f"k{i}", (i * 7) % n] for i in range(n)], sortable=True,
                  details=[[Text(f"details of k{i}"), Code(f"k{i}", f"def k{i}(): pass", "python")] for i in range(n)])
    view = TableView(table)
    assert isinstance(view.rows, W.Dropdown) and view.rows.value == -1
    assert len(view.rows.options) == n + 1  # "(choose a row)" and one per row
    view.rows.value = 3
    assert "details of k3" in html_of(view)
    view.sort(1, descending=True)  # the options follow the table's order; the chosen row stays
    assert [v for _, v in view.rows.options[1:]] == view.order and view.rows.value == 3
    assert "details of k3" in html_of(view)
    view.rows.value = -1
    assert "details of k" not in html_of(view)

    def broken():
        raise RuntimeError("no figure today")

    (shown,) = build_blocks([Figure("a figure", broken)])
    assert "could not draw the figure" in shown.value and "no figure today" in shown.value
