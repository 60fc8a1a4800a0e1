"""A notebook with ``%%compile`` reports, saved, the server stopped, reopened on a fresh one.

The whole cycle in a real browser (Debian's Chromium through Playwright), as a user
goes through it (issue 31, part 3):

1. JupyterLab 4 runs the quickstart (``tutorials/01_quickstart.ipynb``'s model and the
   README's ``%%compile --compare-eager`` cell, on the eager backend to be quick) and
   the same cell again (its compile reused), in the live page; screenshots of the
   report in the light and the dark theme go to ``build/``.
2. It is saved three ways, each kept as its own file: with JupyterLab's "save widget
   state" off (the default), on, and on after a kernel restart (the widgets' models
   are gone from the kernel).
3. The server is stopped; a fresh one on the same Jupyter home (the same user: the
   notebook is still trusted) reopens each file in JupyterLab 4 (with the fresh kernel
   it starts: where the state was saved the widget is drawn again, disconnected from
   any kernel, so the static copy shows in its place) and in Notebook 7
   (without a kernel: "No Kernel"), and a copy changed by another client (untrusted) in
   JupyterLab; nbconvert exports each to HTML. Each time: every report's problem and fix
   are visible, and no widget error is.

Screenshots: ``build/saved-*.png``. One live server and one reopening server per app.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

nbformat = pytest.importorskip("nbformat")

from browser_helpers import LabServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
WIDGETS = "@jupyter-widgets/jupyterlab-manager:plugin"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

#: what no reopened notebook may show (ipywidgets' words when a view's model is missing)
WIDGET_ERRORS = ("model not found", "Error displaying widget", "Loading widget")


def _quickstart_model() -> str:
    """The quickstart notebook's model cell (the one that defines ``Block``), as it is today."""
    nb = nbformat.read(ROOT / "tutorials" / "01_quickstart.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code" and "class Block" in c.source)


QUICKSTART = "%%compile --compare-eager --backend eager --runs 3\nout = model(x)"
CELLS = [_quickstart_model(), "%load_ext ipycompile", QUICKSTART, QUICKSTART]
REPORTS = (2, 3)  # the %%compile cells; the second reuses the first one's compiled code
NOTEBOOK = "quickstart.ipynb"
SAVED = ("no-state", "state", "restarted")  # widget state off, on, on after a kernel restart
RUN_TIMEOUT_MS = 240_000
#: Notebook 7's server offers no kernel: the notebooks are reopened there without one
NO_KERNEL = ("--KernelSpecManager.allowed_kernelspecs=['no-kernel']",)


def shot(target, name: str) -> Path:
    BUILD.mkdir(exist_ok=True)
    path = BUILD / f"saved-{name}.png"
    target.screenshot(path=str(path))
    return path


@contextlib.contextmanager
def failure_shot(page, name: str):
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            BUILD.mkdir(exist_ok=True)
            page.screenshot(path=str(BUILD / f"saved-failed-{name}.png"), full_page=True)
        raise


def cells(page):
    return page.locator(".jp-Notebook .jp-CodeCell")


def outputs(page, i: int):
    return cells(page).nth(i).locator(".jp-OutputArea")


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout:.0f}s")
        time.sleep(0.25)


def save(page, server: LabServer, name: str) -> None:
    """Save the notebook from the page (Ctrl+S, as a user does); wait until the file changed."""
    before = server.api(f"contents/{name}?content=0")["last_modified"]
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    wait_until(lambda: server.api(f"contents/{name}?content=0")["last_modified"] != before, 30, f"{name} not saved")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)

    def complete():  # the server writes the file in place: read it until it parses, with its outputs
        try:
            nb = nbformat.read(server.root / name, as_version=4)
        except Exception:
            return False
        return all(nb.cells[i].outputs for i in REPORTS)

    wait_until(complete, 30, f"{name} not written whole")


