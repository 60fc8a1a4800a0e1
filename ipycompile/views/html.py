"""The static HTML rendering of a report's view-model.

Self-contained: inline CSS (one ``<style>`` block scoped to ``.ipyc``), the tabs as an
ARIA tablist (:data:`TABS_SCRIPT`, the page's one script: without it, where a renderer
strips scripts, the strip hides and every panel shows under its heading), ``<details>``
for expandable rows and trees, highlighted code (pygments' classes) with an id per line of a source
excerpt (a place's link lands on its line, marked by ``:target``), figures inline (SVG, or PNG for matplotlib's).
No external requests (the only URLs are plain links to torch's graph-break pages). Every
tab is rendered; the Summary tab is selected. A full page written to a file defers its heavy
parts (:meth:`_Page.defer`, :meth:`_Page.lots`): a large one is its first screen and a folder
of parts built as they are opened, a small one is put back whole (:mod:`.page_files`).

It renders :func:`ipycompile.views.viewmodel.view_model` and computes nothing of
its own, so it shows what the widget view shows.
"""

from __future__ import annotations

import base64
import html
import re
import time
from typing import Callable, Optional

from ..report import CompileReport
from ..report.files import REPORT_MARKER
from ..report.text import NAME_LIMIT, VIEW_TEXT_LIMIT, capped, capped_lines, short_paths, utf8_safe
from .blocks import Choice, Code, Figure, Place, Table, Text, TreeNode, ViewModel, figure_png
from .svg import SvgImage
from .viewmodel import view_model

__all__ = ["render_html", "render_view_model", "save_html", "save_page", "notebook_bundle", "HIGHLIGHT_LINES", "HIGHLIGHT_BUDGET"]

#: Lines of each code block that are syntax-highlighted; the rest of the block is
#: shown in full, escaped (highlighting 100k lines of graphs would take seconds).
HIGHLIGHT_LINES = 400
#: Lines per page highlighted (by :func:`_fast_highlight`, pygments' classes and colours without
#: pygments: its import and lexers cost 0.3 s before the first line, then 2,500 lines/s); past
#: them code is escaped only, so a page with a thousand kernels stays quick to write.
HIGHLIGHT_BUDGET = 12800

#: Colours come from JupyterLab's theme variables (light, dark, high contrast all read);
#: outside JupyterLab (a saved page, nbconvert) the fallbacks follow the system's
#: ``prefers-color-scheme``. VS Code's notebook webview has no ``--jp-*`` variables and always
#: reports a light scheme (microsoft/vscode#176698): there the ``vscode-dark`` /
#: ``vscode-light`` / ``vscode-high-contrast`` class VS Code puts on ``<body>`` picks the palette,
#: built from its ``--vscode-*`` variables (text and background from the editor's, links from
#: ``textLink``; the muted text, panels, borders and code's ground mixed from those two, so they
#: keep their contrast in any theme; code tokens from the palette of the scheme; no ``--jp-*``
#: there: a page that maps them onto VS Code's is read through VS Code's own). The report
#: paints its own ground (``--ic-bg``: JupyterLab's, VS Code's, else the palette's), so its text
#: keeps its contrast on a host whose dark background nothing tells us about. The widget keeps
#: the light palette in VS Code (its Jupyter extension draws ipywidgets on white).
#: Warnings are marked by weight and a border, never by a coloured text on a coloured ground,
#: so every text keeps the theme's own contrast.
_VSCODE_DARK = "body:is(.vscode-dark,.vscode-high-contrast:not(.vscode-high-contrast-light))"
_VSCODE_LIGHT = "body:is(.vscode-light,.vscode-high-contrast-light)"
_NOT_WIDGET = ":not(.ipyc-w,.ipyc-w .ipyc)"


def _vscode_palette(fg: str, bg: str, link: str, warn: str) -> str:
    """VS Code's colours; ``fg``..``warn``: the fallbacks where VS Code leaves a variable out."""
    return (f"--ic-fg:var(--vscode-editor-foreground,{fg});--ic-bg:var(--vscode-notebook-outputContainerBackgroundColor,"
            f"var(--vscode-notebook-editorBackground,var(--vscode-editor-background,{bg})));\n"
            f"--ic-warn:var(--vscode-editorWarning-foreground,{warn});--ic-link:var(--vscode-textLink-foreground,{link})")


#: Code's token colours (keyword, string, comment, number, decorator, function or class name), of
#: the report's own palette in every host, light and dark: JupyterLab's editor colours (its
#: ``--jp-mirror-editor-*``) are not AA on its code background (comments #408080: 4.17:1 on Light's,
#: 3.54:1 on Dark's), so the report does not read them; JupyterLab's theme (``data-jp-theme-light``
#: on <body>) picks the palette there, VS Code's class on <body> in VS Code, the system's scheme
#: elsewhere. tests/test_code_contrast.py measures every token class on each theme's code ground.
_LIGHT_TOKENS = "--ic-k:#116329;--ic-s:#a3201b;--ic-c:#57606a;--ic-m:#0550ae;--ic-d:#6639ba;--ic-f:#0550ae"
_DARK_TOKENS = "--ic-k:#7ee787;--ic-s:#ffa198;--ic-c:#a6b0bb;--ic-m:#79c0ff;--ic-d:#d2a8ff;--ic-f:#79c0ff"


def _mix(share: int) -> str:
    """``share`` % of the text colour over the background."""
    return f"color-mix(in srgb,var(--ic-fg) {share}%,var(--ic-bg))"


_THEME = f"""
.ipyc{{--ic-fg:var(--jp-content-font-color1,#1f2328);--ic-muted:var(--jp-content-font-color2,#57606a);
--ic-bg:var(--jp-layout-color0,#ffffff);--ic-panel:var(--jp-layout-color1,#f5f7fa);
--ic-border:var(--jp-border-color1,#c0c8d2);--ic-warn:var(--jp-warn-color1,#d9822b);
--ic-link:var(--jp-content-link-color,#0550ae);--ic-code:var(--jp-cell-editor-background,#f6f8fa);
{_LIGHT_TOKENS};color:var(--ic-fg);background:var(--ic-bg)}}
@media (prefers-color-scheme: dark){{.ipyc{{--ic-fg:var(--jp-content-font-color1,#e6edf3);
--ic-muted:var(--jp-content-font-color2,#a6b0bb);--ic-bg:var(--jp-layout-color0,#0d1117);
--ic-panel:var(--jp-layout-color1,#161b22);--ic-border:var(--jp-border-color1,#57606a);
--ic-warn:var(--jp-warn-color1,#d29922);--ic-link:var(--jp-content-link-color,#79c0ff);
--ic-code:var(--jp-cell-editor-background,#161b22);{_DARK_TOKENS}}}}}
:is({_VSCODE_DARK},{_VSCODE_LIGHT}) .ipyc{_NOT_WIDGET}{{--ic-muted:{_mix(78)};--ic-panel:{_mix(9)};
--ic-code:{_mix(6)};--ic-border:var(--vscode-contrastBorder,{_mix(35)})}}
{_VSCODE_DARK} .ipyc{_NOT_WIDGET}{{{_vscode_palette("#cccccc", "#1f1f1f", "#4daafc", "#cca700")};{_DARK_TOKENS}}}
{_VSCODE_LIGHT} .ipyc{_NOT_WIDGET}{{{_vscode_palette("#3b3b3b", "#ffffff", "#005fb8", "#bf8803")};{_LIGHT_TOKENS}}}
body[data-jp-theme-light="true"]:not([class*=vscode]) .ipyc{{{_LIGHT_TOKENS};--ic-m:#006a00}}
body[data-jp-theme-light="false"]:not([class*=vscode]) .ipyc{{{_DARK_TOKENS}}}
.ipyc .hl [class^=k],.ipyc .hl .ow{{color:var(--ic-k);font-weight:600}}
.ipyc .hl [class^=s]{{color:var(--ic-s)}}
.ipyc .hl [class^=c]{{color:var(--ic-c);font-style:italic}}
.ipyc .hl [class^=m],.ipyc .hl .il{{color:var(--ic-m)}}
.ipyc .hl .nd{{color:var(--ic-d)}}
.ipyc .hl .nf,.ipyc .hl .fm,.ipyc .hl .nc{{color:var(--ic-f)}}
"""

