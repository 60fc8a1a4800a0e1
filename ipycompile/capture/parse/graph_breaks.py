"""Parse the ``dynamo_graph_break_reason`` artifact of torch's structured trace.

The payload is the text Dynamo prints for a graph break.  Its shape changed
across torch versions; all of these are handled::

    Graph break in user code at /path/file.py:9
    Graph Break Reason: Encountered graph break when attempting to trace CALL: ...:   (2.13)

    Data-dependent branching                      <- the break type ("gb_type")
      Explanation: Detected data-dependent branching ...
          (continuation lines, kept)
      Hint: ...
      Hint: ...

      Developer debug context: attempted to jump with TensorVariable()

     For more details about this graph break, please visit: https://.../gb/gb0170.html

    User code traceback:
      File "/path/file.py", line 18, in <module>
        f(x)
      File "/path/file.py", line 9, in helper
        if x.sum() > 0:

    Traceback (most recent call last):            <- torch internals, never user frames
      ...

In torch 2.11 the type sits on the reason line itself
(``Graph Break Reason: Data-dependent branching``); older torch has no type at
all, only a free-form reason.  When Dynamo cannot resume it prefixes the
reason with ``Failed to handle graph break gracefully. Skipping the function
... Graph break encountered:`` or ``Encountered graph break that we cannot
resume from. ... Graph break encountered:`` (a preamble: the real reason,
explanation and hints follow it), and a second break found while handling the
first follows a ``*** While handling this graph break, another graph break
occurred: ***`` line; the first break is the one described.

Two places: ``frame`` is the user's own line that led to the break (the
innermost frame of the user's code), ``break_frame`` the line where Dynamo
stopped (the innermost frame of the traceback, often inside a library; the
``Graph break in user code at`` header names it too).

Where the payload lacks hints (or everything but the ``GBxxxx`` code), they are
taken from the graph-break registry that ships with torch
(``torch/_dynamo/graph_break_registry.json``), read without importing torch.

Everything here is a pure function of text and never raises on bad input.
"""

from __future__ import annotations

import functools
import json
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, Optional

from ...report.model import GraphBreak, UserFrame
from ...report.owners import is_user_code
from ..layout import torch_package_dir
from .context import read_detail
from .frames import parse_traceback

__all__ = [
    "parse_graph_break",
    "names_collective",
    "hinted_settings",
    "debug_context",
    "parse_user_traceback",
    "registry_entry",
    "registry_variants",
    "registry_path",
]

UserFileTest = Callable[[str], bool]

