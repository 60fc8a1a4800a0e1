"""The recompile rule ``attribute_presence``: an attribute read from the class is now set on the instance: one more version, nothing to fix."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import Reason
from ..base import answer, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """An attribute the compiled code read from the object's class (no value of the object's own) is now the
    object's own (``model.config.block_size = 12`` on a config whose class gives the default), or back."""
    ch = r.change
    if not (ch.kind == "attribute" and ch.before.endswith(("class's", "own"))):
        return None
    x = ch.subject or "the attribute"
    return answer(Kind.ATTRIBUTE_PRESENCE, f"`{x}` is now {ch.after} value, where it was {ch.before}",
                  f"When compiled, `{x}` had no value on the object itself and was read from its class; an assignment "
                  "on the object (`obj.name = value`) now gives it its own, and torch, which guards on where the value "
                  "comes from, compiles again. Nothing to fix for one such change (a setting changed once, a model "
                  "cut down once). The value itself is part of what was compiled too: a value that keeps changing "
                  "compiles again for each, wherever it is held; keep such a value in a tensor where only tensor "
                  "arithmetic reads it.")


RULE = RecompileRule(Kind.ATTRIBUTE_PRESENCE, "an attribute read from the class is now set on the instance: one more "
                     "version, nothing to fix", fix)
