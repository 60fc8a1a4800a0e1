"""The static HTML page in a real browser: its tabs are an ARIA tablist that the keyboard
drives, every panel shows where scripts are stripped (no script; nbconvert's sanitising, as
GitHub and an untrusted notebook strip them), a place's link lands on its line in the shown
source, and every text keeps WCAG AA contrast in the light and dark schemes.

One real compile (backend "eager": a data-dependent ``if``, a graph break) in a file of its
own; the worker's one Chromium (Debian's, ``/usr/bin/chromium``: the ``browser`` fixture of
``conftest.py``), a context per case.
Screenshots go to ``build/static-*.png``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"

SOURCE = """\
import torch


def step(x):
    y = x.sin()
    if y.sum() > 0:
        y = y + 1
    return y * 2
"""
BREAK_LINE = 6  # `if y.sum() > 0:`


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    import torch

    import ipycompile

    path = tmp_path_factory.mktemp("code") / "stepper.py"
    path.write_text(SOURCE)
    ns: dict = {}
    exec(compile(SOURCE, str(path), "exec"), ns)
    torch._dynamo.reset()
    step = torch.compile(ns["step"], backend="eager")
    with ipycompile.capture() as cap:
        step(torch.ones(8))
    r = cap.report
    assert r.graph_breaks and r.graph_breaks[0].stop.lineno == BREAK_LINE, r.graph_breaks
    return r


@pytest.fixture(scope="module")
def pages(report, tmp_path_factory):
    """The full page (``report.to_html``) and a notebook's compact page, as files."""
    import warnings

    from ipycompile.views.html import render_html

    folder = tmp_path_factory.mktemp("pages")
    full = folder / "full.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # to_html warns that the page holds the model's code
        report.to_html(str(full))
    compact = folder / "compact.html"
    compact.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="color-scheme" '
                       f'content="light dark"></head><body>{render_html(report, compact=True)}</body></html>')
    from ipycompile.views.html import fallback_bundle
    from ipycompile.views.viewmodel import view_model

    fallback = folder / "fallback.html"  # the static copy beside a report widget: no tab strip, no script
    fallback.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
                        f'{fallback_bundle(view_model(report), "")["text/html"]}</body></html>')
    return {"full": full, "compact": compact, "fallback": fallback}


def _open(browser, path: Path, *, script: bool = True, scheme: str = "light", width: int = 1100):
    context = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=script,
                                  color_scheme=scheme, offline=True)
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector(".ipyc")
    return context, page


def _shot(page, name: str, full: bool = True) -> None:
    BUILD.mkdir(exist_ok=True)
    page.screenshot(path=str(BUILD / f"static-{name}.png"), full_page=full)


def _state(page) -> list[tuple[str, str, str, bool]]:
    """Each tab: its key, aria-selected, tabindex, and whether its panel is shown."""
    return [tuple(x) for x in page.evaluate("""() => [...document.querySelectorAll('.ipyc [role=tablist] > [role=tab]')].map(b => {
        const p = document.getElementById(b.getAttribute('aria-controls'));
        return [b.dataset.tab, b.getAttribute('aria-selected'), b.getAttribute('tabindex'), !!(p && p.offsetHeight > 0)]; })""")]


