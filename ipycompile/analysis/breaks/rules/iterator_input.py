"""A builtin iterator passed in from outside (`dict.items()`, `zip(...)`, GB0811 / GB4347; torch 2.14
says GB9493, a C-implemented `__iter__` / `__next__` it has no model of): torch cannot iterate it.
Pass a list.

Torch 2.14 steps into a generator made outside and not yet started (2.13 said GB4347, "next() on
generator"), building the values its frame was called with as constants: a tensor or an iterator
among them is GB0116 ("Unexpected type in sourceless builder"), a break with no word of the
generator. Where the statement torch stopped at iterates a name the compiled code did not bind
itself (a parameter, a global: a value made outside), that is the same break, answered the same."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Kind, Suggestion
from ...rewrite import call_name, defined_before, params, walk_scope
from ..base import Context, Facts, Rule, explained, statement_at

#: builtins that step through the iterable they are given first
_ITERATING = frozenset({"next", "iter", "list", "tuple", "set", "dict", "sum", "min", "max", "sorted", "any", "all",
                        "enumerate", "zip", "map", "filter"})


def applies(f: Facts) -> bool:
    if f.code in ("GB0811", "GB4347") or f.kind.startswith(("missing tp_iter", "Missing tp_iternext")):
        return True
    # torch 2.14: any special method implemented in C that it has no model of; an iterator only where the
    # method is the one that iterates (capture read it: ``said.c_method``). A value it cannot wrap (GB0116, a
    # generator made outside): only in the user's code, where the fix sees what the stopped statement
    # iterates (one inside a library, `deepcopy`'s, is no iterator of the user's)
    return (f.code == "GB9493" and f.said.c_method in ("__iter__", "__next__")) or (_sourceless(f) and not f.in_library)


def _sourceless(f: Facts) -> bool:
    """Torch could not wrap a value it found no source for (GB0116): 2.14 on a generator made outside."""
    return f.code == "GB0116" or f.kind == "Unexpected type in sourceless builder"


def _iterated(node: ast.AST) -> list[ast.AST]:
    """The expressions ``node`` steps through: ``next(it)``'s and ``sum(it)``'s argument, a ``for``'s
    or a comprehension's iterable."""
    out: list[ast.AST] = []
    for n in walk_scope([node]):
        if isinstance(n, ast.Call) and call_name(n) in _ITERATING and n.args:
            out += n.args if call_name(n) in ("zip", "map", "filter") else n.args[:1]
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            out.append(n.iter)
    return out


def _outside_iterated(f: Facts, ctx: Context) -> str:
    """The name made outside the compiled code (a parameter, a global) that the statement torch stopped at
    iterates, else ""."""
    if f.in_library:
        return ""
    p, stmt = statement_at(f.stop, ctx)
    if stmt is None:
        return ""
    local = set(defined_before(p, stmt)) - set(params(p.scope_of(stmt)))
    # a loop's line is its header: what it iterates, not its body
    iterated = [stmt.iter, *_iterated(stmt.iter)] if isinstance(stmt, (ast.For, ast.AsyncFor)) else _iterated(stmt)
    return next((n.id for n in iterated if isinstance(n, ast.Name) and n.id not in local), "")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if _sourceless(f):
        return _generator(f, ctx)
    what = f" (a `{f.said.iterator_type}`)" if f.said.iterator_type else ""
    return explained(
        Kind.ITERATOR_INPUT, "An iterator from outside the compiled code: pass a list",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} iterates a builtin iterator{what} that was made "
        "outside the compiled code (`d.items()`, `zip(...)`, `map(...)`), which torch cannot step through. Pass "
        "a list instead, made where the call is: `list(d.items())`, `list(zip(a, b))`. The compiled code "
        "iterates a list the same way.", f)


def _generator(f: Facts, ctx: Context) -> Optional[Suggestion]:
    name = _outside_iterated(f, ctx)
    if not name:
        return None
    return explained(
        Kind.ITERATOR_INPUT, f"An iterator from outside the compiled code (`{name}`): pass a list",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} steps through `{name}`, made outside the compiled "
        "code: torch cannot wrap the values a generator made outside was called with (a tensor, an iterator; "
        f"torch says: {f.explanation or f.kind}), nor step through a builtin iterator made outside. Pass the "
        f"values instead, made where the call is: `list({name})`, and index or loop over the list inside "
        f"(`values[0]` where the code said `next({name})`).", f)


RULE = Rule(Kind.ITERATOR_INPUT, "a builtin iterator (`dict.items()`, `zip`) or a generator made outside, passed in: "
            "pass `list(...)` of it",
            applies, fix, user_code=True)
