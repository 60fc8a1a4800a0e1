"""Where compiled results differ from eager's: the doctor pass that says so first.

A recompile or a graph break costs time; compiled code that computes something else than
the same code run eagerly costs the user wrong numbers, and no break or recompile
explanation shows it. :func:`find_eager_differences` is a doctor pass (see
:mod:`.doctor`): it fills ``CompileReport.eager_differences`` from what torch said and
did (records read by capture) and the user's source the report kept, one
:class:`~ipycompile.report.EagerDifference` per place, each naming the user's function
and line. The views show them before anything else (``views/first_screen.py``).

The kinds, :data:`KINDS`:

- ``ignored_cache``: Dynamo traced through a ``functools.lru_cache`` / ``functools.cache``
  wrapper (torch's warning, a :class:`~ipycompile.report.TorchWarning` of kind
  ``lru_cache_traced``): the cached function's body runs at every trace and its result is
  put in the graph; the cache is not asked. Where that body changes state (a ``global``
  or ``nonlocal`` it assigns, an attribute or item it sets) the compiled results differ from
  eager's; where it only reads state, they may.
- ``compiling_branch``: a compiled function (or a function it calls, in the kept source) asks
  ``torch.compiler.is_compiling()`` / ``torch._dynamo.is_compiling()``, so its compiled and
  eager results differ by the code's own design; and torch stopped compiling it (the
  recompile limit was hit, or the frame was skipped), so from then on its calls take the
  eager branch: its results change between calls of the same program.
- ``generator_escapes``: a compiled function returns a generator made in the compiled
  code (a generator expression, a call of a generator function). Torch says nothing;
  Dynamo runs the generator to its end while compiling and returns a ``tuple_iterator``
  over its values (``LocalGeneratorObjectVariable.reconstruct``, torch 2.11 to 2.13;
  pytorch/pytorch#198190): the values match, but the generator is gone: its ``return``
  value (``StopIteration.value``) is ``None``, ``.send()`` / ``.throw()`` raise
  ``AttributeError``, and every value is computed at the call, not when asked for.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING, Optional

from ..report.model import Confidence, EagerDifference, Suggestion, UserFrame
from ..report.owners import Owner
from .rewrite import walk_scope
from .source import Sources

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["find_eager_differences", "KINDS"]

#: Every kind of difference this pass recognises, with what it means.
KINDS: dict[str, str] = {
    "ignored_cache": "a `functools.lru_cache` / `cache` function called in compiled code: torch traces its body, "
                     "ignoring the cache; results differ from eager's where the body changes state",
    "generator_escapes": "a generator made in compiled code and returned: the caller gets a `tuple_iterator` of its "
                         "values (no return value, no `.send()`, not lazy)",
    "compiling_branch": "code that asks `torch.compiler.is_compiling()` in a function that then ran without compiling "
                        "(the recompile limit, a skipped frame): its calls switch to the eager branch",
}

_CACHES = ("cache", "lru_cache", "functools.cache", "functools.lru_cache")


def find_eager_differences(report: "CompileReport") -> "CompileReport":
    """The doctor pass: ``report`` with ``eager_differences`` filled (a new report)."""
    sources = Sources(report)
    found: list[EagerDifference] = []
    caches: list[tuple[EagerDifference, str, list[str]]] = []
    for w in report.torch_warnings:
        if w.kind == "lru_cache_traced":
            d, fn, changed = _ignored_cache(report, sources, w)
            found.append(d)
            caches.append((d, fn, changed))
    found += _escaping_generators(report, sources)
    found += _compiling_branches_past_the_limit(report, sources)
    seen: set = set()
    unique = []
    for d in found:
        key = (d.kind, d.frame.filename, d.frame.lineno)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    report = dataclasses.replace(report, eager_differences=unique)
    if not (caches and report.recompiles):
        return report
    try:
        return _recompiles_of_caches(report, caches)
    except Exception as exc:  # noqa: BLE001 - the differences stand without the recompiles' note; counted
        from .errors import noted

        return noted(report, "find_eager_differences", [exc])


def _recompiles_of_caches(report: "CompileReport", caches: list[tuple[EagerDifference, str, list[str]]]) -> "CompileReport":
    """A recompile on a value that an ignored cache's body changes (``calls += 1`` in a cached function: each
    trace changes the global that the next call's guard reads) says the difference from eager first: the
    versions come from torch running the cached body at every trace, and no setting about the value
    (``dynamic=True``, a tensor) removes that; the fix is the cache's (call it outside, or keep it pure)."""
    out = []
    for rc in report.recompiles:
        hit = None
        for d, fn, changed in caches:
            for g in rc.guards:
                inside = bool(fn) and g.where.rsplit(" in ", 1)[-1] == fn  # torch read the value in the cached body
                if g.kind in ("global", "value") and (inside or (g.name and g.name in changed)):
                    hit = (d, fn, g)
                    break
            if hit:
                break
        if hit is None:
            out.append(rc)
            continue
        d, fn, g = hit
        what = f"`{g.name}`" if g.name else "a value"
        first = (f"Compiled results differ from eager here: torch ignores the cache of `{fn or 'the cached function'}` "
                 f"and runs its body at every trace, and that body changes {what}, which this compiled version "
                 f"guarded: each compile changes it again, so the next call fails the guard and compiles once more, "
                 f"where eager would run the body once. Making {what} dynamic or a tensor leaves this recompile and the "
                 f"wrong results: the fix is the cache's.")
        out.append(dataclasses.replace(rc, explanation=f"{first} {rc.explanation}".strip(), suggestion=d.suggestion))
    return dataclasses.replace(report, recompiles=out)


