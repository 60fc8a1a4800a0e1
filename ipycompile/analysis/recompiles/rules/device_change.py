"""The recompile rule ``device_change``: one compiled version per device or kind of tensor for `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.DEVICE_CHANGE, ("device", "dispatch_keys"), "one compiled version per device or kind of tensor for `{x}`",
                 "`{x}` arrived on another device, or as another kind of tensor (a subclass, a meta or sparse "
                 "tensor, a tensor under a dispatch mode): each is a version of its own. Nothing to fix when both "
                 "are meant; else move `{x}` to one device (`.to(device)`) before the call.")
