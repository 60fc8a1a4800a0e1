"""A recompile's failed guard read into a record (:class:`Reason`): the change torch's reason names
(``GuardChange``), completed from the guards of both compiles (the guards on both sides, the value after,
the other sizes the same call changed). Pure functions: each returns a new record and edits none.

It reads records only (``FailedGuard``, ``GuardEntry``: capture parsed torch's text); the one pattern here
decides whether an input's expression in the user's names is code (``self.scale``, ``holder['k']``)."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Optional

from ...report.model import FailedGuard, GuardChange, GuardEntry

_NAME = r"[A-Za-z_]\w*"
_NAMEABLE = re.compile(rf"{_NAME}(?:\.{_NAME}|\[\d+\]|\[(?P<q>['\"])[^'\"\[\]]*(?P=q)\])*")


def simple(x: str) -> bool:
    """``x`` is code that names the input in the user's source: a name, its attributes,
    constant indices and keys (``self.scale``, ``holder['tensor']``), and no dunder of torch's
    guard sources (``g.__closure__[0].cell_contents``, ``f.__defaults__``)."""
    return bool(_NAMEABLE.fullmatch(x)) and "__" not in x


@dataclasses.dataclass(frozen=True)
class Reason:
    """A failed guard, read: the change, and what the doctor needs to look further (a record: the
    functions below return a new one)."""

    change: GuardChange
    guard: FailedGuard
    #: every (tensor, dim) whose size differs between the failed compile's guards and the new one's
    resized: list = dataclasses.field(default_factory=list)
    #: the same, with the sizes on both sides and torch's path: (tensor, dim, before, after, path); a size
    #: ``None`` is dynamic there
    resized_sizes: list = dataclasses.field(default_factory=list)
    #: torch's paths of the tensors that are nn.Parameters (torch keeps their sizes static: a mark is ignored)
    parameters: set = dataclasses.field(default_factory=set)
    #: a tensor input of one compile is no tensor in the other (a type change alongside)
    retyped: bool = False
    #: a size of this function's inputs that went to or from 0 or 1 in one of its recompiles, in words ("" if
    #: none): torch specialises those whatever ``dynamic=`` says, so ``dynamic=True`` is not offered
    sizes_0_1: str = ""
    #: a shape guard of the dynamic version on this size beyond its lower bound (``2 <= idx.size()[1] <= 16``,
    #: ``idx.size()[1] != 16``), in the guards' readable form: the compiled code compares the size ("" if none)
    compared: str = ""
    #: a value no line of the user's can mark (library code passes it, or torch carries it across a graph break)
    #: whose size changed the same way in another compiled frame of the run, in words ("" if none)
    tied: str = ""

    # the record's facts, by the names the rules use
    @property
    def src(self) -> str:
        return self.guard.path

    @property
    def code(self) -> str:
        return self.guard.code

    @property
    def parameter(self) -> bool:
        return self.guard.parameter

    @property
    def closure_of(self) -> str:
        return self.guard.closure_of

    @property
    def nameable(self) -> bool:
        """The guarded value has a name in the user's code that code can be written against."""
        return (bool(self.guard.name) and self.guard.origin not in ("carried", "library") and simple(self.change.subject)
                and not self.numpy)

    @property
    def numpy(self) -> bool:
        """The guarded value is a NumPy array torch reads as a tensor (``mark_dynamic`` takes no array)."""
        return self.guard.numpy


def subject_of(g: FailedGuard) -> str:
    """The value as the user's code names it, else torch's path for it where that is no internal of torch's
    (shown, never written as code); "" for a value torch carries across a break or a library passes (its
    words are ``FailedGuard.described``)."""
    if g.name:
        return g.name
    root = g.path.split(".", 1)[0].split("[", 1)[0]
    if g.origin in ("carried", "library") or g.path.startswith("_") or root in ("args", "kwargs", "fn"):
        return ""  # torch's own names (its wrappers' `args`, `fn`; `___stack0`): never shown as the user's
    if g.origin == "module" and root == "self":
        return ""  # the `self` of a method torch compiled on its own (an optimizer's `step`): no name of the user's
    return g.path


def reason_of(g: FailedGuard) -> Reason:
    """The change ``g`` names, as torch's reason says it (before :func:`complete` reads the guards of both compiles)."""
    ch = GuardChange(g.kind, subject=subject_of(g), before=g.before, after=g.after, dim=g.dim,
                     failed_compile_id=g.failed_compile_id, reason=g.reason)
    return Reason(ch, g)


def _same(entry_path: str, r: Reason) -> bool:
    return bool(entry_path) and entry_path == r.src


