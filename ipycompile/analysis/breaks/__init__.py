"""A fix for each graph break and failure, written against the user's own code.

:func:`suggest_break_fixes` is a doctor pass (see :mod:`..doctor`): it sets
``GraphBreak.suggestion`` and ``Failure.suggestion`` from what torch said (the break
kind, its developer context: read by capture, carried by the report) and the user's
source the report kept (``CompileReport.source_context``). A suggestion fits where the
break is: a rewrite of the user's own lines when the break is in the user's code; a
setting, or a named, importable callable, when it is in a library the user cannot edit.
A break no rule fits gets torch's own explanation and hints, and says that no specific
fix is known (``kind == "unknown"``).

The rules are modules of :mod:`.rules`, listed once in :data:`.rules.RULES`; the
table of kinds, :data:`KINDS`, is derived from that list. Each kind is proven by a test
that applies the fix and shows the break gone with the same outputs
(tests/test_doctor_breaks.py).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Optional

from ...report.model import Confidence, Failure, GraphBreak, Kind, Suggestion
from ..source import Sources
from .base import Context, Facts, Rule, in_library, unknown
from .rules import RULES
from .levers import with_levers
from .switches import with_switches

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["suggest_break_fixes", "suggest_for_break", "suggest_for_failure", "KINDS", "RULES", "Rule"]

#: Every kind of suggestion this pass makes, with what it means: one per rule, and ``unknown``.
KINDS: dict[str, str] = {
    **{str(r.kind): r.doc for r in RULES},
    str(Kind.LIBRARY_CODE): "a break whose fix would be a change to code the user does not own (a library's, torch's): "
                            "where it is, torch's words, and what the user can do instead",
    str(Kind.LIBRARY_SWITCH): "a break in library code that runs only under a switch the user's call passes "
                              "(`output_attentions=True`): that switch, as the lever to try",
    str(Kind.NO_LEVER): "a break in library code that no rule answers and no switch of the user's call guards: where "
                        "it is, that the user's code cannot change it, and the levers that apply (a smaller region "
                        "to compile, torch.compiler.disable around the user's call, the library's version)",
    str(Kind.UNKNOWN): "a kind the doctor does not know: torch's own explanation and hints, no specific fix",
}


def suggest_break_fixes(report: "CompileReport") -> "CompileReport":
    """The doctor pass: ``report`` with a :class:`Suggestion` on every graph break and
    failure (a new report; ``report`` is unchanged)."""
    from ..errors import noted

    _ERRORS.clear()
    ctx = Context(report, Sources(report))
    breaks = [dataclasses.replace(b, suggestion=_guarded(lambda b=b: suggest_for_break(b, ctx), Facts.of_break(b, ctx)))
              for b in report.graph_breaks]
    failures = []
    for f in report.failures:
        if _is_recompile_limit(f, report):  # recompiles are diagnosed by their own pass
            failures.append(dataclasses.replace(f))
            continue
        failures.append(dataclasses.replace(f, suggestion=_guarded(lambda f=f: suggest_for_failure(f, ctx),
                                                                   Facts.of_failure(f, ctx))))
    fixed = dataclasses.replace(report, graph_breaks=breaks, failures=failures)
    try:
        fixed = with_switches(fixed, ctx)
    except Exception as exc:  # noqa: BLE001 - the levers are extra: the rules' answers stay, and it is counted
        _ERRORS.append(("library switches", exc))
    try:
        fixed = with_levers(fixed, ctx)
    except Exception as exc:  # noqa: BLE001 - as the switches: the rules' answers stay, and it is counted
        _ERRORS.append(("library levers", exc))
    errors, _ERRORS[:] = list(_ERRORS), []
    return noted(_settings_together(fixed),
                 "suggest_break_fixes", errors)


def settings_of(s: Optional[Suggestion]) -> list[str]:
    """The torch settings a suggestion's code sets (``torch._dynamo.config.capture_scalar_outputs``)."""
    if s is None or s.fix is None or not s.code.strip():
        return []
    return list(dict.fromkeys(setting.key for setting in s.fix.all_settings))