_CSS = _THEME + """
.ipyc{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:13px;line-height:1.4;max-width:1200px}
.ipyc .strip{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0 8px}
.ipyc .strip>.sep{display:none}
.ipyc .chip{border-radius:4px;padding:2px 8px;background:var(--ic-panel);border:1px solid var(--ic-border);white-space:nowrap}
.ipyc .chip.warn{border:2px solid var(--ic-warn);font-weight:600}
.ipyc .first{margin:2px 0 6px}
.ipyc .prob{border-left:4px solid var(--ic-warn);padding:2px 0 4px 8px;margin:4px 0 8px}
.ipyc .prob.mild{border-left-color:var(--ic-border)}
.ipyc .prob .pt{font-weight:600}
.ipyc .prob .cost,.ipyc .prob .fixnote{color:var(--ic-muted)}
.ipyc .prob .at code,.ipyc code{font-family:ui-monospace,monospace;font-size:12px}
.ipyc .ok{font-weight:600}
.ipyc .fixbox{position:relative}
.ipyc button.copy{position:absolute;top:4px;right:4px;font-size:11px;padding:1px 6px;cursor:pointer;
color:var(--ic-fg);background:var(--ic-panel);border:1px solid var(--ic-border);border-radius:3px}
.ipyc .tablist{display:none;flex-wrap:wrap;gap:2px;border-bottom:1px solid var(--ic-border);margin:6px 0 0}
.ipyc .tabs.on>.tablist{display:flex}
.ipyc .tablist>[role=tab]{font:inherit;font-weight:600;color:var(--ic-fg);background:var(--ic-panel);cursor:pointer;
border:1px solid var(--ic-border);border-bottom:none;border-radius:5px 5px 0 0;padding:4px 10px;margin:0 0 -1px}
.ipyc .tablist>[role=tab][aria-selected=true]{background:var(--ic-bg);border-top:3px solid var(--ic-link);padding-top:2px}
.ipyc .tablist>[role=tab].warn,.ipyc [role=tabpanel]>h3.warn{text-decoration:underline;text-decoration-color:var(--ic-warn);text-decoration-thickness:2px}
.ipyc [role=tabpanel]{border:1px solid var(--ic-border);border-radius:5px;margin:4px 0}
.ipyc .tabs.on>[role=tabpanel]{border-radius:0 0 5px 5px;margin-top:0}
.ipyc [role=tabpanel]>h3{background:var(--ic-panel);padding:4px 8px;font-weight:600;font-size:inherit;margin:0}
.ipyc .tabs.on>[role=tabpanel]>h3{display:none}
.ipyc .tabs.on>[hidden]{border:0;margin:0}
.ipyc [role=tabpanel]>.body{padding:4px 10px 8px}
.ipyc pre .ln:target{background:var(--ic-panel);outline:2px solid var(--ic-link);outline-offset:0}
.ipyc table{border-collapse:collapse;margin:2px 0 8px}
.ipyc .tbl table{table-layout:fixed;width:100%}
.ipyc th,.ipyc td{border:1px solid var(--ic-border);padding:2px 6px;text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:normal;word-break:normal}
.ipyc th{background:var(--ic-panel);white-space:normal}
.ipyc td.s{white-space:nowrap}
.ipyc td.l{overflow-wrap:anywhere}
.ipyc td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.ipyc .tbl,.ipyc .wide{overflow-x:auto;max-width:100%}
.ipyc .tbl{margin:4px 0 10px}
.ipyc .tbl>details>summary{list-style:none;cursor:pointer;display:block}
.ipyc .tbl>details>summary::-webkit-details-marker{display:none}
.ipyc .tbl>details>summary td:first-child::before{content:"\\25B8\\00A0";color:var(--ic-muted)}
.ipyc .tbl>details[open]>summary td:first-child::before{content:"\\25BE\\00A0"}
.ipyc .tbl>details>summary:hover td{background:var(--ic-panel)}
.ipyc .tbl>details>summary table,.ipyc .tbl>table.hd{margin:0}
.ipyc .tbl>details>summary table td{border-top:none}
.ipyc .tbl>details>.det{border:1px solid var(--ic-border);border-top:none;padding:4px 10px}
.ipyc .ttl{font-weight:600;margin:6px 0 2px}
.ipyc p{margin:3px 0}
.ipyc p.heading{font-weight:600;margin-top:8px}
.ipyc p.warn{font-weight:600;padding:2px 6px;border-left:4px solid var(--ic-warn)}
.ipyc p.note{color:var(--ic-muted)}
.ipyc .code{margin:4px 0 8px}
.ipyc .code>.ct{font-family:ui-monospace,monospace;font-size:12px;color:var(--ic-muted)}
.ipyc pre{background:var(--ic-code);color:var(--ic-fg);border:1px solid var(--ic-border);padding:6px;margin:2px 0;overflow:auto;max-height:420px;font-size:12px;line-height:1.35}
.ipyc details.tree{margin:2px 0 2px 4px}
.ipyc details.tree>.kids{margin-left:14px;border-left:1px dotted var(--ic-border);padding-left:8px}
.ipyc details.tree>summary{cursor:pointer}
.ipyc details.opt>summary{cursor:pointer;font-family:ui-monospace,monospace;font-size:12px}
.ipyc .choice>.ttl{color:var(--ic-muted)}
.ipyc figure{margin:6px 0}
.ipyc figure img{max-width:100%;height:auto;background:#fff}
.ipyc figcaption{font-weight:600}
.ipyc a{color:var(--ic-link)}
.cm-line.ipyc-hit,.jp-CodeCell.ipyc-hit{outline:2px solid var(--jp-brand-color1,#0550ae);outline-offset:-1px}
.ipyc .cols>input.allc{position:absolute;opacity:0;width:1px;height:1px}
.ipyc .cols>label.allc{display:inline-block;cursor:pointer;color:var(--ic-link);text-decoration:underline;margin:2px 0}
.ipyc .cols>label.allc::before{content:"\\25B8\\00A0"}
.ipyc .cols>input.allc:checked+label.allc::before{content:"\\25BE\\00A0"}
.ipyc .cols>input.allc:focus-visible+label.allc{outline:2px solid var(--ic-link);outline-offset:1px}
.ipyc .cols>input.allc:not(:checked)~* col.x{display:none}
.ipyc .cols>input.allc:not(:checked)~* th.x,.ipyc .cols>input.allc:not(:checked)~* td.x{display:none}
.ipyc :focus-visible{outline:2px solid var(--ic-link);outline-offset:1px}
"""

