"""A break no rule answers whose hints name a setting (``torch._dynamo.config.x = True``):
torch's own hint, offered as torch's words and marked unverified. Tried last: the rules
before it check a setting's preconditions on the user's code; where none could, torch's
hint is still better than silence, but the doctor does not vouch for it, so it is words,
not a fix to apply (``code`` is empty): on PyTorch's own tests the same hints move the
break (``capture_scalar_outputs`` on a conversion of several elements) as often as they
remove it."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..base import Context, Facts, Rule, path, reset_note


def applies(f: Facts) -> bool:
    return bool(f.hinted_settings)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    settings = f.hinted_settings
    said = f"torch says: {f.explanation}" if f.explanation else f"torch says: {f.kind}"
    hints = "\n".join(f"- {h}" for h in f.hints)
    return Suggestion(
        f"torch's hint, not verified on this code: {settings[0]}" + (f" (and {len(settings) - 1} more)" if len(settings) > 1 else ""),
        f"At {path(ctx, f)}. {said}\n\ntorch's hints:\n{hints}\n\ntorch's hint names the setting "
        + " and ".join(f"`{s}`" for s in settings) + ". ipycompile could not check on your code that it removes "
        "this break with the same results: it is unverified, and on some code it only moves the break or makes "
        "the compile fail. Try it and check that the break is gone and the outputs unchanged. " + reset_note(),
        "", Confidence.LOW, Kind.TORCH_HINT)


RULE = Rule(Kind.TORCH_HINT, "no rule fits, and torch's hints name a setting: that setting, as torch's words, "
            "marked unverified", applies, fix)
