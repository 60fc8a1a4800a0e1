"""Read a Python warning torch issued (an ``ipycompile_warning`` event of
:mod:`ipycompile.capture.hooks`) into a :class:`~ipycompile.report.TorchWarning`.

The kinds recognised (:data:`ipycompile.report.model.WARNING_KINDS`), with torch's text
(``torch/_dynamo/variables/functions.py``, torch 2.11 to 2.13)::

    Dynamo detected a call to a `functools.lru_cache`-wrapped function at 'cell.py:12'.
    Dynamo ignores the cache wrapper and directly traces the wrapped function. Silent
    incorrectness is only a *potential* risk, not something we have observed. ...

    This call originates from:
      File "/path/cell.py", line 12, in step
        scale = cached_scale(3)

Any other warning is kept with an empty ``kind``. Pure, and never raises on bad input.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ...report.model import CompileId, TorchWarning, UserFrame
from .frames import parse_traceback

__all__ = ["parse_torch_warning", "REPORTED_LOG"]

_LRU_CACHE = re.compile(r"call to a `functools\.lru_cache`-wrapped function at '(?P<file>[^']*):(?P<line>\d+)'")
_ORIGIN = "This call originates from:"
#: torch's log messages about what a report shows, as torch words them: graph breaks, recompiles and
#: the recompile limit (what ``%%compile`` keeps out of a cell's output: :mod:`ipycompile.run.quiet`)
REPORTED_LOG = re.compile(r"graph break|recompil|cache_size_limit|recompile_limit", re.I)


def parse_torch_warning(body: Any, compile_id: Optional[CompileId] = None) -> Optional[TorchWarning]:
    """The warning an event's body describes (None for a body that is not one)."""
    if not isinstance(body, dict) or not isinstance(body.get("message"), str):
        return None
    message = body["message"]
    w = TorchWarning(message=message, category=str(body.get("category") or ""), compile_id=compile_id)
    try:
        m = _LRU_CACHE.search(message)
        if m:
            w.kind = "lru_cache_traced"
            frames = parse_traceback(message.split(_ORIGIN, 1)[1]) if _ORIGIN in message else []
            w.frame = frames[-1] if frames else UserFrame(m.group("file"), int(m.group("line")))
    except Exception:  # noqa: BLE001 - a report must survive any text
        pass
    return w