def run_all(page) -> None:
    """Run > Run All Cells; wait until every cell has its execution count."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function(
        """n => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
                  .map(e => e.textContent);
                  return p.length === n && p.every(t => /\\[\\d+\\]/.test(t)); }""",
        arg=len(CELLS), timeout=RUN_TIMEOUT_MS)


def restart_kernel(page, server: LabServer) -> None:
    """Kernel > Restart Kernel…, confirmed; wait until the new kernel is idle."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel…$")).click()
    page.locator(".jp-Dialog-button", has_text=re.compile(r"^Restart$")).click()
    page.locator(".jp-Dialog").wait_for(state="detached")
    time.sleep(1.0)
    server.wait_for_kernel()
    # the page's kernel status indicator back to idle
    page.wait_for_function("() => !document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=\"busy\"]')")


def theme(page, name: str) -> None:
    """Settings > Theme > ``name``, as a user switches themes (no reload)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^" + re.escape(name) + "$")).click()
    page.wait_for_function("t => document.body.dataset.jpThemeName === t", arg=name, timeout=60_000)
    time.sleep(0.5)  # the theme's stylesheet applied


def report_text_visible(page, i: int) -> str:
    """The cell's visible output text (``innerText``: what CSS hides is left out)."""
    return outputs(page, i).evaluate("e => e.innerText")


def assert_report_shown(page, where: str) -> None:
    """Every report's problem and fix visible, no widget error anywhere in the notebook."""
    whole = page.locator(".jp-Notebook").first.evaluate("e => e.innerText")
    for err in WIDGET_ERRORS:
        assert err not in whole, f"{where}: {err!r} shown:\n{whole[:3000]}"
    for i in REPORTS:
        text = report_text_visible(page, i)
        assert "Graph break" in text, f"{where}: cell {i} shows no graph break:\n{text[:2000]}"
        assert "torch.where" in text, f"{where}: cell {i} shows no fix:\n{text[:2000]}"
        assert "In [1], line 16" in text, f"{where}: cell {i} does not say where the break is:\n{text[:2000]}"
    # the second run reused the first one's compiled code: its first screen says so, with no compile time
    # (the first screen only: the static copy's Profile panel, shown where no tab strip is, names the first call)
    text = outputs(page, REPORTS[1]).evaluate("e => [...e.querySelectorAll('.first')].map(x => x.innerText).join('\\n')")
    assert "(reused, no compile)" in text and "first call (compile)" not in text, f"{where}:\n{text[:2000]}"


# -- the live run and the three saves ---------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory, browser):
    """Run the notebook live in JupyterLab and save it three ways; returns (root, home)."""
    base = tmp_path_factory.mktemp("saved")
    root, home = base / "root", base / "jupyter-home"
    root.mkdir()
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell(src) for src in CELLS],
                         metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, root / NOTEBOOK)
    server = LabServer(root, base / "live.log", home=home, settings={WIDGETS: {"saveState": False}})
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    try:
        server.start()
        with failure_shot(page, "live"):
            page.goto(server.url(NOTEBOOK))
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
            server.wait_for_kernel()
            run_all(page)
            for i in range(len(CELLS)):
                text = report_text_visible(page, i)
                assert "Traceback" not in text and "Error" not in text, f"cell {i} failed:\n{text}\n{server.log_tail()}"
            for i in REPORTS:  # live: the widget is drawn and the static copy before it hidden
                outputs(page, i).locator(".ipyc-w").wait_for(timeout=30_000)
                assert not outputs(page, i).locator(".ipyc-static").is_visible()
            assert_report_shown(page, "live")
            # the quickstart's report in the light and the dark theme (the screenshots)
            shot(outputs(page, 2), "quickstart-light")
            theme(page, "JupyterLab Dark")
            shot(outputs(page, 2), "quickstart-dark")
            theme(page, "JupyterLab Light")
            # saved with widget state off (the default)
            save(page, server, NOTEBOOK)
            shutil.copy(root / NOTEBOOK, root / "no-state.ipynb")
            # widget state on: the page reads the setting when it loads (the widgets redrawn from the kernel)
            server.set_setting(WIDGETS, {"saveState": True})
            page.reload()
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
            for i in REPORTS:
                outputs(page, i).locator(".ipyc-w").wait_for(timeout=60_000)
            save(page, server, NOTEBOOK)
            shutil.copy(root / NOTEBOOK, root / "state.ipynb")
            # a kernel restart, then a save (state on): the widgets' models went with the kernel
            restart_kernel(page, server)
            for i in REPORTS:  # the widgets are disconnected now: the static copy shows instead
                outputs(page, i).locator(".ipyc-static").wait_for(timeout=30_000)
                assert not outputs(page, i).locator(".ipyc-w").is_visible()
            save(page, server, NOTEBOOK)
            shutil.copy(root / NOTEBOOK, root / "restarted.ipynb")
            shot(page, "live")
    finally:
        context.close()
        server.stop()
    # another client's copy (a changed notebook is no longer signed: untrusted)
    nb = nbformat.read(root / "state.ipynb", as_version=4)
    nb.metadata["edited_elsewhere"] = True
    nbformat.write(nb, root / "untrusted.ipynb")
    return root, home