def find_guard(entries: list[GuardEntry], r: Reason) -> str:
    """The guard of ``entries`` on the input ``r`` is about (``TYPE: expression``), or ""."""
    ch = r.change
    if not r.src or ch.kind == "global_state":
        if ch.kind == "global_state":
            return next((f"{e.type}: {e.expr}" for e in entries if e.type == "GLOBAL_STATE"), "")
        return ""
    for e in entries:
        if not _same(e.path, r):
            continue
        if ch.kind in ("size", "size_0_1", "stride", "rank", "dtype", "requires_grad", "device", "dispatch_keys"):
            ok = e.type == "TENSOR_MATCH"
        elif ch.kind == "length":
            ok = e.length is not None
        elif ch.kind in ("value", "global", "training"):
            ok = bool(e.value) and e.value != "None"
        elif ch.kind in ("identity", "type"):
            ok = e.type in ("ID_MATCH", "TYPE_MATCH", "TENSOR_MATCH") or "check_obj_id" in e.expr or "check_type_id" in e.expr
        else:
            ok = False
        if ok:
            return f"{e.type}: {e.expr}"
    return ""


def entry_named(entries: list[GuardEntry], text: str) -> Optional[GuardEntry]:
    """The entry a ``find_guard`` answer names."""
    return next((e for e in entries if f"{e.type}: {e.expr}" == text), None) if text else None


def tensor_sizes(entries: list[GuardEntry]) -> dict[str, list[Optional[int]]]:
    """Each tensor input's sizes as its TENSOR_MATCH guard says (``None``: dynamic)."""
    return {e.path: e.sizes for e in entries if e.type == "TENSOR_MATCH" and e.path}


def _what_it_is_now(src: str, new: list[GuardEntry]) -> str:
    """What the input ``src`` is in the new compile when no ``==`` guard says its value."""
    for e in new:
        if e.path == src and e.type == "TENSOR_MATCH":
            return "a tensor"
        if e.path == src and e.value == "None":
            return "None"
    return ""


def complete(r: Reason, failed: list[GuardEntry], new: list[GuardEntry]) -> tuple[Reason, bool]:
    """``r`` with the guards on both sides, the value after and what the guards of both compiles say of
    the call (the sizes it changed, the parameters, a type change alongside), as a new record; and whether
    the new compile made the changed size or value dynamic."""
    ch = r.change
    failed_guard, new_guard, before, after = find_guard(failed, r), "", ch.before, ch.after
    facts = {}
    if ch.kind in ("size", "size_0_1") and ch.dim is not None and r.src:
        facts["compared"] = next((e.readable for e in [*new, *failed] if e.compares_size(r.src, ch.dim) and e.readable), "")
    if failed and new:
        facts.update(_resized(r, failed, new))
    dynamic = False
    if ch.kind == "size_0_1" and ch.before.startswith(">="):
        # the failed guard is the dynamic version's lower bound; the new compile's tensor guard says the size
        new_guard = find_guard(new, dataclasses.replace(r, change=GuardChange("size")))
        e = entry_named(new, new_guard)
        if e is not None and ch.dim is not None and ch.dim < len(e.sizes) and e.sizes[ch.dim] is not None:
            after = str(e.sizes[ch.dim])
        low = [f"{x.type}: {x.expr}" for x in failed if x.lower_bound is not None and x.path == r.src]
        failed_guard = low[0] if low else failed_guard  # the bound that failed, else the tensor's guard
    else:
        new_guard = find_guard(new, r)
        e_new, e_old = entry_named(new, new_guard), entry_named(failed, failed_guard)
        if ch.kind == "type" and e_old is not None and e_old.type == "TENSOR_MATCH":
            # a Parameter replaced by a plain Tensor (or the other way): both guards name the type
            before = e_old.tensor_type or before
            if e_new is not None and e_new.type == "TENSOR_MATCH":
                after = e_new.tensor_type or after
        if ch.kind in ("size", "size_0_1", "stride") and ch.dim is not None and e_new is not None:
            values = e_new.sizes if ch.kind != "stride" else e_new.strides
            dynamic = ch.dim < len(values) and values[ch.dim] is None
        else:
            after, dynamic = _value_after(r, after, e_new, new)
    change = dataclasses.replace(ch, failed_guard=failed_guard, new_guard=new_guard, before=before, after=after)
    return dataclasses.replace(r, change=change, **facts), dynamic