#: What a notebook output holding the static report adds, so that a saved notebook shows a
#: report whether or not its widget state was saved (see :func:`ipycompile.views.live.show`):
#: beside a live report widget the static copy hides; where the widget cannot be drawn (no
#: widget state: "Error displaying widget: model not found", or "Loading widget..." with no
#: kernel) or is drawn disconnected from its kernel (restored from saved widget state, or its
#: kernel restarted: ipywidgets marks it ``jupyter-widgets-disconnected``; its tabs cannot be
#: built nor its tables sorted) the widget's output hides and the static copy shows.
#: JupyterLab and Notebook 7 mark a rendered output's node with its MIME type
#: (``data-mime-type``) except the widget renderer's: the output after the static copy whose
#: node has none is the widget's (tests/test_saved_notebook.py reopens saved notebooks in both).
#: VS Code's notebook webview (microsoft/vscode, notebook/browser/view/renderers/
#: webviewPreloads.ts: OutputCell, OutputContainer, OutputElement) holds a cell's outputs as
#: sibling ``div.output_container``s in its ``div.cell_container``, each with one ``div.output``
#: the renderer draws into; nothing there names a MIME type. Jupyter's widget renderer
#: (microsoft/vscode-jupyter, webview-side/ipywidgets/renderer/index.ts and kernel/index.ts)
#: adds ``cell-output-ipywidget-background`` to the ``div.output`` of a widget it draws (the
#: widget's own node, ``.ipyc-w``, inside); where the widget's state or the kernel is missing
#: it falls back to the output's next MIME type, the widget output's one-line ``text/plain``,
#: which VS Code's built-in renderer (extensions/notebook-renderers/src/index.ts, renderText)
#: puts in a ``div.output-plaintext``, as it does where no widget renderer is installed. So in
#: VS Code the widget's output is the one after the static copy that is drawn by the widget
#: renderer or is plain text (tests/test_browser.py emulates both).
FALLBACK_CSS = """
:is(.jp-OutputArea-child,.output_container):has(.ipyc-static)+:is(.jp-OutputArea-child:has(>.jp-OutputArea-output:not([data-mime-type])),.output_container:has(>.cell-output-ipywidget-background,>.output>.output-plaintext)):not(:has(.ipyc-w:not(.jupyter-widgets-disconnected))){display:none}
:is(.jp-OutputArea-child,.output_container):has(.ipyc-static):has(+* .ipyc-w:not(.jupyter-widgets-disconnected)){display:none}
"""

_STYLE: Optional[str] = None


def _style() -> str:
    """The page's CSS (one ``<style>``; highlighted code uses pygments' token classes,
    coloured by the report's palette)."""
    global _STYLE
    if _STYLE is None:
        _STYLE = "<style>" + _CSS + "</style>"
    return _STYLE


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _ec(text) -> str:
    """A first-screen field, cut at VIEW_TEXT_LIMIT (the tabs and report.summary() have it whole)."""
    return _e(capped(str(text), where="the tabs below show it whole"))


# -- code ---------------------------------------------------------------------------
_KEYWORDS = {
    "python": "False None True and as assert async await break class continue def del elif else except finally for "
              "from global if import in is lambda nonlocal not or pass raise return try while with yield",
    # pygments' CppLexer: true, false and nullptr are builtins there (not coloured)
    "cpp": "alignas alignof asm auto bool break case catch char char16_t char32_t class const const_cast constexpr "
           "continue decltype default delete do double dynamic_cast else enum explicit export extern float for "
           "friend goto if inline int long mutable namespace new noexcept operator private protected public "
           "register reinterpret_cast restrict return short signed sizeof static static_assert static_cast "
           "struct switch template this thread_local throw try typedef typeid typename union unsigned using "
           "virtual void volatile wchar_t while int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t "
           "uint64_t size_t ssize_t ptrdiff_t intptr_t uintptr_t",
}
_STRINGS = r'''"""[\s\S]*?"""|'''  + r"""'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
#: a string's prefix (pygments colours it as the string): r"", b"", f"", rb""...
_STRING_PREFIX = {"python": r"\b[rRbBuUfF]{1,2}", "cpp": r"\b(?:u8|[uUL])"}
_COMMENTS = {"python": r"#[^\n]*", "cpp": r"//[^\n]*|/\*[\s\S]*?\*/|^[ \t]*#[^\n]*"}
#: a name defined by ``def``/``class`` (python): the keyword, what is between, the name
_DEFINITION = {"python": r"(?P<defn>\b(?P<dk>def|class)(?P<dsep>[ \t]+<?)(?P<dname>\w+))"}
_NUMBER = r"(?P<mi>(?<![\w.])(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)[jJfFlLuU]*\b)"
#: The characters a token can start at (a comment, a string or its prefix, a decorator, a word, a
#: number; C++'s preprocessor lines also at the spaces before ``#``): the regular expression is
#: tried only there, and a word that is no keyword is passed over whole (``w``), not a character
#: at a time. Twice as fast.
_TOKEN_START = {"python": "[#\"'@\\w.]", "cpp": "[/#\"'@\\w. \\t]"}
_FAST: dict = {}


def _fast_re(language: str):
    rx = _FAST.get(language)
    if rx is None:
        import re

        kw = "|".join(_KEYWORDS[language].split())
        definition = _DEFINITION.get(language)
        rx = re.compile(
            rf"(?={_TOKEN_START[language]})(?:(?P<c1>{_COMMENTS[language]})"
            rf"|(?P<s>(?:{_STRING_PREFIX[language]})?(?=[\"'])(?:{_STRINGS}))"
            rf"|(?P<nd>(?<![\w)\]])@\w+)|{definition + '|' if definition else ''}(?P<k>\b(?:{kw})\b)|{_NUMBER}"
            rf"|(?P<w>[A-Za-z_]\w*))",
            re.M,
        )
        _FAST[language] = rx
    return rx


def _fast_highlight(code: str, language: str) -> str:
    """Code as HTML, its tokens marked with pygments' CSS classes for what the page colours
    (comments, strings with their prefix, keywords, numbers, decorators, the names ``def`` and
    ``class`` define), by one regular expression: many times faster than pygments, and no lexer
    to import or build. tests/test_views.py checks it colours the recorded logs' code as pygments does."""
    out = []
    pos = 0
    esc = html.escape
    for m in _fast_re(language).finditer(code):
        kind = m.lastgroup
        if kind == "w":  # a word that is no keyword: left as it is
            continue
        start = m.start()
        if start > pos:
            out.append(esc(code[pos:start], False))
        text = m.group()
        if kind == "defn":  # def NAME / class NAME: the keyword, then the name in the function colour
            word = m.group("dk")
            out.append(f'<span class="k">{word}</span>{esc(m.group("dsep"), False)}'
                       f'<span class="{"nf" if word == "def" else "nc"}">{m.group("dname")}</span>')
        else:
            out.append(f'<span class="{kind}">{esc(text, False)}</span>')
        pos = m.end()
    out.append(esc(code[pos:], False))
    return "".join(out)


def _split_lines(code: str, n: int) -> tuple[str, str]:
    """``code`` cut after its first ``n`` lines."""
    cut = -1
    for _ in range(n):
        cut = code.find("\n", cut + 1)
        if cut < 0:
            return code, ""
    return code[: cut + 1], code[cut + 1 :]


