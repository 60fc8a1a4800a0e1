"""A call to a function wrapped in `torch.compiler.disable` (GB0098 where torch calls it, GB0099 where
it would have inlined it: a method, or `disable(recursive=False)`): torch runs it uncompiled as asked,
so the graph breaks at the call. Say which function, and the choice."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained



def applies(f: Facts) -> bool:
    return f.code in ("GB0098", "GB0099") or f.kind.startswith(
        ("Skip calling `torch.compiler.disable()`d function", "Skip inlining `torch.compiler.disable()`d function"))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
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
            "disable, or keep it (a custom op keeps untraceable code in the graph)", applies, fix, user_code=True)
