"""The one escaping rule for text that leaves a report, and the one cap on its length.

A trace is untrusted input: a file name, a graph-break reason or an exception
message may hold ``\\x1b]0;...\\x07`` (set the terminal's title), ``\\x1b[2J``
(clear it), a newline that forges a line of output, or a bidirectional override
(U+202E) that shows text in another order than it reads (the Trojan Source
class). :func:`printable` writes all of them as escapes; every text output of
ipycompile (the summary, the CLI, ``str`` of rank and comparison results, the
magics' messages) goes through it. :func:`one_line` also escapes line breaks
and tabs, for a value shown inside one line (a file name).

The units of numbers, written one way everywhere: :func:`plural`, :func:`fmt_seconds`,
:func:`fmt_bytes`, :func:`fmt_ranks`.

:func:`capped` cuts a text field for a view (a 1 MB graph-break reason must not
make megabytes of notebook output): the views call it where a report's text
enters them and say where the full text is.
"""

from __future__ import annotations

import re

__all__ = ["printable", "one_line", "utf8_safe", "short_name", "short_paths", "NAME_LIMIT", "capped", "capped_lines", "VIEW_TEXT_LIMIT", "VIEW_TEXT_TOTAL", "BIDI", "plural",
           "fmt_seconds", "fmt_bytes", "fmt_ranks"]

#: Bidirectional formatting characters (Trojan Source, CVE-2021-42574): embeddings and overrides
#: U+202A-202E, isolates U+2066-2069, the marks U+200E/U+200F and the Arabic letter mark U+061C.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"

#: Lone surrogates: what Python makes of a file name that is not valid UTF-8 (``os.fsdecode(b"\\xff.log")``);
#: no UTF-8 text can hold one, so every output writes it as an escape (``\\udcff``).
SURROGATES = "\ud800-\udfff"
#: Control characters (C0 but newline and tab, DEL, C1), bidirectional formatting characters and lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI + SURROGATES + "]")
#: The same, and line breaks and tabs (U+2028/2029 too: some terminals and editors break lines there).
_UNSAFE_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + BIDI + SURROGATES + "]")
_SURROGATE = re.compile("[" + SURROGATES + "]")


def _escape(m: "re.Match[str]") -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (all C0 and C1 but newline and tab) and bidirectional
    formatting characters written as escapes (``\\x1b``, ``\\u202e``): what every text output
    of a report, on a terminal or in a file, goes through."""
    return _UNSAFE.sub(_escape, text)


def utf8_safe(text: str) -> str:
    """``text`` with its lone surrogates (a file name that is not valid UTF-8) written as escapes
    (``\\udcff``), so that it can be written as UTF-8: what every page and notebook output goes through."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape, text)
    return text


def one_line(text: str) -> str:
    """:func:`printable`, with newlines, carriage returns and tabs escaped too: for a value
    (a file name, a label) shown inside a line, which must not start another."""
    return _UNSAFE_IN_LINE.sub(_escape, str(text))


#: Characters of one text field a view shows before cutting it (a graph-break reason, an
#: exception message, a guard): ample for anything torch writes for a reader.
VIEW_TEXT_LIMIT = 2000
#: The most characters a view's whole text (a notebook output's ``text/plain``) holds.
VIEW_TEXT_TOTAL = 64_000


def capped(text: str, limit: int = VIEW_TEXT_LIMIT, where: str = "") -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` characters and
    a note of how much was cut and, with ``where``, where the full text is
    (``report.graph_breaks[0].reason``, the full page)."""
    if len(text) <= limit:
        return text
    note = f" ... [{len(text) - limit:,} more characters"
    return text[:limit] + note + (f": {where}]" if where else "]")


#: The most characters a name (a file's, as a place shows it) has in a view: longer ones keep their
#: start and end (the file's own name), cut in the middle.
NAME_LIMIT = 120


def short_name(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and end around ``...``
    (a 5,000-character file name is shown in ``limit`` characters, its end kept)."""
    if len(text) <= limit:
        return text
    tail = limit * 2 // 3
    return f"{text[:limit - tail - 3]}...{text[-tail:]}"


#: A path longer than :data:`NAME_LIMIT` inside text (torch's ``# File: /very/long/path.py:12``).
_LONG_PATH = re.compile(r"[^\s\"'()<>,]*[/\\][^\s\"'()<>,]*")


def short_paths(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` with each path in it longer than ``limit`` characters cut as :func:`short_name`
    cuts a name: what a compact view (a notebook output) shows of torch's text and code."""
    if len(text) <= limit:
        return text
    return _LONG_PATH.sub(lambda m: short_name(m.group(), limit) if len(m.group()) > limit else m.group(), text)


def capped_lines(text: str, where: str = "", total: int = VIEW_TEXT_TOTAL) -> str:
    """``text`` with each line :func:`capped`, and the whole cut after ``total`` characters (a
    reason of a hundred thousand short lines is as long as one of a megabyte), saying so."""
    out = "\n".join(capped(line, where=where) for line in text.split("\n"))
    if len(out) <= total:
        return out
    cut = out.rfind("\n", 0, total) + 1 or total
    more = out.count("\n", cut) + 1
    return out[:cut] + f"... [{more:,} more lines" + (f": {where}]" if where else "]")


def plural(n: int, word: str) -> str:
    """``1 graph``, ``2 graphs``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt_seconds(s) -> str:
    """A duration with its unit: ``1.50 s``, ``12.00 ms``, ``3.4 us``; ``-`` for None."""
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def fmt_bytes(n) -> str:
    """A size in binary units: ``512 B``, ``1.5 KiB``, ... ``GiB``; ``-`` for None."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def fmt_ranks(ranks) -> str:
    """Ranks as ranges: ``[0, 1, 2, 4, 6, 7]`` -> ``"0-2, 4, 6-7"``."""
    nums = sorted({int(r) for r in ranks})
    if not nums:
        return "none"
    out, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)
