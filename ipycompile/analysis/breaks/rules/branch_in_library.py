"""A data-dependent branch inside a library: there is no rewrite of the user's own code;
say where it is and give torch's hints."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..base import Context, Facts, Rule, path
from ._branch import is_branch


def applies(f: Facts) -> bool:
    return is_branch(f) and f.in_library


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return Suggestion(
        f"Data-dependent branch in library code ({ctx.where(f.stop)})",
        f"torch stopped at {path(ctx, f)}: `{f.stop.source_line.strip()}` branches on a tensor's value, in "
        "code you cannot edit. torch compiles the code before and after it as separate graphs. ipycompile "
        "knows no fix from your own code for a branch inside a library.\n\n"
        + ("torch's hints:\n" + "\n".join(f"- {h}" for h in f.hints) if f.hints else ""),
        "", Confidence.LOW, Kind.BRANCH_IN_LIBRARY)


RULE = Rule(Kind.BRANCH_IN_LIBRARY, "a data-dependent branch inside a library: no rewrite of the user's code; torch's hints",
            applies, fix)
