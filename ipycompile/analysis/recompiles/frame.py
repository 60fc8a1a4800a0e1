"""The whole-frame answers: what the rule's answer for one change becomes once the recompile's other
facts are read (the other sizes and values the same call changed, the function's owner and source, the
conditions torch asked of its sizes, the frame's other versions, the recompile limit). They are listed
once, in order, in :data:`ANSWERS`, and applied after the rule (:func:`answer_for_frame`): each reads the
answer so far and may replace it, or add a sentence to the explanation. The kinds they write are
:data:`FRAME_KINDS`.

The limit in effect is what the report recorded (``Recompile.limit``, the global
``CompileReport.recompile_limits`` capture read from ``torch._dynamo.config``); this layer imports no torch."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ...report.model import (CompileId, Confidence, Fix, GuardEntry, Kind, Mark, Recompile, Setting, ShapeGuard,
                            SizeSymbol, Suggestion)
from .base import BEFORE, answer, dynamo_setting
from .lines import needs_the_int, reads_size
from .reading import Reason, simple, tensor_sizes, value_kind
from .rules import mark_unbacked, module_int_attribute
from .words import shown, size_words, value_words

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport

#: torch's default ``torch._dynamo.config.recompile_limit``, for a report that recorded no limit (one saved
#: before capture recorded the limits in effect, or built by hand); capture records the limits torch had while
#: it was open (``CompileReport.recompile_limits``), and those are read first
TORCH_DEFAULT_RECOMPILE_LIMIT = 8


@dataclasses.dataclass(frozen=True)
class Call:
    """One recompile as the whole-frame answers read it: the report, the recompile, its first change read
    (None where torch named no guard) and whether the new compile made it dynamic, the guards of the failed
    and the new compile, and the sizes and values the same call changed besides (``hidden_sizes``,
    ``hidden_values``)."""

    report: "CompileReport"
    rc: Recompile
    first: Optional[Reason]
    dynamic: bool
    failed: list
    new: list
    hidden: list
    values: list

    @property
    def limit(self) -> int:
        """The recompile limit of this function: the one torch hit, else the global one capture recorded,
        else torch's default."""
        return self.rc.limit or self.report.recompile_limits.get("recompile_limit") or TORCH_DEFAULT_RECOMPILE_LIMIT


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A whole-frame answer's decision: the suggestion from now on, and a sentence for the explanation,
    said first (``lead``) or last (``tail``)."""

    suggestion: Optional[Suggestion]
    lead: str = ""
    tail: str = ""


@dataclasses.dataclass(frozen=True)
class FrameAnswer:
    """One whole-frame answer: the kind it writes (None: it amends the answer so far, keeping its kind), what
    it means, and its decision (None where it does not apply: the answer so far stands)."""

    kind: Optional[Kind]
    doc: str
    decide: Callable[[Call, Optional[Suggestion]], Optional[Verdict]]


def _markable(hidden: list, parameters: set = frozenset()) -> bool:
    """Every hidden size is a dimension of a tensor the user's code names, never 0 or 1 on either side
    (``mark_dynamic`` specialises those too), and no nn.Parameter (whose marks torch ignores)."""
    return all(m and simple(m) and a is not None and a not in (0, 1) and b not in (0, 1) and p not in parameters
               for m, _, a, b, p in hidden)


def _with_hidden(root: Optional[Suggestion], r: Reason, hidden: list, values: Sequence = ()) -> Optional[Suggestion]:
    """``root``, the fix for the change torch's reason names, made right for the whole call where the call
    changed other sizes too: the marks for those added to its code (each such size never 0 or 1), else its
    code withheld (words: a fix for one change leaves the recompile). A fix that marks every changed size
    already (``mark_dynamic``) or makes every size dynamic (``dynamic=True``) stays as it is; ``mark_unbacked``
    is withheld (several sizes at 0 or 1 together: see :func:`.rules.mark_unbacked.with_others`)."""
    if root is None or not root.code or not (hidden or values):
        return root
    if values:  # a number or a flag changed too: no mark reaches it, and its use is not known here
        unmarked = [h for h in hidden if f"mark_dynamic({h[0]}, {h[1]})" not in root.code]
        return dataclasses.replace(
            root, code="", fix=None, confidence=Confidence.MEDIUM,
            explanation=root.explanation + " The same call changed "
            + " and ".join(w for w in (size_words(unmarked) if unmarked else "", value_words(list(values))) if w)
            + " too (torch's reason names only the first guard that failed), which this fix does not reach: alone "
            "it would leave this recompile, so no code is given. Fix what changes in each input.")
    if root.kind == Kind.MARK_UNBACKED:
        return mark_unbacked.with_others(r, hidden)
    # the marks added are of the kind the fix's own marks are: a fix that chose `maybe_mark_dynamic` (a size that
    # meets a static one in another frame, where a strict mark raises) gets no strict mark beside it
    kind = "maybe_mark_dynamic" if root.fix is not None and any(
        mk.function == "maybe_mark_dynamic" for mk in root.fix.marks) else "mark_dynamic"
    marks = [Mark(kind, m, d, BEFORE) for m, d, *_ in hidden]
    if root.fix is not None:
        have = {(mk.target, mk.dim) for mk in root.fix.marks if mk.function in ("mark_dynamic", "maybe_mark_dynamic")}
        if all((mk.target, mk.dim) in have for mk in marks) or root.fix.compile_options.get("dynamic") == "True":
            return root
    else:  # code that is no record (a template): the marks written after its lines, as text
        lines = root.code.split("\n")
        fix_lines = [ln for ln in lines if not ln.lstrip().startswith("#")]
        comments = [ln for ln in lines if ln.lstrip().startswith("#")]
        if all(mk.statement in root.code for mk in marks) or any("dynamic=True" in ln for ln in fix_lines):
            return root
    words = size_words(hidden)
    if _markable(hidden, r.parameters):
        fix = root.fix.marked(*marks) if root.fix is not None else None
        return dataclasses.replace(
            root, code=fix.code if fix is not None else "\n".join(
                [*fix_lines, *(f"{mk.statement}  # {mk.comment}" for mk in marks), *comments]), fix=fix,
            explanation=root.explanation + f" The same call changed {words} too (torch's reason names only the "
            "first guard that failed): the fix alone would leave this recompile, so the code marks "
            + ("that dimension" if len(hidden) == 1 else "those dimensions") + " dynamic as well.")
    return dataclasses.replace(
        root, code="", fix=None, confidence=Confidence.MEDIUM,
        explanation=root.explanation + f" The same call changed {words} too (torch's reason names only the first "
        "guard that failed), which this fix does not reach: alone it would leave this recompile, so no code is "
        "given. Fix what changes in each input, or compile with `dynamic=True` where no size is 0 or 1.")


def _size_branch(report: "CompileReport", rc: Recompile, r: Reason) -> str:
    """Where the compiled function's kept source branches on the size ``r`` is about (an ``if``/``while``/``assert``
    test, a conditional expression, a Python loop over ``range`` of it): ``"`line` at file:n"``; "" where it does not
    or the source is not kept. The function's parameter is torch's name for the argument."""
    from ..source import Sources

    name, dim = r.guard.path, r.change.dim
    if r.guard.origin != "argument" or dim is None or not name.isidentifier():
        return ""
    found = Sources(report).find_def(rc.filename, rc.function)
    if found is None:
        return ""
    parsed, fn = found
    for n in ast.walk(fn):
        tests = [n.test] if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) else []
        if isinstance(n, (ast.For, ast.comprehension)) and isinstance(n.iter, ast.Call) \
                and isinstance(n.iter.func, ast.Name) and n.iter.func.id == "range":
            tests.append(n.iter)
        if any(reads_size(t, name, dim) for t in tests):
            line = getattr(n, "lineno", None) or tests[0].lineno
            return f"`{parsed.line(line).strip()}` at {report.where(rc.filename, line)}"
    return ""


def _limit_suggestion(rc: Recompile, root: Optional[Suggestion], versions: int, setting: Optional[int],
                      subject: str, carried: str = "", others: Sequence[str] = ()) -> Suggestion:
    """The recompile limit's answer: the cause's fix first; a higher limit as code only where it
    is known to be the global setting that is in effect (``setting``: the global value while
    the capture was open; a ``torch.compile(recompile_limit=...)`` overrides it for the
    function, and then the global line changes nothing) and the change is in an input of the
    user's code (``subject``; a value torch carries across a graph break, ``___stack0``, is not:
    what its next version compiles to is unknown). Otherwise both ways, in words."""
    has_fix = root is not None and bool(root.code) and not others
    fix = (f"First fix what changes: {root.title}.\n" if has_fix else f"What changes: {root.title}.\n" if root else "")
    if others and root is not None and root.code:
        # the cause's own fix, alone, is no fix of the limit: the frame's other versions came from other changes
        fix += (f"Its fix alone leaves the versions of `{rc.shown_function or 'the function'}` made for other changes "
                f"({', '.join(others)}): with them the limit ({rc.limit}) is hit again by a new value of those. Each needs "
                "its own answer (see the other recompiles of this function).\n")
    name = rc.limit_type or "recompile_limit"
    raise_to = max(2 * versions, versions + 4) if versions else 16
    words = ("Torch keeps a bounded number of compiled versions per function; past it the function runs "
             "uncompiled. A higher limit helps only when each version is needed and the set of versions is small; "
             "if something changes on every call, a higher limit only delays this. ")
    global_line = f"torch._dynamo.config.{name} = {raise_to}"
    per_function = name == "recompile_limit"
    code = root.code if has_fix else ""
    record = root.fix if has_fix else None  # the cause's fix as a record (None: words or a template)
    if rc.limit is not None and setting == rc.limit and simple(subject):
        words += (f"The limit in effect ({rc.limit}) is the global `torch._dynamo.config.{name}`"
                  + (" (a `recompile_limit=` passed to torch.compile would override it: raise it there if one was "
                     "passed)." if per_function else "."))
        limit = Fix(lead="only if every version is really needed (a few dtypes, a few shapes):",
                    settings=[Setting("dynamo", name, str(raise_to),
                                      comment=f"before the calls; {versions} versions were compiled")])
        record = limit if not code else dataclasses.replace(record, then=limit) if record is not None else None
        code = record.code if record is not None else f"{code}\n\n{limit.code}"
    elif rc.limit is not None and setting is not None and setting != rc.limit and per_function:
        words += (f"The limit in effect here ({rc.limit}) is not the global `torch._dynamo.config.recompile_limit` "
                  f"({setting}): it was set for this function, by `torch.compile(..., recompile_limit={rc.limit})`, "
                  "which overrides the global setting (or the setting was changed around the calls, as a "
                  "`torch._dynamo.config.patch` does), so changing the global line does nothing: raise it where it "
                  f"was set (`recompile_limit={raise_to}`).")
    elif carried:
        words += (f"What changes ({carried}) is a value torch carries across a graph break, not an input of "
                  "your code: whether one more version would compile is unknown, so fix the graph break first. "
                  f"To raise the limit anyway: `recompile_limit={raise_to}` in the torch.compile(...) call if one "
                  f"was passed there (it overrides the global setting), else `{global_line}` before the calls.")
    else:
        words += ("Where the limit was set is unknown here: raise it there: "
                  + (f"`recompile_limit={raise_to}` in the torch.compile(...) call if one was passed there (it "
                     "overrides the global setting), else " if per_function else "")
                  + f"`{global_line}` before the calls.")
    return Suggestion(
        f"recompile_limit: `{rc.shown_function or 'the function'}` runs eagerly now; fix the cause, raise the limit only if justified",
        fix + words, code,
        Confidence.MEDIUM if root is None else root.confidence,
        Kind.RECOMPILE_LIMIT, fix=record,
    )


def _loose(path: str) -> str:
    """A path with its indices blurred: ``cache.layers[3].keys`` and ``cache.layers[0].keys`` read the same."""
    return "".join("#" if c.isdigit() else c for c in path)


def _per_layer(report: "CompileReport", rc: Recompile, r: Reason, new: list[GuardEntry]) -> Optional[tuple[int, bool]]:
    """``(versions so far, reads an indexed entry)`` when ``rc`` is one layer of a stack of repeated modules
    compiled one by one (per-layer ``compile()``, FSDP2's ``fully_shard`` per layer): every compile of the
    frame is called from the same line, and what changed is a module's int attribute or an indexed entry
    (``cache.layers[1]``) that each layer reads by its own index. None otherwise."""
    g = r.guard
    frame = [x for x in report.compiles if x.compile_id.frame_id == rc.compile_id.frame_id
             and x.compile_id.compiled_autograd_id == rc.compile_id.compiled_autograd_id]
    mine = [x for x in report.recompiles if x.compile_id.frame_id == rc.compile_id.frame_id
            and x.compile_id.compiled_autograd_id == rc.compile_id.compiled_autograd_id]
    callers = {(x.caller.filename, x.caller.lineno) for x in mine}
    if len(callers) != 1 or not next(iter(callers))[0] or not any(x.loop_over for x in mine):
        return None  # one line calls every version, and it calls the variable of a loop over a container
    if g.origin == "carried":
        return None
    # the new compile guards the same entry under another index: each layer reads its own (`layers[1]`, not `[0]`)
    others = [e.path for e in new] + [x.guards[0].path for x in mine if x.guards]  # the limit's compile has no guards
    indexed = g.kind in ("value", "identity", "length", "type", "attribute") and any(
        p != g.path and _loose(p) == _loose(g.path) for p in others)
    int_attr = g.kind == "value" and value_kind(g.before) == "int" and (
        "allow_unspec_int_on_nn_module" in g.note or g.origin == "module"
        or g.path.startswith("self."))  # an int attribute of the layer (FSDP2's wrapped layers get no HINT)
    if not (indexed or int_attr):
        return None
    versions = sum(1 for x in frame if x.status != "recompile limit")
    return versions, indexed and not int_attr


def _per_layer_suggestion(rc: Recompile, r: Reason, versions: int, limit: int) -> Suggestion:
    g = r.guard
    hit = rc.limit_hit
    use, what = needs_the_int(r) if r.code and _loose(g.path) == g.path else ("", "")  # an indexed entry: the index
    why = ("the index picks a Python object" if not use or what.startswith("an index")
           else f"`{use}` is {what}, which torch specialises")
    return answer(
        Kind.PER_LAYER, ("each layer compiles a version of its own: the recompile limit was hit, later layers run eagerly"
                         if hit else f"each layer compiles a version of its own; past {limit} layers the rest run eagerly"),
        f"The same code is compiled once per layer of `{rc.loop_over}` (each layer's `forward` compiled on its own, as per-layer "
        f"`compile()` or FSDP2's `fully_shard` per layer do), and each layer reads its own entry ({shown(r)}, by the "
        f"layer's index), which torch must know: each layer is a version of its own. {versions} version(s) so far; "
        f"torch keeps at most `recompile_limit` ({limit}) versions per function, so in a model with more layers "
        f"{'the layers past it ran' if hit else 'the layers past it run'} eagerly (uncompiled). `dynamic=True` and "
        f"`allow_unspec_int_on_nn_module` do not help: {why}. Raise the limit to at least "
        "the number of layers (each layer then compiles once, and every later call reuses its version), or compile "
        "the whole model once (one trace of its loop over the layers)." + (
            "" if hit else " Nothing to fix while the model has fewer layers than the limit."),
        # the setting only where the limit was hit: below it, a higher limit changes nothing
        dynamo_setting("recompile_limit", "64", "at least the number of layers; before the first call") if hit else None)


def _values_at(report: "CompileReport", cid: Optional[CompileId], entries: list[GuardEntry]) -> Callable[[SizeSymbol], Optional[int]]:
    """The value each size (or int) a symbol stands for had in the compile ``cid``: its tensor guard's size
    or stride where that was static, else the value torch saw when it made the symbol there."""
    comp = next((c for c in report.compiles if c.compile_id == cid), None) if cid is not None else None
    seen = {(x.kind, x.path, x.dim): x.value for x in (comp.size_symbols if comp is not None else [])}
    tensors = {e.path: e for e in entries if e.type == "TENSOR_MATCH" and e.path}

    def value(x: SizeSymbol) -> Optional[int]:
        e = tensors.get(x.path)
        if e is not None and x.kind in ("size", "stride") and x.dim is not None:
            got = e.sizes if x.kind == "size" else e.strides
            if x.dim < len(got) and got[x.dim] is not None:
                return got[x.dim]
        if x.kind == "int":
            v = next((e.value for e in entries if e.path == x.path and e.value), "")
            if re.fullmatch(r"-?\d+", v.strip()):
                return int(v)
        return seen.get((x.kind, x.path, x.dim))

    return value


def _first_unmet(guards: list[ShapeGuard], value: Callable[[SizeSymbol], Optional[int]]) -> Optional[tuple[ShapeGuard, dict]]:
    """The first of ``guards`` (in the order torch asked them) that the sizes ``value`` gives do not meet, with
    those sizes by symbol: where code traced for those sizes would go the other way. None where every guard
    is met or cannot be evaluated."""
    for g in guards:
        values = {x.symbol: v for x in g.symbols if (v := value(x)) is not None}
        if g.holds(values) is False and any(x.value != values.get(x.symbol) for x in g.symbols):
            return g, values
    return None


def _symbol_names(g: ShapeGuard, entries: list[GuardEntry], r: Reason) -> dict[str, str]:
    """Each symbol of ``g`` as the user's code would read it (``x.shape[1]``); a tensor no name of the
    user's holds is "dim 1 of an input"."""
    names = {e.path: e.name for e in entries if e.type == "TENSOR_MATCH" and e.path and e.name}
    if r.nameable and r.src:
        names[r.src] = r.change.subject
    out = {}
    for x in g.symbols:
        name = names.get(x.path, "")
        if x.kind == "size" and x.dim is not None:
            out[x.symbol] = f"{name}.shape[{x.dim}]" if simple(name) else f"(dim {x.dim} of an input)"
        elif x.kind == "stride" and x.dim is not None:
            out[x.symbol] = f"{name}.stride({x.dim})" if simple(name) else f"(stride {x.dim} of an input)"
        elif x.kind == "int" and r.nameable and x.path == r.src:
            out[x.symbol] = r.change.subject
    return out


def _size_condition(report: "CompileReport", rc: Recompile, r: Reason, dynamic: bool,
                    failed: list[GuardEntry], new: list[GuardEntry]) -> Optional[Suggestion]:
    """A recompile that making the size dynamic from the first call cannot remove, read from the guards torch
    added on symbolic sizes (``report.shape_guards``): the new, dynamic version asks a condition of the size that
    the first call's size does not meet (a branch on it, `kv_length >= window`; a size the code needs as a
    number, `Eq(s0, 12)`), or the failed version's condition is what the new size missed. None where no such
    record shows it (then the usual answer stands)."""
    ch = r.change
    cid, old = rc.compile_id, r.guard.failed_compile_id
    made = next((c for c in report.compiles if c.compile_id == cid), None)
    symbols = {(x.path, x.dim) for x in (made.size_symbols if made is not None else []) if x.kind == "size"}
    # every size that changed became a symbol in the new version (dynamic, or dynamic then specialised): the first
    # call differs from this one only in sizes a mark makes dynamic (not in a module's parameter, kept static)
    before, after = tensor_sizes(failed), tensor_sizes(new)
    # (a tensor the new version does not guard, or a 0-dim one, changed no size)
    changed = {(p, d) for p, sizes in before.items() if p in after and len(sizes) == len(after[p])
               for d, (a, b) in enumerate(zip(sizes, after[p])) if a != b}
    symbolic = (r.src, ch.dim) in symbols and bool(changed) and changed <= symbols
    if ch.kind == "size" and symbolic:  # the new version, at the first call's sizes
        found = _first_unmet([g for g in report.shape_guards if g.compile_id == cid], _values_at(report, old, failed))
        then = "the first call's" if old is not None and old.frame_compile_id == 0 else "the earlier version's"
    elif ch.kind == "symbolic" and old is not None:  # the failed (dynamic) version, at this call's sizes
        found = _first_unmet([g for g in report.shape_guards if g.compile_id == old], _values_at(report, cid, new))
        then = "this call's"
    else:
        return None
    if found is None:
        return None
    g, values = found
    names = {**{x.symbol: x.symbol for x in g.symbols}, **_symbol_names(g, new or failed, r)}
    cond = g.render(names)
    sizes = ", ".join(f"{names[x.symbol]} = {values[x.symbol]}" for x in g.symbols if x.symbol in values)
    place = g.place
    where = report.where(place.filename, place.lineno) if place.filename else "a line torch did not record"
    if place.function:
        where += f" in `{place.function}`"
    line = f" (`{place.source_line.strip()}`)" if place.source_line.strip() else ""
    mine = report.owner(place.filename).value == "user" if place.filename else False
    whose = "your code" if mine else ("torch's own code" if report.owner(place.filename).value == "torch"
                                      else "a library's code, not yours")
    pinned = g.pinned
    if pinned is not None and ch.kind == "size":
        sym = pinned[0]
        return answer(
            Kind.SIZE_CONDITION, f"the compiled code needs `{names.get(sym, sym)}` as a number: every size compiles "
            "its own version, and mark_dynamic raises",
            f"Torch made the size dynamic in the new version, but the code specialised it there: it needs "
            f"`{names.get(sym, sym)}` as a plain number at {where}{line}, {whose}, so the version holds only for "
            f"`{cond}` (torch's guard `{g.expr}`). Each new size compiles a version of its own, up to the recompile "
            "limit, after which the function runs eagerly. `torch._dynamo.mark_dynamic` on that size raises "
            "ConstraintViolationError (torch refuses a dynamic mark on a size the code specialises), and "
            "`dynamic=True` specialises it the same way: neither helps. To avoid it, call with a few fixed sizes "
            "(pad to one length, or to a few buckets)" + (", or change that line so it does not turn the size "
            "into a Python number" if mine else "") + ".", confidence=Confidence.MEDIUM)
    fix_side = ("keep the sizes on one side of it in every call (pad or cut them to one side)"
                + (", or compute both branches without a Python `if` on the size (`torch.where`)" if mine else
                   ", or look for the library's own option that leads to that line"))
    if ch.kind == "size":
        head = (f"Torch made the size dynamic in the new version, but the code compiled here asks a condition of "
                f"it: that version holds only while `{cond}` (torch's guard `{g.expr}`), asked at {where}{line}, "
                f"{whose}. {then[0].upper() + then[1:]} sizes ({sizes}) do not meet it: a version compiled for them "
                "takes the other side of that condition, so marking the size dynamic before the first call "
                "(`torch._dynamo.mark_dynamic`, or `dynamic=True`) would leave this recompile. Such a mark only makes "
                "the first call's version dynamic too, so that later sizes on its side reuse it instead of compiling "
                "once more.")
    else:
        head = (f"The compiled version held only while `{cond}` (torch's guard `{g.expr}`), asked at {where}{line}, "
                f"{whose}; {then} sizes ({sizes}) are on the other side of it, so torch compiles the other side's "
                "version. The size is already dynamic: no mark removes this recompile.")
    return answer(
        Kind.SIZE_CONDITION, f"the compiled code branches on a size (`{cond}`, {where}): one version per side, "
        "which no mark removes",
        head + " It is bounded: sizes on one side of the condition share one version (while they meet torch's other "
        f"guards), so this recompile happens once for the other side, not once per size. To avoid it, {fix_side}. "
        "Otherwise nothing to fix.", confidence=Confidence.MEDIUM)


def _other_changes(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    if not (call.hidden or call.values) or root is None or not root.code:
        return None
    return Verdict(_with_hidden(root, call.first, call.hidden, call.values))


def _unbacked_in_library(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    if not (root is not None and root.kind == Kind.MARK_UNBACKED and root.code
            and call.report.owner(call.rc.filename).value == "library"):
        return None
    return Verdict(mark_unbacked.in_library(call.first, call.rc))


def _unbacked_branches(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    if not (root is not None and root.kind == Kind.MARK_UNBACKED and root.code):
        return None
    branch = _size_branch(call.report, call.rc, call.first)
    return Verdict(mark_unbacked.branches(call.first, branch)) if branch else None


def _condition(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    # a value a library passes keeps library_value's answer: no line of the user's could mark it anyway
    if call.first is None or call.first.guard.origin == "library":
        return None
    found = _size_condition(call.report, call.rc, call.first, call.dynamic, call.failed, call.new)
    return Verdict(found) if found is not None else None


def _layers(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    layered = _per_layer(call.report, call.rc, call.first, call.new) if call.first is not None else None
    if layered is None:
        return None
    versions, indexed = layered
    setting = None if indexed else module_int_attribute.fix(call.first, call.dynamic)
    if setting is None or not setting.code:  # an index, a loop count or a condition: torch needs the value
        return Verdict(_per_layer_suggestion(call.rc, call.first, versions, call.limit))
    # one setting for every layer, torch's own hint, where the int only feeds arithmetic
    return Verdict(setting, tail=f"Each layer of `{call.rc.loop_over}` compiles a version of its own ({versions} so "
                   f"far): in a model with more than {call.limit} such layers (`recompile_limit`), the layers past it "
                   "run eagerly")


def _limit(call: Call, root: Optional[Suggestion]) -> Optional[Verdict]:
    report, rc, first = call.report, call.rc, call.first
    if not rc.limit_hit:
        return None
    frame = [x for x in report.compiles if x.compile_id.frame_id == rc.compile_id.frame_id
             and x.compile_id.compiled_autograd_id == rc.compile_id.compiled_autograd_id]
    versions = sum(1 for x in frame if x.status != "recompile limit")
    lead = (f"Recompile limit hit: torch stopped compiling `{rc.shown_function or '?'}` after "
            f"{versions} version(s); calls that fail every guard run eagerly (uncompiled) from now on.")
    if root is not None and root.kind == Kind.PER_LAYER:  # per_layer's answer is the limit's
        return Verdict(root, lead=lead)
    subject = first.change.subject if first is not None and first.nameable else ""
    carried = shown(first) if first is not None and first.guard.origin == "carried" else ""
    # what else made versions of this frame: where a fix of this change alone leaves as many as the limit, it
    # is hit anyway
    # the versions the earlier recompiles of this frame made, each for what its newest failed guard names:
    # those made for something the root's fix leaves stay after it; with the first compile's and this call's,
    # as many as the limit hit it again (torchdiffeq's step: seven versions for an index, one for a stride)
    answered = (first.change.kind, first.guard.path) if first is not None else None
    earlier = [x for x in report.recompiles if x is not rc and x.guards and not x.limit_hit
               and (x.compile_id.frame_id, x.compile_id.compiled_autograd_id)
               == (rc.compile_id.frame_id, rc.compile_id.compiled_autograd_id)]
    left = [x.guards[0] for x in earlier if (x.guards[0].kind, x.guards[0].path) != answered]
    others = (sorted({f"{g.kind} of `{g.name or g.path}`" if (g.name or g.path) else g.kind for g in left})
              if answered and rc.limit is not None and len(left) + 2 > rc.limit else [])
    return Verdict(_limit_suggestion(rc, root, versions, report.recompile_limits.get(rc.limit_type or "recompile_limit"),
                                     subject, carried, others), lead=lead)


#: The whole-frame answers, applied in this order after the rule's answer for the first change.
ANSWERS: list[FrameAnswer] = [
    FrameAnswer(None, "the same call changed other sizes or values: their marks added to the fix, else its code "
                "withheld", _other_changes),
    FrameAnswer(None, "mark_unbacked where the compiled code is a library's (which may branch on the size): in "
                "words", _unbacked_in_library),
    FrameAnswer(None, "mark_unbacked where the compiled function's source branches on the size: in words",
                _unbacked_branches),
    FrameAnswer(Kind.SIZE_CONDITION, "a condition torch asked of a dynamic size that the sizes of the other version "
                "do not meet: one version per side, which no mark removes", _condition),
    FrameAnswer(Kind.PER_LAYER, "one version per layer of a stack of modules compiled one by one: raise the limit "
                "to the number of layers, or compile the whole model", _layers),
    FrameAnswer(Kind.RECOMPILE_LIMIT, "the recompile limit was hit: the cause's fix first, a higher limit only "
                "where justified", _limit),
]

#: The kinds decided for a recompile from its function's other compiles, not from one change alone.
FRAME_KINDS: tuple[Kind, ...] = tuple(a.kind for a in ANSWERS if a.kind is not None)


def answer_for_frame(call: Call, root: Optional[Suggestion]) -> Verdict:
    """``root``, the rule's answer for the first change, after every whole-frame answer of :data:`ANSWERS`:
    the suggestion, and the sentences said first and last in the explanation."""
    leads, tails = [], []
    for a in ANSWERS:
        got = a.decide(call, root)
        if got is None:
            continue
        root = got.suggestion
        leads += [got.lead] if got.lead else []
        tails += [got.tail] if got.tail else []
    return Verdict(root, " ".join(leads), " ".join(tails))
