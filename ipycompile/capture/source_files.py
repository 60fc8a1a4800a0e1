"""The source files a report's build reads, and the copies a log carries of them.

To name a guarded value as the user's code names it (:mod:`.callsite`), the builder reads the
files of the frames that recompiled: the user's cell or script, and the library's file where a
library's own function was compiled (transformers' ``generate`` helpers). torch's log names those
files by their path on the machine that wrote it, which another machine (or the same machine,
after the virtual environment moved or the library was upgraded) does not have, or has with
other lines. So ``ipycompile.capture(trace_dir=...)`` writes the text of each file its build read
into its log (``tracefile.FILES_ARTIFACT``), and a report built from that log reads
those copies first: the log read anywhere names the values as the live report did. A log torch
wrote alone carries none; its files are read on this machine, through ``linecache`` (where
notebook cells are too), as before.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Mapping
from typing import Optional, Union

__all__ = ["SourceFiles"]

Carried = Union[Mapping[str, str], Callable[[], Mapping[str, str]], None]


class SourceFiles:
    """The lines of source files for one report's build: the text a log carried for a file (``carried``:
    a mapping, or a function that gives it once the log has been read), else this machine's file
    (``linecache``). Remembers each file it read (:attr:`read`), to be written into a capture's log."""

    def __init__(self, carried: Carried = None) -> None:
        self._carried = carried
        self._lines: dict[str, list[str]] = {}
        #: ``{filename: text}`` of every file read that had lines
        self.read: dict[str, str] = {}

    def _carried_text(self, filename: str) -> Optional[str]:
        carried = self._carried() if callable(self._carried) else self._carried
        text = carried.get(filename) if carried else None
        return text if isinstance(text, str) else None

    def lines(self, filename: str) -> list[str]:
        """The file's lines, each ending in its newline (``linecache.getlines``'s form); [] where none."""
        if not filename:
            return []
        got = self._lines.get(filename)
        if got is None:
            text = self._carried_text(filename)
            got = text.splitlines(keepends=True) if text is not None else list(linecache.getlines(filename))
            self._lines[filename] = got
            if got:
                self.read[filename] = "".join(got)
        return got

    def line(self, filename: str, lineno: int) -> str:
        """Line ``lineno`` (from 1) of the file, with its newline; "" where there is none."""
        lines = self.lines(filename)
        return lines[lineno - 1] if isinstance(lineno, int) and 1 <= lineno <= len(lines) else ""
