"""Frames in torch's text: a Python traceback listing, and the names Dynamo gives the
frames it makes. The one parser of each (graph breaks, failures, kernel stack traces,
recompile reasons and the builder read frames through here).

A traceback listing, as torch prints it after ``User code traceback:``, ``from user
code:`` or ``User stack:``, and in its kernel stack traces::

      File "/path/file.py", line 18, in <module>
        f(x)
        ^^^^
      File "/path/file.py", line 9, in helper
        if x.sum() > 0:

A resume function, the code after a graph break that Dynamo compiles as a frame of its
own: ``torch_dynamo_resume_in_forward_at_17`` continues ``forward`` after line 17.

Pure functions of text; they never raise on bad input.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Union

from ...report.model import UserFrame

__all__ = ["parse_traceback", "user_stack_text", "raising_frame", "resume_origin", "resumed_function"]

_FRAME = re.compile(r'^[ \t]*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<fn>.*?))?[ \t]*$')
_CARETS = re.compile(r"^[\s~^\-]*$")
#: What precedes the user's frames in torch's text: Dynamo's "from user code:", and the "User stack:"
#: of an error raised while building guards (a ConstraintViolationError from symbolic shapes).
_USER_STACK = re.compile(r"(?:from user code:|^[ \t]*User stack:[ \t]*$)", re.M)
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<func>.+)_at_(?P<line>\d+)$")


def parse_traceback(text: Union[str, Iterable[str], None], until_unindented: bool = False) -> list[UserFrame]:
    """The frames of a ``File "...", line N, in f`` listing, outermost first, each with the
    source line printed under it (the line right after its ``File`` line, when that is
    neither another frame nor a line of carets). ``until_unindented``: stop at the first
    non-empty line that is not indented (``Traceback (most recent call last):`` after
    Dynamo's user traceback: torch's own frames, never the user's). Never raises."""
    try:
        lines = text.splitlines() if isinstance(text, str) else list(text or [])
        frames: list[UserFrame] = []
        expect_source = False
        for line in lines:
            if until_unindented and line.strip() and not line[:1].isspace():
                break
            m = _FRAME.match(line)
            if m:
                frames.append(UserFrame(m.group("file"), int(m.group("line")), (m.group("fn") or "").strip()))
                expect_source = True
                continue
            if expect_source and line.strip() and not _CARETS.match(line):
                frames[-1].source_line = line.strip()
            expect_source = False
        return frames
    except Exception:  # noqa: BLE001 - a report must survive any text
        return []


def user_stack_text(text: Optional[str]) -> str:
    """The part of torch's ``text`` after its last "from user code:" / "User stack:" line
    (the user's frames, outermost first); "" when it has none."""
    last = None
    for last in _USER_STACK.finditer(text or ""):
        pass
    return (text or "")[last.end():] if last is not None else ""


def raising_frame(text: Optional[str]) -> Optional[UserFrame]:
    """The innermost frame of the Python traceback in torch's ``text`` (a ``dynamo_error``
    payload), before its user stack ("from user code:"): where the exception was raised."""
    head = text or ""
    first = _USER_STACK.search(head)
    frames = parse_traceback(head[: first.start()] if first is not None else head)
    return frames[-1] if frames else None


def resume_origin(co_name: Optional[str]) -> Optional[tuple[str, int]]:
    """``("forward", 17)`` for Dynamo's continuation frame
    ``torch_dynamo_resume_in_forward_at_17`` (the code after a graph break);
    None for ordinary frames."""
    m = _RESUME.match(co_name or "")
    return (m.group("func"), int(m.group("line"))) if m else None


def resumed_function(co_name: Optional[str]) -> str:
    """The user's function a frame runs: ``forward`` for ``torch_dynamo_resume_in_forward_at_17``,
    the name itself for an ordinary frame."""
    origin = resume_origin(co_name)
    return origin[0] if origin else (co_name or "")
