"""Checks of every page and report the suite writes (issue 37, section 4).

Every output of ipycompile goes through ``report.files.atomic_writer``, which calls
``report.files.WRITTEN_HOOKS`` with each path once it is written; ``tests/conftest.py`` registers
:func:`problems` there for the whole session (in each worker), and fails a test in which a page or
a report it wrote does not pass:

- an HTML page: every id it refers to (``href="#X"``, ``aria-controls``, ``aria-labelledby``,
  ``aria-describedby``, a label's ``for``) is an ``id`` of the page (:func:`dangling`); a large
  page's parts in its folder (``PAGE_files/N.js``, :mod:`ipycompile.views.page_files`) count as
  the page, and each placeholder of a part has its part (:func:`page_with_parts`);
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
    text, out = page_with_parts(path, text)
    missing = dangling(text)
    return out + ([f"{path}: links to ids it does not have: {missing[:10]}"] if missing else [])


_PART = re.compile(r'data-ipyc-c="(\d+)"')


def page_with_parts(path: str, text: str) -> tuple[str, list[str]]:
    """The page's text with the parts of its folder (if it has placeholders), and what is wrong
    with them: a placeholder without its part, a part no placeholder names."""
    wanted = set(_PART.findall(text))
    if not wanted:
        return text, []
    from ipycompile.views.page_files import parts_in_file, side_folder

    folder = side_folder(path)
    parts: dict[str, str] = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            try:
                parts.update(parts_in_file(f.read()))
            except ValueError as exc:
                return text, [f"{folder}/{name}: {exc}"]
    for part in parts.values():
        wanted.update(_PART.findall(part))
    out = []
    if wanted - set(parts):
        out.append(f"{path}: placeholders without their part in {folder}: {sorted(wanted - set(parts), key=int)[:10]}")
    if set(parts) - wanted:
        out.append(f"{path}: parts in {folder} that nothing shows: {sorted(set(parts) - wanted, key=int)[:10]}")
    return text + "".join(parts.values()), out


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