@pytest.mark.parametrize("which", ["full", "compact"])
def test_tabs_are_an_aria_tablist_that_keys_drive(browser, pages, report, which):
    from ipycompile.views.viewmodel import view_model

    keys = [t.key for t in view_model(report).tabs]
    context, page = _open(browser, pages[which])
    try:
        tablist = page.locator(".ipyc [role=tablist]")
        assert tablist.count() == 1 and tablist.is_visible()
        tabs = tablist.locator("> [role=tab]")
        assert tabs.count() == len(keys)
        for i in range(tabs.count()):  # each tab names its panel, which names it back
            tab = tabs.nth(i)
            panel = page.locator(f"#{tab.get_attribute('aria-controls')}")
            assert panel.get_attribute("role") == "tabpanel"
            assert panel.get_attribute("aria-labelledby") == tab.get_attribute("id")
        assert _state(page) == [(k, "true" if i == 0 else "false", "0" if i == 0 else "-1", i == 0)
                                for i, k in enumerate(keys)]

        def selected() -> str:
            on = [k for k, sel, tabindex, shown in _state(page) if sel == "true"]
            shown = [k for k, sel, tabindex, visible in _state(page) if visible]
            focused = page.evaluate("() => document.activeElement.dataset.tab")
            assert on == shown == [focused], (on, shown, focused)
            return on[0]

        tabs.first.focus()
        page.keyboard.press("ArrowRight")
        assert selected() == keys[1]
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")  # from the first, round to the last
        assert selected() == keys[-1]
        page.keyboard.press("Home")
        assert selected() == keys[0]
        page.keyboard.press("End")
        assert selected() == keys[-1]
        page.keyboard.press("Tab")  # out of the strip: into the selected panel, not along the tabs
        assert page.evaluate("() => document.activeElement.getAttribute('role')") == "tabpanel"
        tabs.nth(keys.index("graph_breaks")).click()
        assert [k for k, sel, _, _ in _state(page) if sel == "true"] == ["graph_breaks"]
        panel = page.locator("section[role=tabpanel][data-tab=graph_breaks]")
        assert "if y.sum() > 0:" in panel.inner_text()
        _shot(page, f"tabs-{which}")
    finally:
        context.close()


def _all_panels_shown(page, report) -> None:
    from ipycompile.views.viewmodel import view_model

    vm = view_model(report)
    text = page.evaluate("() => document.body.innerText")
    for tab in vm.tabs:  # every panel's heading and its text, in the page as shown
        assert tab.title in text, tab.title
    panels = page.locator("[role=tabpanel]")
    assert panels.count() == len(vm.tabs)
    for i in range(panels.count()):
        assert panels.nth(i).is_visible()
    assert "if y.sum() > 0:" in text and "Graph break" in text


@pytest.mark.parametrize("which", ["full", "compact", "fallback"])
def test_without_script_every_panel_shows(browser, pages, report, which):
    """Scripts stripped (an untrusted notebook, GitHub, a browser without script): no tab strip
    that does nothing, every panel under its heading. The static copy beside a report widget
    has no strip nor script at all (the display budget): the same with script on."""
    from ipycompile.views.viewmodel import view_model

    context, page = _open(browser, pages[which], script=which == "fallback")
    try:
        _all_panels_shown(page, report)
        assert not page.locator(".ipyc [role=tablist]").is_visible()
        headings = page.locator("[role=tabpanel] > h3")
        assert headings.count() == len(view_model(report).tabs) and headings.first.is_visible()
        _shot(page, f"noscript-{which}")
    finally:
        context.close()


def test_nbconvert_sanitised_shows_every_panel(browser, report, tmp_path):
    """A notebook holding the report's outputs (the compact page, and the static copy beside a
    report widget), exported by nbconvert with its sanitiser on (scripts, styles and handlers
    removed, as GitHub and an untrusted notebook do): every panel's text shows."""
    import nbformat
    from nbconvert import HTMLExporter

    from ipycompile.views.html import fallback_bundle, notebook_bundle
    from ipycompile.views.plain_text import render_text
    from ipycompile.views.viewmodel import view_model

    vm = view_model(report)
    v4 = nbformat.v4
    cell = v4.new_code_cell("%%compile\nstep(x)", execution_count=1, outputs=[
        v4.new_output("display_data", data={"text/plain": "report", **notebook_bundle(report)}),
        v4.new_output("display_data", data=fallback_bundle(vm, render_text(vm))),
    ])
    nb = v4.new_notebook(cells=[cell])
    body, _ = HTMLExporter(sanitize_html=True).from_notebook_node(nb)
    assert "ipyc" in body and "TABS" not in body
    outputs = re.findall(r"<script>\(function\(\)\{\[\]\.forEach", body)
    assert not outputs  # the sanitiser took the tabs' script out
    path = tmp_path / "sanitised.html"
    path.write_text(body, encoding="utf-8")
    context, page = _open(browser, path)  # script on in the browser: the page has none of ours left
    try:
        text = page.evaluate("() => document.body.innerText")
        for tab in vm.tabs:
            assert text.count(tab.title) >= 2, tab.title  # in both outputs
        assert text.count("if y.sum() > 0:") >= 2 and "Graph break" in text
        assert page.locator(".ipyc .tabs.on").count() == 0
        _shot(page, "nbconvert-sanitised", full=False)  # the whole page is a tall one
    finally:
        context.close()


