"""The recompile rule ``train_eval``: one compiled version for train(), one for eval()."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.TRAIN_EVAL, ("training",), "one compiled version for train(), one for eval()",
                 "`{x}` switched between train() and eval(): dropout and batch norm behave differently, so torch "
                 "compiles one version per mode and keeps both. Nothing to fix: switching back reuses the first.")
