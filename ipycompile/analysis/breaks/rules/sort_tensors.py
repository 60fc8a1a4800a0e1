"""`sorted()` of a list of tensors (GB0207): the order depends on the values. Sort a tensor."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB0207" or f.kind.startswith("sort with non-constant keys")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return explained(
        Kind.SORT_TENSORS, "sorted() of tensors: the order depends on their values",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} sorts Python objects by comparing tensors, whose "
        "order torch cannot know while it traces. Sort the values as one tensor, which the graph keeps: "
        "`torch.stack(items).sort(stable=True).values` (a tensor of the sorted values; `.unbind()` gives them back "
        "as a list of 0-dim tensors). For a key that is not a tensor's value, sort by that key outside the "
        "compiled code.", f)


RULE = Rule(Kind.SORT_TENSORS, "`sorted()` of tensors: sort one stacked tensor (`torch.stack(items).sort()`)", applies, fix, user_code=True)