class Limits:
    """How much of each block a page shows. ``None`` everywhere: the full page
    (``report.to_html``). :data:`COMPACT`: the notebook output, which must stay small
    enough to keep notebooks shareable (a few hundred KB for a large model)."""

    def __init__(self, code_lines=None, table_rows=None, detail_rows=None, options=None, tab_bytes=None, dpi=100,
                 figures=True):
        self.code_lines = code_lines  # lines of a code block (the Summary tab's are never cut)
        self.table_rows = table_rows  # rows of a table
        self.detail_rows = detail_rows  # rows of a table that expand to their details
        self.options = options  # options of a Choice shown with their content
        self.tab_bytes = tab_bytes  # past this, a tab's remaining code and details are left out
        self.dpi = dpi
        self.figures = figures  # False: a figure is named, not drawn (the widget and the full page draw it)

    @property
    def cuts(self) -> bool:
        return self.code_lines is not None


FULL = Limits()
COMPACT = Limits(code_lines=30, table_rows=60, detail_rows=12, options=4, tab_bytes=24_000, dpi=72, figures=False)
#: The static copy beside a report widget (:func:`fallback_bundle`): every tab's headings and first
#: rows, a few lines of code. It is kept in the notebook and, for every run, in IPython's output
#: history (the terminal's always, a kernel's where it stores displayed outputs), so it stays a
#: few KB per tab whatever the model; the widget builds each tab whole when it is opened.
#: Drawn with every %%compile cell, it builds no figure: the widget and the full page draw them.
FALLBACK = Limits(code_lines=6, table_rows=12, detail_rows=2, options=1, tab_bytes=1_500, dpi=72, figures=False)

#: Where a text field cut in a compact page (:func:`ipycompile.report.text.capped`) is whole.
CAPPED_WHERE = "report.to_html(path) shows it whole"

#: The note a compact page carries, saying where every detail is.
FULL_DETAIL = ("Compact view: long code, tables and lists are cut here to keep the notebook small. Every detail: "
               "the live report widget (%%compile), report.to_html(path) for the full page, or report.save(path) "
               "for the JSON.")


_IDS = 0  # ids handed out (a table's column switch), unique in a notebook's page

#: On a page whose parts are built as they are opened (:mod:`.page_files`), a table's rows (and a
#: choice's options) come this many at a time, each next lot behind a button.
PAGE_ROWS = 200
#: ... and a tab's own blocks (Guards: a tree a compile) about this many characters at a time,
#: never fewer than :data:`PAGE_MIN` blocks (a tab of a few blocks, one a figure, stays whole).
PAGE_BYTES = 128 << 10
PAGE_MIN = 20


class _Page:
    """State of one page being rendered: the highlighting budget (lines left to highlight;
    past them code is escaped only), the limits, and the bytes of the tab being rendered."""

    def __init__(self, limits: Limits):
        self.fast_lines = HIGHLIGHT_BUDGET
        self.limits = limits
        self.cut_code = limits.cuts  # False while rendering the Summary tab
        self.tab_start = 0
        self.cut = 0  # things left out of this page
        self.anchor = ""  # the page's id prefix (its tabs', its source lines')
        self.keys: set[str] = set()  # source excerpts given an id in this page
        self.targets: Optional[set[str]] = None  # the keys of every source excerpt of the page: what links may name
        self.chunks = None  # a page_files.Chunks: where the parts built only when opened go (None: none is)

    def defer(self, out: list, fill: Callable[[list], None]) -> None:
        """What ``fill`` renders, into ``out``; on a page with :attr:`chunks`, kept there as a part
        built when it is opened, ``out`` getting its placeholder (:mod:`.page_files`)."""
        if self.chunks is None:
            fill(out)
            return
        part: list[str] = []
        fill(part)
        out.append(f'<div data-ipyc-c="{self.chunks.add("".join(part))}"></div>')

    def lots(self, out: list, total: int, render: Callable[[int, int, list], int], what: str, columns: int = 0) -> None:
        """``total`` items (rows, options, blocks) into ``out``: ``render(start, end, out)`` renders
        items ``start`` to ``end`` (it may stop sooner; it returns where it stopped). On a page
        with :attr:`chunks`, :data:`PAGE_ROWS` at a time: the first lot in ``out``, each next one a
        part behind a button ("Show rows 201 to 400 (of N)") at the end of the one before (a
        ``tbody`` among a table's rows of ``columns`` columns). The lots are rendered in order, then
        made parts from the last (no part nests its rendering in another's: a million rows need no
        deep stack)."""
        if self.chunks is None:
            render(0, total, out)
            return
        lots = []
        start = 0
        while start < total or not lots:
            o: list[str] = []
            end = render(start, min(total, start + PAGE_ROWS), o)
            lots.append((start, end, o))
            start = end
        after = ""
        for start, end, o in reversed(lots[1:]):
            n = self.chunks.add("".join(o) + after)
            more = _e(f"Show {what} {start + 1} to {end} (of {total})")
            after = (f'<tbody data-ipyc-c="{n}" class="more" role="button" tabindex="0"><tr><td colspan="{columns}">'
                     f'{more}</td></tr></tbody>' if columns
                     else f'<div data-ipyc-c="{n}" class="more" role="button" tabindex="0">{more}</div>')
        out += lots[0][2]
        out.append(after)

    def new_id(self, what: str) -> str:
        global _IDS
        _IDS += 1
        return f"{self.anchor or 'ipyc'}-{what}{_IDS}"

    def over(self, out: list) -> bool:
        """Whether the current tab has used its bytes (compact pages only)."""
        if self.limits.tab_bytes is None:
            return False
        return sum(len(x) for x in out[self.tab_start:]) > self.limits.tab_bytes

    def omitted(self, what: str) -> str:
        self.cut += 1
        return f'<p class="note">{_e(what)} (see the note at the top for the full report)</p>'


def _highlight(code: str, language: str, page: _Page) -> str:
    """HTML for ``code``. Its first HIGHLIGHT_LINES lines are highlighted while the page's
    HIGHLIGHT_BUDGET lasts; the rest of the block is shown in full, escaped."""
    if language not in ("python", "cpp") or not code:
        return html.escape(code, False)
    head, rest = _split_lines(code, HIGHLIGHT_LINES)
    n = head.count("\n") + 1
    if n <= page.fast_lines:
        page.fast_lines -= n
        out = _fast_highlight(head, language)
    else:
        page.fast_lines = 0  # once past the budget, stay past it: the page's order decides
        out = html.escape(head, False)
    return out + html.escape(rest, False) if rest else out


# -- blocks ---------------------------------------------------------------------------
def _block(b, out: list, page: _Page) -> None:
    if isinstance(b, Text):
        cls = f' class="{_e(b.kind)}"' if b.kind and b.kind != "plain" else ""
        # a 1 MB reason, or a 5,000-character file name, stays out of notebooks
        text = capped(short_paths(b.text), where=CAPPED_WHERE) if page.limits.cuts else b.text
        if b.url:
            out.append(f'<p{cls}><a href="{_e(b.url)}" target="_blank" rel="noopener noreferrer">{_e(text)}</a></p>')
        else:
            out.append(f"<p{cls}>{_e(text)}</p>")
    elif isinstance(b, Table):
        _table(b, out, page)
    elif isinstance(b, Code):
        _code(b, out, page)
    elif isinstance(b, Figure):
        if page.limits.figures:
            out.append(_figure(b, page.limits.dpi))
        else:
            out.append(page.omitted(f"figure: {b.title}"))
    elif isinstance(b, TreeNode):
        _tree(b, out, page)
    elif isinstance(b, Choice):
        _choice(b, out, page)
    else:  # a block kind this renderer does not know: show it rather than drop it
        out.append(f"<pre>{_e(b)}</pre>")


