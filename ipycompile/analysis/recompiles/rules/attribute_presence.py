"""The recompile rule ``attribute_presence``: one compiled version with `x`, one without."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.ATTRIBUTE_PRESENCE, ("attribute",), "one compiled version with `{x}`, one without",
                 "the code asks whether `{x}` exists (`hasattr`, `getattr(..., default)`), so torch compiles one "
                 "version for each answer and keeps both. Nothing to fix when both are meant; else give the object the "
                 "attribute always (a default value in `__init__` or the config's fields), so every call sees the same.")
