"""A Python generator that changes outside state (`nonlocal`, an item or attribute set) and
must be carried across a graph break (GB8335): keep generators free of mutations."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained


def applies(f: Facts) -> bool:
    return f.code == "GB8335" or f.kind.startswith("Generator reconstruction with mutations")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    return explained(
        Kind.GENERATOR_MUTATION, "A generator that changes state outside itself",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} is a change a generator makes to something outside "
        "it (a dict item, an attribute, a `nonlocal`), and torch must hand the generator back to Python at a "
        "graph break: it would have to run the generator to its end to rebuild it, changing that state early, "
        "so it gives up (a fundamental limit, torch says). Keep the generator free of such changes: yield the "
        "values and apply the change in the loop that consumes them; or consume it whole (`list(gen)`) before "
        "the break.", f)


RULE = Rule(Kind.GENERATOR_MUTATION, "a generator that mutates outside state across a graph break: yield the values, "
            "change the state in the consumer", applies, fix, user_code=True)
