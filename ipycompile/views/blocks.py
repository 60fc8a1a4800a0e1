"""The block vocabulary every view shares: what a tab holds, as plain data.

Blocks (everything a tab holds):

- :class:`Text` -- a paragraph; ``kind`` is ``"plain"``, ``"heading"``, ``"warn"``
  or ``"note"``; with ``url`` it is a link.
- :class:`Table` -- ``columns`` and ``rows`` of plain cells (str, int, float,
  :class:`Place`; ``""`` for a missing value). ``sortable`` tables sort through :func:`sort_rows`.
  ``details[i]`` (optional) is a list of blocks shown when row ``i`` is expanded;
  an empty list means the row does not expand. ``title`` (optional) goes above.
  ``headlines[i]`` (optional) is row ``i`` in one line: what the text rendering
  prints for the row (its details indented below) and the widget's title of an
  expandable row. ``columns_shown`` (optional): the columns a narrow view shows by
  default (indices); the rest are one click away, never cut.
- :class:`Code` -- ``language`` is ``"python"``, ``"cpp"`` or ``"text"``.
- :class:`Figure` -- ``build()`` returns an :class:`~ipycompile.views.svg.SvgImage`
  (inlined as it is) or a matplotlib ``Figure`` (not pyplot: no global state; renderers
  turn it into a PNG). Built only when shown.
- :class:`TreeNode` -- ``label``, its own ``blocks``, and ``children`` (TreeNodes).
- :class:`Choice` -- ``options`` maps an option label to its blocks (pick one).

A :class:`Tab` has a stable ``key`` (:data:`TAB_KEYS`, in display order), a
``title`` with its count, ``count`` and ``warn`` (graph breaks, recompiles,
failures: show the tab title highlighted). ``Tab.blocks()`` builds once and caches.
:class:`Chip` has ``key`` and ``value`` so a view can find a fact without parsing
text, and ``tooltip`` for a hover title.

No ipywidgets or IPython import here; matplotlib is imported only to draw a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

__all__ = ["Chip", "Place", "Text", "Table", "Code", "Figure", "TreeNode", "Choice", "Block", "Tab", "ViewModel", "TAB_KEYS",
           "sort_rows", "figure_png"]


@dataclass
class Chip:
    """One fact in the header strip. ``key`` names the fact (``"graphs"``,
    ``"graph_breaks"``, ``"recompiles"``, ``"kernels"``, ``"failures"``,
    ``"status"``, ``"compile_time"``, ``"run_time"``, ``"speedup"``,
    ``"break_even"``, ``"device_memory"``, ``"host_memory"``, ``"error"``,
    ``"ran_without_compiling"``);
    ``value`` is the number behind it when there is one."""

    text: str
    warn: bool = False
    key: str = ""
    value: Any = None
    tooltip: str = ""


class Place(str):
    """A place in the user's code, as a table cell or a problem's place: the string itself
    is the place as the user knows it (``In [4], line 13``), so it sorts, compares and
    prints as that text; ``cell`` is the notebook cell's execution count when it is one and
    ``line`` its line (a renderer links them to the cell); ``key`` names the source excerpt
    of this place in the same view (a :class:`Code` with that ``key``), "" when none is
    shown."""

    cell: Optional[int]
    line: Optional[int]
    key: str

    def __new__(cls, text: str, cell: Optional[int] = None, line: Optional[int] = None, key: str = "") -> "Place":
        self = super().__new__(cls, text)
        self.cell, self.line, self.key = cell, line, key
        return self

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Place({self.text!r}, cell={self.cell!r}, line={self.line!r}, key={self.key!r})"


@dataclass
class Text:
    text: str
    kind: str = "plain"  # "plain" | "heading" | "warn" | "note"
    url: Optional[str] = None  # render as a link when set


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    sortable: bool = False
    details: Optional[list[list["Block"]]] = None  # per row, shown on expansion
    title: str = ""
    headlines: Optional[list[str]] = None  # per row, the row in one line (text rendering, row titles)
    columns_shown: Optional[list[int]] = None  # the default columns of a wide table; the others on demand


@dataclass
class Code:
    title: str
    code: str
    language: str = "text"  # "python" | "cpp" | "text"
    copy: bool = False  # offer a copy button (a fix's code)
    key: str = ""  # the source excerpt of a place (:attr:`Place.key`): links to the place land here


@dataclass
class Figure:
    title: str
    build: Callable[[], Any]  # -> an svg.SvgImage, or a matplotlib.figure.Figure


@dataclass
class TreeNode:
    label: str
    blocks: list["Block"] = field(default_factory=list)
    children: list["TreeNode"] = field(default_factory=list)
    open: bool = False  # shown expanded at first


@dataclass
class Choice:
    label: str
    options: "dict[str, list[Block]]"
    default: Optional[str] = None  # the option shown first (default: the first)


Block = Union[Text, Table, Code, Figure, TreeNode, Choice]


@dataclass
class Tab:
    """One tab. ``build()`` makes its blocks; call :meth:`blocks` (built once, cached)."""

    key: str
    title: str
    build: Callable[[], list[Block]]
    count: Optional[int] = None  # what the tab title counts, when it counts something
    warn: bool = False
    _cache: Optional[list[Block]] = field(default=None, repr=False, compare=False)

    def blocks(self) -> list[Block]:
        if self._cache is None:
            self._cache = self.build()
        return self._cache


@dataclass
class ViewModel:
    """One report's presentation: ``problems`` (:class:`~.first_screen.Problem`, most
    costly first) and the ``header`` chips make the first screen; ``tabs`` hold the
    rest, built when first asked for. Every renderer (text, static HTML, widget) renders
    this and computes nothing of its own."""

    header: list[Chip]
    tabs: list[Tab]
    problems: Optional[list] = None  # None: not a report's view (a ranks view), no first screen of problems
    notes: list[str] = field(default_factory=list)  # where the report came from, what could not be read
    title: str = ""  # a view that is not one report's (a comparison): what it shows, its first line

    def tab(self, key: str) -> Tab:
        for t in self.tabs:
            if t.key == key:
                return t
        raise KeyError(f"no tab {key!r}; tabs are {[t.key for t in self.tabs]}")

    def chip(self, key: str) -> Optional[Chip]:
        return next((c for c in self.header if c.key == key), None)


TAB_KEYS = ("summary", "graph_breaks", "recompiles", "graphs", "kernels", "control_flow", "profile", "guards")


def sort_rows(table: Table, column: int, descending: bool = False) -> list[int]:
    """Row order for sorting ``table`` by ``column``: numbers numerically, text
    case-insensitively, missing values (``""``/None) last either way."""

    def present(i: int) -> bool:
        v = table.rows[i][column]
        return v is not None and v != ""

    have = [i for i in range(len(table.rows)) if present(i)]
    missing = [i for i in range(len(table.rows)) if not present(i)]

    def key(i: int):
        v = table.rows[i][column]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (0, float(v), "")
        return (1, 0.0, str(v).lower())

    return sorted(have, key=key, reverse=descending) + missing


def figure_png(fig, dpi: int = 100) -> bytes:
    """The PNG of a matplotlib figure (what a :class:`Figure` block built; Agg, no pyplot)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
