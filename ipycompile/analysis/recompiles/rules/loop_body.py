"""The recompile rule ``loop_body``: a Python int is a loop count: compile one step, loop in Python."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..reading import is_number, Reason
from ..lines import in_range
from ..base import RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    x = r.change.subject
    if not (is_number(r) and in_range(r) and not dynamic_after and r.nameable):
        return None
    return Suggestion(
        f"loop_body: `{x}` is a loop count; compile one step and loop in Python",
        f"`{x}` sets how often a loop runs, so Dynamo unrolls the loop and each value of `{x}` is a new "
        "graph. Compile the loop's body as a function and run the loop outside it: one compile for "
        "every count. (Or rewrite the loop with `scan` over a tensor whose length is the count.)",
        "step = torch.compile(body)  # body: one iteration of the loop, state -> state\n"
        f"for _ in range({x}):\n    state = step(state)",
        Confidence.MEDIUM, Kind.LOOP_BODY,
    )


RULE = RecompileRule(Kind.LOOP_BODY, "a Python int is a loop count: compile one step, loop in Python", fix)