@pytest.mark.parametrize("script", [True, False])
def test_a_place_link_lands_on_its_line_in_the_shown_source(browser, pages, script):
    context, page = _open(browser, pages["full"], script=script, width=1100)
    try:
        link = page.locator(".first a.place").first
        href = link.get_attribute("href")
        assert re.fullmatch(rf"#[\w-]+-L{BREAK_LINE}", href), href
        line = page.locator(href)
        assert line.count() == 1 and line.get_attribute("class") == "ln"
        assert not line.is_visible()  # in the break's row, closed (with script, in a tab not selected yet too)
        page.evaluate("() => window.scrollTo(0, 0)")
        link.click()
        line.wait_for(state="visible", timeout=5_000)
        assert line.evaluate("e => e.matches(':target')")
        assert re.fullmatch(rf">\s*{BREAK_LINE} \| +if y\.sum\(\) > 0:", line.inner_text()), line.inner_text()
        assert line.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"  # highlighted
        assert line.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
        other = page.locator(href.replace(f"-L{BREAK_LINE}", f"-L{BREAK_LINE - 1}"))
        assert other.evaluate("e => getComputedStyle(e).outlineStyle") == "none"  # only the target line
        if script:
            assert page.locator("[role=tab][data-tab=graph_breaks]").get_attribute("aria-selected") == "true"
        _shot(page, f"place-link-{'script' if script else 'noscript'}")
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_tabs_and_the_target_line_keep_aa_contrast(browser, pages, scheme):
    from test_browser import _CONTRAST

    for script in (True, False):
        context, page = _open(browser, pages["full"], script=script, scheme=scheme)
        try:
            page.locator(".first a.place").first.click()  # a target line highlighted, its tab selected
            bad = page.evaluate(_CONTRAST)
            assert not bad, (script, bad[:20])
            if script:
                _shot(page, f"contrast-{scheme}")
        finally:
            context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_compile_time_chart_reads_in_both_schemes(browser, pages, scheme):
    """The phase chart is SVG in the page: its text is drawn in the page's text colour (AA on the
    page's ground in either scheme), its bars are drawn, and it fits the page's width."""
    from test_browser import _RATIO

    context, page = _open(browser, pages["full"], script=False, scheme=scheme)  # every panel shown
    try:
        chart = page.locator("svg.ipyc-chart").first
        chart.scroll_into_view_if_needed()
        box = chart.bounding_box()
        assert box and 0 < box["width"] <= 1100 and box["height"] > 0
        texts = chart.locator("text")
        assert texts.count() > 5
        for i in range(texts.count()):
            t = texts.nth(i)
            fill, color = t.evaluate("e => [getComputedStyle(e).fill, getComputedStyle(e).color]")
            assert fill == color, (fill, color)
            assert t.evaluate(_RATIO) >= 4.5, (t.text_content(), t.evaluate(_RATIO))
        bars = chart.locator("rect")
        assert bars.count() > 0 and all(bars.nth(i).bounding_box()["width"] > 0 for i in range(bars.count()))
        chart.screenshot(path=str(BUILD / f"static-chart-{scheme}.png"))
    finally:
        context.close()
