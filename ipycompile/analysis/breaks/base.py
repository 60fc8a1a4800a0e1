"""What every break rule works from: the facts of one break (read by capture, carried by
the report), the report's context, the :class:`Rule` shape, and the answer for a break no
rule fits (torch's own words, kind ``unknown``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ...report.model import Confidence, Failure, GraphBreak, Kind, Suggestion, TorchDetail, UserFrame
from ...report.owners import Owner
from ..source import Parsed, Sources

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

__all__ = ["Facts", "Context", "Rule", "unknown", "explained", "user_lines", "path", "reset_note", "parsed_at",
           "statement_at"]


@dataclass
class Facts:
    """What torch said about one break or failure, in one shape for both (the report's
    fields; capture read them from torch's text)."""

    kind: str  # torch's break type ("Data-dependent branching"), else the first line of the reason
    code: str  # "GB0170" or ""
    explanation: str
    hints: list[str]
    context: str  # the developer debug context
    text: str  # everything torch said
    stop: UserFrame  # where Dynamo stopped
    user: UserFrame  # the user's own line that led there
    stack: list[UserFrame] = field(default_factory=list)  # outermost first
    in_library: bool = False  # Dynamo stopped in code the user cannot edit (torch, a library, generated code)
    hinted_settings: list[str] = field(default_factory=list)  # the settings torch's hints name, as code
    said: TorchDetail = field(default_factory=TorchDetail)  # what torch's words name (capture read them)
    failure_type: str = ""  # a failure's exception type ("" for a break)
    raised_as: str = ""  # a failure's exception as the user's call received it, where torch wrapped it
    raised_by_torch: bool = False  # a failure's exception was raised by torch's own code

    @classmethod
    def of_break(cls, b: GraphBreak, ctx: "Context") -> "Facts":
        stop = b.stop
        if not stop.source_line:
            stop = UserFrame(stop.filename, stop.lineno, stop.function, ctx.src.line(stop.filename, stop.lineno).strip())
        return cls(b.gb_type or b.reason, b.gb_code, b.explanation, list(b.hints), b.context, b.detail or b.reason,
                   stop, b.frame, list(b.user_stack), ctx.library(stop.filename), list(b.hinted_settings), b.said)

    @classmethod
    def of_failure(cls, f: Failure, ctx: "Context") -> "Facts":
        stop = f.stop
        return cls(f.gb_type or f.type, f.gb_code, f.explanation, list(f.hints), f.context, f.message or "",
                   stop, f.frame, list(f.user_stack), ctx.library(stop.filename), list(f.hinted_settings), f.said,
                   f.type, f.raised_as, f.raised_by_torch)


@dataclass
class Context:
    """The report a rule reads besides the break: its kept source, its compiles."""

    report: "CompileReport"
    src: Sources

    def where(self, frame: UserFrame) -> str:
        return self.report.where(frame.filename, frame.lineno)

    def library(self, filename: str) -> bool:
        """Code the user cannot edit: torch, another installed package, the standard
        library, ipycompile, generated code (``report.owners`` decides)."""
        return self.report.owner(filename) not in (Owner.USER, Owner.UNKNOWN)

    def compiled_functions(self) -> set[tuple[str, str]]:
        """The functions torch compiled as frames, (file, function); a resume function
        (``torch_dynamo_resume_in_f_at_7``) counts as ``f``."""
        return {(c.filename, c.user_function) for c in self.report.compiles}


@dataclass(frozen=True)
class Rule:
    """One fix rule: the kind it writes, what that kind means, when it applies (torch's
    break kind, checked on the facts alone), and the fix, built from the user's source;
    ``fix`` returns None when the fix's preconditions do not hold in the user's code (the
    next rule is tried, and in the end torch's own words are shown)."""

    kind: Kind
    doc: str
    applies: Callable[[Facts], bool]
    fix: Callable[[Facts, Context], Optional[Suggestion]]
    #: its answer is a change to the code torch stopped at: given only where that code is the
    #: user's; in a library's code the answer is :func:`in_library` (nothing the user can edit)
    user_code: bool = False


def unknown(facts: Optional[Facts]) -> Suggestion:
    """No rule fits: torch's explanation and hints, and no fix."""
    if facts is None:
        return Suggestion("No specific fix is known for this", "", "", Confidence.LOW, Kind.UNKNOWN)
    parts = []
    if facts.explanation:
        parts.append(f"torch says: {facts.explanation}")
    elif facts.kind:
        parts.append(f"torch says: {facts.kind}")
    if facts.hints:
        parts.append("torch's hints:\n" + "\n".join(f"- {h}" for h in facts.hints))
    parts.append("ipycompile knows no specific fix for this kind of break; the hints above are torch's own.")
    return Suggestion("No specific fix is known for this", "\n\n".join(parts), "", Confidence.LOW, Kind.UNKNOWN)


def in_library(rule: "Rule", facts: Facts, ctx: Context) -> Suggestion:
    """A break whose only fix is a change to code the user does not own (a library's, torch's):
    where it is, what that code does (torch's words), and what the user can do instead. Never
    advice to edit that code."""
    owner = ctx.report.owner(facts.stop.filename)
    whose = "torch's own code" if owner is Owner.TORCH else "generated code" if owner is Owner.GENERATED \
        else "library code"
    said = f" torch says: {facts.explanation}" if facts.explanation else f" ({facts.kind})"
    words = (f"torch stopped at {path(ctx, facts)}, in {whose}, which you do not own.{said} The change that would "
             f"remove this break ({rule.doc}) is a change to that code, not to yours: unless the value it "
             "stopped on is one you pass in, nothing in your code removes it. The code still runs correctly, as two graphs with Python between them. Keep the call into that "
             "code outside the compiled region if the break costs too much, or report it to the code's "
             "maintainers.")
    return explained(Kind.LIBRARY_CODE, f"A break in {whose} you do not own ({facts.kind})", words, facts)


def explained(kind: Kind, title: str, words: str, facts: Facts) -> Suggestion:
    """A break no code change of ours removes (or none is possible): its kind, what to do in
    words, and torch's hints after them."""
    hints = ("\n\ntorch's hints:\n" + "\n".join(f"- {h}" for h in facts.hints)) if facts.hints else ""
    return Suggestion(title, words + hints, "", Confidence.MEDIUM, kind)


def user_lines(ctx: Context, facts: Facts) -> list[str]:
    """Every user line of the report that reaches the place torch stopped at (one break
    inside a shared function is reached from several lines), as ``ctx.where`` writes it."""
    out: list[str] = []
    for b in ctx.report.graph_breaks:
        stop = b.stop
        if (stop.filename, stop.lineno) != (facts.stop.filename, facts.stop.lineno):
            continue
        frames = b.callers if (b.frame.filename, b.frame.lineno) == (stop.filename, stop.lineno) else [b.frame]
        for fr in frames:
            w = ctx.where(fr)
            if fr.filename and w not in out:
                out.append(w)
    return out


def parsed_at(frame: UserFrame, ctx: Context) -> Optional[Parsed]:
    """The kept source around ``frame``, parsed (None without it)."""
    return ctx.src.parsed(frame.filename, frame.lineno, frame.source_line)


def statement_at(frame: UserFrame, ctx: Context):
    """``(parsed span, innermost statement at frame's line)``; either may be None."""
    p = parsed_at(frame, ctx)
    return p, (p.innermost_statement(frame.lineno) if p is not None else None)


def reset_note() -> str:
    return ("Set it before the first call of the compiled code (after torch._dynamo.reset() if that code was "
            "compiled already): torch reads it when it compiles.")


def path(ctx: Context, facts: Facts) -> str:
    """``transformers/modeling_utils.py:4769 in loss_function, reached from In [3], line 2``."""
    stop = f"{ctx.where(facts.stop)}" + (f" in {facts.stop.function}" if facts.stop.function else "")
    if facts.user.filename and (facts.user.filename, facts.user.lineno) != (facts.stop.filename, facts.stop.lineno):
        return f"{stop}, reached from {ctx.where(facts.user)}"
    return stop