def _blocks(blocks, out: list, page: _Page) -> None:
    for b in blocks:
        _block(b, out, page)


def _code(b: Code, out: list, page: _Page) -> None:
    code, more = b.code, 0
    if page.cut_code:
        if page.over(out):
            out.append(page.omitted(f"{b.title or 'code'}: {b.code.count(chr(10)) + 1} lines left out"))
            return
        code, rest = _split_lines(b.code, page.limits.code_lines)
        more = rest.count("\n") + (1 if rest and not rest.endswith("\n") else 0)
    if page.limits.cuts and len(code) > NAME_LIMIT:  # the Summary tab's lines too: a 1 MB reason is one line
        code = "\n".join(capped(short_paths(line), where=CAPPED_WHERE) for line in code.split("\n"))
    target, lines = "", None
    if b.key and page.anchor and b.key not in page.keys:  # the first excerpt of a place: links land here
        page.keys.add(b.key)
        target = f' id="{_e(page.anchor)}-{_e(b.key)}"'
        prefix = f"{page.anchor}-{b.key}"
        lines = _numbered_lines(code, b.language, page, prefix)
        line = b.key.rsplit("-", 1)[-1]  # the place's line (tabs.place_key): a link to it lands here at least
        if line.isdigit() and (lines is None or f'id="{_e(line_id(prefix, int(line)))}"' not in lines):
            target += f'><span id="{_e(line_id(prefix, int(line)))}"></span'
    out.append(f'<div class="code"{target}>')
    if b.title:
        out.append(f'<div class="ct">{_e(b.title)}</div>')
    shown = lines if lines is not None else _highlight(code, b.language, page)
    if b.copy:
        out.append(f'<div class="fixbox">{COPY_BUTTON}<pre class="hl">{shown}</pre></div>')
    else:
        out.append(f'<pre class="hl">{shown}</pre>')
    if more:
        out.append(page.omitted(f"... {more} more lines"))
    out.append("</div>")


#: An excerpt's line as :mod:`.excerpts` writes it: ``> 13 | code`` (the place's line) or ``  12 | code``.
_EXCERPT_LINE = None


def _numbered_lines(code: str, language: str, page: _Page, prefix: str) -> Optional[str]:
    """A source excerpt (:func:`.source.source_excerpt`'s ``N | line`` lines) with an id per
    line, ``PREFIX-LN`` (:func:`line_id`), so that a place's link lands on its line (marked by
    the page's ``:target`` style); each line highlighted on its own. None where the code is not
    such an excerpt (it is shown as any code)."""
    import re

    global _EXCERPT_LINE
    if _EXCERPT_LINE is None:
        _EXCERPT_LINE = re.compile(r"([> ] *)(\d+)( \| )(.*)")
    rows = code.split("\n")
    found = [_EXCERPT_LINE.fullmatch(r) for r in rows]
    if not rows or not all(found):
        return None
    out = []
    for m in found:
        lead, n, bar, text = m.groups()
        out.append(f'<span class="ln" id="{_e(line_id(prefix, int(n)))}">{_e(lead + n + bar)}'
                   f'{_highlight(text, language, page).rstrip(chr(10))}</span>')
    return "\n".join(out)


def line_id(prefix: str, line: int) -> str:
    """The id of line ``line`` of the excerpt whose id is ``prefix``."""
    return f"{prefix}-L{line}"


#: Cells of at most this many characters (a name, a place, a count, a code) never wrap;
#: longer ones (code, messages, kernel names, paths) wrap, inside a word only where it has no space.
SHORT_CELL = 24


#: What a click on a place does in a notebook (JupyterLab, Notebook 7): scroll to the cell
#: whose prompt is ``[n]:`` and mark the line for two seconds; elsewhere (a saved page, or
#: the cell is gone) the link goes to the place's source excerpt in the page, if any.
GO_TO_CELL = ("var c=this.dataset.cell,n=+this.dataset.line,e=[].slice.call(document.querySelectorAll("
              "'.jp-Notebook .jp-CodeCell')).filter(function(x){var q=x.querySelector('.jp-InputPrompt');"
              "return q&amp;&amp;q.textContent.replace(/\\s/g,'')==='['+c+']:'}).pop();if(!e)return true;"
              "var l=e.querySelectorAll('.cm-line')[n-1]||e;l.scrollIntoView({block:'center'});"
              "l.classList.add('ipyc-hit');setTimeout(function(){l.classList.remove('ipyc-hit')},2500);return false")


def place_html(p: Place, anchor: str, fallback: str = "", targets: Optional[set] = None) -> str:
    """A place as a link: to its cell and line in a notebook (script), to its source excerpt
    in this page (``#anchor-key``; with ``targets``, the keys of the excerpts the page holds, only
    where its excerpt is one of them), else to ``fallback`` (an id in the page); plain text
    when it has none of them."""
    linked = p.key and anchor and (targets is None or p.key in targets)
    href = (f"#{line_id(f'{anchor}-{p.key}', p.line)}" if p.line is not None else f"#{anchor}-{p.key}") \
        if linked else (f"#{fallback}" if fallback else "")
    if p.cell is None and not href:
        return _e(p.text)
    data = f' data-cell="{p.cell}" data-line="{p.line or 1}" onclick="{GO_TO_CELL}"' if p.cell is not None else ""
    title = f"In [{p.cell}], line {p.line}: go to the cell" if p.cell is not None else "the source, below"
    return f'<a class="place" href="{_e(href or "#")}" title="{_e(title)}"{data}>{_e(p.text)}</a>'


def _cell(v, short: bool, cap: bool = False, extra: bool = False, anchor: str = "",
          targets: Optional[set] = None) -> str:
    x = " x" if extra else ""
    if isinstance(v, Place):
        return f'<td class="{"s" if short or len(v.text) <= SHORT_CELL else "l"}{x}">{place_html(v, anchor, "", targets)}</td>'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f'<td class="n{x}">{_e(v)}</td>'
    text = "" if v is None else str(v)
    if cap:
        text = capped(text, where=CAPPED_WHERE)
    return f'<td class="{"s" if short or len(text) <= SHORT_CELL else "l"}{x}">{_e(text)}</td>'


def _lengths(t: Table) -> list[tuple[int, int, int]]:
    """Each column's longest header word, longest cell and longest short cell, in
    characters (over the first 200 rows)."""
    sample = t.rows[:200]
    out = []
    for i, c in enumerate(t.columns):
        cells = [len(str(r[i])) for r in sample if i < len(r) and r[i] is not None]
        word = max((len(w) for w in str(c).split()), default=0)
        out.append((word, max(cells, default=0), max([n for n in cells if n <= SHORT_CELL], default=0)))
    return out


