"""The recompile rule ``dtype_change``: one compiled version per dtype of `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.DTYPE_CHANGE, ("dtype",), "one compiled version per dtype of `{x}`",
                 "dtypes never become dynamic: each dtype of `{x}` is a version of its own, kept side by side, and "
                 "calls with a dtype seen before reuse it. Nothing to fix for a few dtypes. If the dtype change is "
                 "unintended, convert where `{x}` is made (`.float()`, `.to(torch.float32)`) so every call sees one "
                 "dtype; past torch._dynamo.config.recompile_limit (8 by default) versions, the function runs uncompiled.")