def _resized(r: Reason, failed: list[GuardEntry], new: list[GuardEntry]) -> dict:
    """What the guards of both compiles say of the call's tensors: the sizes that changed (by the user's
    names at the new call), the nn.Parameters, and whether a tensor input of one is no tensor in the other."""
    before_sizes, after_sizes = tensor_sizes(failed), tensor_sizes(new)
    names = {e.path: ("" if "___from_numpy(" in e.expr else e.name)  # the user's names, at the new call (an
             for e in new if e.type == "TENSOR_MATCH" and e.path}  # array torch reads as a tensor takes no mark)
    names[r.src] = r.change.subject if r.nameable else names.get(r.src, "")
    resized_sizes = [(names.get(p, ""), d, a, b, p) for p, sizes in before_sizes.items() if p in after_sizes
                     for d, (a, b) in enumerate(zip(sizes, after_sizes[p])) if a != b
                     and len(sizes) == len(after_sizes[p])]
    return {"retyped": set(before_sizes) != set(after_sizes), "resized_sizes": resized_sizes,
            "resized": [(m, d) for m, d, *_ in resized_sizes],
            "parameters": {e.path for e in [*failed, *new] if e.type == "TENSOR_MATCH" and e.tensor_type.endswith("Parameter")}}


def _value_after(r: Reason, after: str, e_new: Optional[GuardEntry], new: list[GuardEntry]) -> tuple[str, bool]:
    """The value after for a change of a value, a length or a mode (``after`` for any other change), and
    whether the new compile made it dynamic (torch's symbol for it)."""
    ch = r.change
    if ch.kind in ("value", "global", "length", "training"):
        if e_new is not None:
            return (str(e_new.length) if ch.kind == "length" and e_new.length is not None else e_new.value), False
        if r.guard.symbol:
            return r.guard.symbol, True
        after = after or _what_it_is_now(r.src, new)
    if ch.kind in ("training", "value") and not after and ch.before in ("True", "False"):  # a failed `== True` on a bool
        after = str(ch.before != "True")
    return after, False


def with_size_now(r: Reason, guards: list[FailedGuard]) -> Reason:
    """``r`` (a condition on a dynamic size) with this call's size where torch's reason did not say it, from
    the reason of another version's check on the same size (``actual 7``); ``r`` itself otherwise."""
    ch, g = r.change, r.guard
    if not (ch.kind == "symbolic" and ch.dim is not None and not ch.after):
        return r
    after = next((h.after for h in guards if h.kind in ("size", "size_0_1") and h.path == g.path
                  and h.dim == g.dim and h.after.isdigit()), "")
    return dataclasses.replace(r, change=dataclasses.replace(ch, after=after))


def value_kind(value: str) -> str:
    """``"int"``, ``"float"``, ``"bool"``, ``"str"``, ``"None"`` for a Python literal as torch printed it; "" else."""
    v = value.strip()
    if v in ("inf", "-inf", "nan"):
        return "float"
    try:
        x = ast.literal_eval(v)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ""
    if x is None:
        return "None"
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(x), "")


def is_number(r: Reason) -> bool:
    return (r.change.kind in ("value", "global") and value_kind(r.change.before) in ("int", "float")
            and value_kind(r.change.after) in ("int", "float", ""))


def hidden_sizes(r: Reason) -> list:
    """The sizes the call changed besides the one torch's reason names, from the guards of both compiles:
    torch reports only the first failed check of a guard set (``get_guard_fail_reason_helper``), so a call
    that changes several inputs at once is named by one of them. Each ``(tensor, dim, before, after, path)``."""
    own = r.change.dim if r.change.kind in ("size", "size_0_1") else None
    return [x for x in r.resized_sizes if not (x[4] == r.src and x[1] == own)]


def hidden_values(r: Reason, failed: list[GuardEntry], new: list[GuardEntry]) -> list[tuple[str, str, str]]:
    """The values of the user's inputs (``EQUALS_MATCH``: a number, a flag, a string) the call changed besides
    the one torch's reason names: a value the failed compile guarded that the new compile guards on another
    value, or no longer on a value (made dynamic). Each ``(torch's path, before, after)``; after "" where the
    new compile holds no value for it. Torch's own checks (``hasattr(x, '_dynamo_dynamic_indices') == False``,
    the default device) are no input's value."""
    if not failed or not new:
        return []

    def of_input(e: GuardEntry) -> bool:
        return (e.type == "EQUALS_MATCH" and bool(e.path) and bool(e.value) and e.length is None and simple(e.path)
                and value_kind(e.value) != "")

    now: dict[str, list[str]] = {}
    for e in new:
        if of_input(e):
            now.setdefault(e.path, []).append(e.value)
    out = []
    for e in failed:
        if not of_input(e) or e.path == r.src:
            continue
        if e.value not in now.get(e.path, []) and (e.path, e.value) not in [(p, b) for p, b, _ in out]:
            after = now.get(e.path, [""])[0]
            out.append((e.path, e.value, after))
    return out
