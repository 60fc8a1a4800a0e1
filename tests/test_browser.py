"""%%compile in a real JupyterLab, looked at in a real browser.

A JupyterLab server (127.0.0.1, a random token, a temporary root folder, the
venv's ``python3`` kernelspec) and Debian's Chromium driven by Playwright: open a
notebook, run all its cells from the Run menu, and check what a person sees in
the report widget (header chips, the Graph breaks, Kernels and Control flow
tabs), then the same facts in the static HTML page of the same reports.

Screenshots go to ``build/browser-*.png`` for a reviewer. ``make browser`` (run
by ``make test`` when it can: see the Makefile's BROWSER_TESTS) installs
``/usr/bin/chromium``; Playwright's own browser download is never used. Without
Chromium these tests skip with the reason (they fail when ``make`` promised one).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

nbformat = pytest.importorskip("nbformat")

from browser_helpers import VSCODE_THEMES, lab_server, require_browser, vscode_page, widget_dom  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
NOTEBOOK = "browser.ipynb"

# The %%compile line is line 1: the graph break (`if x.sum() > 0:`) is line 3 of In [2].
CELLS = [
    "%load_ext ipycompile\nimport sys, torch\nprint(sys.executable)",
    # Inductor (the default backend), so the Kernels tab has generated kernels
    "%%compile --runs 3 -o gb\nx = torch.arange(4.0)\nif x.sum() > 0:\n    x = x * 2\nx.sum()",
    "%%compile --backend eager --runs 3 -o cf\n"
    "y = torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))",
    "import warnings\nwith warnings.catch_warnings():\n"
    "    warnings.simplefilter('ignore')  # to_html warns that the page holds the model's code\n"
    "    gb.to_html('gb.html')\n    cf.to_html('cf.html')\nprint('static pages written')",
]
RUN_TIMEOUT_MS = 240_000  # a cold Inductor compile on a slow CI machine included


def shot(target, name: str) -> Path:
    """Screenshot a page or an element to build/browser-NAME.png."""
    BUILD.mkdir(exist_ok=True)
    path = BUILD / f"browser-{name}.png"
    target.screenshot(path=str(path))
    return path


@contextlib.contextmanager
def failure_shot(page, name: str):
    """On failure, a full-page screenshot build/browser-failed-NAME.png."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            BUILD.mkdir(exist_ok=True)
            page.screenshot(path=str(BUILD / f"browser-failed-{name}.png"), full_page=True)
        raise


