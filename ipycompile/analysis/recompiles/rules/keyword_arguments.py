"""The recompile rule ``keyword_arguments``: one compiled version per set of keyword arguments."""

from __future__ import annotations

from ....report.model import Kind
from ..base import explained


RULE = explained(Kind.KEYWORD_ARGUMENTS, ("keywords",), "one compiled version per set of keyword arguments",
                 "the compiled code was called with one set of keyword arguments one time and another set another "
                 "time (`m(x)`, then `m(x, mask=mask)`; `m(input_ids=ids)`, then `m(inputs_embeds=emb)`): torch guards "
                 "on which keywords a call passes, so each set is a version of its "
                 "own, kept and reused. Nothing to fix for a few; else pass the same keywords every call (the default "
                 "value explicitly, `mask=None`).")