def _compiled_def(sources: Sources, filename: str, function: str, first_line: Optional[int]):
    """The ``def`` of a compiled function in the kept source: the one at ``first_line`` (torch's
    ``co_firstlineno``, a decorator's line for a decorated function), else None."""
    if first_line is None:
        return None
    found = [(p, d) for p in sources.parsed_spans(filename) for d in p.functions(function)
             if first_line <= d.lineno <= first_line + 10]
    return min(found, key=lambda pd: pd[1].lineno) if found else None


# -- functools caches ------------------------------------------------------------------------------
def _called_names(line: str) -> list[str]:
    """The names of the functions a line of code calls (``cached_fn`` of ``y = cached_fn(1) + x``)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return []
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name and name not in out:
                out.append(name)
    return out


def _is_cached(d: ast.FunctionDef) -> bool:
    for dec in d.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        text = ast.unparse(target)
        if text in _CACHES:
            return True
    return False


def _state_changes(d: ast.FunctionDef) -> list[str]:
    """What the function's body changes outside itself: the globals and nonlocals it assigns,
    the attributes and items it sets (``self.calls += 1``, ``seen[k] = v``)."""
    body = walk_scope(d.body)
    declared = {n for s in body if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
    out: list[str] = []
    for n in body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id in declared:
                out.append(f"`{t.id}`")
            elif isinstance(t, (ast.Attribute, ast.Subscript)):
                out.append(f"`{ast.unparse(t)}`")
    return list(dict.fromkeys(out))


def _ignored_cache(report: "CompileReport", sources: Sources, w) -> tuple[EagerDifference, str, list[str]]:
    """The difference, the cached function's name ("" if not found) and the names its body changes."""
    f = w.frame
    where = report.where(f.filename, f.lineno) if f.filename else "a line torch did not name"
    in_fn = f" in `{f.function}`" if f.function else ""
    cached = None
    for name in _called_names(f.source_line):
        found = sources.find_def(f.filename, name) if f.filename else None
        if found is not None and _is_cached(found[1]):
            cached = found[1]
            break
    if cached is None:
        names = _called_names(f.source_line)
        what = f"`{names[0]}`" if len(names) == 1 else "the cached function"
        changes: list[str] = []
    else:
        what = f"`{cached.name}`"
        changes = _state_changes(cached)
    if changes:
        title = (f"Compiled results differ from eager: torch ignores the cache of {what}, called at {where}{in_fn}, "
                 f"and its body changes {', '.join(changes)}")
        effect = (f"its body runs again at every trace (each compile and recompile), changing {', '.join(changes)} "
                  "each time, where eager runs it once per argument; what the body returned while tracing is baked "
                  "into the graph. The compiled code computes something else than eager.")
    else:
        title = (f"Compiled results may differ from eager: torch ignores the cache of {what}, called at {where}{in_fn}")
        effect = ("its body runs at every trace and what it returned then is baked into the graph: where it reads "
                  "state that changes (a global, an attribute, a file), the compiled results differ from eager's.")
    explanation = (f"`{f.source_line.strip()}` calls a `functools.lru_cache` / `functools.cache` function inside "
                   f"compiled code. Torch does not ask the cache: it traces the wrapped function, so {effect}")
    fix = Suggestion(
        f"Call {what} outside the compiled code and pass its result in, or keep it free of side effects",
        "Outside the compiled function the cache works as written; inside, torch traces through it. A cached "
        "function that only computes from its arguments gives the same results either way.",
        "", Confidence.MEDIUM, "ignored_cache")
    return (EagerDifference("ignored_cache", title, explanation, f, w.message.strip(), fix),
            cached.name if cached is not None else "", [c.strip("`") for c in changes])


