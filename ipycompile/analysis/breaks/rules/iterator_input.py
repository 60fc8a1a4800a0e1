"""A builtin iterator passed in from outside (`dict.items()`, `zip(...)`, GB0811 / GB4347; torch 2.14
says GB9493, a C-implemented `__iter__` / `__next__` it has no model of): torch cannot iterate it.
Pass a list."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained



def applies(f: Facts) -> bool:
    if f.code in ("GB0811", "GB4347") or f.kind.startswith(("missing tp_iter", "Missing tp_iternext")):
        return True
    # torch 2.14: any special method implemented in C that it has no model of; an iterator only
    # where the method is the one that iterates (capture read it: ``said.c_method``)
    return f.code == "GB9493" and f.said.c_method in ("__iter__", "__next__")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    what = f" (a `{f.said.iterator_type}`)" if f.said.iterator_type else ""
    return explained(
        Kind.ITERATOR_INPUT, "An iterator from outside the compiled code: pass a list",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} iterates a builtin iterator{what} that was made "
        "outside the compiled code (`d.items()`, `zip(...)`, `map(...)`), which torch cannot step through. Pass "
        "a list instead, made where the call is: `list(d.items())`, `list(zip(a, b))`. The compiled code "
        "iterates a list the same way.", f)


RULE = Rule(Kind.ITERATOR_INPUT, "a builtin iterator (`dict.items()`, `zip`) passed in: pass `list(...)` of it",
            applies, fix, user_code=True)
