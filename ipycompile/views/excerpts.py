"""Source excerpts for the views: the lines around a graph break, a failure, a kernel's origin.

The rule: **never show someone else's code.** A report may come from another
machine (a recorded trace, a saved report) where a different file sits at the same
path, or the file may have been edited since torch compiled it. So local source is
shown only when it matches what torch recorded:

- the local line at ``lineno`` equals the source line torch recorded for that frame
  (whitespace aside); or
- torch recorded no line, and the file is a notebook cell: IPython names cell files
  after a hash of their content (``/tmp/ipykernel_<pid>/<hash>.py``,
  ``<ipython-input-N-<hash>>``), so the name is the content.

Otherwise the excerpt is the line torch recorded (or nothing), with a note saying
why the file was not shown.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..report.owners import Owner, is_notebook_cell

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["SOURCE_CONTEXT", "Excerpt", "source_excerpt", "local_lines", "internal_frame", "is_cell_file"]

#: Lines of source shown above and below a graph-break line.
SOURCE_CONTEXT = 3



@dataclass
class Excerpt:
    """``code``: the lines to show (``"> N | line"`` marks the line); ``note``: why the
    local file was not used, when it was not (empty when it was, or when there is
    nothing to say)."""

    code: str
    note: str = ""
    local: bool = False  # the lines come from the local file (it matched)


def _norm(line: str) -> str:
    return " ".join(line.split())


def is_cell_file(filename: str, cells: Optional[dict] = None) -> bool:
    """Whether ``filename`` names a notebook cell (content-addressed by IPython, or
    named in the report's ``sources``)."""
    return is_notebook_cell(filename, cells)


def local_lines(filename: str, lineno: Optional[int], recorded: str = "", cells: Optional[dict] = None) -> Optional[list[str]]:
    """The local file's lines when they may be shown for ``filename:lineno`` under the
    rule above, else None."""
    if not filename or lineno is None:
        return None
    lines = linecache.getlines(filename)
    if not lines or lineno > len(lines):
        return None
    if recorded.strip():
        return lines if _norm(lines[lineno - 1]) == _norm(recorded) else None
    return lines if is_cell_file(filename, cells) else None


def _kept(spans, filename: str, lineno: Optional[int], context: int) -> Optional[str]:
    """The excerpt from the source the report kept when it was captured
    (``CompileReport.source_context``), when a kept span holds ``filename:lineno``."""
    for sp in spans or ():
        if sp.filename == filename and lineno is not None and sp.first_line <= lineno <= sp.last_line:
            lo, hi = max(sp.first_line, lineno - context), min(sp.last_line, lineno + context)
            width = len(str(hi))
            return "\n".join(f"{'>' if n == lineno else ' '} {n:>{width}} | {sp.lines[n - sp.first_line].rstrip()}"
                             for n in range(lo, hi + 1))
    return None


def source_excerpt(filename: str, lineno: Optional[int], recorded: str = "", context: int = SOURCE_CONTEXT,
                   cells: Optional[dict] = None, spans=None) -> Excerpt:
    """The source around ``lineno`` with that line marked ``>``: from the code the report
    kept at capture (``spans``), else from the local file when it matches what torch
    recorded (``recorded``, the frame's source line), else the recorded line alone with
    a note."""
    kept = _kept(spans, filename, lineno, context)
    if kept is not None:
        return Excerpt(kept)
    lines = local_lines(filename, lineno, recorded, cells)
    if lines is None:
        shown = f"> {lineno if lineno is not None else '?'} | {recorded.strip()}" if recorded.strip() else ""
        if not filename or lineno is None:
            return Excerpt(shown)
        if linecache.getlines(filename):
            why = (f"{filename} on this machine does not match what torch recorded at line {lineno}: "
                   + ("showing the recorded line." if shown else "not shown (torch recorded no source line to check it against)."))
        else:
            why = (f"{filename} is not available on this machine"
                   + (": showing the line torch recorded." if shown else " and torch recorded no source line."))
        return Excerpt(shown, why)
    lo, hi = max(1, lineno - context), min(len(lines), lineno + context)
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        mark = ">" if n == lineno else " "
        out.append(f"{mark} {n:>{width}} | {lines[n - 1].rstrip()}")
    return Excerpt("\n".join(out), "", True)


def internal_frame(r: "CompileReport", filename: str) -> bool:
    """Frames of torch, of ipycompile itself and of generated code: not shown in a call path."""
    return r.owner(filename) in (Owner.TORCH, Owner.IPYCOMPILE, Owner.GENERATED)
