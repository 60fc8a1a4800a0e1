"""Names of notebook cells (which filename is ``In [7]``), and the source around
breaks and failures, read when a report is captured.

IPython compiles each cell under a generated filename (``/tmp/ipykernel_1/123.py``
or ``<ipython-input-7-...>``) and remembers its execution count. Read only
when IPython is already running: this never imports it.
"""

from __future__ import annotations

import functools
import linecache
import sys
from typing import TYPE_CHECKING, NamedTuple, Optional

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from ..report import CompileReport
    from ..report.model import SourceSpan


def notebook_sources() -> dict[str, str]:
    """``{filename: "In [n]"}`` for the cells of the running IPython shell, else ``{}``."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return {}
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return {filename: f"In [{count}]" for filename, count in names.items() if isinstance(count, int)}


# ---------------------------------------------------------------------------
# the code around breaks and failures, kept in the report

#: A user file up to this many lines is kept whole (a cell, a script); a longer one keeps
#: the function around each line (at most this many lines) and the functions it names.
WHOLE_FILE_LINES = 400
#: Lines kept around a line in library code (shown, never rewritten).
LIBRARY_CONTEXT = 3
#: A library function a call passes through on its way to a break is kept whole up to this many lines.
LIBRARY_FUNCTION_LINES = 120



def _matches(lines: list[str], recorded: dict[int, str]) -> bool:
    """Whether the file's lines are the ones torch recorded (whitespace aside)."""
    return all(n <= len(lines) and " ".join(lines[n - 1].split()) == " ".join(text.split()) for n, text in recorded.items())


def source_context(report: "CompileReport") -> list["SourceSpan"]:
    """The source around every graph break and failure of ``report``, read now (from
    ``linecache``: notebook cells are there too), so that the doctor and the views work
    the same on a saved report. User files are kept whole when short, else the function
    around each line; library files a few lines around each line. Also, in the files of
    the Dynamo graphs, the functions that loop over a container of layers the graphs read
    (``for layer in self.layers:``), for the unrolled-loop doctor. Never raises."""
    from ..report.model import SourceSpan
    from ..report.owners import Owner

    wanted: dict[str, set[int]] = {}
    recorded: dict[str, dict[int, str]] = {}  # the lines torch recorded, to check the file against

    def want(filename: str, lineno: Optional[int], line: str = "") -> None:
        if filename and lineno is not None and report.owner(filename) is not Owner.IPYCOMPILE:
            wanted.setdefault(filename, set()).add(int(lineno))
            if line.strip():
                recorded.setdefault(filename, {})[int(lineno)] = line

    through: dict[str, set[int]] = {}  # a library's lines the user's call passes through to a break
    for b in report.graph_breaks:
        for f in [b.frame, b.break_frame, *b.user_stack, *b.callers]:
            want(f.filename, f.lineno, f.source_line)
        for f in b.user_stack[:-1]:
            if f.filename and f.lineno is not None and report.owner(f.filename) is Owner.LIBRARY:
                through.setdefault(f.filename, set()).add(int(f.lineno))
    for w in getattr(report, "torch_warnings", None) or []:  # the user's line a warning of torch's names
        want(w.frame.filename, w.frame.lineno, w.frame.source_line)
    for c in report.compiles:  # the user's compiled functions (what they return: analysis/semantics.py)
        if c.filename and c.first_line is not None and report.owner(c.filename) is Owner.USER:
            want(c.filename, c.first_line)
    for fl in report.failures:
        want(fl.frame.filename, fl.frame.lineno, fl.frame.source_line)
        for u in fl.user_stack:  # read by capture from torch's "from user code:" / "User stack:"
            want(u.filename, u.lineno, u.source_line)

    loop_files, attrs = _graph_places(report)
    if not attrs:  # no stack of layers to place a loop over: no file is read for one
        loop_files = {}

    spans: list[SourceSpan] = []
    modules_by_file = functools.cache(_modules_by_file)  # one pass over sys.modules per report, on first need
    for filename in [*wanted, *(f for f in loop_files if f not in wanted)]:
        linenos = wanted.get(filename, set())
        try:
            lines = [ln.rstrip("\n") for ln in linecache.getlines(filename)]
            if not lines or not _matches(lines, recorded.get(filename, {})):
                continue  # edited since torch compiled it (or another file): keep nothing rather than wrong code
            loops_here = filename in loop_files and bool(attrs) and _matches(lines, loop_files[filename])
            if not linenos and not loops_here:
                continue
            module = _module_of(filename, report, modules_by_file)
            if not linenos:
                ranges = []
            elif report.owner(filename) is not Owner.USER:
                ranges = [(max(1, n - LIBRARY_CONTEXT), min(len(lines), n + LIBRARY_CONTEXT)) for n in _valid_lines(linenos, lines)]
                # a library function the call passes through on its way to a break: whole (when short), so
                # that the conditions it runs the next call under can be read (`if output_attentions:`)
                ranges += _function_ranges(lines, through.get(filename, set()) & linenos, cap=LIBRARY_FUNCTION_LINES,
                                           named=False, whole_only=True)
            elif len(lines) <= WHOLE_FILE_LINES:
                ranges = [(1, len(lines))]
            else:
                ranges = _function_ranges(lines, linenos)
            if loops_here:
                ranges += _loops_over(lines, attrs, filename)
            for lo, hi in _merge(ranges):
                spans.append(SourceSpan(filename, lo, lines[lo - 1 : hi], module))
        except Exception:  # noqa: BLE001 - source is a nicety; never cost the report
            continue
    return spans