def _settings_together(report: "CompileReport") -> "CompileReport":
    """Where the answers for one report would give several settings as code, only the first
    (in the order torch compiled the breaks) keeps its code: each setting was checked alone, on
    its own break, and two settings that each work alone can fail together (``capture_scalar_outputs``
    and ``capture_dynamic_output_shape_ops`` on transformers' Longformer make the compile raise).
    The others say which setting removes their break alone, in words, to try one at a time once the
    first is applied; code for several settings is given only where they were proven together
    (``--verify-fixes`` tries them together on the user's own cell)."""
    items = [*report.graph_breaks, *report.failures]
    names = []
    for i in items:
        names += [n for n in settings_of(i.suggestion) if n not in names]
    if len(names) < 2:
        return report
    first = [n for n in settings_of(next(i.suggestion for i in items if settings_of(i.suggestion)))]

    def noted(i):
        mine = settings_of(i.suggestion)
        if not mine:
            return i
        if mine == first:
            others = [n for n in names if n not in mine]
            note = (f"\n\nThis code gets {len(names)} settings from the doctor ({', '.join(f'`{n}`' for n in names)}): each "
                    "removes its own break, checked alone; together they are unproven (two settings that each work "
                    f"alone can fail together), so only `{mine[0]}` is given as code. Apply it, check that this break is "
                    f"gone and the outputs unchanged, then try {', '.join(f'`{n}`' for n in others)} for the other breaks, "
                    "one at a time.")
            return dataclasses.replace(i, suggestion=dataclasses.replace(i.suggestion, explanation=i.suggestion.explanation + note))
        s = i.suggestion
        note = (f"\n\nNot given as code: this code also gets `{first[0]}` from the doctor for another break, and the two "
                "settings are unproven together (two settings that each work alone can fail together). Apply "
                f"`{first[0]}` first and check the outputs; then try `{'; '.join(s.code.strip().splitlines())}` on its own, "
                "and check again that this break is gone and the outputs unchanged.")
        return dataclasses.replace(i, suggestion=dataclasses.replace(
            s, title=f"{s.title} (after `{first[0].rsplit('.', 1)[-1]}`, one at a time)", explanation=s.explanation + note,
            code="", unproven_code=s.code, confidence=Confidence.LOW))

    return dataclasses.replace(report, graph_breaks=[noted(b) for b in report.graph_breaks],
                               failures=[noted(f) for f in report.failures])


def suggest_for_break(b: GraphBreak, ctx: Context) -> Suggestion:
    """The suggestion for one graph break."""
    return suggest(Facts.of_break(b, ctx), ctx)


def suggest_for_failure(f: Failure, ctx: Context) -> Suggestion:
    """The suggestion for one failed compile (e.g. a higher-order-op error, a break under fullgraph)."""
    return suggest(Facts.of_failure(f, ctx), ctx)


def suggest(facts: Facts, ctx: Context) -> Suggestion:
    """The first rule that applies and whose fix holds in the user's code; else torch's words."""
    for rule in RULES:
        try:
            if rule.applies(facts):
                if rule.user_code and facts.in_library:
                    return in_library(rule, facts, ctx)
                s = rule.fix(facts, ctx)
                if s is not None:
                    return s
        except Exception as exc:  # noqa: BLE001 - one broken rule is counted; the next rule is tried
            _ERRORS.append((f"break rule {rule.kind}", exc))
    return unknown(facts)


#: the exceptions rules raised during one suggest_break_fixes call, (where, exception); counted on its report
_ERRORS: list = []


def _guarded(make: Callable[[], Suggestion], facts: Optional[Facts]) -> Suggestion:
    try:
        s = make()
    except Exception as exc:  # noqa: BLE001 - a fix we cannot build falls back to torch's words, and is counted
        _ERRORS.append(("suggest_break_fixes", exc))
        s = None
    return s if s is not None else unknown(facts)


def _is_recompile_limit(f: Failure, report: "CompileReport") -> bool:
    """The failure is the recompile limit's: capture decided it (``Failure.limit_hit`` and ``Compile.status``,
    from torch's ``fail_type`` and reason: ``capture/parse/recompiles.is_recompile_limit``); a report saved
    before those records: GB0039, the limit's code."""
    c = report.compile(f.compile_id) if f.compile_id is not None else None
    return f.limit_hit or f.gb_code == "GB0039" or (c is not None and c.status == "recompile limit")