# -- generators that leave the compiled code ------------------------------------------------------
def _yields(d: ast.AST) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_scope(getattr(d, "body", [])))


def _generator_made(value: ast.AST, fn: ast.FunctionDef, sources: Sources, filename: str) -> str:
    """What generator ``value`` makes, in words ("`gen()`", "a generator expression"), else ""."""
    if isinstance(value, ast.GeneratorExp):
        return "a generator expression"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        name = value.func.id
        local = [d for d in walk_scope(fn.body) if isinstance(d, (ast.FunctionDef,)) and d.name == name]
        if local:
            return f"`{ast.unparse(value)}`" if _yields(local[-1]) else ""
        found = sources.find_def(filename, name)
        if found is not None and _yields(found[1]) and found[1] is not fn:
            return f"`{ast.unparse(value)}`"
    return ""


def _returned_generator(fn: ast.FunctionDef, sources: Sources, filename: str) -> Optional[tuple[ast.Return, str]]:
    """The first ``return`` of ``fn`` (its own, not a nested function's) that hands back a generator
    made in ``fn``, directly, in a tuple or list, or through a name assigned one."""
    body = walk_scope(fn.body)
    assigned: dict[str, str] = {}
    for n in body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            made = _generator_made(n.value, fn, sources, filename)
            if made:
                assigned[n.targets[0].id] = made
    for n in body:
        if not isinstance(n, ast.Return) or n.value is None:
            continue
        values = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) else [n.value]
        for v in values:
            made = assigned.get(v.id, "") if isinstance(v, ast.Name) else _generator_made(v, fn, sources, filename)
            if made:
                return n, made
    return None


