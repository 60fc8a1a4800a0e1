"""The recompile rule ``identity_change``: one compiled version per object passed as `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.IDENTITY_CHANGE, ("identity",), "one compiled version per object passed as `{x}`",
                 "torch inlines the function or object passed as `{x}` and guards on its identity: each different "
                 "object is a version of its own. Nothing to fix for a few; for many (a new lambda or module on "
                 "every call), create it once outside the loop and pass the same one, or compile it on its own.")
