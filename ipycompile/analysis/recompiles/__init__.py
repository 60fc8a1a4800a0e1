"""Recompiles in plain words: which input changed how, the guards on both sides, and the fix.

:func:`explain_recompiles` is a doctor pass: for every :class:`~ipycompile.report.Recompile`
it reads the failed guards capture parsed from torch's reasons (``Recompile.guards``, each a
:class:`~ipycompile.report.FailedGuard` with the guarded value under the user's own name)
and the guards of both compiles (``GuardSet.entries``) into
:class:`~ipycompile.report.GuardChange` s (``Recompile.changes``), writes
``Recompile.explanation`` and, where a fix is known and proven by a test
(``tests/test_doctor_recompiles.py``, ``tests/test_doctor_recompiles_real.py``),
``Recompile.suggestion``. It reads records only: torch's text is read once, in
``capture/parse/guards.py`` (the reasons and guard trees) and ``capture/callsite.py`` (the
user's names). Code is written only against a name the user's code has: a value torch
carries across a graph break, or one a library passes, gets words, a setting, or torch's words.

The package has the break doctor's shape (:mod:`..breaks`): :mod:`.reading` reads a failed guard into a
record (:class:`.reading.Reason`; pure functions that return new records), :mod:`.words` says a change in
words, :mod:`.rules` holds one module per rule (its kind, its documentation, its fix and prose), tried in
the order of :data:`.rules.RULES`, and :mod:`.frame` the whole-frame answers (the recompile limit, one
version per layer, a condition on a size), applied after the rule in the order of :data:`.frame.ANSWERS`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional, Sequence

from ...report.model import GUARD_KINDS, CompileId, GuardEntry, GuardSet, Kind, Recompile, Suggestion
from .base import RecompileRule
from .frame import FRAME_KINDS, Call, answer_for_frame
from .reading import Reason, complete, hidden_sizes, hidden_values, reason_of, with_size_now
from .rules import RULES
from .words import change_text, same_size_elsewhere, size_words, sizes_0_1, value_words

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["KINDS", "FRAME_KINDS", "SUGGESTION_KINDS", "RULES", "RecompileRule", "explain_recompiles", "suggest"]

#: What a failed guard can say changed (``GuardChange.kind``): the report's :data:`GUARD_KINDS`.
KINDS = GUARD_KINDS

#: The kinds of recompile suggestion (``Suggestion.kind``; ``Suggestion.title`` starts with
#: the same word), each with its test in tests/test_doctor_recompiles.py: a fix removes the
#: recompile with the same outputs, a named no-fix kind's explanation says what to do.
SUGGESTION_KINDS: tuple[Kind, ...] = (*(r.kind for r in RULES), *FRAME_KINDS)

#: the exceptions rules raised during one explain_recompiles call, (where, exception); counted on its report
_ERRORS: list = []


def suggest(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """The fix (or the named no-fix kind) for one change; None for a change of no known form. A rule that
    raises is counted (``doctor:recompile rule <kind>``) and the next rule is tried."""
    for rule in RULES:
        try:
            s = rule.fix(r, dynamic_after)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not lose the answer
            _ERRORS.append((f"recompile rule {rule.kind}", exc))
            continue
        if s is not None:
            return s
    return None


def _explain(report: "CompileReport", rc: Recompile, earlier: Sequence[GuardSet] = ()) -> Recompile:
    guards = {g.compile_id: g for g in earlier}
    guards.update({g.compile_id: g for g in report.guards})
    if rc.reasons and not rc.guards:  # saved before capture read guards: keep what the doctor said then
        return dataclasses.replace(rc)

    def entries(cid: Optional[CompileId]) -> list[GuardEntry]:
        gs = guards.get(cid) if cid is not None else None
        return list(gs.entries) if gs is not None else []

    new_entries = entries(rc.compile_id)
    through_0_1 = sizes_0_1(report, rc)
    read: list[tuple[Reason, bool]] = []
    for g in rc.guards:
        r = dataclasses.replace(reason_of(g), sizes_0_1=through_0_1, tied=same_size_elsewhere(report, rc, g, entries))
        r, dynamic = complete(r, entries(g.failed_compile_id), new_entries)
        r = with_size_now(r, rc.guards)
        read.append((dataclasses.replace(r, change=dataclasses.replace(r.change, text=change_text(r, dynamic))), dynamic))
    changes = [r.change for r, _ in read]
    parts = []
    if read:
        parts.append(read[0][0].change.text[:1].upper() + read[0][0].change.text[1:])
        older = [r.change for r, _ in read[1:]]
        same = [str(o.failed_compile_id) for o in older if o.text == read[0][0].change.text]
        other = [o for o in older if o.text != read[0][0].change.text]
        if same:
            parts.append(f"The same guard failed for the older version(s) {', '.join(same)}")
        if other:
            parts.append(f"The guards of {len(other)} other older version(s) failed too: "
                         + "; ".join(f"{o.text} ({o.failed_compile_id})" for o in other))
    first, dynamic = read[0] if read else (None, False)
    root = suggest(first, dynamic) if first is not None else None
    failed_entries = entries(rc.guards[0].failed_compile_id) if read else []
    hidden = hidden_sizes(first) if first is not None else []
    values = hidden_values(first, failed_entries, new_entries) if first is not None else []
    if hidden or values:
        said = " and ".join(w for w in (size_words(hidden) if hidden else "", value_words(values) if values else "") if w)
        parts.insert(1, f"The same call changed {said} too (torch's reason names only the first guard that failed)")
    verdict = answer_for_frame(Call(report, rc, first, dynamic, failed_entries, new_entries, hidden, values), root)
    parts = [p for p in (verdict.lead, *parts, verdict.tail) if p]
    explanation = " ".join(p if p.endswith(".") else p + "." for p in parts)
    return dataclasses.replace(rc, changes=changes, explanation=explanation, suggestion=verdict.suggestion)


def explain_recompiles(report: "CompileReport", *, earlier: Sequence[GuardSet] = ()) -> "CompileReport":
    """Doctor pass: every recompile gets ``changes``, ``explanation`` and (where a fix is known)
    ``suggestion``. Returns a new report. ``earlier``: guard sets of compiles this report does
    not hold (made by earlier runs), for the failed guards of its recompiles."""
    if not report.recompiles:
        return report
    from ..errors import noted

    _ERRORS.clear()
    out = []
    for rc in report.recompiles:
        try:
            out.append(_explain(report, rc, earlier))
        except Exception as exc:  # noqa: BLE001 - one recompile the doctor cannot read keeps the others' answers
            _ERRORS.append((f"explain_recompiles {rc.compile_id}", exc))
            out.append(dataclasses.replace(rc))
    errors, _ERRORS[:] = list(_ERRORS), []
    return noted(dataclasses.replace(report, recompiles=out), "explain_recompiles", errors)