def _escaping_generators(report: "CompileReport", sources: Sources) -> list[EagerDifference]:
    out = []
    seen: set = set()
    for c in report.compiles:
        if not c.function or not c.filename or c.first_line is None or (c.filename, c.function) in seen:
            continue
        seen.add((c.filename, c.function))
        if report.owner(c.filename) is not Owner.USER or c.status not in ("ok", ""):
            continue
        found = _compiled_def(sources, c.filename, c.function, c.first_line)
        if found is None:
            continue
        p, fn = found
        if _yields(fn):
            continue  # a compiled generator function: torch runs it as a generator frame, not this case
        hit = _returned_generator(fn, sources, c.filename)
        if hit is None:
            continue
        ret, made = hit
        lineno = ret.lineno  # the file's own line numbers
        frame = UserFrame(c.filename, lineno, c.function, p.line(lineno).strip())
        where = report.where(c.filename, lineno)
        out.append(EagerDifference(
            "generator_escapes",
            f"Compiled results differ from eager: `{c.function}` returns {made} from compiled code ({where}), "
            "and the caller gets a `tuple_iterator`, not a generator",
            f"Torch runs the generator to its end while compiling `{c.function}` and returns an iterator over the "
            "values it yielded. The values are the same, but the caller no longer has a generator: its `return` value "
            "is lost (`StopIteration.value` is None), `.send()` and `.throw()` raise AttributeError, and every value "
            "is computed at the call rather than when asked for (pytorch/pytorch#198190). Torch does not warn.",
            frame, "",
            Suggestion(f"Make the generator outside the compiled code: compile what it computes, not `{c.function}`",
                       "Compile the function that computes each value (or return the values as a list) and create "
                       "the generator in uncompiled code; a generator that stays inside the compiled code (consumed "
                       "there by a loop, `list()`, `sum()`) is traced as written.",
                       "", Confidence.MEDIUM, "generator_escapes")))
    return out


# -- is_compiling() branches in a function torch stopped compiling -------------------------------------
_COMPILING = ("is_compiling", "is_dynamo_compiling")


def _asks_compiling(fn: ast.FunctionDef) -> Optional[ast.Call]:
    for n in walk_scope(fn.body):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _COMPILING:
                return n
    return None


def _compiling_branches_past_the_limit(report: "CompileReport", sources: Sources) -> list[EagerDifference]:
    stopped: dict[tuple, str] = {}
    for rc in report.recompiles:
        if rc.limit_hit and rc.filename and rc.function:
            stopped.setdefault((rc.filename, rc.function), "hit the recompile limit" + (f" ({rc.limit})" if rc.limit else ""))
    for c in report.ran_without_compiling:
        if c.filename and c.function:
            stopped.setdefault((c.filename, c.function), "could not be compiled")
    out = []
    for (filename, function), why in stopped.items():
        if report.owner(filename) is not Owner.USER:
            continue
        first = next((c.first_line for c in report.compiles if (c.filename, c.function) == (filename, function)
                      and c.first_line is not None), None)
        found = _compiled_def(sources, filename, function, first)
        if found is None:
            continue
        p, fn = found
        asks, where_fn = _asks_compiling(fn), fn
        if asks is None:  # a function it calls by name, in the kept source (torch inlines it)
            for name in dict.fromkeys(n.func.id for n in walk_scope(fn.body)
                                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                callee = sources.find_def(filename, name)
                if callee is not None and callee[1] is not fn and (asks := _asks_compiling(callee[1])) is not None:
                    p, where_fn = callee
                    break
        if asks is None:
            continue
        frame = UserFrame(filename, asks.lineno, where_fn.name, p.line(asks.lineno).strip())
        where = report.where(filename, asks.lineno)
        call = ast.unparse(asks)
        out.append(EagerDifference(
            "compiling_branch",
            f"Compiled results differ from eager, and change between calls: `{function}` asks `{call}` "
            f"({where}) and {why}, so its later calls run eagerly and take the other branch",
            f"`{call}` is True while torch traces the code and False when it runs eagerly, so the code computes one "
            f"thing compiled and another without torch.compile, by its own design. `{function}` {why}: torch runs "
            "it eagerly from then on, so the calls before and after compute different results. Keep the function "
            "compiling (see the recompile's fix) or make both branches compute the same result.",
            frame, "",
            Suggestion(f"Keep `{function}` compiling, or make both branches of `{call}` give the same result",
                       "Results that depend on whether the code is compiled change whenever torch stops compiling it.",
                       "", Confidence.MEDIUM, "compiling_branch")))
    return out
