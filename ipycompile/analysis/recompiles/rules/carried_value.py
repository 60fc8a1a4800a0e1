"""The recompile rule ``carried_value``: a value torch carries across a graph break changes: dynamic=True, capture_scalar_outputs for `.item()`, or remove the break."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import Reason, value_kind
from ..base import answer, DYNAMIC, dynamo_setting, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A value torch carries across a graph break (made inside the compiled code): no line of the user's can
    mark it. A size: dynamic=True makes the code after the break dynamic too; a number from ``.item()``:
    capture_scalar_outputs keeps ``.item()`` in the graph, so there is no break to carry it across."""
    g, ch = r.guard, r.change
    if g.origin != "carried":
        return None
    where = f" (`{g.carried_from}`)" if g.carried_from else ""
    head = (f"The value that changed is made inside the compiled code and carried by torch across the graph "
            f"break{where} into the code after it: no line of yours names it, so nothing can be marked on it. ")
    if ch.kind == "size" and not dynamic_after and not r.sizes_0_1:
        return answer(Kind.CARRIED_VALUE, "a size carried across a graph break changes: compile with dynamic=True",
                      head + "Its size follows your inputs' sizes. Compiling with `dynamic=True` makes the sizes of "
                      "the code after the break dynamic too (marking an input does not reach it); removing the graph "
                      "break removes the carried value altogether.",
                      DYNAMIC)
    if ch.kind in ("value", "global") and value_kind(ch.before) in ("int", "float") and ".item()" in g.carried_from:
        return answer(Kind.CARRIED_VALUE, "a number from `.item()` is carried across the graph break `.item()` makes",
                      head + "It is the Python number `.item()` returned: `.item()` breaks the graph, and the code "
                      "after the break is compiled for that number. With `capture_scalar_outputs`, `.item()` stays "
                      "in the graph (as torch's own hint for this break says): no break, nothing carried, and a new "
                      "number compiles nothing.",
                      dynamo_setting("capture_scalar_outputs", "True"))
    return answer(Kind.CARRIED_VALUE, "a value carried across a graph break changes",
                  head + ("Torch made it dynamic in the new version, so this recompile happens once: nothing to fix. "
                        if dynamic_after else "") + "To avoid the recompile, remove the graph break (see the graph "
                        "breaks), so that the value never leaves the graph.")


RULE = RecompileRule(Kind.CARRIED_VALUE, "a value torch carries across a graph break changes: dynamic=True, "
                     "capture_scalar_outputs for `.item()`, or remove the break", fix)
