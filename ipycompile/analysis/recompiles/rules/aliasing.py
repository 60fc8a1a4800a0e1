"""The recompile rule ``aliasing``: one compiled version for x as one tensor, one for separate tensors."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.ALIASING, ("aliasing",), "one compiled version for {x} as one tensor, one for separate tensors",
                 "the inputs {x} were separate tensors when compiled and are one tensor now (or the other way): "
                 "an in-place write through one changes the other, so torch compiles a version for each case. "
                 "Nothing to fix when both are meant; else pass a copy (`.clone()`) where one tensor is passed twice.")
