"""The recompile rule ``mark_dynamic``: a tensor's size changes, and the same size in a value of another compiled frame that no code of the user's can mark: maybe_mark_dynamic (never ConstraintViolationError)."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Mark, Suggestion
from ..reading import Reason, simple
from ..words import arrow
from ..base import BEFORE, marks_of, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A size the user can mark that also changed, the same way, in a value of another compiled frame that no
    line of the user's can mark (a tensor library code made from it and passed on after a graph break: the
    logits a transformers model hands to its loss, compiled as a frame of its own). In that frame the marked
    size meets a tensor whose size is static on its first compile, and torch specialises it: a strict
    ``mark_dynamic`` raises ConstraintViolationError there (transformers' GPT-2 trained on batches of varying
    length: ``Eq(16, 2*s38)`` in ``ForCausalLMLoss``; torch_geometric's ``scatter`` after its ``.item()`` break, where
    the index meets the features the first graph made). ``maybe_mark_dynamic`` asks without that promise.
    The marks :func:`..frame._with_hidden` adds for the call's other sizes are of the same kind."""
    ch, x = r.change, r.change.subject
    if not (r.tied and ch.kind == "size" and ch.dim is not None and r.nameable) or r.retyped:
        return None
    marks = [(m, d) for m, d in marks_of(r) if simple(m)]
    if not marks:
        return None
    return Suggestion.of(
        f"mark_dynamic: say that dim {ch.dim} of `{x}` may vary (maybe_mark_dynamic), before the first call",
        f"The size of dim {ch.dim} of `{x}` changes between calls ({arrow(ch.before, ch.after)}), and the same "
        f"size changes in another compiled frame, in {r.tied}: across a graph break, or in a value library code "
        "passes, where no line of yours can mark it. There your size meets tensors made inside compiled code, whose "
        "sizes are static on that frame's first compile, so torch specialises yours there too, and a strict "
        "`torch._dynamo.mark_dynamic` raises ConstraintViolationError. `torch._dynamo.maybe_mark_dynamic` asks for "
        "a dynamic size without that promise: the frames that take it compile one version for all sizes (>= 2), and "
        "a frame where torch specialises it compiles once more, after which torch makes its sizes dynamic by itself "
        "(automatic dynamic shapes).",
        Fix(marks=[Mark("maybe_mark_dynamic", m, d, BEFORE) for m, d in marks]),
        Confidence.HIGH, Kind.MARK_DYNAMIC)


RULE = RecompileRule(Kind.MARK_DYNAMIC, "a tensor's size changes, and the same size in a value of another compiled frame "
                     "that no code of the user's can mark: maybe_mark_dynamic (never ConstraintViolationError)", fix)
