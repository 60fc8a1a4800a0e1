"""A JupyterLab server and a headless Chromium for tests/test_browser.py.

Both are context managers that always clean up: the server (and every kernel
it started, which live in their own sessions) is terminated by process group,
the browser is closed and Playwright stopped, whatever the test did.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``make browser``);
Playwright's own browser download is never used. Without it the browser tests skip,
saying why (:func:`require_browser`), unless ``make`` promised one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator, Optional

CHROMIUM = os.environ.get("IPYCOMPILE_CHROMIUM", "/usr/bin/chromium")
#: set by `make pytest` when it installed or found Chromium: a missing browser then fails the tests
REQUIRED = bool(os.environ.get("IPYCOMPILE_REQUIRE_BROWSER"))


def require_browser() -> None:
    """Skip the calling test, saying why, when Playwright or Chromium is missing (a machine
    without root, a run of plain ``pytest``); fail instead when ``make`` promised a browser."""
    import pytest

    problem = ""
    try:
        import playwright  # noqa: F401
    except ImportError:
        problem = "playwright is not installed: `make venv` installs the test extras (pip install -e '.[test]')"
    if not problem and not os.access(CHROMIUM, os.X_OK):
        problem = (f"no Chromium at {CHROMIUM}: install Debian's chromium and fonts-liberation "
                   "(`make browser`, as root), or set IPYCOMPILE_CHROMIUM=/path/to/chromium")
    if problem:
        if REQUIRED:
            pytest.fail(problem, pytrace=False)
        pytest.skip(problem)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # V8 compiles and collects on the page's own thread, not on helper threads beside it: a JupyterLab
    # page load costs 13% less CPU (5.5 CPU-s a load on two cores, the suite's largest browser cost)
    "--js-flags=--single-threaded",
]

# JupyterLab user settings that keep the page quiet and deterministic: no news or
# update checks (no network, no pop-up toasts), no restored workspace.
_LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Start the notebook's kernel (its metadata names `python3`) without asking.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True,
    },
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_tree(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Terminate ``proc``'s process group and the sessions of its descendants (kernels)."""
    groups = set()
    try:
        import psutil

        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                groups.add(os.getpgid(child.pid))
    except Exception:  # psutil missing or the server already gone: its own group still goes
        pass
    with contextlib.suppress(OSError):
        groups.add(os.getpgid(proc.pid))
    groups.discard(os.getpgid(0))  # never our own group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        try:
            proc.wait(timeout=grace)
            if sig == signal.SIGTERM:
                time.sleep(0.5)  # let kernels in other groups follow
            alive = [g for g in groups if _group_alive(g)]
            if not alive:
                return
        except subprocess.TimeoutExpired:
            continue


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class LabServer:
    """``jupyter lab`` on 127.0.0.1 with a random token, rooted in ``root``.

    ``app="notebook"`` runs Jupyter Notebook 7 instead (the ``notebook`` package).
    ``home``: Jupyter's config, data and settings folder, kept after :meth:`stop` (else a
    temporary one, removed): a second server on the same ``home`` is the same user's
    Jupyter again (the same notary secret, so a notebook it saved is still trusted).
    ``settings``: JupyterLab user settings (``"plugin-id": {...}``) beside the quiet defaults;
    ``args``: more options for the server's command line."""

    def __init__(self, root: Path, log_path: Path, kernel_name: str = "python3", *, app: str = "jupyterlab",
                 home: Optional[Path] = None, settings: Optional[dict] = None, args: tuple = ()) -> None:
        if app not in ("jupyterlab", "notebook"):
            raise ValueError(f"app must be 'jupyterlab' or 'notebook', not {app!r}")
        self.root = Path(root)
        self.log_path = Path(log_path)
        self.kernel_name = kernel_name
        self.app = app
        self.keep_home = home is not None
        self.home = Path(home) if home is not None else None
        self.settings = dict(settings or {})
        self.args = list(args)  # more command-line options for the server
        self.token = uuid.uuid4().hex
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen] = None
        self._log = None
        self._home: Optional[Path] = None

    # -- REST ------------------------------------------------------------
    def api(self, path: str, method: str = "GET", body: Optional[dict] = None, timeout: float = 10.0):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"token {self.token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(f"{self.base}/api/{path}", data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def url(self, notebook: str) -> str:
        if self.app == "notebook":
            return f"{self.base}/notebooks/{notebook}?token={self.token}"
        return f"{self.base}/lab/tree/{notebook}?token={self.token}&reset"

    def set_setting(self, plugin: str, values: dict) -> None:
        """Save JupyterLab user settings of ``plugin`` (e.g.
        ``"@jupyter-widgets/jupyterlab-manager:plugin"``) as the Settings Editor does; a page
        reads them when it loads."""
        req = urllib.request.Request(
            f"{self.base}/lab/api/settings/{plugin}", data=json.dumps({"raw": json.dumps(values)}).encode(),
            method="PUT", headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"

    # -- life cycle ------------------------------------------------------
    def start(self, timeout: float = 60.0) -> "LabServer":
        # Jupyter's config, data, runtime and lab settings in a folder of their own,
        # removed on stop: nothing from ~/.jupyter gets in, nothing is left behind.
        if self.home is None:
            self.home = Path(tempfile.mkdtemp(prefix="ipycompile-jupyter-"))
        self._home = home = self.home
        settings = home / "lab-settings"
        extra = {f"{k.replace(':', '/')}.jupyterlab-settings": v for k, v in self.settings.items()}
        for name, value in {**_LAB_SETTINGS, **extra}.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env = dict(os.environ)
        # The venv's share/jupyter first, so its `python3` kernelspec (the venv's python,
        # installed by `make venv` with --sys-prefix) wins over any user-level one.
        here = os.path.join(sys.prefix, "share", "jupyter")
        env["JUPYTER_PATH"] = os.pathsep.join([here, *[p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]])
        env.update(
            JUPYTER_CONFIG_DIR=str(home / "config"),
            JUPYTER_DATA_DIR=str(home / "data"),
            JUPYTER_RUNTIME_DIR=str(home / "runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
            PYTHONUNBUFFERED="1",
        )
        cmd = [
            sys.executable, "-m", self.app,
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.allow_remote_access=False",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--ServerApp.terminals_enabled=False",
            f"--MappingKernelManager.default_kernel_name={self.kernel_name}",
            *self.args,
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI containers often run as root
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            cmd, cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.app} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("status", timeout=2)
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.app} did not answer within {timeout:.0f}s:\n{self.log_tail()}")
                time.sleep(0.25)

    def wait_for_kernel(self, timeout: float = 60.0) -> dict:
        """The one kernel the page started, once the server reports it idle."""
        deadline = time.monotonic() + timeout
        kernels = []
        while time.monotonic() < deadline:
            try:
                kernels = self.api("kernels")
            except urllib.error.HTTPError as exc:  # jupyter_server answers 500 while a kernel starts
                if exc.code != 500:  # (its `last_activity` not set yet): ask again
                    raise
                time.sleep(0.25)
                continue
            if kernels and all(k.get("execution_state") == "idle" for k in kernels):
                return kernels[0]
            time.sleep(0.25)
        raise TimeoutError(f"no idle kernel within {timeout:.0f}s (kernels: {kernels})\n{self.log_tail()}")

    def kernel_python(self) -> str:
        """The interpreter the server's kernelspec runs (argv[0])."""
        specs = self.api("kernelspecs")
        spec = specs["kernelspecs"][self.kernel_name]["spec"]
        return spec["argv"][0]

    def kernel_pids(self) -> list[int]:
        """Process ids of the kernels the server runs (its ipykernel descendants)."""
        import psutil

        if self.proc is None:
            return []
        pids = []
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if any("ipykernel" in part for part in child.cmdline()):
                    pids.append(child.pid)
        return pids

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            if self._home is not None and not self.keep_home:
                shutil.rmtree(self._home, ignore_errors=True)
                self.home = None
            self._home = None

    def _stop(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(Exception):
                    for kernel in self.api("kernels", timeout=5):
                        self.api(f"kernels/{kernel['id']}", method="DELETE", timeout=15)
        finally:
            _kill_tree(self.proc)
            if self._log is not None:
                self._log.close()
            self.proc = None


@contextlib.contextmanager
def lab_server(root: Path, log_path: Path) -> Iterator[LabServer]:
    server = LabServer(root, log_path)
    try:
        yield server.start()
    finally:
        server.stop()


@contextlib.contextmanager
def chromium(executable: str = CHROMIUM):
    """A headless Debian Chromium driven by Playwright; yields the Browser."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    browser = None
    try:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
    finally:
        try:
            if browser is not None:
                with contextlib.suppress(Exception):
                    browser.close()
        finally:
            pw.stop()


# -- VS Code's notebook webview, emulated ----------------------------------------------------
#: The ``--vscode-*`` colours VS Code's default themes define (theme-defaults' dark_modern.json,
#: light_modern.json, dark_plus.json, light_plus.json, hc_black.json, with the workbench's
#: defaults for what a theme leaves out), as its webviews receive them on ``<html>``: the ones
#: an HTML output may read. ``kind`` is the class VS Code puts on ``<body>``.
VSCODE_THEMES = {
    "dark-modern": {"kind": "vscode-dark", "name": "Dark Modern", "vars": {
        "editor-background": "#1f1f1f", "editor-foreground": "#cccccc", "foreground": "#cccccc",
        "descriptionForeground": "#9d9d9d", "textLink-foreground": "#4daafc", "textLink-activeForeground": "#4daafc",
        "textPreformat-foreground": "#d0d0d0", "textPreformat-background": "#3c3c3c",
        "textCodeBlock-background": "#2b2b2b", "panel-border": "#2b2b2b", "editorWidget-background": "#202020",
        "widget-border": "#313131", "focusBorder": "#0078d4", "editorWarning-foreground": "#cca700",
        "notebook-editorBackground": "#1f1f1f"}},
    "dark-plus": {"kind": "vscode-dark", "name": "Dark+", "vars": {
        "editor-background": "#1e1e1e", "editor-foreground": "#d4d4d4", "foreground": "#cccccc",
        "descriptionForeground": "rgba(204, 204, 204, 0.7)", "textLink-foreground": "#3794ff",
        "textLink-activeForeground": "#3794ff", "textPreformat-foreground": "#d7ba7d",
        "textCodeBlock-background": "rgba(10, 10, 10, 0.4)", "panel-border": "rgba(128, 128, 128, 0.35)",
        "editorWidget-background": "#252526", "focusBorder": "#007fd4", "editorWarning-foreground": "#cca700",
        "notebook-editorBackground": "#1e1e1e"}},
    "hc-black": {"kind": "vscode-high-contrast", "name": "Dark High Contrast", "vars": {
        "editor-background": "#000000", "editor-foreground": "#ffffff", "foreground": "#ffffff",
        "descriptionForeground": "#ffffff", "textLink-foreground": "#21a6ff", "textLink-activeForeground": "#21a6ff",
        "textPreformat-foreground": "#ffffff", "textCodeBlock-background": "#000000", "panel-border": "#6fc3df",
        "editorWidget-background": "#0c141f", "contrastBorder": "#6fc3df", "focusBorder": "#f38518",
        "editorWarning-foreground": "#ff0000", "notebook-editorBackground": "#000000"}},
    "light-modern": {"kind": "vscode-light", "name": "Light Modern", "vars": {
        "editor-background": "#ffffff", "editor-foreground": "#3b3b3b", "foreground": "#3b3b3b",
        "descriptionForeground": "#3b3b3b", "textLink-foreground": "#005fb8", "textLink-activeForeground": "#005fb8",
        "textPreformat-foreground": "#3b3b3b", "textPreformat-background": "rgba(0, 0, 0, 0.12)",
        "textCodeBlock-background": "#f8f8f8", "panel-border": "#e5e5e5", "editorWidget-background": "#f8f8f8",
        "widget-border": "#e5e5e5", "focusBorder": "#005fb8", "editorWarning-foreground": "#bf8803",
        "notebook-editorBackground": "#ffffff"}},
    "light-plus": {"kind": "vscode-light", "name": "Light+", "vars": {
        "editor-background": "#ffffff", "editor-foreground": "#000000", "foreground": "#616161",
        "descriptionForeground": "#717171", "textLink-foreground": "#006ab1", "textLink-activeForeground": "#006ab1",
        "textPreformat-foreground": "#a31515", "textCodeBlock-background": "rgba(220, 220, 220, 0.4)",
        "panel-border": "rgba(128, 128, 128, 0.35)", "editorWidget-background": "#f3f3f3", "focusBorder": "#0090f1",
        "editorWarning-foreground": "#bf8803", "notebook-editorBackground": "#ffffff"}},
}

#: VS Code's webview default styles (workbench/contrib/webview/browser/pre/index.html) and its
#: notebook output styles (notebook/browser/view/renderers/backLayerWebView.ts) that touch what
#: an HTML output shows: the body's text colour and font, links, inline code, tables. The webview
#: is transparent: what shows through it is the notebook's background (set on <html> here).
_VSCODE_CSS = """
html{background:var(--vscode-notebook-editorBackground,var(--vscode-editor-background))}
body{background-color:transparent;color:var(--vscode-editor-foreground);font-family:var(--vscode-font-family);
font-weight:var(--vscode-font-weight);font-size:var(--vscode-font-size);margin:0;padding:0 20px}
a,a code{color:var(--vscode-textLink-foreground)}
a:hover{color:var(--vscode-textLink-activeForeground)}
code{font-family:var(--monaco-monospace-font);color:var(--vscode-textPreformat-foreground);
background-color:var(--vscode-textPreformat-background);padding:1px 3px;border-radius:4px}
pre code{padding:0}
#container>div>div>div.output{font-size:var(--notebook-cell-output-font-size);width:var(--notebook-output-width);
margin-left:var(--notebook-output-left-margin);background-color:var(--theme-notebook-output-background);
padding:var(--notebook-output-node-padding) var(--notebook-output-node-padding) var(--notebook-output-node-padding)
var(--notebook-output-node-left-padding);box-sizing:border-box;border-top:none}
table,thead,tr,th,td,tbody{border:none;border-color:transparent;border-spacing:0;border-collapse:collapse}
table,th,tr{vertical-align:middle;text-align:right}
thead{font-weight:bold;background-color:rgba(130,130,130,0.16)}
th,td{padding:4px 8px}
tr:nth-child(even){background-color:rgba(130,130,130,0.08)}
tbody th{font-weight:normal}
.output-plaintext{display:inline-block;width:100%;line-height:var(--notebook-cell-output-line-height);
font-family:var(--notebook-cell-output-font-family);font-size:var(--notebook-cell-output-font-size);white-space:pre}
#container div.output.remove-padding{padding-left:0;padding-right:0}
#container div.output>div{padding-left:var(--notebook-output-node-left-padding);
padding-right:var(--notebook-output-node-padding);box-sizing:border-box;border:1px solid transparent}
.cell-output-ipywidget-background{background:transparent!important}
"""


def widget_dom(w) -> str:
    """The DOM ipywidgets 8's views draw for the widget ``w`` and its children, without their
    scripts: each view's node with the classes its view sets (``lm-Widget jupyter-widgets
    widget-…``) and the widget's own (``_dom_classes``); an HTML widget's value inside its
    ``widget-html-content``; a Tab's titles over its selected child; a Box's children."""
    import html as htmllib

    import ipywidgets as W

    def node(kind: str, inner: str) -> str:
        return f'<div class="lm-Widget jupyter-widgets {kind} {" ".join(w._dom_classes)}">{inner}</div>'

    if isinstance(w, W.HTML):
        return node("widget-inline-hbox widget-html", f'<div class="widget-html-content">{w.value}</div>')
    if isinstance(w, W.Dropdown):
        options = "".join(f"<option>{htmllib.escape(str(o))}</option>" for o in w._options_labels)
        return node("widget-inline-hbox widget-dropdown", f"<select>{options}</select>")
    if isinstance(w, W.Tab):
        i = w.selected_index or 0
        titles = "".join(f'<li class="lm-TabBar-tab{" lm-mod-current" if j == i else ""}">'
                         f'<div class="lm-TabBar-tabLabel">{htmllib.escape(t)}</div></li>' for j, t in enumerate(w.titles))
        return node("widget-container widget-tab", f'<div class="lm-Widget lm-TabBar"><ul class="lm-TabBar-content">'
                    f'{titles}</ul></div><div class="widget-tab-contents">{widget_dom(w.children[i])}</div>')
    if isinstance(w, W.Box):
        kind = "widget-vbox" if isinstance(w, W.VBox) else "widget-hbox" if isinstance(w, W.HBox) else ""
        return node(f"widget-container widget-box {kind}", "".join(widget_dom(c) for c in w.children))
    return ""


def vscode_output(item, i: int) -> str:
    """One output of a cell as VS Code's notebook webview holds it: a ``div.output_container``
    holding the ``div.output`` a renderer draws into (webviewPreloads.ts: OutputContainer,
    OutputElement). ``item`` is the output as drawn:

    - a ``str``: HTML, as VS Code's built-in renderer draws ``text/html`` (extensions/
      notebook-renderers/src/index.ts, renderHTML: a ``div`` holding it, ``remove-padding``
      on the ``div.output``);
    - ``("text/plain", text)``: plain text, as the built-in renderer draws it (renderText and
      textHelper.ts' createOutputContent: a ``div.output-plaintext`` of spans). Jupyter's
      widget renderer falls back to it where it cannot draw the widget (no widget state, no
      kernel), and VS Code picks it where no widget renderer is installed;
    - ``("widget", dom)``: a widget Jupyter's renderer draws (vscode-jupyter, webview-side/
      ipywidgets/renderer/index.ts and kernel/index.ts: ``cell-output-ipywidget-background``
      added to the ``div.output``, a ``div.cell-output-ipywidget-background`` in it holding an
      empty ``div.cell-output`` and the view's node, which vscode-jupyter-ipywidgets'
      manager.ts display_view attaches there): ``dom`` is the view's node, e.g. widget_dom's.
    """
    import html as htmllib

    if isinstance(item, str):
        kind, inner = "remove-padding", f"<div>{item}</div>"
    elif item[0] == "text/plain":
        context = htmllib.escape(f'{{"webviewSection":"text","outputId":"output-{i}","preventDefaultContextMenuItems":true}}')
        kind, inner = "remove-padding", (f'<div data-vscode-context="{context}" output-item-id="output-{i}" '
                                         f'class="output-plaintext"><span>{htmllib.escape(item[1])}</span></div>')
    elif item[0] == "widget":
        kind, inner = ("cell-output-ipywidget-background", '<div class="cell-output-ipywidget-background">'
                       f'<div class="cell-output cell-output"></div>{item[1]}</div>')
    else:
        raise ValueError(item)
    no_menu = htmllib.escape('{"preventDefaultContextMenuItems":true}')
    return (f'<div class="output_container" data-vscode-context="{no_menu}">'
            f'<div class="output {kind}" id="output-{i}">{inner}</div></div>')


def vscode_page(outputs: list, theme: str) -> str:
    """A page as VS Code's notebook webview shows the HTML ``outputs`` of one cell in the
    theme ``theme`` (a key of :data:`VSCODE_THEMES`): its ``--vscode-*`` variables on <html>,
    the theme's kind as <body>'s class and ``data-vscode-theme-kind``, no ``--jp-*`` variable,
    each output inside the output container VS Code gives it (:func:`vscode_output`: a ``str``
    is HTML, which the built-in text/html renderer sets as an element's innerHTML, running its
    scripts; plain text and a drawn widget are tuples). Load it with
    ``color_scheme="light"``: VS Code's webview reports light whatever its theme
    (microsoft/vscode#176698)."""
    import html as htmllib

    t = VSCODE_THEMES[theme]
    style = {f"--vscode-{k}": v for k, v in t["vars"].items()}
    style.update({"--vscode-font-family": 'system-ui, "Ubuntu", "Droid Sans", sans-serif', "--vscode-font-size": "13px",
                  "--vscode-font-weight": "normal", "--vscode-editor-font-family": '"Droid Sans Mono", monospace',
                  "--monaco-monospace-font": '"SF Mono", Monaco, Menlo, Consolas, "Ubuntu Mono", monospace',
                  "--notebook-cell-output-font-size": "13px", "--notebook-output-width": "calc(100% - 40px)",
                  "--notebook-output-left-margin": "0px", "--notebook-output-node-padding": "8px",
                  "--notebook-output-node-left-padding": "8px"})
    css = ";".join(f"{k}:{v}" for k, v in style.items())
    kind = t["kind"]
    body_class = kind if kind != "vscode-high-contrast-light" else "vscode-high-contrast vscode-high-contrast-light"
    cells = "".join(vscode_output(item, i) for i, item in enumerate(outputs))
    return (f'<!DOCTYPE html><html lang="en" style="{htmllib.escape(css)}"><head><meta charset="utf-8">'
            f"<style>{_VSCODE_CSS}</style></head>"
            f'<body class="{body_class}" data-vscode-theme-kind="{kind}" data-vscode-theme-name="{t["name"]}">'
            f'<div id="container"><div id="focus-sink-cell-1" tabindex="0"></div><div class="cell_container" id="cell-1">'
            f'{cells}</div><div id="focus-sink-cell-1" tabindex="0"></div></div></body></html>')
