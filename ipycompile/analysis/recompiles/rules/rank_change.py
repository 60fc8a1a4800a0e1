"""The recompile rule ``rank_change``: one compiled version per number of dimensions of `x`."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.RANK_CHANGE, ("rank",), "one compiled version per number of dimensions of `{x}`",
                 "the number of dimensions never becomes dynamic: each rank of `{x}` is a version of its own, kept "
                 "and reused. Nothing to fix for a few ranks; if one rank is meant, reshape where `{x}` is made "
                 "(`.reshape(-1, n)`, `.unsqueeze(0)`) so every call sees the same rank.")
