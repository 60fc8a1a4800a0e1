"""The ipywidgets view of a report: :class:`ReportWidget`.

It renders :func:`ipycompile.views.viewmodel.view_model` and nothing else (no
analysis of its own), so it shows what the static HTML shows:

- the first screen (what to fix, most costly first, each with the user's line and the
  fix, then the chips): the static page's HTML of it (:func:`.html.first_screen_html`);
- a ``Tab`` with one child per view-model tab. The first tab (Summary) is built
  with the widget; every other tab is built the first time it is selected, then
  kept;
- blocks: ``Text`` -> ``HTML``; ``Table`` -> an HTML table (sortable ones get a
  sort-column and an order ``Dropdown``), rows with details -> an ``Accordion``
  (a ``Dropdown`` picking the row for long tables) whose content is built when
  opened; ``Text`` and ``Code`` -> the static page's HTML of the block (one renderer of
  blocks to HTML, :mod:`.html`); ``Figure`` -> a PNG ``Image``;
  ``TreeNode`` -> nested ``Accordion`` s; ``Choice`` -> a ``Dropdown`` and the
  chosen option's content.

Displayed on its own, a ``ReportWidget`` gives the widget view and, in the same bundle, the
report's compact static ``text/html`` and its first screen as ``text/plain``.
``%%compile`` shows it differently (:func:`ipycompile.views.live.show`): the static
copy as an output of its own before the widget's, so that a saved notebook shows the
report whether or not the widget state was saved. Colours are JupyterLab's theme
variables (:data:`.html._THEME`).
"""

from __future__ import annotations

import dataclasses

import html as htmllib
import io
import traceback
from typing import Any, Callable, Optional

import ipywidgets as W

from ..report import CompileReport
from ..report.model import unreadable_marked
from ..report.text import capped
from . import html as H
from .blocks import Choice, Code, Figure, Table, Text, TreeNode, ViewModel, sort_rows
from .svg import SvgImage
from .viewmodel import view_model

__all__ = ["ReportWidget", "close_all", "ACCORDION_ROWS"]

#: Tables with details and at most this many rows expand row by row (an Accordion);
#: longer ones pick the row to show with a Dropdown.
ACCORDION_ROWS = 40

#: What the widget adds to the static page's CSS: ipywidgets' own boxes, in the theme's colours.
_WIDGET_CSS = """
.ipyc-w .widget-html-content{line-height:1.4;font-size:13px}
.ipyc-w .widget-html{height:auto;margin:0}
.ipyc-w table.ipyc-t th,.ipyc-w table.ipyc-t td{overflow-wrap:normal;word-break:normal}
.ipyc-w .jupyter-widget-Collapse-header{color:var(--jp-ui-font-color1,inherit)}
.ipyc-w .lm-TabBar-tab,.ipyc-w .lm-TabBar-tab .lm-TabBar-tabLabel{color:var(--jp-ui-font-color0,inherit)!important}
.ipyc-w .lm-TabBar-content{flex-wrap:wrap}
.ipyc-w .widget-tab>.lm-TabBar .lm-TabBar-tab{flex:0 0 auto;max-width:none;min-width:0}
.ipyc-w .lm-TabBar-tabLabel{overflow:visible;text-overflow:clip;white-space:nowrap}
.ipyc-w .lm-TabBar-tab:focus-visible{outline:2px solid var(--jp-brand-color1,#0550ae);outline-offset:-2px}
"""


def _style() -> str:
    """The widget's CSS: the static page's (theme colours, first screen, blocks) and its own."""
    return H._style() + f"<style>{_WIDGET_CSS}{H.FALLBACK_CSS}</style>"


def _e(text: Any) -> str:
    return htmllib.escape("" if text is None else str(text), quote=True)


def _html(value: str) -> W.HTML:
    return W.HTML(value=value, layout=W.Layout(width="100%"))


# -- blocks -> HTML strings: the static page's renderer, one block at a time ------------------
def block_html(b) -> str:
    """The static page's HTML of one block (:mod:`.html`), with every detail."""
    out: list = []
    H._block(b, out, H._Page(H.FULL))
    return "".join(out)


def text_html(b: Text) -> str:
    # the widget's state is saved in the notebook: a 1 MB reason must not make a 1 MB output
    return block_html(dataclasses.replace(b, text=capped(b.text, where="report.to_html(path) shows it whole")))


def code_html(b: Code) -> str:
    return block_html(b)


def table_html(t: Table, order: Optional[list[int]] = None) -> str:
    """A table's rows in ``order`` (sorting re-renders it), with the static page's cells:
    short cells never wrap, long ones wrap between words; a wide table scrolls sideways."""
    return H.table_html(t, order)


def chip_html(c) -> str:
    return H.chip_html(c)


