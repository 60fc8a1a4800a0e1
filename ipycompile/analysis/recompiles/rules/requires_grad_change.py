"""The recompile rule ``requires_grad_change``: one compiled version with gradients for `x`, one without."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.REQUIRES_GRAD_CHANGE, ("requires_grad",), "one compiled version with gradients for `{x}`, one without",
                 "torch compiles a version that tracks gradients through `{x}` and one that does not; both are kept. "
                 "Nothing to fix when training and inference calls mix; for inference only, call under "
                 "`torch.no_grad()` or pass `{x}.detach()` so every call sees the same.")
