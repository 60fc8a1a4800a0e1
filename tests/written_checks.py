"""Checks of every page and report the suite writes (issue 37, section 4).

Every output of ipycompile goes through ``report.files.atomic_writer``, which calls
``report.files.WRITTEN_HOOKS`` with each path once it is written; ``tests/conftest.py`` registers
:func:`problems` there for the whole session (in each worker), and fails a test in which a page or
a report it wrote does not pass:

- an HTML page: every id it refers to (``href="#X"``, ``aria-controls``, ``aria-labelledby``,
  ``aria-describedby``, a label's ``for``) is an ``id`` of the page (:func:`dangling`);
- a saved report (JSON with ``schema_version``): loaded back and saved again, it is the same text;
  a directory's JSON (``python -m ipycompile report DIR --json``): each rank's summary is.

Pages a command line writes in a process of its own are found by :func:`unchecked_pages` (pages
of ours under a test's ``tmp_path``, by their generator marker) and checked at the end of the test.
The checks read the file as it was written, with regular expressions: cheap enough for every write.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

_REF = re.compile(r'(?:href="#|\baria-(?:controls|labelledby|describedby)="|\bfor=")([^"]*)"')
_HREF = re.compile(r'href="#([^"]+)"')
_ID = re.compile(r'\bid="([^"]+)"')
#: Files larger than this are left out (none of the suite's pages or reports is near it).
MAX_BYTES = 256 << 20


def dangling(page: str) -> list[str]:
    """The ids ``page`` refers to (links, tabs, labels) that no element of it has."""
    ids = {html.unescape(i) for i in _ID.findall(page)}
    refs = {html.unescape(r) for group in _REF.findall(page) for r in group.split()}
    return sorted(refs - ids)


def links(page: str) -> int:
    """How many in-page links (``href="#..."``) ``page`` holds."""
    return len(_HREF.findall(page))


def problems(path: str) -> list[str]:
    """What is wrong with the page or report just written at ``path`` (nothing for other files)."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".html", ".htm", ".json"):
        return []
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return []
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot be read back: {exc}"]
    if suffix == ".json":
        return _report_problems(path, text)
    missing = dangling(text)
    return [f"{path}: links to ids it does not have: {missing[:10]}"] if missing else []


def _report_problems(path: str, text: str) -> list[str]:
    from ipycompile import CompileReport

    try:
        data = json.loads(text)
    except ValueError:
        return []  # not JSON of ours (a test's own data)
    if not isinstance(data, dict):
        return []
    if "schema_version" in data:
        again = CompileReport.from_json(text).to_json()
        if again != text.rstrip("\n"):
            return [f"{path}: the report loaded back saves differently ({_first_difference(text, again)})"]
        return []
    if isinstance(data.get("summaries"), dict) and "divergence" in data:
        out = []
        for rank, summary in data["summaries"].items():
            again = CompileReport.from_dict(summary).to_json()
            if again != json.dumps(summary, allow_nan=False):
                out.append(f"{path}: rank {rank}'s summary loaded back saves differently")
        return out
    return []


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {i}: {a[max(0, i - 60):i + 60]!r} then {b[max(0, i - 60):i + 60]!r}"


def unchecked_pages(folder: Path, checked: set[str]) -> list[str]:
    """Pages of ours under ``folder`` (written by a command line in a process of its own) not in ``checked``."""
    from ipycompile.report.files import REPORT_MARKER

    out = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if not name.lower().endswith((".html", ".htm")):
                continue
            path = os.path.realpath(os.path.join(root, name))
            if path in checked:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    if REPORT_MARKER in f.read(4096):
                        out.append(path)
            except OSError:
                continue
    return out