def _same_python(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


# -- fixtures: server, browser, the executed notebook ------------------------------
@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_browser()
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    v4 = nbformat.v4
    nb = v4.new_notebook(
        cells=[v4.new_code_cell(src) for src in CELLS],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / NOTEBOOK)
    with lab_server(root, base / "jupyter-lab.log") as server:
        yield server


@pytest.fixture(scope="module")
def notebook(lab, browser):
    """The notebook opened in JupyterLab and run (Run > Run All Cells); yields the page."""
    # tall, so that element screenshots of a whole report fit in the notebook's scroll area
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    context.grant_permissions(["clipboard-read", "clipboard-write"])  # the copy button's test reads it back
    page = context.new_page()
    try:
        with failure_shot(page, "run"):
            page.goto(lab.url(NOTEBOOK))
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            lab.wait_for_kernel()
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            page.wait_for_function(
                """n => { const p = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')]
                          .map(e => e.textContent);
                          return p.length === n && p.every(t => /\\[\\d+\\]/.test(t)); }""",
                arg=len(CELLS),
                timeout=RUN_TIMEOUT_MS,
            )
            for i in range(len(CELLS)):
                text = cell(page, i).locator(".jp-OutputArea").inner_text()
                assert "Traceback" not in text and "Error" not in text, f"cell {i} failed:\n{text}\n{lab.log_tail()}"
            for i in (1, 2):  # the two %%compile cells show the widget (not the static fallback)
                cell(page, i).locator(".jp-OutputArea .widget-tab").wait_for(timeout=30_000)
            shot(page, "notebook")
        yield page
    finally:
        context.close()


def cell(page, i: int):
    return page.locator(".jp-NotebookPanel .jp-CodeCell").nth(i)


def widget(page, i: int):
    return cell(page, i).locator(".jp-OutputArea-output .ipyc-w")


def open_tab(page, i: int, title: str):
    """Click the widget tab whose title starts with ``title``; return the shown panel."""
    w = widget(page, i)
    w.locator(".lm-TabBar-tab", has_text=re.compile("^" + re.escape(title))).click()
    panel = w.locator(".widget-tab-contents > .widget-box:not(.lm-mod-hidden)")
    panel.wait_for()
    # the kernel builds the tab on first selection: wait for the placeholder to go
    panel.get_by_text("building this tab").wait_for(state="detached", timeout=30_000)
    return panel


# -- the notebook -----------------------------------------------------------------------
def test_kernel_runs_the_venv_python(lab, notebook):
    assert _same_python(lab.kernel_python(), sys.executable), lab.kernel_python()
    printed = cell(notebook, 0).locator(".jp-OutputArea").inner_text().strip()
    assert _same_python(printed, sys.executable), printed


def test_header_shows_one_graph_break_as_a_warning(notebook):
    w = widget(notebook, 1)
    with failure_shot(notebook, "header"):
        # the first screen: the break, with the user's line, before the chips
        first = w.locator(".ipyc-first")
        assert first.locator(".prob .pt").first.inner_text().startswith("Graph break:")
        chip = first.locator(".chip", has_text=re.compile(r"^\d+ graph breaks?$"))
        assert chip.inner_text() == "1 graph break"
        assert chip.is_visible()
        # a warning, as rendered: bold with a 2px border (theme colours, not a fixed background)
        assert chip.evaluate("e => getComputedStyle(e).fontWeight") == "600"
        assert chip.evaluate("e => getComputedStyle(e).borderTopWidth") == "2px"
        kernels = first.locator(".chip", has_text=re.compile(r"kernels? \(")).inner_text()
        assert int(kernels.split()[0]) >= 1, kernels
        assert "0 graph breaks" in widget(notebook, 2).locator(".ipyc-first").inner_text()
        shot(cell(notebook, 1), "summary")


def test_graph_breaks_tab_lists_the_cell_line(notebook):
    with failure_shot(notebook, "graph-breaks"):
        panel = open_tab(notebook, 1, "Graph breaks (1)")
        table = panel.locator("table.ipyc-t").first
        text = table.inner_text()
        assert "In [2], line 3" in text and "if x.sum() > 0:" in text, text
        # open the row: its details (the cell's source around the break) come from the kernel
        row = panel.locator(".jupyter-widget-Collapse-header", has_text="In [2], line 3")
        row.click()
        source = panel.locator("pre.hl", has_text="if x.sum() > 0:").first
        source.wait_for(timeout=30_000)
        assert re.search(r">\s*3 \| if x\.sum\(\) > 0:", source.inner_text()), source.inner_text()
        shot(widget(notebook, 1), "graph-breaks")


def test_kernels_tab_lists_the_inductor_kernels(notebook):
    with failure_shot(notebook, "kernels"):
        title = widget(notebook, 1).locator(".lm-TabBar-tab", has_text=re.compile(r"^Kernels \(\d+\)$")).inner_text()
        n = int(re.search(r"\((\d+)\)", title).group(1))
        assert n >= 1, title
        panel = open_tab(notebook, 1, "Kernels (")
        rows = panel.locator("table.ipyc-t").first.locator("tr")
        assert rows.count() == n + 1  # the header row and one row per kernel
        body = rows.nth(1).inner_text()
        assert re.search(r"\b(cpp|triton|extern)\b", body), body
        shot(widget(notebook, 1), "kernels")


def test_control_flow_tab_shows_the_cond_subgraphs(notebook):
    with failure_shot(notebook, "control-flow"):
        panel = open_tab(notebook, 2, "Control flow (")
        node = panel.locator(".jupyter-widget-Collapse-header", has_text=re.compile(r"^\s*cond\b")).first
        node.wait_for()
        node.click()  # expand: the true/false subgraphs are built in the kernel and appear
        branch = panel.locator(".jupyter-widget-Collapse-header", has_text=re.compile(r"true_fn|false_fn"))
        branch.first.wait_for(timeout=30_000)
        assert branch.count() == 2, [branch.nth(i).inner_text() for i in range(branch.count())]
        shot(widget(notebook, 2), "control-flow")


# -- the static HTML of the same reports, in the same browser ------------------------------
@pytest.fixture(scope="module")
def static_page(lab, browser, notebook):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def _static(page, lab, name: str):
    path = lab.root / name
    assert path.is_file(), f"the notebook did not write {path}"
    page.goto(path.as_uri())
    page.wait_for_selector(".ipyc")
    return page


def _open_details(page, key: str):
    """Select the tab ``key`` of the static page's tablist; its panel."""
    tab = page.locator(f"[role=tablist] > [role=tab][data-tab='{key}']")
    tab.click()
    assert tab.get_attribute("aria-selected") == "true"
    panel = page.locator(f"[role=tabpanel][data-tab='{key}']")
    assert panel.is_visible()
    return panel


def test_static_html_shows_the_same_facts(static_page, lab):
    page = _static(static_page, lab, "gb.html")
    with failure_shot(page, "static"):
        chip = page.locator(".strip .chip", has_text=re.compile(r"^\d+ graph breaks?$"))
        assert chip.inner_text() == "1 graph break" and "warn" in chip.get_attribute("class")
        assert chip.evaluate("e => getComputedStyle(e).borderTopWidth") == "2px"
        assert page.locator(".first .prob .pt").first.inner_text().startswith("Graph break:")
        tab = _open_details(page, "graph_breaks")
        assert "Graph breaks (1)" in page.locator("[role=tab][data-tab='graph_breaks']").inner_text()
        text = tab.locator("> .body").inner_text()
        assert "In [2], line 3" in text and "if x.sum() > 0:" in text, text
        kernels = _open_details(page, "kernels")
        n = int(re.search(r"Kernels \((\d+)\)", page.locator("[role=tab][data-tab='kernels']").inner_text()).group(1))
        assert n >= 1
        assert re.search(r"\b(cpp|triton|extern)\b", kernels.locator("> .body").inner_text())
        page.screenshot(path=str(BUILD / "browser-static-gb.png"), full_page=True)

    page = _static(static_page, lab, "cf.html")
    with failure_shot(page, "static-cf"):
        tab = _open_details(page, "control_flow")
        node = tab.locator("details.tree > summary", has_text=re.compile(r"^\s*cond\b")).first
        assert node.is_visible()
        node.click()
        assert tab.locator("details.tree > summary", has_text=re.compile(r"true_fn")).first.is_visible()
        page.screenshot(path=str(BUILD / "browser-static-cf.png"), full_page=True)


# -- every text readable in the light and the dark scheme (WCAG AA, 4.5:1) -------------------
#: The colour helpers of the checks below: an element's own text colour over the backgrounds
#: painted behind it (the page's white, or its dark ground), and their WCAG contrast ratio.
_COLOUR_JS = """  // rgb(r, g, b[, a]) with 0-255 channels, or color(srgb r g b[ / a]) with 0-1 ones (a color-mix())
  const rgb = s => { const m = s.match(/[\\d.]+(e-?\\d+)?/g).map(Number); const k = s.startsWith('color(srgb') ? 255 : 1;
                     return {r: m[0] * k, g: m[1] * k, b: m[2] * k, a: m.length > 3 ? m[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                     return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const over = (top, bottom) => ({r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
                                  b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const background = e => { const layers = []; for (let n = e; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor); if (c.a > 0) layers.push(c); if (c.a >= 1) break; }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    if (getComputedStyle(document.documentElement).colorScheme.includes('dark') &&
        matchMedia('(prefers-color-scheme: dark)').matches) bg = {r: 18, g: 18, b: 18, a: 1};
    for (const l of layers.reverse()) bg = over(l, bg); return bg; };
  const ratio = e => { const bg = background(e); const fg = over(rgb(getComputedStyle(e).color), bg);
                       const [a, b] = [lum(fg), lum(bg)]; return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };
"""
_CONTRAST = """() => {
""" + _COLOUR_JS + """  const bad = [];
  for (const e of document.querySelectorAll('.ipyc *')) {
    if (!e.offsetParent) continue;
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const r = ratio(e);
    if (r < 4.5) bad.push(`${e.tagName}.${e.className}: ${r.toFixed(2)} "${e.textContent.trim().slice(0, 40)}"`);
  }
  return bad; }"""
#: the contrast ratio of one element's text
_RATIO = "e => {\n" + _COLOUR_JS + " return ratio(e); }"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_static_html_text_has_aa_contrast_in_both_schemes(browser, lab, notebook, scheme):
    context = browser.new_context(viewport={"width": 1100, "height": 1000}, color_scheme=scheme)
    try:
        page = _static(context.new_page(), lab, "gb.html")
        with failure_shot(page, f"contrast-{scheme}"):
            for key in ("graph_breaks", "kernels"):
                _open_details(page, key)
            page.screenshot(path=str(BUILD / f"browser-static-gb-{scheme}.png"), full_page=True)
            bad = page.evaluate(_CONTRAST)
            assert not bad, bad[:20]
    finally:
        context.close()


# -- a GPU report (H100 trace, torch 2.11) without a GPU -------------------------------------
@pytest.mark.browser
def test_static_html_of_an_h100_trace_report(browser, tmp_path):
    import ipycompile
    from ipycompile.views.html import save_html
    from tracefile import gpu_records

    reports = {w: ipycompile.build_report(gpu_records(w)) for w in ("quickstart", "max_autotune")}
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        path = tmp_path / "h100-quickstart.html"
        save_html(reports["quickstart"], path)
        page.goto(path.as_uri())
        page.wait_for_selector(".ipyc")
        kernels = _open_details(page, "kernels").locator("> .body").inner_text()
        assert re.search(r"triton_poi_\w+", kernels) and re.search(r"triton_(per|red)_\w+", kernels), kernels[:500]
        graphs = _open_details(page, "graphs").locator("> .body").inner_text()
        assert "aot_backward" in graphs
        page.screenshot(path=str(BUILD / "browser-gpu-report.png"), full_page=False)

        path = tmp_path / "h100-max-autotune.html"
        save_html(reports["max_autotune"], path)
        page.goto(path.as_uri())
        page.wait_for_selector(".ipyc")
        assert "triton_tem_fused_addmm_gelu_t_0" in _open_details(page, "kernels").locator("> .body").inner_text()
        assert "Autotuning" in _open_details(page, "summary").locator("> .body").inner_text()
    finally:
        context.close()


# -- table text wraps between words, never inside a short one ------------------------------
# For every header and every short cell (a name, a place, a count: td.s, td.n) shown: each
# word's characters lie on one line, and the text fits its cell (nothing spills over).
_BROKEN_WORDS = """() => {
  const broken = [];
  for (const el of document.querySelectorAll('.ipyc th, .ipyc td.s, .ipyc td.n')) {
    if (!el.offsetParent || el.getBoundingClientRect().width === 0) continue;  // not shown
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (tops.size > 1) broken.push(el.tagName + ' "' + m[0] + '" on ' + tops.size + ' lines');
      }
    }
    if (el.scrollWidth > el.clientWidth + 1) broken.push(el.tagName + ' "' + el.innerText + '" spills over its cell');
  }
  return broken;
}"""


def test_static_html_tables_never_break_a_word_of_a_header_or_a_short_cell(browser, tmp_path):
    import torch

    import ipycompile
    from ipycompile.views.html import save_html
    from tracefile import gpu_records

    def breaks(x):
        y = x.sin()
        if y.sum() > 0:  # a graph break, so the Graph breaks table has a row
            return y.cos()
        return y

    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(breaks, backend="eager")(torch.ones(4))
    reports = {"cpu-graph-break": cap.report}
    reports.update({f"h100-{w}": ipycompile.build_report(gpu_records(w)) for w in ("quickstart", "max_autotune")})
    for width in (800, 1100, 1400):  # a narrow notebook, a common one, a full page
        context = browser.new_context(viewport={"width": width, "height": 1000})
        try:
            page = context.new_page()
            for name, report in reports.items():
                path = tmp_path / f"{name}.html"
                save_html(report, path)
                page.goto(path.as_uri())
                page.wait_for_selector(".ipyc")
                page.evaluate("() => document.querySelectorAll('.ipyc details').forEach(d => d.open = true)")
                shown = page.evaluate("() => document.querySelectorAll('.ipyc th, .ipyc td.s, .ipyc td.n').length")
                assert shown > 20, (name, shown)
                assert page.evaluate(_BROKEN_WORDS) == [], (name, width)
                # every column of the wide tables shown (their switch): still no word broken
                page.evaluate("() => document.querySelectorAll('.ipyc input.allc').forEach(b => b.checked = true)")
                assert page.evaluate(_BROKEN_WORDS) == [], (name, width, "all columns")
                if width == 1400 and name == "h100-quickstart":
                    page.screenshot(path=str(BUILD / "browser-static-tables.png"), full_page=False)
            # the check sees a broken word: squeeze the columns and let words break anywhere
            page.add_style_tag(content=".ipyc col{width:1ch!important}"
                                       ".ipyc th,.ipyc td{white-space:pre-wrap!important;overflow-wrap:anywhere!important}")
            assert any(b.endswith("lines") for b in page.evaluate(_BROKEN_WORDS))
        finally:
            context.close()


# -- the widget in the light and dark themes: contrast, widths, keyboard, links, copy ---------
def _theme(page, name: str) -> None:
    """Settings > Theme > ``name``, as a person picks it; waits until JupyterLab applied it."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^" + re.escape(name) + "$")).click()
    light = "false" if "Dark" in name else "true"
    page.wait_for_function("l => document.body.dataset.jpThemeLight === l", arg=light, timeout=30_000)
    page.mouse.move(0, 0)  # no hover state left on a menu or a tab


def _open_every_part(page, i: int) -> None:
    """Every tab of widget ``i`` with its first row expanded: what a person reads."""
    w = widget(page, i)
    for title in [t.inner_text() for t in w.locator(".lm-TabBar-tab").all()]:
        panel = open_tab(page, i, title.split(" (")[0])
        header = panel.locator(".jupyter-widget-Collapse-header").first
        if header.count() and header.is_visible():
            header.click()


_WIDGET_CONTRAST = _CONTRAST.replace("'.ipyc *'", "'.ipyc-w *'")


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_widget_text_has_aa_contrast_in_the_light_and_dark_themes(notebook, theme):
    page = notebook
    with failure_shot(page, f"widget-contrast-{theme.split()[-1].lower()}"):
        try:
            _theme(page, theme)
            for i in (1, 2):
                _open_every_part(page, i)
                open_tab(page, i, "Summary")
                bad = page.evaluate(_WIDGET_CONTRAST)
                assert not bad, (theme, i, bad[:20])
                checked = page.evaluate("() => [...document.querySelectorAll('.ipyc-w *')].filter(e => e.offsetParent && "
                                        "[...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())).length")
                assert checked > 40, checked  # the check saw the report's text, not an empty page
            shot(widget(page, 1), f"widget-{theme.split()[-1].lower()}")
        finally:
            _theme(page, "JupyterLab Light")


#: Every table of the page whose columns are cut by a box that neither shows nor scrolls them.
_CLIPPED = """() => {
  const clipped = [];
  for (const t of document.querySelectorAll('.ipyc table')) {
    if (!t.offsetParent) continue;
    for (let a = t.parentElement; a && !a.classList.contains('jp-OutputArea-output'); a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (a.scrollWidth > a.clientWidth + 1 && o !== 'auto' && o !== 'scroll') {
        clipped.push(a.className + ': ' + t.innerText.slice(0, 40)); break; }
      if (o === 'auto' || o === 'scroll') break;
    }
  }
  return clipped; }"""


def test_widget_tables_never_break_a_word_or_clip_a_column_at_three_widths(notebook):
    page = notebook
    try:
        for width in (800, 1100, 1400):
            page.set_viewport_size({"width": width, "height": 2000})
            with failure_shot(page, f"widget-words-{width}"):
                for i in (1, 2):
                    _open_every_part(page, i)
                    open_tab(page, i, "Summary")  # the tables of the first tab, then of each tab
                    for title in ("Summary", "Graph breaks", "Kernels", "Graphs", "Guards", "Profile"):
                        if widget(page, i).locator(".lm-TabBar-tab", has_text=re.compile("^" + title)).count():
                            open_tab(page, i, title)
                            assert page.evaluate(_BROKEN_WORDS) == [], (width, i, title)
                            assert page.evaluate(_CLIPPED) == [], (width, i, title)
                # every tab's title whole: none cut by the tab bar
                cut = page.evaluate("() => [...document.querySelectorAll('.ipyc-w .lm-TabBar-tabLabel')]"
                                    ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)")
                assert cut == [], (width, cut)
    finally:
        page.set_viewport_size({"width": 1400, "height": 2000})


def test_wide_tables_show_default_columns_and_the_rest_on_demand(notebook):
    page = notebook
    panel = open_tab(page, 1, "Kernels")
    table = panel.locator("table.ipyc-t").first
    visible = lambda: table.evaluate("t => [...t.querySelectorAll('th')].filter(h => h.offsetParent).length")  # noqa: E731
    every = table.locator("th").count()
    fewer = visible()
    assert 0 < fewer < every, (fewer, every)
    panel.locator("label.allc").first.click()
    assert visible() == every
    panel.locator("label.allc").first.click()
    assert visible() == fewer


def test_widget_tabs_are_an_aria_tablist_that_keys_drive(notebook):
    page = notebook
    w = widget(page, 1)
    tabs = w.locator("[role=tablist] [role=tab]")
    n = tabs.count()
    assert n == 8 and w.locator("[role=tablist]").count() == 1
    focused = lambda: page.evaluate("() => document.activeElement.textContent")  # noqa: E731
    selected = lambda: w.locator("[role=tab][aria-selected=true]").inner_text()  # noqa: E731
    open_tab(page, 1, "Summary")
    tabs.first.focus()
    page.keyboard.press("ArrowRight")
    assert focused().startswith("Graph breaks")
    page.keyboard.press("Enter")
    w.locator("[role=tab][aria-selected=true]", has_text=re.compile("^Graph breaks")).wait_for()
    page.keyboard.press("End")
    assert focused().startswith("Guards")
    page.keyboard.press("Home")
    assert focused() == "Summary"
    page.keyboard.press("ArrowLeft")  # wraps around to the last
    assert focused().startswith("Guards")
    page.keyboard.press(" ")
    w.locator("[role=tab][aria-selected=true]", has_text=re.compile("^Guards")).wait_for()
    assert selected().startswith("Guards")
    open_tab(page, 1, "Summary")


def test_fix_code_has_a_copy_button_that_copies_it(notebook):
    page = notebook
    first = widget(page, 1).locator(".ipyc-first")
    button = first.locator("button.copy").first
    assert button.get_attribute("aria-label") == "Copy the code"
    button.click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied.strip() == first.locator(".fixbox pre").first.inner_text().strip()
    assert "torch.where" in copied or "torch.cond" in copied, copied


def test_a_break_links_to_its_cell_and_line(notebook):
    page = notebook
    link = widget(page, 1).locator(".ipyc-first a.place").first
    assert link.inner_text() == "In [2], line 3" and link.get_attribute("data-cell") == "2"
    page.mouse.wheel(0, 5000)
    link.click()
    hit = cell(page, 1).locator(".cm-line.ipyc-hit")
    hit.wait_for(timeout=5_000)
    assert hit.inner_text() == "if x.sum() > 0:"
    assert hit.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
    # the Graph breaks table's place is a link too
    panel = open_tab(page, 1, "Graph breaks")
    assert panel.locator("table a.place", has_text="In [2], line 3").count() >= 1


def test_static_html_links_a_break_to_its_line_in_the_shown_source(static_page, lab):
    page = _static(static_page, lab, "gb.html")
    link = page.locator(".first a.place").first
    href = link.get_attribute("href")
    assert link.inner_text() == "In [2], line 3" and href.startswith("#") and len(href) > 1
    target = page.locator(href)
    assert target.count() == 1 and not target.is_visible()  # inside the Graph breaks tab, not selected
    link.click()
    target.wait_for(state="visible", timeout=5_000)  # the page selected the tab and opened the row holding it
    # the link lands on the break's line of the shown source, highlighted (:target)
    assert href.endswith("-L3") and target.evaluate("e => e.matches(':target')")
    assert re.fullmatch(r">\s*3 \| if x\.sum\(\) > 0:", target.inner_text()), target.inner_text()
    assert target.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"


# -- VS Code: the report's HTML output in its notebook webview (dark, light, high contrast) ---------
#: VS Code's default themes: Dark Modern, Dark+, Dark High Contrast, Light Modern, Light+
VSCODE = list(VSCODE_THEMES)
#: the report with a problem of each kind on its first screen: an unrolled loop, a graph break
#: in a helper (so the helper and the code after its break compile on their own), called with
#: two sizes (each recompiles once)
VSCODE_CELLS = ["import torch\n"
                "def step(x):\n"
                "    for w in (1.0, 2.0, 3.0, 4.0):\n"
                "        x = torch.sin(x * w) + x\n"
                "    if x.sum() > 0:\n"
                "        x = x.cos()\n"
                "    return x",
                "%%compile --backend eager --runs 2\ny = step(torch.ones(4))\nz = step(torch.ones(8))"]
_TEXT_ELEMENTS = ("() => [...document.querySelectorAll('.ipyc *')].filter(e => e.offsetParent && "
                  "[...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())).length")


@pytest.fixture(scope="module")
def shell_display():
    """The HTML a real ``%%compile`` displays in an IPython shell that shows HTML but has no
    widgets (the compact page with its tabs), for VSCODE_CELLS."""
    from IPython.utils.capture import capture_output

    import shells

    with shells.loaded(html=True) as ip:  # a frontend that shows HTML
        assert ip.run_cell(VSCODE_CELLS[0]).success
        with capture_output() as out:
            res = ip.run_cell(VSCODE_CELLS[1], store_history=True)
        assert res.success, res.error_in_exec
    (shown,) = out.outputs
    return shown.data["text/html"]


def vscode_check(browser, outputs: list, theme: str, name: str, problems: bool = True) -> int:
    """Show ``outputs`` (a cell's HTML outputs) as VS Code's notebook webview does in ``theme``
    (browser_helpers.vscode_page; the scheme reported light, as VS Code does); with each tab
    selected in turn and every row and column opened, every visible text of the report meets
    WCAG AA (4.5:1), and "What to fix" reads (where the report has ``problems``). Screenshots
    build/browser-vscode-NAME-THEME.png.
    Returns how many text elements were checked."""
    context = browser.new_context(viewport={"width": 1100, "height": 1000}, color_scheme="light")
    try:
        page = context.new_page()
        page.set_content(vscode_page(outputs, theme))
        page.locator(".ipyc").filter(visible=True).first.wait_for()  # the one that shows: a static copy may hide
        with failure_shot(page, f"vscode-{name}-{theme}"):
            # the webview as VS Code's: a light scheme whatever the theme, its variables, none of JupyterLab's
            assert page.evaluate("() => matchMedia('(prefers-color-scheme: light)').matches")
            assert page.evaluate("() => getComputedStyle(document.body).getPropertyValue('--vscode-editor-background')")
            assert not page.evaluate("() => getComputedStyle(document.body).getPropertyValue('--jp-layout-color0')")
            if problems:
                heading = page.locator(".ipyc .first p.heading", has_text="What to fix").filter(visible=True).first
                assert heading.is_visible()
                assert heading.evaluate(_RATIO) >= 4.5, (theme, heading.evaluate(_RATIO))
            page.screenshot(path=str(BUILD / f"browser-vscode-{name}-{theme}.png"))
            bad, checked = [], 0
            tabs = page.locator(".ipyc [role=tablist] > [role=tab]")
            for i in range(max(1, tabs.count())):  # the static copy has no tab strip: every panel shows
                if tabs.count():
                    tabs.nth(i).click()
                page.evaluate("() => { document.querySelectorAll('.ipyc details').forEach(d => d.open = true);"
                              " document.querySelectorAll('.ipyc input.allc').forEach(b => b.checked = true); }")
                bad += page.evaluate(_CONTRAST)
                checked += page.evaluate(_TEXT_ELEMENTS)
            assert not bad, (theme, name, len(bad), bad[:20])
            if tabs.count():
                tabs.first.click()
        return checked
    finally:
        context.close()


@pytest.mark.parametrize("theme", VSCODE)
def test_vscode_shows_the_reports_html_with_aa_contrast(browser, shell_display, theme):
    checked = vscode_check(browser, [shell_display], theme, "shell")
    assert checked > 400, checked  # every tab's text was seen
    if theme == "dark-modern":  # the check sees unreadable text: the report's own colours taken away
        context = browser.new_context(viewport={"width": 1100, "height": 1000}, color_scheme="light")
        try:
            page = context.new_page()
            page.set_content(vscode_page([shell_display], theme))
            page.add_style_tag(content=".ipyc{--ic-fg:#1f2328!important;background:none!important}")
            assert any(b.startswith("P.heading") and "What to fix" in b for b in page.evaluate(_CONTRAST))
        finally:
            context.close()


@pytest.fixture(scope="module")
def live_outputs():
    """The two outputs live.show displays for VSCODE_CELLS' %%compile cell, as a kernel with
    widgets sends them: the static copy's HTML, then the widget, as ``(its view's DOM, the
    widget output's text/plain)`` (browser_helpers.widget_dom: its first tab built)."""
    import ipycompile
    from ipycompile.views.widget import ReportWidget

    ns: dict = {}
    exec(VSCODE_CELLS[0], ns)
    code = VSCODE_CELLS[1].split("\n", 1)[1]
    run = ipycompile.run_cell(code, ns, backend="eager", runs=2, warmup=0, record=False)
    assert run.report.graph_breaks, run.report
    w = ReportWidget(run.report)
    try:
        static = w.static_bundle()["text/html"]
        w.standalone = False  # as live.show displays it, after the static copy
        text = w._repr_mimebundle_()["text/plain"]
        return static, widget_dom(w), text
    finally:
        w.close()


_VISIBLE_REPORTS = ("() => [...document.querySelectorAll('.ipyc')].filter(e => !e.parentElement.closest('.ipyc')"
                    " && e.offsetParent && e.getBoundingClientRect().height > 0).map(e => e.className)")


@pytest.mark.parametrize("widget", ["drawn", "disconnected", "fallback"])
@pytest.mark.parametrize("theme", ["dark-modern", "light-modern"])
def test_vscode_shows_one_report_from_the_static_copy_and_the_widget(browser, live_outputs, theme, widget):
    """VS Code's webview holding live.show's two outputs (the static copy, then the widget's):
    beside a drawn widget only the widget shows; beside a widget drawn disconnected from its
    kernel, or where Jupyter's renderer fell back to the widget output's text/plain (no widget
    state, no kernel, no widget renderer), only the static copy shows, and no empty widget
    output or its line of text. The report that shows meets AA (vscode_check)."""
    static, dom, text = live_outputs
    if widget == "disconnected":  # ipywidgets' mark on a view restored without its kernel
        dom = dom.replace("ipyc-w", "ipyc-w jupyter-widgets-disconnected", 1)
    outputs = [static, ("text/plain", text) if widget == "fallback" else ("widget", dom)]
    context = browser.new_context(viewport={"width": 1100, "height": 1000}, color_scheme="light")
    try:
        page = context.new_page()
        page.set_content(vscode_page(outputs, theme))
        with failure_shot(page, f"vscode-live-{widget}-{theme}"):
            shown = page.evaluate(_VISIBLE_REPORTS)
            assert len(shown) == 1, shown
            assert ("ipyc-w" in shown[0]) == (widget == "drawn"), shown
            assert ("ipyc-static" in shown[0]) == (widget != "drawn"), shown
            hidden = page.locator(".output_container").nth(1 if widget != "drawn" else 0)
            assert not hidden.is_visible() and hidden.evaluate("e => e.getBoundingClientRect().height") == 0
            assert not page.get_by_text(text).is_visible()
    finally:
        context.close()
    assert vscode_check(browser, outputs, theme, f"live-{widget}") > 100


def _save_and_read(page, lab) -> dict:
    """Save the notebook from the page (Ctrl+S); the saved file, as the server reads it."""
    before = lab.api(f"contents/{NOTEBOOK}?content=0")["last_modified"]
    page.keyboard.press("Escape")
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while lab.api(f"contents/{NOTEBOOK}?content=0")["last_modified"] == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.25)
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    return lab.api(f"contents/{NOTEBOOK}")["content"]


@pytest.mark.parametrize("theme", ["dark-modern", "light-modern"])
def test_vscode_shows_the_kernels_outputs_saved_by_jupyterlab_with_aa_contrast(browser, lab, notebook, theme):
    """The HTML outputs of the notebook's %%compile cells as a kernel with widgets sends them (the
    static copy first, the widget's view after it), saved by JupyterLab: what VS Code shows of
    the notebook (the widget apart: VS Code's Jupyter extension draws widgets on white)."""
    nb = _save_and_read(notebook, lab)
    for i in (1, 2):
        html = [o["data"]["text/html"] for o in nb["cells"][i]["outputs"] if "text/html" in o.get("data", {})]
        assert html and all("ipyc" in h for h in html), (i, [list(o.get("data", {})) for o in nb["cells"][i]["outputs"]])
        # cell 1 has the graph break: "What to fix" on its first screen
        assert vscode_check(browser, html, theme, f"saved-cell{i}", problems=i == 1) > 100


# -- clean-up -------------------------------------------------------------------------------
def test_server_and_its_kernels_are_shut_down(lab):
    """What the fixtures rely on: stopping the server ends it and every kernel it started. The module's
    own server, stopped here, after the tests that use it (this test is the module's last; the
    fixture's stop at the end of the module then finds nothing left to stop)."""
    import psutil

    server = lab
    before = set(server.kernel_pids())  # the notebook's kernel, when a test above started it
    server.api("kernels", method="POST", body={"name": "python3"})
    deadline = time.monotonic() + 30
    while not set(server.kernel_pids()) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    kernels = server.kernel_pids()
    assert set(kernels) - before, "the kernel did not start"
    # each kernel runs in a session of its own (jupyter_client starts it so): not the server's group
    assert all(os.getpgid(k) != os.getpgid(server.proc.pid) for k in kernels), kernels
    procs = [psutil.Process(server.proc.pid), *psutil.Process(server.proc.pid).children(recursive=True)]
    server.stop()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs):
        time.sleep(0.2)
    alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, alive