def _row_title(row: list, limit: int = 140) -> str:
    parts = [str(v) for v in row[:3] if v is not None and v != ""]
    text = " · ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_html(what: str) -> W.HTML:
    return _html(f'<p class="warn">could not show {_e(what)}:</p><pre class="hl">{_e(traceback.format_exc())}</pre>')


# -- blocks -> widgets ------------------------------------------------------------------
def build_blocks(blocks: list) -> list[W.Widget]:
    """Widgets for a list of view-model blocks (one or more widgets per block)."""
    out: list[W.Widget] = []
    for b in blocks:
        try:
            out.append(build_block(b))
        except Exception:  # one block that cannot be shown must not lose the tab
            out.append(_error_html(type(b).__name__))
    return out


def build_block(b) -> W.Widget:
    if isinstance(b, Text):
        return _html(text_html(b))
    if isinstance(b, Code):
        return _html(code_html(b))
    if isinstance(b, Table):
        return TableView(b)
    if isinstance(b, Figure):
        return _figure(b)
    if isinstance(b, TreeNode):
        return TreeView(b)
    if isinstance(b, Choice):
        return ChoiceView(b)
    return _html(f"<pre>{_e(b)}</pre>")  # a block kind this view does not know: show it, do not drop it


def _figure(f: Figure) -> W.Widget:
    """A figure: SVG (:mod:`.svg`) in an HTML widget, a matplotlib figure as a PNG image."""
    try:
        fig = f.build()
        if isinstance(fig, SvgImage):
            return _html(f'<div class="ipyc-ttl">{_e(f.title)}</div><div class="ipyc">{fig.markup}</div>')
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
    except Exception as exc:
        return _html(f'<p class="warn">{_e(f.title)}: could not draw the figure ({_e(type(exc).__name__)}: {_e(exc)})</p>')
    image = W.Image(value=buf.getvalue(), format="png", layout=W.Layout(max_width="100%", height="auto"))
    return W.VBox([_html(f'<div class="ipyc-ttl">{_e(f.title)}</div>'), image])


class _Lazy:
    """Children of a container built on first demand (by index), then cached."""

    def __init__(self, builders: list[Callable[[], list]]):
        self.builders = builders
        self.boxes = [W.VBox() for _ in builders]
        self.built: set[int] = set()

    def ensure(self, i: Optional[int]) -> None:
        if i is None or i in self.built or not 0 <= i < len(self.builders):
            return
        self.built.add(i)
        try:
            with unreadable_marked():  # a payload its log no longer holds is marked (a tab opened later)
                self.boxes[i].children = tuple(build_blocks(self.builders[i]()))
        except Exception:
            self.boxes[i].children = (_error_html("this part of the report"),)


class TableView(W.VBox):
    """A table; sortable ones re-render on the sort Dropdowns; rows with details expand."""

    def __init__(self, table: Table):
        self.table = table
        self.order = list(range(len(table.rows)))
        self.html = _html(table_html(table))
        children: list[W.Widget] = []
        if table.title:
            children.append(_html(f'<div class="ipyc-ttl">{_e(table.title)}</div>'))
        self.sort_column: Optional[W.Dropdown] = None
        self.sort_order: Optional[W.Dropdown] = None
        if table.sortable and len(table.rows) > 1:
            self.sort_column = W.Dropdown(
                options=[("(as listed)", -1)] + [(c, i) for i, c in enumerate(table.columns)],
                value=-1, description="sort by", layout=W.Layout(width="260px"),
            )
            self.sort_order = W.Dropdown(options=["ascending", "descending"], value="ascending",
                                         layout=W.Layout(width="130px"))
            self.sort_column.observe(self._resort, names="value")
            self.sort_order.observe(self._resort, names="value")
            children.append(W.HBox([self.sort_column, self.sort_order]))
        children.append(self.html)
        self.rows: Optional[W.Widget] = None
        self._lazy: Optional[_Lazy] = None
        details = table.details or []
        if any(details):
            self._lazy = _Lazy([(lambda d=d: d) for d in details] + [lambda: []] * (len(table.rows) - len(details)))
            if len(table.rows) <= ACCORDION_ROWS:
                self.rows = W.Accordion(children=self._lazy.boxes, selected_index=None)
                self.rows.observe(self._open_row, names="selected_index")
            else:
                self.rows = W.Dropdown(description="details", layout=W.Layout(width="60%"))
                self._detail = W.VBox()
                self.rows.observe(self._pick_row, names="value")
            self._relabel()
            children.append(_html('<div class="ipyc-ttl">details</div>'))
            children.append(self.rows if isinstance(self.rows, W.Accordion) else W.VBox([self.rows, self._detail]))
        super().__init__(children)

    def sort(self, column: int, descending: bool = False) -> None:
        """Sort by ``column`` (-1: the order listed), as the Dropdowns do."""
        self.order = list(range(len(self.table.rows))) if column < 0 else sort_rows(self.table, column, descending)
        self.html.value = table_html(self.table, self.order)
        self._relabel()

    def _resort(self, _change=None) -> None:
        self.sort(self.sort_column.value, self.sort_order.value == "descending")

    def _relabel(self) -> None:
        if self._lazy is None:
            return
        if isinstance(self.rows, W.Accordion):
            opened = self.order_at(self.rows.selected_index)
            self.rows.children = tuple(self._lazy.boxes[i] for i in self.order)
            self.rows.titles = tuple(self._title(i) for i in self.order)
            self.rows.selected_index = None if opened is None else self.order.index(opened)
        else:
            value = self.rows.value
            self.rows.options = [("(choose a row)", -1)] + [(f"{n + 1}. {self._title(i)}", i) for n, i in enumerate(self.order)]
            self.rows.value = -1 if value is None else value

    def _title(self, i: int) -> str:
        """Row ``i``'s title: its headline where the view model gives one, else its first cells."""
        heads = self.table.headlines
        return _row_title([heads[i]]) if heads and i < len(heads) else _row_title(self.table.rows[i])

    def order_at(self, position: Optional[int]) -> Optional[int]:
        return None if position is None or not 0 <= position < len(self.order) else self.order[position]

    def _open_row(self, change) -> None:
        self._lazy.ensure(self.order_at(change["new"]))

    def _pick_row(self, change) -> None:
        i = change["new"]
        if i is None or i < 0:
            self._detail.children = ()
            return
        self._lazy.ensure(i)
        self._detail.children = (self._lazy.boxes[i],)


