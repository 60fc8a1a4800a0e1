"""The recompile rule ``mark_unbacked``: a size becomes 0 or 1: mark the dimension unbacked."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Mark, Recompile, Suggestion
from ....report.owners import installed_package
from ..reading import Reason
from ..words import shown, size_words
from ..base import answer, BEFORE, RecompileRule


def _internal_words(text: str) -> bool:
    """Whether ``text`` (torch's guard) names torch's internals (``L['args'][0]``, ``args[0]``, ``___stack0``)."""
    return any(w in text for w in ("L[", "G[", "args[", "kwargs[", "___", "__resume"))


def _unbacked_compared(r: Reason, dynamic_after: bool) -> Suggestion:
    """A size that is 0 or 1 in one call, which the compiled code compares (its dynamic version is guarded on
    ``2 <= idx.size()[1] <= 16``: nanoGPT's ``assert t <= block_size``). ``mark_unbacked`` gives the size
    no value, so each such comparison becomes data-dependent: torch breaks the graph there (GB0170) or raises,
    and the recompile stays. What torch does instead, in words: size 1 has a version of its own, and the size
    is dynamic from the next version on."""
    ch, x = r.change, shown(r)
    on = f"on `{r.compared}`" if not _internal_words(r.compared) else "on that comparison"  # torch's words: no internals
    guarded = f" (torch guards its dynamic version {on})" if not _internal_words(r.compared) else ""
    why = (f" `mark_unbacked` is not the fix here: the compiled code compares this size{guarded}, and an unbacked "
           "size has no value to compare with, so each such comparison "
           "becomes data-dependent: torch breaks the graph there (or raises) instead, and the recompile stays.")
    if ch.before.startswith(">=") and ch.before.split()[-1] != "2":
        # the failed version's bound is the code's comparison (``481 <= array.size()[0]``), not the 0/1
        # specialisation: the size is dynamic, and each outcome of the comparison is a version
        return answer(
            Kind.AUTOMATIC_DYNAMIC, f"dim {ch.dim} of {x} is dynamic, and the code compares it: each outcome is a "
            "version of its own",
            f"Torch made dim {ch.dim} of {x} dynamic, and the compiled code compares it: the version compiled before "
            f"holds for sizes {ch.before}, this call's size{' (' + ch.after + ')' if ch.after else ''} is outside that "
            f"range, and the new version is guarded {on}. Each outcome of a comparison on the size (a "
            "branch, an assert) is a version of its own, compiled once and reused: a few at most. Nothing to fix." + why)
    if dynamic_after and ch.before in ("0", "1"):
        return answer(
            Kind.AUTOMATIC_DYNAMIC, f"dim {ch.dim} of {x} was {ch.before} when compiled: one more version, then "
            "torch made it dynamic",
            f"Sizes 0 and 1 are always specialised (broadcasting differs for them), so the version compiled when dim "
            f"{ch.dim} of {x} was {ch.before} fits no other size: torch compiled once more when it became "
            f"{ch.after or 'another size'}, and made the dimension dynamic in that version by itself (automatic "
            "dynamic shapes): every later size from 2 up reuses it. This recompile happens once; nothing to fix." + why)
    return answer(
        Kind.MARK_UNBACKED, f"dim {ch.dim} of {x} is 0 or 1 in one call: such a size has a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        f"specialise them too: the calls where dim {ch.dim} of {x} is 1 share one version of their own (so do those "
        "where it is 0), compiled once and reused; the other sizes share another. Nothing to fix for that one "
        "version." + why, confidence=Confidence.MEDIUM)


def in_library(r: Reason, rc: Recompile) -> Suggestion:
    """A size that is 0 or 1 in one call where the compiled code is a library's (a transformers model's
    ``forward``): ``mark_unbacked`` holds only where that code never branches on the size, which no rule
    here can see in a library's code (on transformers' Llama the mark made it compile again and again, past
    the recompile limit), so the answer is what torch does, in words."""
    ch, x = r.change, r.change.subject
    package = installed_package(rc.filename)
    where = f"`{package}`'s" if package and package.isidentifier() else "a library's"
    return Suggestion(
        f"mark_unbacked: dim {ch.dim} of `{x}` is 0 or 1 in one call: such a size has a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        f"specialise them too: the calls where dim {ch.dim} of `{x}` is 1 share one version of their own (so do those "
        "where it is 0), compiled once and reused; the other sizes share another (dynamic after one recompile). "
        "Nothing to fix for that one version. "
        f"`torch._dynamo.decorators.mark_unbacked({x}, {ch.dim})` before the call makes one version serve every size "
        f"only where the compiled code never branches on that size, and the code compiled here is {where}, not "
        "yours, which may: where it does, the mark makes torch compile again for each size "
        "or break instead. Keep such a mark only where a run with it shows the recompile gone, the outputs equal and "
        "no new break.", "", Confidence.MEDIUM, Kind.MARK_UNBACKED)


def branches(r: Reason, branch: str) -> Suggestion:
    """``mark_unbacked`` where the compiled code branches on that size: the mark would turn the branch into a
    data-dependent one (a graph break, or ``GuardOnDataDependentSymNode`` raised), so it is said, not given as code."""
    ch, x = r.change, shown(r)
    return answer(
        Kind.MARK_UNBACKED, f"dim {ch.dim} of {x} is 0 or 1 in one call, and the code branches on it: such a size has "
        "a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them): the calls where dim "
        f"{ch.dim} of {x} is 1 share one version of their own (so do those where it is 0), compiled once and reused. "
        f"`mark_unbacked` is not the fix here: the compiled code branches on that size ({branch}), and an unbacked "
        "size has no value to branch on, so the branch becomes data-dependent: torch breaks the graph there or raises "
        "(`GuardOnDataDependentSymNode`). `torch._dynamo.mark_dynamic` on the tensor keeps every size from 2 up in "
        "one version (it specialises 0 and 1 too, as torch does by itself after one recompile). Nothing to fix for "
        "the one version of size 1.", confidence=Confidence.MEDIUM)


def with_others(r: Reason, hidden: list) -> Suggestion:
    """A size that went to or from 0 or 1 together with other sizes of the same call (``box_lists[0].tensor``
    and ``box_lists[1].tensor``, 2 → 1): one ``mark_unbacked`` leaves the others specialised; one on each makes
    each an unknown size with no relation to the others, and code that reads them as numbers or needs them
    equal then breaks or compiles again, which no record shows beforehand (on detectron2's
    ``convert_boxes_to_pooler_format`` it broke at the line that reads the lengths). Words, no code."""
    ch, x = r.change, r.change.subject
    marks = "; ".join(f"`torch._dynamo.decorators.mark_unbacked({m}, {d})`" for m, d in [(x, ch.dim)] + [(m, d) for m, d, *_ in hidden] if m)
    return Suggestion(
        f"mark_unbacked: dim {ch.dim} of {shown(r)} and other sizes are 0 or 1 in one call: such sizes have a "
        "version of their own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        "specialise them too: the calls with these sizes share one version of their own, compiled once and reused; "
        "other sizes share another. Nothing to fix for that one version. The same call changed "
        f"{size_words(hidden)} too (torch's reason names only the first guard that failed), so a mark on one "
        "leaves the others specialised, and a mark on each makes each an unknown size with no relation to the "
        "others: code that reads them as numbers (`len()`, a shape turned into a tensor) or needs them equal then "
        "breaks or compiles again, which cannot be seen from here. "
        + (f"To try it: {marks}, before the first call; keep them only where a run with them shows the recompile "
           "gone, the outputs equal and no new break." if marks else ""),
        "", Confidence.MEDIUM, Kind.MARK_UNBACKED)


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if ch.kind == "size_0_1" and ch.dim is not None and r.compared:
        return _unbacked_compared(r, dynamic_after)
    if ch.kind == "size_0_1" and ch.dim is not None and not r.nameable and r.guard.origin == "argument":
        return Suggestion(  # no name in the call holds the tensor: the way, in words
            f"mark_unbacked: dim {ch.dim} of {shown(r)} is 0 or 1 in one call and not in another",
            "Sizes 0 and 1 are always specialised, and `mark_dynamic` or `dynamic=True` specialise them too. No "
            "name in your call holds the tensor: give it one where it is made and mark the dimension unbacked "
            f"before the first call (`torch._dynamo.decorators.mark_unbacked(t, {ch.dim})`); one version then "
            "serves every size.", "", Confidence.MEDIUM, Kind.MARK_UNBACKED)
    if not (ch.kind == "size_0_1" and ch.dim is not None and r.nameable):
        return None
    return Suggestion.of(
        f"mark_unbacked: let dim {ch.dim} of `{x}` be 0 or 1 without a recompile",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or "
        "`dynamic=True` specialise them too: a size that goes 1 → 2 (or 2 → 1) compiles again with either. If "
        "this dimension can be 0 or 1, mark it unbacked before the first call: torch then makes no assumption "
        "about its value, and one version serves every size (code that branches on the size raises instead of "
        "specialising).",
        Fix(marks=[Mark("mark_unbacked", x, ch.dim, BEFORE)]),
        Confidence.HIGH, Kind.MARK_UNBACKED,
    )


RULE = RecompileRule(Kind.MARK_UNBACKED, "a size becomes 0 or 1: mark the dimension unbacked", fix)
