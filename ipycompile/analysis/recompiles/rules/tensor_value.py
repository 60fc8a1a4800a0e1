"""The recompile rule ``tensor_value``: a Python number (or a global) changes: hold it in a 0-d tensor."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Rebind, Suggestion
from ..reading import is_number, Reason
from ..lines import only_in_arithmetic
from ..base import RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if not (is_number(r) and r.nameable and only_in_arithmetic(r)):
        return None
    where = "the global" if ch.kind == "global" else "the value"
    alt = ([] if ch.kind == "global" or "." in x or r.closure_of else
           ["or compile dynamic from the first call: torch.compile(..., dynamic=True)  (%%compile --dynamic)"])
    # a variable a function closes over is set where that function is made, which the call does not show: no
    # line before the call can give it a tensor (the closure keeps its own cell), so the way is in words
    at = f" (read at {r.guard.where})" if r.guard.where else ""
    closure = (f" `{x}` is a variable `{r.closure_of}` closes over{at}: give it the tensor where it is set, before "
               f"`{r.closure_of}` is defined (`{x} = torch.tensor({x})`), and a new tensor for each new value."
               if r.closure_of else "")
    record = None if r.closure_of else Fix(
        rebinds=[Rebind(x, "tensor", f"once; later: {x} = torch.tensor(new_value)")], notes=alt)
    return Suggestion(
        f"tensor_value: hold `{x}` in a tensor",
        f"torch guards on {where} `{x}` as a constant, so each value is a new compile"
        + (" (and changing a global between calls is a recompile every time)" if ch.kind == "global" else "")
        + f". `{r.code.strip()}` uses it only in arithmetic with tensors, where a 0-d tensor gives the same "
        "result; a 0-d tensor is guarded on its dtype and shape only: its value is data, and changing it "
        "compiles nothing. Reassign a new tensor (or `.fill_()` it) to change the value." + closure,
        record.code if record is not None else "",
        Confidence.MEDIUM if r.closure_of else Confidence.HIGH, Kind.TENSOR_VALUE, fix=record,
    )


RULE = RecompileRule(Kind.TENSOR_VALUE, "a Python number (or a global) changes: hold it in a 0-d tensor", fix)