class TreeView(W.Accordion):
    """One tree node: an Accordion of one item (its label) holding its blocks and child nodes."""

    def __init__(self, node: TreeNode):
        self.node = node
        self._lazy = _Lazy([lambda: [*node.blocks, *node.children]])
        super().__init__(children=self._lazy.boxes, titles=(node.label,), selected_index=None)
        self.observe(lambda change: self._lazy.ensure(change["new"]), names="selected_index")
        if node.open:
            self.selected_index = 0


class ChoiceView(W.VBox):
    """A Dropdown of the options and, below it, the chosen option's blocks (built when chosen)."""

    def __init__(self, choice: Choice):
        self.choice = choice
        labels = list(choice.options)
        self._lazy = _Lazy([(lambda k=k: choice.options[k]) for k in labels])
        default = choice.default if choice.default in choice.options else (labels[0] if labels else None)
        self.dropdown = W.Dropdown(options=labels, value=default, description=f"{choice.label}",
                                   style={"description_width": "initial"}, layout=W.Layout(width="60%"))
        self.content = W.VBox()
        self.dropdown.observe(lambda change: self._show(change["new"]), names="value")
        self._show(default)
        super().__init__([self.dropdown, self.content])

    def _show(self, label) -> None:
        if label is None:
            self.content.children = ()
            return
        i = list(self.choice.options).index(label)
        self._lazy.ensure(i)
        self.content.children = (self._lazy.boxes[i],)


# -- the widget ---------------------------------------------------------------------------
def close_all(widget: W.Widget) -> int:
    """Close ``widget`` and every widget it holds (children, layouts, styles, the parts
    built lazily and not shown now), so that the kernel lets go of all of them;
    ``Widget.close`` closes one widget only. Returns how many were closed."""
    seen: set[int] = set()
    stack = [widget]
    closed = 0
    while stack:
        w = stack.pop()
        if id(w) in seen or not isinstance(w, W.Widget):
            continue
        seen.add(id(w))
        for name in w.keys:
            value = getattr(w, name, None)
            stack.extend(v for v in (value if isinstance(value, (list, tuple)) else (value,)) if isinstance(v, W.Widget))
        lazy = getattr(w, "_lazy", None)
        if isinstance(lazy, _Lazy):
            stack.extend(lazy.boxes)
        stack.extend(getattr(w, "_owned", ()))
        if w.comm is not None:
            W.Widget.close(w)
            closed += 1
    return closed


