"""The recompile rule ``global_state_change``: one compiled version per state of x."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.GLOBAL_STATE_CHANGE, ("global_state",), "one compiled version per state of {x}",
                 "torch's global state ({x}) is part of what a compiled version assumes: a call under another state "
                 "(torch.no_grad() around one call and not another, autocast, a default dtype) compiles its own "
                 "version, kept and reused. Nothing to fix when both states are meant; else make the calls agree "
                 "(the same `with torch.no_grad():` around every call).")