def test_saved_files_differ_as_the_settings_say(saved):
    """What the three saves hold: the widget state only where it was saved, every %%compile
    output's static copy (its own output, before the widget's) in all."""
    root, _ = saved
    for name in SAVED:
        nb = nbformat.read(root / f"{name}.ipynb", as_version=4)
        state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
        for i in REPORTS:
            outs = nb.cells[i].outputs
            html = [o for o in outs if "text/html" in o.get("data", {}) and "ipyc-static" in o["data"]["text/html"]]
            views = [o for o in outs if WIDGET_VIEW in o.get("data", {})]
            assert len(html) == 1 and len(views) == 1, (name, i, [list(o.get("data", {})) for o in outs])
            assert outs.index(html[0]) < outs.index(views[0])
            model = views[0]["data"][WIDGET_VIEW]["model_id"]
            if name == "no-state":
                assert model not in state
            elif name == "state":
                assert model in state, (name, i, model, list(state)[:5])


@pytest.mark.parametrize("theme", ["dark-modern", "light-modern"])
def test_saved_quickstart_in_vscode_has_aa_contrast(browser, saved, theme):
    """The saved quickstart's report as VS Code shows it (its notebook webview emulated, dark
    and light: tests/browser_helpers.vscode_page): each %%compile cell's HTML outputs, every
    text at WCAG AA, "What to fix" readable. Screenshots build/browser-vscode-saved-*.png."""
    from test_browser import vscode_check

    root, _ = saved
    nb = nbformat.read(root / "no-state.ipynb", as_version=4)
    for i in REPORTS:
        html = [o["data"]["text/html"] for o in nb.cells[i].outputs if "text/html" in o.get("data", {})]
        assert html, (i, [list(o.get("data", {})) for o in nb.cells[i].outputs])
        assert vscode_check(browser, html, theme, f"saved-quickstart-cell{i}") > 100


# -- reopened on a fresh server -----------------------------------------------------------------
@contextlib.contextmanager
def _reopen(context, server: LabServer, name: str, label: str, kernel: bool):
    """Open ``name`` on ``server`` in a new page (a tab) of ``context``, the browser window that
    opens each of the server's notebooks in turn, as a user's does (its cache keeps the app's
    scripts: the module costs 5% less CPU than with a new window per notebook): with the kernel it starts
    (``kernel``), else answering the page's "Select Kernel" with "No Kernel" (the server offers
    none). Yields the page once the widget manager has done what it can; closes it after."""
    page = context.new_page()
    try:
        with failure_shot(page, label):
            page.goto(server.url(name))
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
            for i in REPORTS:
                outputs(page, i).locator(".jp-OutputArea-child").first.wait_for(timeout=30_000)
            if kernel:
                server.wait_for_kernel()
                # the widget manager has read the notebook's state and the new kernel's (none)
                page.wait_for_function(
                    """() => ![...document.querySelectorAll('.jp-OutputArea-output')]
                              .some(e => e.textContent.startsWith('Loading widget'))""", timeout=60_000)
            else:  # without a kernel the widget manager waits for one: its outputs stay "Loading widget..."
                page.locator(".jp-Dialog-button", has_text=re.compile(r"^No Kernel$")).click(timeout=60_000)
                page.locator(".jp-Dialog").wait_for(state="detached")
            time.sleep(1.0)
            yield page
    finally:
        page.close()
        if kernel:
            with contextlib.suppress(Exception):
                for k in server.api("kernels"):
                    server.api(f"kernels/{k['id']}", method="DELETE", timeout=15)