_HEADER = re.compile(r"^\s*Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_REASON = re.compile(r"^\s*Graph Break Reason:\s?(?P<rest>.*)$")
_SECTION = re.compile(r"^\s+(?P<key>Explanation|Hint|Developer debug context):\s?(?P<text>.*)$")
_MORE = re.compile(r"^\s*For more details about this graph break, please visit:\s*(?P<url>\S*)")
_GB_URL = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_GB_BARE = re.compile(r"\b(GB\d{4})\b")
_NESTED = re.compile(r"^\s*\*\*\* While handling this graph break, another graph break occurred: \*\*\*\s*$")
_USER_TB = re.compile(r"^\s*User code traceback:\s*$")
# lines that end the reason block without being part of the break description
_BLOCK_END = re.compile(r"^\s*(User code traceback:|Traceback \(most recent call last\):|Stack variable source attribution:)")
# Dynamo's own prefixes on the reason line, not the break kind
_PREAMBLES = (
    re.compile(r"^Encountered graph break when attempting to trace .*:$"),
    re.compile(r"^Encountered graph break that we cannot resume from\..*$"),
    re.compile(r"^Failed to handle graph break gracefully\..*$"),
    re.compile(r"^.*\bGraph break encountered:$"),
)
# torch's pointers to more logging, not part of a reason
_BOILERPLATE = re.compile(
    r"^(For more information, run with TORCH_LOGS|For extended logs when|If you suspect the guard was triggered"
    r"|For more debugging help, see|For C\+\+ stack trace, run with|For more information about this error, see"
    r"|Set TORCHDYNAMO_VERBOSE=1)"
)
_USER_STACK = re.compile(r"^\s*User Stack \(most recent call last\):\s*$")
_CONTEXT = re.compile(r"Developer debug context:\s?(?P<ctx>.*?)(?:\n\s*\n|\n\s*For more details|\Z)", re.S)


#: A setting torch's hints name, with its value: "`torch._dynamo.config.capture_scalar_outputs = True`",
#: "Change `torch._dynamo.config.trace_autograd_ops` to `True`", "set torch._dynamo.config.x=True".
_SETTING_IS = re.compile(r"`?(?P<name>torch\._(?:dynamo|inductor|functorch)\.config\.\w+)\s*=\s*(?P<value>True|False|\d+)`?")
_SETTING_TO = re.compile(r"`(?P<name>torch\._(?:dynamo|inductor|functorch)\.config\.\w+)`\s+to\s+`?(?P<value>True|False|\d+)`?")


def hinted_settings(hints: list[str]) -> list[str]:
    """The settings torch's hints name, as code: ``["torch._dynamo.config.capture_scalar_outputs = True"]``
    (in order, without repeats)."""
    out: list[str] = []
    for h in hints or []:
        for pattern in (_SETTING_IS, _SETTING_TO):
            for m in pattern.finditer(h):
                code = f"{m.group('name')} = {m.group('value')}"
                if code not in out:
                    out.append(code)
    return out


def debug_context(text: str) -> str:
    """torch's ``Developer debug context:`` (what Dynamo was tracing when it stopped:
    the call, its arguments), up to the blank line that ends it; "" when absent."""
    m = _CONTEXT.search(text or "")
    return m.group("ctx").strip() if m else ""


# ---------------------------------------------------------------------------
# the torch graph-break registry


def registry_path() -> Optional[Path]:
    """Where torch's ``graph_break_registry.json`` is, or None without torch."""
    torch_dir = torch_package_dir()
    if not torch_dir:
        return None
    path = Path(torch_dir) / "_dynamo" / "graph_break_registry.json"
    return path if path.is_file() else None


@functools.lru_cache(maxsize=1)
def _registry() -> dict[str, list[dict[str, Any]]]:
    path = registry_path()
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def registry_variants(gb_code: str) -> list[dict[str, Any]]:
    """Every raw registry variant for ``gb_code`` ("GB0170", any case)."""
    variants = _registry().get(gb_code.strip().upper(), [])
    return [v for v in variants if isinstance(v, dict)] if isinstance(variants, list) else []


_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")


def _is_plain_text(text: Any) -> bool:
    """False for registry fields that are Python source, not prose
    (``_explanation``, ``"..." + trace_info``, ``f"..."``)."""
    if not isinstance(text, str) or not text.strip():
        return False
    t = text.strip()
    if _IDENTIFIER.fullmatch(t):
        return False
    return not (t[0] in "\"'" or t.startswith(('f"', "f'")) or '" +' in t or "+ f\"" in t)


def _join_hint_fragments(fragments: list[Any]) -> list[str]:
    """The registry stores hints as the string literals of the source, so one
    hint written as ``"Set X " "or Y " "to Z."`` shows up as three pieces; a
    piece ending in whitespace continues into the next one."""
    hints: list[str] = []
    buf = ""
    for frag in fragments:
        if not isinstance(frag, str):
            continue
        if not buf and (frag.startswith("*") or _IDENTIFIER.fullmatch(frag.strip() or "x_")):
            continue  # a splatted list or a variable name, not text
        buf += frag
        if not frag[-1:].isspace():
            if buf.strip():
                hints.append(" ".join(buf.split()))
            buf = ""
    if buf.strip():
        hints.append(" ".join(buf.split()))
    return hints


def registry_entry(gb_code: str, gb_type: str = "") -> Optional[dict[str, Any]]:
    """The registry entry for ``gb_code``, or None when torch or the code is unknown.

    A code can have several variants; the one whose ``Gb_type`` equals
    ``gb_type`` is preferred, then one with hints and a prose explanation.
    The result has the registry's keys (``Gb_type``, ``Context``,
    ``Explanation``, ``Hints``) with the hints joined into whole sentences and
    an explanation that is Python source replaced by ``""``.
    """
    variants = registry_variants(gb_code)
    if not variants:
        return None
    wanted = gb_type.strip()

    def score(v: dict[str, Any]) -> tuple[int, int, int, int]:
        return (
            int(bool(wanted) and str(v.get("Gb_type", "")).strip() == wanted),
            int(bool(v.get("Hints"))),
            int(_is_plain_text(v.get("Explanation"))),
            int(_is_plain_text(v.get("Gb_type"))),
        )

    best = max(variants, key=score)  # max keeps the first of equals
    gb = str(best.get("Gb_type") or "")
    if not _is_plain_text(gb):  # e.g. "_gb_type": borrow a sibling's real name
        gb = next((str(v["Gb_type"]) for v in variants if _is_plain_text(v.get("Gb_type"))), "")
    explanation = best.get("Explanation")
    if not _is_plain_text(explanation):
        explanation = next((v["Explanation"] for v in variants if _is_plain_text(v.get("Explanation"))), "")
    hints = best.get("Hints") if isinstance(best.get("Hints"), list) else []
    return {
        "Gb_type": gb,
        "Context": str(best.get("Context") or ""),
        "Explanation": str(explanation or "").strip(),
        "Hints": _join_hint_fragments(hints),
    }


# ---------------------------------------------------------------------------
# the payload


def parse_user_traceback(lines: list[str]) -> list[UserFrame]:
    """Frames of Dynamo's ``User code traceback:`` listing, outermost first, up to the
    first non-indented line (``Traceback (most recent call last):``: torch's own frames)."""
    return parse_traceback(lines, until_unindented=True)


def _innermost_user_frame(stack: list[UserFrame], is_user: UserFileTest) -> Optional[UserFrame]:
    for frame in reversed(stack):
        try:
            if is_user(frame.filename):
                return frame
        except Exception:  # a caller's predicate must not break parsing
            continue
    return None


def _collect_section(lines: list[str], start: int, first: str) -> tuple[str, int]:
    """Text of a section starting at ``lines[start]``: its first line plus
    continuation lines up to the next section or the end of the block."""
    body = [first.rstrip()]
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if _SECTION.match(line) or _MORE.match(line) or _NESTED.match(line) or _BLOCK_END.match(line):
            break
        body.append(line.rstrip())
        i += 1
    head, rest = body[0], textwrap.dedent("\n".join(body[1:])).strip("\n")
    if not rest.strip():
        return head.strip(), i
    gap = "\n\n" if len(body) > 1 and not body[1].strip() else "\n"
    return f"{head}{gap}{rest.rstrip()}".strip(), i


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _description(lines: list[str]) -> tuple[Optional[UserFrame], str, list[str]]:
    """The ``Graph break in user code at`` frame, the text after
    ``Graph Break Reason:``, and the description block: the reason line up to
    the first traceback or nested break (the whole text when there is no
    reason line, as in ``compilation_metrics`` reasons)."""
    header: Optional[UserFrame] = None
    reason_line = ""
    start = 0
    for i, line in enumerate(lines):
        h = _HEADER.match(line)
        if h and header is None:
            header = UserFrame(h.group("file").strip(), int(h.group("line")))
            start = i + 1
            continue
        r = _REASON.match(line)
        if r:
            reason_line, start = r.group("rest").strip(), i
            break
    end = next((i for i in range(start, len(lines)) if _BLOCK_END.match(lines[i]) or _NESTED.match(lines[i])), len(lines))
    block = lines[start:end]
    if reason_line or (block and _REASON.match(block[0])):
        block[0] = reason_line
    return header, reason_line, block


def _sections(block: list[str]) -> tuple[list[str], bool, str, list[str]]:
    """``(plain lines before the first section, whether there was a section,
    explanation, hints)``."""
    leading: list[str] = []
    explanation = ""
    hints: list[str] = []
    seen_section = False
    i = 0
    while i < len(block):
        s = _SECTION.match(block[i])
        if s:
            seen_section = True
            body, i = _collect_section(block, i, s.group("text"))
            if s.group("key") == "Explanation" and not explanation:
                explanation = body
            elif s.group("key") == "Hint" and body:
                hints.append(body)
            continue
        if not seen_section and block[i].strip() and not _MORE.match(block[i]):
            leading.append(block[i].strip())
        i += 1
    return leading, seen_section, explanation, hints


def _gb_code(text: str) -> str:
    """The first ``.../gb/gb0170.html`` link (the primary break's), else a bare ``GB0170``."""
    m = _GB_URL.search(text) or _GB_BARE.search(text)
    return m.group(1).upper() if m else ""


def _pick_frame(user_stack: list[UserFrame], header: Optional[UserFrame], is_user: UserFileTest) -> UserFrame:
    frame = _innermost_user_frame(user_stack, is_user)
    if frame is None and header is not None:
        same = [f for f in user_stack if (f.filename, f.lineno) == (header.filename, header.lineno)]
        frame = same[-1] if same else header
    if frame is None and user_stack:
        frame = user_stack[-1]
    return UserFrame(frame.filename, frame.lineno, frame.function, frame.source_line) if frame else UserFrame()


def _is_preamble(line: str) -> bool:
    return any(p.match(line) for p in _PREAMBLES)


def _free_text_explanation(leading: list[str], reason: str) -> str:
    """For a break without ``Explanation:`` sections (e.g. a data-dependent guard):
    the lines after the reason, up to torch's own ``User Stack`` listing, without
    torch's pointers to more logs."""
    try:
        start = leading.index(reason) + 1
    except ValueError:
        return ""
    out: list[str] = []
    for line in leading[start:]:
        if _USER_STACK.match(line):
            break
        if _BOILERPLATE.match(line) or _is_preamble(line):
            continue
        out.append(line)
    return "\n".join(out).strip()


def _break_frame(user_stack: list[UserFrame], header: Optional[UserFrame]) -> UserFrame:
    """Where Dynamo stopped: the innermost frame of the traceback, else the header's line."""
    if user_stack:
        f = user_stack[-1]
        if header is None or (f.filename, f.lineno) == (header.filename, header.lineno) or not header.filename:
            return UserFrame(f.filename, f.lineno, f.function, f.source_line)
        same = [s for s in user_stack if (s.filename, s.lineno) == (header.filename, header.lineno)]
        if same:
            return UserFrame(same[-1].filename, same[-1].lineno, same[-1].function, same[-1].source_line)
        return UserFrame(header.filename, header.lineno)
    if header is not None:
        return UserFrame(header.filename, header.lineno)
    return UserFrame()


def _parse(text: str, is_user: UserFileTest) -> GraphBreak:
    lines = text.splitlines()
    header, reason_line, block = _description(lines)
    leading, has_sections, explanation, hints = _sections(block)
    # the type is the last plain line before "Explanation:" (2.13 puts a preamble before it)
    gb_type = leading[-1] if has_sections and leading and not _is_preamble(leading[-1]) else ""
    user_stack: list[UserFrame] = next(
        (parse_user_traceback(lines[i + 1 :]) for i, line in enumerate(lines) if _USER_TB.match(line)), []
    )
    reason = gb_type or next((c for c in leading if not _is_preamble(c)), "")
    if not reason:
        reason = reason_line if reason_line and not _is_preamble(reason_line) else _first_line(text)
    if not has_sections and not explanation:
        explanation = _free_text_explanation(leading, reason)
    gb = GraphBreak(
        reason=reason or "unknown graph break",
        gb_code=_gb_code(text),
        gb_type=gb_type,
        explanation=explanation,
        hints=hints,
        frame=_pick_frame(user_stack, header, is_user),
        user_stack=user_stack,
        detail=text,
        break_frame=_break_frame(user_stack, header),
        context=debug_context(text),
    )
    _fill_from_registry(gb, had_type=bool(gb_type))
    gb.hinted_settings = hinted_settings(gb.hints)
    gb.said = read_detail(gb.context, gb.explanation, text)
    return gb


def _fill_from_registry(gb: GraphBreak, had_type: bool) -> None:
    if not gb.gb_code or (gb.hints and gb.gb_type and gb.explanation):
        return
    entry = registry_entry(gb.gb_code, gb.gb_type)
    if entry is None:
        return
    if not gb.gb_type and entry["Gb_type"]:
        gb.gb_type = entry["Gb_type"]
        if not had_type:
            gb.reason = gb.gb_type
    if not gb.explanation and entry["Explanation"]:
        gb.explanation = entry["Explanation"]
    if not gb.hints and entry["Hints"]:
        gb.hints = list(entry["Hints"])
        gb.hints_from_registry = True


_COLLECTIVE_WORDS = re.compile(
    r"torch\.distributed|\bdist\.\w+\(|\bc10d\b|_c10d_functional|functional_collectives|ProcessGroup|"
    r"\b(?:all_reduce|all_gather\w*|reduce_scatter\w*|all_to_all\w*|broadcast_object_list|barrier|"
    r"isend|irecv|batch_isend_irecv|monitored_barrier)\b"
)


def names_collective(b: GraphBreak) -> bool:
    """Whether a break's line, torch's reason or its break kind names a ``torch.distributed`` collective
    (``GraphBreak.names_collective``)."""
    return bool(_COLLECTIVE_WORDS.search(" ".join((b.frame.source_line, b.reason, b.gb_type))))


def parse_graph_break(text: str, user_files: Optional[UserFileTest] = None) -> GraphBreak:
    """Parse one ``dynamo_graph_break_reason`` payload into a :class:`GraphBreak`.

    ``user_files`` decides which traceback frames are the user's code
    (default: ``report.owners.is_user_code`` by path shape); ``frame`` is the innermost such frame,
    falling back to the ``Graph break in user code at FILE:LINE`` header.
    Missing hints/type/explanation are filled from torch's registry when the
    payload names a ``GBxxxx`` code (``hints_from_registry`` says so).

    Also accepts the bare reason texts found in ``compilation_metrics``
    (``restart_reasons``, ``fail_reason``).  Never raises: unparseable input
    gives a GraphBreak whose ``reason`` is its first non-empty line.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return _parse(text, user_files or is_user_code)
    except Exception:  # defensive: a report must survive any payload
        return GraphBreak(reason=_first_line(text) or "unknown graph break", detail=text)
