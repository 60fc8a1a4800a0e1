"""Source excerpts for the views: the lines around a graph break, a failure, a kernel's origin."""

from __future__ import annotations

import linecache
import os
from typing import Optional

__all__ = ["SOURCE_CONTEXT", "source_excerpt", "internal_frame"]

#: Lines of source shown above and below a graph-break line.
SOURCE_CONTEXT = 3


def source_excerpt(filename: str, lineno: Optional[int], fallback: str = "", context: int = SOURCE_CONTEXT) -> str:
    """The source around ``lineno`` with that line marked ``>``; the cell source is
    in ``linecache``. Falls back to ``fallback`` (the one line torch recorded)."""
    lines = linecache.getlines(filename) if filename else []
    if lineno is None or not lines or lineno > len(lines):
        return f"> {lineno if lineno is not None else '?'} | {fallback.strip()}" if fallback.strip() else ""
    lo, hi = max(1, lineno - context), min(len(lines), lineno + context)
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        mark = ">" if n == lineno else " "
        out.append(f"{mark} {n:>{width}} | {lines[n - 1].rstrip()}")
    return "\n".join(out)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def internal_frame(filename: str) -> bool:
    """Frames of torch and of ipycompile itself: not the user's code."""
    return "/site-packages/torch/" in filename or filename.startswith(_PACKAGE_DIR) or filename == "<string>"