def _graph_places(report: "CompileReport") -> tuple[dict[str, dict[int, str]], set[str]]:
    """The source places of every Dynamo graph (``{file: {line: code}}``, torch's own files
    left out), and the attributes whose numbered children the graphs read (``layers`` for
    ``self.layers[3]``): where the doctor looks for a loop over a stack of layers. Read from
    the graphs' records (``Graph.places``, ``Graph.layer_inputs``: capture/parse/fx.py). Only
    containers of which a graph reads at least ``MIN_REPEATS`` children count: fewer copies are
    no loop the doctor reports, and then no file is parsed for one (a 2-layer model's cell)."""
    from ..report.model import MIN_REPEATS
    from ..report.owners import Owner
    from .parse.fx import children_read

    places: dict[str, dict[int, str]] = {}
    attrs: set[str] = set()
    for g in getattr(report, "graphs", None) or []:
        if g.stage != "dynamo":
            continue
        for p in g.places:
            if p.lineno is not None and report.owner(p.filename) not in (Owner.TORCH, Owner.IPYCOMPILE):
                places.setdefault(p.filename, {})[p.lineno] = p.source_line
        attrs.update(c.rsplit(".", 1)[-1] for c, n in children_read(g.layer_inputs).items() if n >= MIN_REPEATS)
    return places, attrs


def _loops_over(lines: list[str], attrs: set[str], filename: str = "",
                cap: int = WHOLE_FILE_LINES) -> list[tuple[int, int]]:
    """The functions of a file that hold a ``for`` over ``self.<attr>`` (``attr`` in ``attrs``,
    possibly sliced or in ``enumerate``): kept so that the doctor can place an unrolled loop
    over layers at its ``for`` (analysis/loops.py). The file is parsed once per text
    (:func:`_layer_loops`): the same library files come back in every cell."""
    return [(lo, min(hi, lo + cap - 1)) for lo, hi, over in _layer_loops(filename, parseable(lines)) if over & attrs]


