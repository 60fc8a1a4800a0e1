"""The recompile rule ``flag_value``: one compiled version per value of `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.FLAG_VALUE, ("value",), "one compiled version per value of `{x}`",
                 "`{x}` is a Python value (a flag, None, a string) that the code branches on or reads: torch compiles "
                 "one version per value and keeps them all. That is the right behaviour for a flag with a few "
                 "values (True / False, a mode name): nothing to fix. A value that changes on every call belongs "
                 "in a tensor (with torch.where / torch.cond for the branch).")