class ReportWidget(W.VBox):
    """A report as widgets: the header chips over one tab per view-model tab.

    Only the first tab is built now; the others are built when first selected (until
    then a tab is one empty box, sharing one layout and one "building" note).
    :meth:`close` closes every widget of the report; closed, it displays as the static
    HTML and text.
    """

    def __init__(self, report: CompileReport, **kwargs):
        self.report = report
        self.view_model: ViewModel = view_model(report)
        vm = self.view_model
        # the first screen: what to fix, most costly first, and the chips (the static page's HTML)
        self.first = _html(H.first_screen_html(vm, limits=H.FULL))
        self.first.add_class("ipyc-first")
        self.chips = list(vm.header)
        placeholder = _html('<p class="note">building this tab… (the kernel that ran the cell builds it: in a '
                            'notebook reopened since, run the cell again)</p>')
        unopened = W.Layout(display="flex", flex_flow="column")  # a VBox's, shared by the tabs not built yet
        self._owned = [placeholder, unopened]  # for close_all, once no tab shows them
        self._boxes = [W.Box([placeholder], layout=unopened) for _ in vm.tabs]
        self._built: dict[int, W.Widget] = {}
        self.tabs = W.Tab(children=self._boxes, titles=tuple(t.title for t in vm.tabs))
        self.tabs.add_class("ipyc-tabs")
        if vm.tabs:
            self._build(0)
            self.tabs.selected_index = 0
        self.tabs.observe(self._on_select, names="selected_index")
        super().__init__([W.HTML(value=_style()), self.first, self.tabs], **kwargs)
        self.add_class("ipyc-w")
        self.add_class("ipyc")
        #: False once :func:`.live.show` displayed the static copy as an output of its own:
        #: the widget's bundle then carries the widget view and a one-line text only
        self.standalone = True

    def show_report(self, report: CompileReport) -> None:
        """Show ``report`` instead: a newer report of the same run (its fixes tried on the cell since).
        The first screen is drawn anew at once; the tabs built so far are built again (the one shown
        now at once, the others when next selected), in the same places."""
        self.report = report
        self.view_model = vm = view_model(report)
        self.first.value = H.first_screen_html(vm, limits=H.FULL)
        self.chips = list(vm.header)
        if len(vm.tabs) != len(self._boxes):  # (the same run: the same tabs; else start the tabs anew)
            self._boxes = [W.Box([self._owned[0]], layout=self._owned[1]) for _ in vm.tabs]
            self.tabs.children = self._boxes
        self.tabs.titles = tuple(t.title for t in vm.tabs)
        old, self._built = self._built, {}
        for content in old.values():
            close_all(content)
        for i, box in enumerate(self._boxes):
            box.children = (self._owned[0],)
        selected = self.tabs.selected_index
        if selected is not None:
            self._build(selected)

    # -- tabs ------------------------------------------------------------------
    @property
    def built(self) -> list[str]:
        """Keys of the tabs built so far, in tab order."""
        return [self.view_model.tabs[i].key for i in sorted(self._built)]

    def select(self, key: str) -> W.Widget:
        """Show the tab ``key`` (as a click on it would); returns its content."""
        i = [t.key for t in self.view_model.tabs].index(key)
        self.tabs.selected_index = i
        self._build(i)  # in case it was already selected
        return self._built[i]

    def _on_select(self, change) -> None:
        i = change["new"]
        if i is not None:
            self._build(i)

    def _build(self, i: int) -> None:
        if i in self._built or not 0 <= i < len(self.view_model.tabs):
            return
        tab = self.view_model.tabs[i]
        try:
            content = W.VBox(build_blocks(tab.blocks()))
        except Exception:
            content = W.VBox([_error_html(f"the {tab.title} tab")])
        self._built[i] = content
        self._boxes[i].children = (content,)

    # -- display -----------------------------------------------------------------
    def close(self) -> None:
        """Close every widget of the report (:func:`close_all`); displayed again, or
        updated in place, it shows the static HTML and text."""
        close_all(self)
        self._repr_mimebundle_ = self._static_bundle  # Widget.close set it to None

    @property
    def closed(self) -> bool:
        return self.comm is None

    def _static_bundle(self, **kwargs) -> dict:
        return self._add_static({})

    def _repr_mimebundle_(self, **kwargs):
        """The widget view, plus the report's compact static HTML and its text for frontends
        without widgets; only the widget view and a short text where the static copy is an
        output of its own (:func:`.live.show`)."""
        data = super()._repr_mimebundle_(**kwargs) or {}
        if not self.standalone:
            data["text/plain"] = "(the report widget: the report is shown above)"
            return data
        return self._add_static(data)

    def text(self) -> str:
        """The report as text: ``str(report)`` (the first screen, then the whole summary)."""
        return str(self.report)

    def static_bundle(self) -> dict:
        """The static copy of this report: the compact page (no figures, long blocks cut)
        and the first screen as text (``print(report)`` has every tab too: a frontend keeps
        what this holds, and IPython may keep it in its output history)."""
        try:
            from .plain_text import render_text

            return H.fallback_bundle(self.view_model, render_text(self.view_model,
                                                                  more="everything: print(report), or the tabs"))
        except Exception:  # the static fallback must not cost the widget
            return {"text/html": f"<pre>{_e(self.report.summary())}</pre>", "text/plain": self.report.summary()}

    def _add_static(self, data: dict) -> dict:
        data.update(self.static_bundle())
        return data

    def __repr__(self) -> str:
        return f"<ReportWidget of {self.report!r}>"