@functools.lru_cache(maxsize=64)
def _layer_loops(filename: str, text: str) -> tuple[tuple[int, int, frozenset], ...]:
    """``(first line, last line, {attr})`` for every function of ``text`` that holds a ``for``
    over ``self.<attr>``: the walk of :func:`_loops_over`, for any ``attrs``. Cached on the file
    and its text (a file edited since is parsed again; ``filename`` keeps two files of the same
    text apart in the cache's statistics only)."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ()
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        over = frozenset(a.attr for node in ast.walk(fn) if isinstance(node, ast.For)
                         for a in ast.walk(node.iter)
                         if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self")
        if over:
            out.append((_first(fn), fn.end_lineno or fn.lineno, over))
    return tuple(out)


def _valid_lines(linenos: set[int], lines: list[str]) -> list[int]:
    """The line numbers that exist in ``lines``, sorted."""
    return sorted(n for n in linenos if 1 <= n <= len(lines))


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def parseable(lines: list[str]) -> str:
    """The text of ``lines`` with IPython magics (``%%compile ...``, ``%time``, ``!ls``)
    blanked, so that ``ast`` can parse a cell; line numbers are kept."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def _function_ranges(lines: list[str], linenos: set[int], cap: int = WHOLE_FILE_LINES, named: bool = True,
                     whole_only: bool = False) -> list[tuple[int, int]]:
    """For a long file: the innermost function around each line (capped), and every
    top-level function that such a function's body names (a ``scan`` body, a ``cond`` branch).
    ``named=False``: not the functions it names; ``whole_only``: only functions of at most ``cap`` lines."""
    if not linenos:
        return []
    defs = _function_defs(parseable(lines))
    if defs is None:
        return [] if whole_only else [(max(1, n - 20), min(len(lines), n + 20)) for n in _valid_lines(linenos, lines)]
    by_name: dict[str, list] = {}
    for d in defs:
        by_name.setdefault(d.name, []).append(d)
    out: list[tuple[int, int]] = []
    for n in _valid_lines(linenos, lines):
        around = [d for d in defs if d.first <= n <= d.last]
        if not around:
            if not whole_only:
                out.append((max(1, n - 20), min(len(lines), n + 20)))
            continue
        inner = max(around, key=lambda d: d.lineno)
        lo, hi = inner.first, inner.last
        if whole_only and hi - lo + 1 > cap:
            continue
        out.append((lo, min(hi, lo + cap - 1)))
        if not named:
            continue
        for name in inner.names:
            for d in by_name.get(name, []):
                out.append((d.first, min(d.last, d.first + cap - 1)))
    return out


class _Def(NamedTuple):
    """A function definition of a file, as :func:`_function_ranges` reads it."""

    name: str
    lineno: int  # the ``def`` line
    first: int  # its first decorator's line, else the ``def`` line
    last: int
    names: frozenset  # the names its body reads (``ast.Name``)


@functools.lru_cache(maxsize=64)
def _function_defs(text: str) -> "tuple[_Def, ...] | None":
    """The function definitions of ``text`` (``None`` where it does not parse), in ``ast.walk``'s order. Cached on
    the text, as :func:`_layer_loops` is: the same long files (the user's module, a library's) come back in every
    report, and a file edited since is parsed again."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return tuple(_Def(d.name, d.lineno, _first(d), d.end_lineno or d.lineno,
                      frozenset(x.id for x in ast.walk(d) if isinstance(x, ast.Name)))
                 for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _first(node) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _module_of(filename: str, report: "CompileReport", modules_by_file: Callable[[], dict[str, str]]) -> str:
    """The importable module that holds ``filename``: from the path for installed packages,
    from ``sys.modules`` for the user's own modules (``modules_by_file()``); ``""`` when unknown
    (notebook cells)."""
    import os

    from ..report.owners import display_path, is_notebook_cell

    rel = display_path(filename, report.code_layout)
    if rel != os.path.basename(filename) and rel.endswith(".py"):
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)
    if not filename or filename.startswith("<") or is_notebook_cell(filename, report.sources):
        return ""  # a cell or generated code: no module holds it (no pass over sys.modules to learn that)
    return modules_by_file().get(filename, "")


def _modules_by_file() -> dict[str, str]:
    """``{__file__: module name}`` of ``sys.modules`` (the first name of a file, in its order)."""
    out: dict[str, str] = {}
    for name, mod in list(sys.modules.items()):
        try:
            path = getattr(mod, "__file__", None)
        except Exception:  # noqa: BLE001 - a module object whose attributes raise: it has no file we know
            continue
        if isinstance(path, str):
            out.setdefault(path, name)
    return out