@pytest.fixture(scope="module")
def reopened_lab(saved, tmp_path_factory):
    root, home = saved
    server = LabServer(root, tmp_path_factory.mktemp("lab2") / "lab.log", home=home)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def window(browser):
    """One browser window (a context) for each server's reopened notebooks: ``window(server)``."""
    contexts: dict = {}

    def of(server: LabServer):
        if server.base not in contexts:
            contexts[server.base] = browser.new_context(viewport={"width": 1400, "height": 1800})
        return contexts[server.base]

    try:
        yield of
    finally:
        for context in contexts.values():
            context.close()


@pytest.fixture(scope="module")
def reopened_notebook7(request, tmp_path_factory):
    pytest.importorskip(  # before the live run: without Notebook 7 these tests skip at once
        "notebook", minversion="7",
        reason="Jupyter Notebook 7 is not installed: add `notebook>=7` to pyproject.toml's test extra")
    root, home = request.getfixturevalue("saved")
    server = LabServer(root, tmp_path_factory.mktemp("nb7") / "notebook.log", home=home, app="notebook",
                       args=NO_KERNEL)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.parametrize("name", SAVED + ("untrusted",))
def test_reopened_in_jupyterlab_shows_every_report(window, reopened_lab, name):
    with _reopen(window(reopened_lab), reopened_lab, f"{name}.ipynb", f"lab-{name}", kernel=True) as page:
        with failure_shot(page, f"lab-{name}"):
            shot(page, f"lab-{name}")
            assert_report_shown(page, f"JupyterLab, {name}")
            if name == "state":
                # the widget state was saved: the widget is drawn again, but with no kernel behind it
                # (disconnected: its tabs cannot be built), so the whole static copy shows instead
                for i in REPORTS:
                    assert outputs(page, i).locator(".ipyc-w.jupyter-widgets-disconnected").count() == 1
                    assert not outputs(page, i).locator(".ipyc-w").is_visible()
                    assert outputs(page, i).locator(".ipyc-static").is_visible()


@pytest.mark.parametrize("name", SAVED)
def test_reopened_in_notebook7_shows_every_report(window, reopened_notebook7, name):
    with _reopen(window(reopened_notebook7), reopened_notebook7, f"{name}.ipynb", f"nb7-{name}", kernel=False) as page:
        with failure_shot(page, f"nb7-{name}"):
            shot(page, f"nb7-{name}")
            assert_report_shown(page, f"Notebook 7, {name}")


@pytest.mark.parametrize("name,sanitised", [(n, False) for n in SAVED] + [("no-state", True), ("state", True)])
def test_nbconvert_html_shows_every_report(browser, saved, tmp_path, name, sanitised):
    """nbconvert's HTML of each save; with its sanitiser on (scripts, ``<style>`` and event
    handlers removed, as GitHub's renderer and an untrusted notebook do) every report's first
    screen and every tab's panel still show."""
    from nbconvert import HTMLExporter

    root, _ = saved
    body, _ = HTMLExporter(sanitize_html=sanitised).from_filename(str(root / f"{name}.ipynb"))
    if sanitised:
        assert "<script>(function(){[].forEach" not in body  # nbconvert's sanitiser took out any script of ours
        name = f"{name}-sanitised"
    page_path = tmp_path / f"{name}.html"
    page_path.write_text(body, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1400, "height": 1800}, offline=True)
    try:
        page = context.new_page()
        with failure_shot(page, f"nbconvert-{name}"):
            page.goto(page_path.as_uri())
            page.wait_for_selector(".jp-Notebook .jp-CodeCell")
            shot(page, f"nbconvert-{name}")
            assert_report_shown(page, f"nbconvert, {name}")
            if sanitised:  # no handler left on any element of the report (escaped into text, if anything)
                assert page.locator(".ipyc [onclick], .ipyc script").count() == 0
            for i in REPORTS:  # every panel of the static copy, under its heading (no tab strip to click)
                text = report_text_visible(page, i)
                for title in ("Summary", "Graph breaks (", "Recompiles (", "Graphs (", "Kernels (", "Profile", "Guards ("):
                    assert title in text, f"nbconvert, {name}: cell {i} shows no {title!r} panel:\n{text[:3000]}"
    finally:
        context.close()
