"""A call to a function wrapped in `torch.compiler.disable` (GB0098 where torch calls it, GB0099 where
it would have inlined it: a method, or `disable(recursive=False)`): torch runs it uncompiled as asked,
so the graph breaks at the call. Say which function, and the choice.

Also the decorator itself called inside the compiled code (GB0007 on ``torch._dynamo.decorators.disable``,
what ``torch._dynamo.disable()`` and ``torch.compiler.disable()`` call; torch 2.14 says GB0376 / GB0377,
"Call to `torch.compiler.disable()`"): it marks nothing there. Called
without a function it returns a decorator, which the code discards; torch skips its own module, so the
graph breaks at the call. Moving the call out or deleting it would leave the code as it was, so the answer
is the decorator's use, in words: on the ``def`` of the function meant to run uncompiled."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained
from ._calls import callee_call

#: torch's own modules of the decorator `disable` (``torch._dynamo.disable``, ``torch.compiler.disable``)
_DISABLE_MODULES = ("torch._dynamo.decorators", "torch._dynamo", "torch.compiler")
#: the breaks torch gives such a call: a skipped function (torch 2.13), a call of its disable API (2.14)
_DISABLE_CALL_CODES = ("GB0007", "GB0376", "GB0377")


def _decorator_called(f: Facts) -> bool:
    """The break is a call of the decorator `disable` itself, made inside the compiled code."""
    return (f.code in _DISABLE_CALL_CODES and f.said.callee_module in _DISABLE_MODULES
            and f.said.callee_qualname == "disable")


def applies(f: Facts) -> bool:
    return _decorator_called(f) or f.code in ("GB0098", "GB0099") or f.kind.startswith(
        ("Skip calling `torch.compiler.disable()`d function", "Skip inlining `torch.compiler.disable()`d function"))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if _decorator_called(f):
        found = callee_call(f, ctx)
        call = found[2] if found is not None else None
        bare = call is not None and not call.args and not any(k.arg == "fn" for k in call.keywords)
        line = found[0].segment(found[1]).replace("\n", " ") if found is not None else f.stop.source_line.strip()
        what = ("Called without a function it disables nothing: it only returns a decorator, which this line "
                "discards. " if bare else
                "Wrapping a function here is itself a call torch does not trace, made again at each call. ")
        return explained(
            Kind.COMPILER_DISABLE, "torch's decorator `disable` is called inside the compiled code",
            f"`{line}` at {ctx.where(f.stop)} calls torch's decorator `disable` inside the code being compiled, and "
            f"torch does not trace its own decorators, so the graph breaks at the call. {what}"
            "To run a function uncompiled, put the decorator on its `def` (`@torch.compiler.disable`) or wrap it "
            "once, outside the compiled code (`helper = torch.compiler.disable(helper)`): torch then calls it "
            "uncompiled, as asked (the graph breaks at that call: the price of that choice)."
            + (" If no function was meant to run uncompiled, the line does nothing and can go." if bare else ""), f)
    name = f.said.function.rsplit(".", 1)[-1]
    fn = f"`{name}`" if name else "the function called"
    return explained(
        Kind.COMPILER_DISABLE, f"{fn} is wrapped in torch.compiler.disable: the graph breaks at each call",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls {fn}, which is wrapped in "
        "`torch.compiler.disable` (a decorator, or a call of it): torch runs it uncompiled, as asked, and compiles "
        "the code before and after the call as separate graphs (with `recursive=False`, only its own frame: the "
        "functions it calls are compiled as frames of their own, and their breaks are shown on their own). If it "
        "was disabled because torch cannot trace it, "
        "the break is the price of that choice (a `torch.library.custom_op` keeps such code in the graph as one "
        f"opaque op). If not, remove the `torch.compiler.disable` from {fn} and the graph goes on.", f)


RULE = Rule(Kind.COMPILER_DISABLE, "a call to a `torch.compiler.disable`d function: the break is asked for; remove the "
            "disable, or keep it (a custom op keeps untraceable code in the graph); the decorator called inside the "
            "compiled code: put it on the function's `def`", applies, fix, user_code=True)
