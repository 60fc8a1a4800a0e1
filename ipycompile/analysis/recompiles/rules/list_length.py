"""The recompile rule ``list_length``: one compiled version per length of `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.LIST_LENGTH, ("length",), "one compiled version per length of `{x}`",
                 "the code loops over (or unpacks) `{x}`, so torch unrolls it for its length: each length is a version "
                 "of its own. Nothing to fix for a few lengths; for many, stack the items into one tensor "
                 "(`torch.stack({x})`) and work on the tensor, whose size can be dynamic.")
