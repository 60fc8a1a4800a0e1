"""The page of a large report in a real browser: its first screen at load, the rest built as it
is opened (:mod:`ipycompile.views.page_files`), and nothing the whole page shows lost.

The report is read from three renumbered copies of each recorded H100 log (as
``benchmarks/trace_load.py`` builds its large logs), and written twice: whole, as a page on stdout
is (``write_body``: every part in place, nothing deferred), and by ``save_html`` as a page with its
folder of parts (a threshold below its size: the default, 2 MB, is met by logs of a few tens of
MB, too slow to read in a unit test). One
Chromium (Debian's) for the module, a context per case, offline, from ``file://``. Structure
only: no timed assert (load times are measured by the benchmark's ``page`` group).
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser


ROOT = Path(__file__).resolve().parents[1]
COPIES = 3
#: the folder page's threshold: well under the report's parts, so that the page spills into files
FOLDER_ABOVE = 100_000


def _trace_load():
    spec = importlib.util.spec_from_file_location("trace_load", ROOT / "benchmarks" / "trace_load.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    import ipycompile
    from ipycompile.views.html import save_html, write_body

    tl = _trace_load()
    sources = [tl.source_records(w) for w in tl.WORKLOADS]
    records, offset = [], 0
    for _ in range(COPIES):
        for recs in sources:
            records += tl.shifted(recs, offset)
            offset += tl.frames_in(recs)
    report = ipycompile.build_report(records)
    folder = tmp_path_factory.mktemp("large-page")
    whole, split = folder / "whole.html", folder / "split.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save_html(report, str(split), folder_above=FOLDER_ABOVE)
    # the whole page as a page on stdout is written: every part in place, rendered without deferring any
    text = split.read_text(encoding="utf-8")
    head = text[:text.index("<style>")]
    with open(whole, "w", encoding="utf-8") as f:
        f.write(head)
        write_body(report, f.write)
        f.write("\n</body></html>\n")
    return {"whole": whole, "split": split, "files": sorted((folder / "split_files").iterdir())}


def _open(browser, path: Path, script: bool = True):
    context = browser.new_context(viewport={"width": 1300, "height": 900}, java_script_enabled=script, offline=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(path.as_uri())
    page.wait_for_selector(".ipyc")
    return context, page, errors


_ELEMENTS = "() => document.getElementsByTagName('*').length"
#: each panel's text, closed <details> included (textContent), keyed by tab
_PANELS = "() => Object.fromEntries([...document.querySelectorAll('section[role=tabpanel]')].map(s => [s.dataset.tab, s.textContent]))"


@pytest.fixture(scope="module")
def whole(browser, pages):
    """What the whole page shows, read once: its element count, first screen, tabs, each panel's
    text as shown and whole (closed details included), and the details of three kernel rows."""
    context, page, _ = _open(browser, pages["whole"])
    try:
        facts = {"elements": page.evaluate(_ELEMENTS), "first": page.locator(".first").inner_text(),
                 "tabs": page.locator("[role=tablist] > [role=tab]").all_inner_texts(),
                 "content": page.evaluate(_PANELS), "shown": {}}
        for key in page.evaluate("() => [...document.querySelectorAll('[role=tab]')].map(b => b.dataset.tab)"):
            page.locator(f"[role=tab][data-tab='{key}']").click()
            facts["shown"][key] = page.locator(f"section[data-tab='{key}']").inner_text()
        page.locator("[role=tab][data-tab=kernels]").click()
        rows = page.locator("section[data-tab=kernels] .tbl > details")
        n = rows.count()
        facts["rows"], facts["picks"], facts["details"] = n, [0, n // 2, n - 1], []
        for i in facts["picks"]:
            rows.nth(i).locator("> summary").click()
            facts["details"].append(rows.nth(i).locator("> .det").inner_text())
        return facts
    finally:
        context.close()


def _select(page, key: str):
    page.locator(f"[role=tablist] > [role=tab][data-tab='{key}']").click()
    page.wait_for_function(f"() => !document.querySelector('section[data-tab={key}] > [data-ipyc-c]')")
    return page.locator(f"section[role=tabpanel][data-tab='{key}']")


def test_the_page_is_its_first_screen_and_a_folder_of_parts(pages):
    assert pages["files"] and all(re.fullmatch(r"\d+\.js", p.name) for p in pages["files"])
    assert pages["split"].stat().st_size < pages["whole"].stat().st_size / 5
    assert not (pages["whole"].parent / "whole_files").exists()  # a page under its threshold: one file


def test_first_screen_at_load_and_the_rest_not_yet_in_the_dom(browser, pages, whole):
    context, page, errors = _open(browser, pages["split"])
    try:
        page.wait_for_load_state("load")
        assert page.locator(".first").inner_text() == whole["first"]  # the doctor's findings and the chips
        assert page.locator(".first .prob").count() >= 1 and page.locator(".first .strip .chip").count() >= 3
        assert page.locator("[role=tablist]").is_visible()
        assert page.locator("[role=tablist] > [role=tab]").all_inner_texts() == whole["tabs"]
        assert page.locator("section[data-tab=summary]").inner_text() == whole["shown"]["summary"]
        # every other panel holds one placeholder, not its body
        bodies = page.evaluate("() => [...document.querySelectorAll('section[role=tabpanel]')].map("
                               "s => [s.dataset.tab, !!s.querySelector('.body'), s.querySelectorAll(':scope > [data-ipyc-c]').length])")
        assert bodies[0] == ["summary", True, 0]
        assert all(not body and n == 1 for _, body, n in bodies[1:]), bodies
        assert page.evaluate(_ELEMENTS) < whole["elements"] / 4, (page.evaluate(_ELEMENTS), whole["elements"])
        assert not errors
    finally:
        context.close()


def test_opening_each_tab_builds_what_the_whole_page_shows(browser, pages, whole):
    context, page, errors = _open(browser, pages["split"])
    try:
        more = set()
        for key, text in whole["shown"].items():
            panel = _select(page, key)
            while panel.locator(".more[data-ipyc-c]").count():  # a long list's next rows, behind a button
                button = panel.locator(".more[data-ipyc-c]").first.element_handle()
                assert re.fullmatch(r"Show (rows|options|entries) \d+ to \d+ \(of \d+\)", button.inner_text())
                more.add((key, button.inner_text().split()[1]))
                button.click()
                page.wait_for_function("b => !b.isConnected", arg=button)
            assert panel.inner_text() == text, key
        # lots of 200 of the graphs table's rows and of its choice's options, and of the guards tab's trees by size
        assert {("graphs", "rows"), ("graphs", "options"), ("guards", "entries")} <= more, more
        assert not errors
    finally:
        context.close()


def test_opening_a_row_builds_its_details(browser, pages, whole):
    assert whole["rows"] > 1 and all(whole["details"])
    context, page, errors = _open(browser, pages["split"])
    try:
        panel = _select(page, "kernels")
        rows = panel.locator(".tbl > details")
        assert rows.count() == whole["rows"]
        assert rows.locator("> .det").count() == 0  # no row's details built yet
        for i, text in zip(whole["picks"], whole["details"]):
            rows.nth(i).locator("> summary").click()
            rows.nth(i).locator("> .det").wait_for()
            assert rows.nth(i).locator("> .det").inner_text() == text
        assert rows.locator("> .det").count() == len(whole["picks"])  # only the rows opened
        assert not errors
    finally:
        context.close()


def test_a_place_link_builds_its_part_and_lands_on_its_line(browser, pages):
    context, page, errors = _open(browser, pages["split"])
    try:
        link = page.locator(".first a.place").first
        href = link.get_attribute("href")
        assert re.fullmatch(r"#[\w-]+-L\d+", href), href
        assert page.locator(href).count() == 0  # in a part not built yet
        link.click()
        line = page.locator(href)
        line.wait_for(state="visible")
        assert line.evaluate("e => e.matches(':target')")
        assert page.locator("[role=tab][data-tab=graph_breaks]").get_attribute("aria-selected") == "true"
        assert not errors
    finally:
        context.close()


def test_load_every_panel_builds_the_whole_page(browser, pages, whole):
    """After "Load every panel" (for the browser's find) every panel holds the whole page's text,
    closed details included."""
    context, page, errors = _open(browser, pages["split"])
    try:
        page.locator("button.loadall").click()
        page.wait_for_function("() => !document.querySelector('[data-ipyc-c]')")
        assert page.evaluate(_PANELS) == whole["content"]
        assert page.locator("button.loadall").inner_text() == "Every panel is loaded"
        assert not errors
    finally:
        context.close()


def test_a_missing_folder_or_no_script_is_said(browser, pages, tmp_path_factory):
    context, page, _ = _open(browser, pages["split"], script=False)
    try:
        said = page.locator("noscript > p.warn")
        assert said.is_visible() and "builds its panels with script, from the folder split_files" in said.inner_text()
    finally:
        context.close()
    # the page copied without its folder (outside tmp_path: the suite's check of written pages would flag it)
    lone = tmp_path_factory.mktemp("lone") / "lone.html"
    lone.write_bytes(pages["split"].read_bytes())
    context, page, _ = _open(browser, lone)
    try:
        page.locator("[role=tab][data-tab=kernels]").click()
        missing = page.locator("section[data-tab=kernels] > .ipyc-missing")
        missing.wait_for()
        assert "lone_files" not in missing.inner_text() and "split_files/" in missing.inner_text()
        assert "keep the folder beside the page" in missing.inner_text()
    finally:
        context.close()


@pytest.fixture(scope="module")
def long_lists(tmp_path_factory):
    """A hand-built view whose lists run to several lots: a plain table and a table of rows that
    expand, 650 rows each, a choice of 450 options, a tab of 90 blocks of 7 KB."""
    from ipycompile.views.blocks import Choice, Code, Tab, Table, Text, ViewModel
    from ipycompile.views.html import render_view_model
    from ipycompile.views.page_files import write_page

    n = 650
    plain = Table(["n", "square"], [[i, i * i] for i in range(n)], title="plain")
    rows = Table(["n"], [[i] for i in range(n)], details=[[Text(f"details of {i}")] for i in range(n)], title="rows")
    choice = Choice("option", {f"option {i}": [Text(f"text of option {i}")] for i in range(450)}, "option 0")
    blocks = [Code(f"block {i}", f"# {i}\n" + "x = 1\n" * 1200, "text") for i in range(90)]
    vm = ViewModel(header=[], problems=[], tabs=[Tab("first", "First", lambda: [Text("first")]),
                                                 Tab("lists", "Lists", lambda: [plain, rows, choice]),
                                                 Tab("blocks", "Blocks", lambda: blocks)])
    folder = tmp_path_factory.mktemp("long-lists")
    whole, split = folder / "whole.html", folder / "split.html"
    whole.write_text(f"<!DOCTYPE html><html><body>{render_view_model(vm)}</body></html>", encoding="utf-8")
    write_page(str(split), "<!DOCTYPE html><html><body>", lambda c: render_view_model(vm, chunks=c), "</body></html>",
               limit=1000)
    return whole, split


def test_long_lists_come_lot_by_lot_with_nothing_lost(browser, long_lists):
    whole, split = long_lists
    context, page, _ = _open(browser, whole)
    try:
        want = page.evaluate(_PANELS)
        shown = {}
        for key in ("lists", "blocks"):
            page.locator(f"[role=tab][data-tab='{key}']").click()
            shown[key] = page.locator(f"section[data-tab='{key}']").inner_text()
    finally:
        context.close()
    context, page, errors = _open(browser, split)
    try:
        seen = []
        for key in ("lists", "blocks"):
            panel = _select(page, key)
            while panel.locator(".more[data-ipyc-c]").count():
                button = panel.locator(".more[data-ipyc-c]").first.element_handle()
                seen.append(button.inner_text())
                button.click()
                page.wait_for_function("b => !b.isConnected", arg=button)
            assert panel.inner_text() == shown[key], key
        page.locator("button.loadall").click()  # and the closed details' content
        page.wait_for_function("() => document.querySelector('button.loadall').textContent == 'Every panel is loaded'")
        assert page.evaluate(_PANELS) == want
        # each lot's button at the end of the one before: 3 more lots of each table, 2 of the choice
        assert [s for s in seen if "(of 650)" in s] == ["Show rows 201 to 400 (of 650)", "Show rows 401 to 600 (of 650)",
                                                        "Show rows 601 to 650 (of 650)"] * 2
        assert [s for s in seen if "options" in s] == ["Show options 201 to 400 (of 450)", "Show options 401 to 450 (of 450)"]
        # blocks past 128 KB a lot, and never fewer than 20 of them
        assert [s for s in seen if "entries" in s] == [f"Show entries {a} to {b} (of 90)" for a, b in
                                                      ((21, 40), (41, 60), (61, 80), (81, 90))]
        plain_rows = page.evaluate("() => [...document.querySelectorAll('section[data-tab=lists] .wide table tr')]"
                                   ".map(r => r.cells[0].textContent)")
        assert plain_rows == ["n"] + [str(i) for i in range(650)]  # in one table, in order
        assert not errors
    finally:
        context.close()
