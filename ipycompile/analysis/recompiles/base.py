"""What every recompile rule is built from: the :class:`RecompileRule` shape, a suggestion of a named
kind (:func:`answer`), the fixes rules share (a dynamo setting, ``dynamic=True``, the marks for the sizes
that changed), and :func:`explained` for a change that needs no code change, said in words."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from ...report.model import Confidence, Fix, Kind, Setting, Suggestion
from .reading import Reason, value_kind
from .words import say


@dataclasses.dataclass(frozen=True)
class RecompileRule:
    """One fix for a recompile: the kind it writes (``Suggestion.kind``, and the first word
    of its title), what it means, and the fix for one change (None where it does not apply)."""

    kind: Kind
    doc: str
    fix: Callable[[Reason, bool], Optional[Suggestion]]


def answer(kind: Kind, title: str, explanation: str, fix: Optional[Fix] = None,
           confidence: Confidence = Confidence.HIGH) -> Suggestion:
    if fix is None:
        return Suggestion(f"{kind}: {title}", explanation, "", confidence, kind)
    return Suggestion.of(f"{kind}: {title}", explanation, fix, confidence, kind)


#: the words beside a statement to run before the compiled code's first call
BEFORE = "before the first call"


#: ``torch.compile(..., dynamic=True)``: every size dynamic from the first call
DYNAMIC = Fix(compile_options={"dynamic": "True"})


def dynamo_setting(name: str, value: str, comment: str = BEFORE) -> Fix:
    return Fix(settings=[Setting("dynamo", name, value, comment=comment)])


def marks_of(r: Reason) -> list[tuple[str, int]]:
    """The (tensor, dim) pairs to mark dynamic: every size that changed (from the guards of
    both compiles), else the one the reason names; a tensor no code of the user's names is ""."""
    return r.resized or [(r.change.subject if r.nameable else "", r.change.dim)]


def explained(kind: Kind, change_kinds: tuple[str, ...], title: str, words: str) -> "RecompileRule":
    """A change that needs no code change (or allows none): its kind and what to do, in words."""

    def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
        retyped_size = kind is Kind.TYPE_CHANGE and r.change.kind in ("size", "size_0_1") and r.retyped
        if r.change.kind not in change_kinds and not retyped_size:
            return None
        if retyped_size:  # the size changed, and another input is a tensor in one compile and not the other
            return answer(kind, "another input changes type between calls",
                          f"The size of `{r.change.subject}` changed, and another input was a tensor in one compiled "
                          "version and not in the other (a tensor, then a number): each combination of types is a "
                          "version of its own, and marking a size dynamic cannot help while that changes. Pass one "
                          "type every call (`torch.as_tensor(...)` the number), then mark the size dynamic.")
        if kind is Kind.FLAG_VALUE and value_kind(r.change.before) in ("int", "float"):
            return None
        return answer(kind, say(title, r), say(words, r))

    return RecompileRule(kind, title.format(x="x"), fix)
