"""Read a failed compile's text (``compilation_metrics``' ``fail_reason``, the
``dynamo_error`` traceback) into the fields a :class:`~ipycompile.report.Failure`
carries, as :mod:`.graph_breaks` does for a graph break::

    Encountered aliasing during higher order op tracing   <- the kind (torch's preamble lines end in ":")
      Explanation: ...
      Hint: ...
      Developer debug context: Input-to-output aliasing detected at nodes l_x_ and l_x_ ...
     For more details about this graph break, please visit: https://.../gb/gb0040.html
    ...
    from user code:
       File "/path/cell.py", line 9, in f
        return scan(body, init, xs)

Pure, and never raises on bad input.
"""

from __future__ import annotations

import re
from typing import Optional

from ...report.model import CompileId, Failure, UserFrame
from .context import read_detail
from .frames import parse_traceback, user_stack_text
from .graph_breaks import debug_context, hinted_settings
from .recompiles import is_recompile_limit

__all__ = ["parse_failure", "user_stack_text"]

_EXPLANATION = re.compile(r"^\s*Explanation:\s?(?P<text>.*)$", re.M)
_HINT = re.compile(r"^\s*Hint:\s?(?P<text>.*)$", re.M)
_GB = re.compile(r"/gb/(gb\d+)\.html", re.I)


def parse_failure(compile_id: Optional[CompileId], fail_type: str, message: str, frame: UserFrame,
                  traceback: str = "") -> Failure:
    """A :class:`Failure` with what torch's ``message`` (and ``traceback``) say read into its fields."""
    f = Failure(compile_id, fail_type, message, frame, traceback)
    try:
        f.limit_hit = is_recompile_limit(fail_type, message)
        text = message or ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        # torch's preambles end with a colon ("... Got graph break/error:"); the kind is the line after
        f.gb_type = next((ln.strip() for ln in lines if not ln.rstrip().endswith(":") and not ln.startswith(" ")), fail_type)
        gb = _GB.search(text)
        f.gb_code = gb.group(1).upper() if gb else ""
        expl = _EXPLANATION.search(text)
        f.explanation = expl.group("text").strip() if expl else ""
        f.hints = [m.group("text").strip() for m in _HINT.finditer(text)]
        f.hinted_settings = hinted_settings(f.hints)
        f.context = debug_context(text)
        f.said = read_detail(f.context, f.explanation, text)
        tail = user_stack_text(traceback or text) or user_stack_text(text)
        f.user_stack = parse_traceback(tail)
    except Exception:  # noqa: BLE001 - a report must survive any text
        pass
    return f
