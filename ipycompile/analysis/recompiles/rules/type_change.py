"""The recompile rule ``type_change``: one compiled version per type of `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.TYPE_CHANGE, ("type",), "one compiled version per type of `{x}`",
                 "torch guards on the exact Python type of `{x}` (a Parameter and a plain Tensor are different types; "
                 "so are a tensor and an int): each type is a version of its own. Nothing to fix when both are meant; "
                 "else pass one type (`.detach()` a Parameter, `torch.as_tensor(...)` a number).")