def _widths(lengths: list[tuple[int, int, int]], marker: bool, extra: Optional[list[bool]] = None) -> str:
    """A ``<colgroup>`` for the fixed layout that lines up a table's header and its rows'
    tables, in ``ch`` (with room for the bold header's longest word: a header wraps at its
    spaces; ``marker``: the first column also holds the expand arrow). A column of short
    texts is as wide as its longest; a longer one a quarter of its longest text (12 to 24
    ``ch``) and never narrower than its short cells. The browser spreads what the table
    has left over them all, and a table wider than its place scrolls (``.tbl``) rather
    than breaking a short word."""
    cols = []
    for i, (head, longest, longest_short) in enumerate(lengths):
        chars = max(head * 1.1, longest_short) + 0.5
        if longest > SHORT_CELL:
            chars = max(chars, min(max(longest // 4, 12), 24))
        chars += 1.5 if marker and i == 0 else 0
        x = ' class="x"' if extra and extra[i] else ""
        cols.append(f'<col{x} style="width:calc({chars:g}ch + 12px)">')
    return "<colgroup>" + "".join(cols) + "</colgroup>"


def columns_switch(t: Table, page: _Page) -> tuple[str, list[bool]]:
    """For a wide table with default columns (``Table.columns_shown``): a switch (a checkbox
    and its label, no script) that shows the other columns, and which columns are extra.
    ``("", [False, ...])`` for a table that shows every column."""
    shown = set(t.columns_shown or range(len(t.columns)))
    extra = [i not in shown for i in range(len(t.columns))]
    if not any(extra):
        return "", extra
    box = page.new_id("cols")
    return (f'<input type="checkbox" class="allc" id="{_e(box)}"><label class="allc" for="{_e(box)}">'
            f'all {len(t.columns)} columns ({sum(extra)} more: {_e(", ".join(c for c, x in zip(t.columns, extra) if x))})'
            f'</label>'), extra


def _colgroup(extra: list[bool]) -> str:
    return "<colgroup>" + "".join('<col class="x">' if x else "<col>" for x in extra) + "</colgroup>"


def _table(t: Table, out: list, page: _Page) -> None:
    if t.title:
        out.append(f'<div class="ttl">{_e(t.title)}</div>')
    lim = page.limits
    rows = t.rows if lim.table_rows is None else t.rows[: lim.table_rows]
    switch, extra = columns_switch(t, page)
    if switch:
        out.append(f'<div class="cols">{switch}')
    head = "<tr>" + "".join(f'<th class="x">{_e(c)}</th>' if x else f"<th>{_e(c)}</th>"
                            for c, x in zip(t.columns, extra)) + "</tr>"
    expandable = [bool(t.details and i < len(t.details) and t.details[i]) for i in range(len(rows))]
    if lim.detail_rows is not None:
        seen = 0
        for i, e in enumerate(expandable):
            if e:
                seen += 1
                expandable[i] = seen <= lim.detail_rows
    lengths = _lengths(t)
    short = [longest <= SHORT_CELL for _, longest, _ in lengths]
    if not any(expandable):
        out.append(f'<div class="wide"><table>{_colgroup(extra) if switch else ""}{head}')

        def plain_in(start: int, end: int, out: list) -> int:
            for row in rows[start:end]:
                out.append("<tr>" + "".join(_cell(v, s, page.limits.cuts, x, page.anchor, page.targets) for v, s, x in zip(row, short, extra)) + "</tr>")
            return end

        page.lots(out, len(rows), plain_in, "rows", columns=len(t.columns))
        out.append("</table></div>")
    else:
        # rows that expand: one <details> per row, its summary a one-row table whose
        # columns line up with the header's (fixed layout, same <colgroup>); runs of
        # rows that do not expand share one table
        cols = _widths(lengths, marker=True, extra=extra)
        out.append(f'<div class="tbl"><table class="hd">{cols}{head}</table>')

        def rows_in(start: int, end: int, out: list) -> int:
            plain: list[str] = []
            for i in range(start, end):
                cells = "".join(_cell(v, s, page.limits.cuts, x, page.anchor, page.targets) for v, s, x in zip(rows[i], short, extra))
                if not expandable[i] or (page.cut_code and page.over(out)):
                    plain.append(f"<tr>{cells}</tr>")
                    continue
                if plain:
                    out.append(f'<table class="hd">{cols}{"".join(plain)}</table>')
                    plain = []
                out.append(f"<details><summary><table>{cols}<tr>{cells}</tr></table></summary>")
                page.defer(out, lambda o, d=t.details[i]: (o.append('<div class="det">'), _blocks(d, o, page), o.append("</div>")))
                out.append("</details>")
            if plain:
                out.append(f'<table class="hd">{cols}{"".join(plain)}</table>')
            return end

        page.lots(out, len(rows), rows_in, "rows")
        out.append("</div>")
    if switch:
        out.append("</div>")
    if len(rows) < len(t.rows):
        out.append(page.omitted(f"... {len(t.rows) - len(rows)} more rows ({len(t.rows)} in all)"))


def table_html(t: Table, order: Optional[list[int]] = None) -> str:
    """A table's rows in ``order``, without their details (the widget shows those in its
    own rows): the static page's header, cells and column switch."""
    page = _Page(FULL)
    order = list(range(len(t.rows))) if order is None else order
    short = [longest <= SHORT_CELL for _, longest, _ in _lengths(t)]
    switch, extra = columns_switch(t, page)
    head = "".join(f'<th class="x">{_e(c)}</th>' if x else f"<th>{_e(c)}</th>" for c, x in zip(t.columns, extra))
    out = [f'<div class="cols">{switch}' if switch else "", '<div class="wide"><table class="ipyc-t">',
           _colgroup(extra) if switch else "", f"<tr>{head}</tr>"]
    for i in order:
        out.append("<tr>" + "".join(_cell(v, s, False, x) for v, s, x in zip(t.rows[i], short, extra)) + "</tr>")
    out.append("</table></div>" + ("</div>" if switch else ""))
    return "".join(out)


def _tree(node: TreeNode, out: list, page: _Page) -> None:
    out.append(f'<details class="tree"{" open" if node.open else ""}><summary>{_e(node.label)}</summary>')

    def kids(o: list) -> None:
        o.append('<div class="kids">')
        _blocks(node.blocks, o, page)
        for c in node.children:
            _tree(c, o, page)
        o.append("</div>")

    if node.open:
        kids(out)
    else:
        page.defer(out, kids)
    out.append("</details>")


def _choice(c: Choice, out: list, page: _Page) -> None:
    default = c.default if c.default in c.options else next(iter(c.options), None)
    labels = list(c.options)
    n = page.limits.options
    if n is not None and len(labels) > n:  # the default first, then the first others
        labels = ([default] if default is not None else []) + [k for k in labels if k != default][: n - 1]
    out.append(f'<div class="choice"><div class="ttl">{_e(c.label)} ({len(c.options)})</div>')

    def options_in(start: int, end: int, out: list) -> int:
        for label in labels[start:end]:
            out.append(f'<details class="opt"{" open" if label == default else ""}><summary>{_e(label)}</summary>')
            if label == default:
                _blocks(c.options[label], out, page)
            else:
                page.defer(out, lambda o, b=c.options[label]: _blocks(b, o, page))
            out.append("</details>")
        return end

    page.lots(out, len(labels), options_in, "options")
    if len(labels) < len(c.options):
        rest = [k for k in c.options if k not in labels]
        out.append(page.omitted(f"{len(rest)} more: " + ", ".join(rest[:20]) + (" ..." if len(rest) > 20 else "")))
    out.append("</div>")


def _figure(f: Figure, dpi: int = 100) -> str:
    """A figure inline: SVG as it is (:mod:`.svg`), a matplotlib figure as a PNG."""
    try:
        drawn = f.build()
        if isinstance(drawn, SvgImage):
            return f'<figure><figcaption>{_e(f.title)}</figcaption>{drawn.markup}</figure>'
        data = base64.b64encode(figure_png(drawn, dpi)).decode("ascii")
    except Exception as exc:  # a figure that cannot be drawn must not lose the page
        return f'<p class="warn">{_e(f.title)}: could not draw the figure ({_e(type(exc).__name__)}: {_e(exc)})</p>'
    return f'<figure><figcaption>{_e(f.title)}</figcaption><img alt="{_e(f.title)}" src="data:image/png;base64,{data}"></figure>'


# -- the first screen ------------------------------------------------------------------
#: A copy button for code (the browser's clipboard; without script it does nothing, and the
#: code beside it can still be selected).
COPY_BUTTON = ('<button class="copy" type="button" title="Copy the code" aria-label="Copy the code" '
               'onclick="navigator.clipboard&amp;&amp;navigator.clipboard.writeText('
               'this.parentNode.querySelector(\'pre\').innerText)">Copy</button>')


def chip_html(c) -> str:
    tip = f' title="{_e(c.tooltip)}"' if c.tooltip else ""
    return f'<span class="chip{" warn" if c.warn else ""}" data-key="{_e(c.key)}"{tip}>{_e(c.text)}</span>'


def first_screen_html(vm: ViewModel, anchor: str = "", compact: bool = False, limits: Optional[Limits] = None,
                      targets: Optional[set] = None) -> str:
    """What is wrong and what to do (``vm.problems``, most costly first), then the chips:
    the first thing in the static page and in the widget. ``anchor``, when given, is the
    id prefix of the page's tabs, so that a problem links to the tab with its details.
    ``limits``: the page's (:data:`FULL` when not given), for how the fixes' code is highlighted."""
    out = ['<div class="first" role="region" aria-label="What to fix">']
    if vm.title:
        out.append(f'<p class="heading">{_e(vm.title)}</p>')
    out += [f'<p class="note">{_ec(n)}</p>' for n in vm.notes]
    if vm.problems:
        n = len(vm.problems)
        out.append(f'<p class="heading">{"What to fix" if any(p.severe for p in vm.problems) else "To consider"}'
                   f' ({n}, most costly first)</p>')
    for p in vm.problems or ():
        out.append(f'<div class="prob{"" if p.severe else " mild"}" data-kind="{_e(p.kind)}">')
        cost = f' <span class="cost">({_e(p.cost)})</span>' if p.cost else ""
        out.append(f'<p><span class="pt">{_ec(p.title)}</span>{cost}</p>')
        if p.where:
            tab = f"{anchor}-{p.tab}" if anchor and p.tab else ""
            if p.place is not None:  # a compact page may leave the excerpt out: link the tab there
                key = p.place if not compact else Place(p.place.text, p.place.cell, p.place.line)
                where = place_html(key, anchor, tab, targets)
            else:
                where = f'<a href="#{_e(tab)}">{_ec(p.where)}</a>' if tab else _ec(p.where)
            code = f": <code>{_ec(p.code)}</code>" if p.code else ""
            out.append(f'<p class="at">{where}{code}</p>')
        if p.fix:
            conf = f" ({_e(p.confidence)} confidence)" if p.confidence else ""
            out.append(f'<p data-fix="{_e(p.fix_label or "Fix")}">{_e(p.fix_label or "Fix")}{conf}: {_ec(p.fix)}</p>')
            if p.fix_code:
                out.append(f'<div class="fixbox">{COPY_BUTTON}<pre class="hl">'
                           f'{_highlight(p.fix_code, "python", _Page(limits or FULL))}</pre></div>')
            if p.check:
                out.append(f'<p class="fixnote">{_ec(p.check)}</p>')
        elif p.note:
            out.append(f'<p class="fixnote">{_ec(p.note)}</p>')
        out.append("</div>")
    if vm.problems == []:
        out.append('<p class="ok">Nothing to fix: no graph breaks, recompiles or failures.</p>')
    out.append('<div class="strip">')
    # " | " between chips, hidden by the page's CSS: where a renderer drops <style> (an
    # untrusted notebook, GitHub) the chips still read apart
    out.append('<span class="sep"> | </span>'.join(chip_html(c) for c in vm.header))
    out.append("</div></div>")
    return "".join(out)


# -- the page ---------------------------------------------------------------------------
_PAGES = 0

#: The tabs' one script: makes each page's tab strip an ARIA tablist (a click or Enter/Space
#: selects; arrow keys, Home and End move and select; the other panels are ``hidden=until-found``,
#: so the browser's find and a link into a panel open it). Without it (scripts stripped: an
#: untrusted notebook, GitHub, sanitised nbconvert) the strip stays hidden and every panel shows,
#: under its own heading. Idempotent: every output of a notebook may carry it.
TABS_SCRIPT = (
    "<script>(function(){[].forEach.call(document.querySelectorAll('.ipyc .tabs:not(.on)'),function(t){"
    "t.classList.add('on');var T=[].slice.call(t.firstChild.children),"
    "P=function(b){return document.getElementById(b.getAttribute('aria-controls'))},"
    "S=function(b,f){T.forEach(function(x){var o=x===b,p=P(x);x.setAttribute('aria-selected',o);x.tabIndex=o?0:-1;"
    "if(p){p.tabIndex=0;o?p.removeAttribute('hidden'):p.setAttribute('hidden','until-found')}});f&&b.focus()};"
    "T.forEach(function(b,i){b.onclick=function(){S(b)};b.onkeydown=function(e){"
    "var j={ArrowRight:i+1,ArrowLeft:i-1,Home:0,End:T.length-1}[e.key];"
    "if(j!=null){e.preventDefault();S(T[(j+T.length)%T.length],1)}};"
    "var p=P(b);p&&p.addEventListener('beforematch',function(){S(b)})});"
    "t.parentNode.addEventListener('click',function(e){var a=e.target.closest('a[href^=\"#\"]'),"
    "d=a&&document.getElementById(a.getAttribute('href').slice(1)),p=d&&d.closest('[role=tabpanel]');"
    "p&&p.hidden&&S(T.filter(function(b){return P(b)==p})[0]);for(;d;d=d.parentElement)if(d.tagName=='DETAILS')d.open=1},1);"
    "S(T.filter(function(b){return b.getAttribute('aria-selected')=='true'})[0]||T[0])})})()</script>"
)


def render_view_model(vm: ViewModel, timings: Optional[dict] = None, limits: Limits = FULL,
                      fallback: bool = False, write: Optional[Callable[[str], object]] = None, chunks=None) -> str:
    """The HTML fragment for ``vm``: the first screen, then every tab (an ARIA tablist driven by
    :data:`TABS_SCRIPT`; without script, every panel under its heading). ``timings``, when
    given, receives seconds per tab. ``limits`` (:data:`FULL` or :data:`COMPACT`) says how
    much of each block to show. ``fallback``: this is the static copy beside a report
    widget (it carries :data:`FALLBACK_CSS`). ``write``, for a page that cuts nothing
    (:data:`FULL`): each tab is handed to it as soon as it is rendered, and "" returned
    (the page of a large log is tens of MB; it is never held whole). ``chunks`` (a
    :class:`.page_files.Chunks`, for a page that cuts nothing): every tab's body but the first's
    and every closed ``<details>``' content go there, as parts built when they are opened, and
    the fragment holds their placeholders (:func:`.page_files.write_page`)."""
    if (write is not None or chunks is not None) and limits.cuts:
        raise ValueError("write= and chunks= take a page that cuts nothing (limits=FULL): a cut page's note goes at its top")
    global _PAGES
    _PAGES += 1
    anchor = f"ipyc{_PAGES}-{id(vm) % 100000}"
    page = _Page(limits)
    page.anchor = anchor
    page.targets = excerpt_keys(vm)  # a place links to its excerpt only where the page shows one
    page.chunks = chunks
    style = _style() + (f"<style>{FALLBACK_CSS}</style>" if fallback else "")
    out: list[str] = [style, f'<div class="ipyc{" ipyc-static" if fallback else ""}">', first_screen_html(vm, anchor, limits.cuts, limits, page.targets)]
    note_at = len(out)
    # the static copy beside a widget leaves out the tab strip and its script (the display budget):
    # its panels show one under another, under their headings, as wherever scripts are stripped
    tablist = not fallback
    out.append('<div class="tabs">' + ('<div class="tablist" role="tablist">' if tablist else ""))
    for i, tab in enumerate(vm.tabs if tablist else ()):  # the script sets the others' aria-selected and every tabindex
        a, k = _e(anchor), _e(tab.key)
        selected = ' aria-selected="true"' if i == 0 else ""
        warn = ' class="warn"' if tab.warn else ""
        out.append(f'<button role="tab" id="{a}-t-{k}" aria-controls="{a}-{k}" data-tab="{k}"{selected}{warn}>'
                   f'{_e(tab.title)}</button>')
    out.append("</div>" if tablist else "")
    for i, tab in enumerate(vm.tabs):
        t0 = time.perf_counter()
        a, k = _e(anchor), _e(tab.key)
        warn = ' class="warn"' if tab.warn else ""
        out.append(f'<section role="tabpanel" id="{a}-{k}" aria-labelledby="{a}-t-{k}" data-tab="{k}">'
                   f'<h3{warn}>{_e(tab.title)}</h3>')
        page.cut_code = limits.cuts and tab.key != "summary"

        def body(o: list, tab=tab) -> None:
            o.append('<div class="body">')
            page.tab_start = len(o)
            blocks = tab.blocks()

            def blocks_in(start: int, end: int, o: list) -> int:  # a tab of thousands (Guards: a tree a compile)
                size = 0
                for i in range(start, end):
                    mark = len(o)
                    _block(blocks[i], o, page)
                    size += sum(len(x) for x in o[mark:])
                    if page.chunks is not None and size > PAGE_BYTES and i + 1 - start >= PAGE_MIN:
                        return i + 1
                return end

            page.lots(o, len(blocks), blocks_in, "entries")
            o.append("</div>")

        if i == 0:  # the first screen's tab is built with the page
            body(out)
        else:
            page.defer(out, body)
        out.append("</section>")
        if write is not None:
            write("".join(out))
            out.clear()
        if timings is not None:
            timings[tab.key] = time.perf_counter() - t0
    out.append("</div></div>" + (TABS_SCRIPT if tablist else ""))
    if page.cut and write is None:
        out.insert(note_at, f'<p class="note">{_e(FULL_DETAIL)}</p>')
        return _without_dangling_links("".join(out))  # an excerpt left out of a cut page: no link to it
    if write is not None:
        write("".join(out))
        return ""
    return "".join(out)


def excerpt_keys(vm: ViewModel) -> set[str]:
    """The keys of every source excerpt (:attr:`Code.key`) in ``vm``'s tabs (building them: a page
    renders them all anyway), for links to places that have one."""
    keys: set[str] = set()
    todo: list = []
    for tab in vm.tabs:
        try:
            todo += tab.blocks()
        except Exception:  # the tab fails again when it is rendered, where that is reported
            continue
    while todo:
        b = todo.pop()
        if isinstance(b, Code):
            if b.key:
                keys.add(b.key)
        elif isinstance(b, Table):
            for d in b.details or ():
                todo += d
        elif isinstance(b, TreeNode):
            todo += b.blocks
            todo += b.children
        elif isinstance(b, Choice):
            for d in b.options.values():
                todo += d
    return keys


_HREF_IN_PAGE = re.compile(r' href="#([^"]+)"')
_ID_IN_PAGE = re.compile(r' id="([^"]+)"')


def _without_dangling_links(page: str) -> str:
    """``page`` with each in-page link whose target it does not hold made plain (its ``href`` left out)."""
    ids = set(_ID_IN_PAGE.findall(page))
    return _HREF_IN_PAGE.sub(lambda m: m.group(0) if m.group(1) in ids else "", page)


def render_html(report: CompileReport, compact: bool = False) -> str:
    """The report as a self-contained HTML fragment: every detail, or with
    ``compact=True`` what the notebook output embeds (long blocks cut, with a note
    saying where the rest is)."""
    return render_view_model(view_model(report), limits=COMPACT if compact else FULL)


def save_html(report: CompileReport, path: str, title: str = "ipycompile report",
              folder_above: Optional[int] = None) -> str:
    """Write the report as a standalone HTML page with every detail; returns ``path``. A large
    page is written as the page and a folder beside it, ``PATH_files``, of the parts built when
    they are opened (:func:`save_page`; ``folder_above``: past how many characters of parts,
    :data:`.page_files.FOLDER_ABOVE` when not given)."""
    save_page(report, path,
              f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{REPORT_MARKER}"
              f"<title>{_e(title)}</title><meta name=\"color-scheme\" content=\"light dark\"></head>"
              "<body class=\"ipyc standalone\" style=\"margin:0;padding:8px\">\n",
              "\n</body></html>\n", folder_above)
    return path


def save_page(report: CompileReport, path: str, head: str, tail: str, folder_above: Optional[int] = None) -> list[str]:
    """Write ``head``, the report's full page and ``tail`` at ``path``: one self-contained file
    while its deferred parts stay under :data:`.page_files.FOLDER_ABOVE` characters, else the
    page (its first screen and first tab) and its folder of parts (:func:`.page_files.write_page`).
    Returns the paths written, the page first. A failed write leaves an earlier page as it was."""
    from .page_files import write_page

    from .page_files import FOLDER_ABOVE

    vm = view_model(report)
    return write_page(path, head, lambda chunks: render_view_model(vm, chunks=chunks), tail,
                      FOLDER_ABOVE if folder_above is None else folder_above)


def write_body(report: CompileReport, write: Callable[[str], object]) -> None:
    """What :func:`render_html` gives for the full page, handed to ``write`` tab by tab (every
    part in place: a page on stdout has no folder beside it)."""
    render_view_model(view_model(report), write=lambda text: write(utf8_safe(text)))  # a file name not in UTF-8


def notebook_bundle(report: CompileReport) -> dict[str, str]:
    """The notebook output's HTML: the compact page (see :func:`render_html`)."""
    return {"text/html": utf8_safe(render_html(report, compact=True))}


def fallback_bundle(vm: ViewModel, text: str) -> dict[str, str]:
    """The static copy shown beside a report widget (:func:`ipycompile.views.live.show`):
    the page cut to :data:`FALLBACK` and the first screen's text."""
    text = capped_lines(text, where="print(report) shows it whole")
    return {"text/html": utf8_safe(render_view_model(vm, limits=FALLBACK, fallback=True)), "text/plain": utf8_safe(text)}
