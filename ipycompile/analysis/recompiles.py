"""Recompiles in plain words: which input changed how, the guards on both sides, and the fix.

:func:`explain_recompiles` is a doctor pass: for every :class:`~ipycompile.report.Recompile`
it reads the failed guards capture parsed from torch's reasons (``Recompile.guards``, each a
:class:`~ipycompile.report.FailedGuard` with the guarded value under the user's own name)
and the guards of both compiles (``GuardSet.entries``) into
:class:`~ipycompile.report.GuardChange` s (``Recompile.changes``), writes
``Recompile.explanation`` and, where a fix is known and proven by a test
(``tests/test_doctor_recompiles.py``, ``tests/test_doctor_recompiles_real.py``),
``Recompile.suggestion``. It reads records only: torch's text is read once, in
``capture/parse/guards.py`` (the reasons and guard trees) and ``capture/callsite.py`` (the
user's names). Code is written only against a name the user's code has: a value torch
carries across a graph break, or one a library passes, gets words, a setting, or torch's words.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..report.model import (GUARD_KINDS, CompileId, Confidence, FailedGuard, Fix, GuardChange, GuardEntry, GuardSet, Kind,
                            Mark, Rebind, Recompile, Setting, ShapeGuard, SizeSymbol, Suggestion)
from ..report.owners import installed_package

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["KINDS", "FRAME_KINDS", "SUGGESTION_KINDS", "RULES", "RecompileRule", "explain_recompiles"]

#: What a failed guard can say changed (``GuardChange.kind``): the report's :data:`GUARD_KINDS`.
KINDS = GUARD_KINDS

_STATE = {
    "grad_mode": "grad mode (torch.no_grad() / torch.enable_grad() around the call)",
    "autocast_state": "autocast (torch.autocast around the call)",
    "default_dtype": "the default dtype (torch.set_default_dtype)",
    "deterministic_algorithms": "deterministic algorithms (torch.use_deterministic_algorithms)",
    "num_threads": "the number of threads (torch.set_num_threads)",
    "torch_function": "torch function mode",
    "allow_tf32": "TF32 matmul (torch.backends.cuda.matmul.allow_tf32)",
}


@dataclasses.dataclass
class _Reason:
    """A failed guard, read: the change, and what the doctor needs to look further."""

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
        return (bool(self.guard.name) and self.guard.origin not in ("carried", "library") and _simple(self.change.subject)
                and not self.numpy)

    @property
    def numpy(self) -> bool:
        """The guarded value is a NumPy array torch reads as a tensor (``mark_dynamic`` takes no array)."""
        return self.guard.numpy


def _subject(g: FailedGuard) -> str:
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


def _read(g: FailedGuard) -> _Reason:
    ch = GuardChange(g.kind, subject=_subject(g), before=g.before, after=g.after, dim=g.dim,
                     failed_compile_id=g.failed_compile_id, reason=g.reason)
    return _Reason(ch, g)


def _same(entry_path: str, r: _Reason) -> bool:
    return bool(entry_path) and entry_path == r.src


def _find_guard(entries: list[GuardEntry], r: _Reason) -> str:
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


def _entry(entries: list[GuardEntry], text: str) -> Optional[GuardEntry]:
    """The entry a ``_find_guard`` answer names."""
    return next((e for e in entries if f"{e.type}: {e.expr}" == text), None) if text else None


def _tensor_sizes(entries: list[GuardEntry]) -> dict[str, list[Optional[int]]]:
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


def _complete(r: _Reason, failed: list[GuardEntry], new: list[GuardEntry]) -> bool:
    """Fill the guards on both sides and the value after; return whether the new compile made
    the changed size or value dynamic."""
    ch = r.change
    ch.failed_guard = _find_guard(failed, r)
    if ch.kind in ("size", "size_0_1") and ch.dim is not None and r.src:
        r.compared = next((e.readable for e in [*new, *failed] if e.compares_size(r.src, ch.dim) and e.readable), "")
    if failed and new:
        before_sizes, after_sizes = _tensor_sizes(failed), _tensor_sizes(new)
        r.retyped = set(before_sizes) != set(after_sizes)
        names = {e.path: ("" if "___from_numpy(" in e.expr else e.name)  # the user's names, at the new call (an
                 for e in new if e.type == "TENSOR_MATCH" and e.path}  # array torch reads as a tensor takes no mark)
        names[r.src] = r.change.subject if r.nameable else names.get(r.src, "")
        r.resized_sizes = [(names.get(p, ""), d, a, b, p) for p, sizes in before_sizes.items() if p in after_sizes
                           for d, (a, b) in enumerate(zip(sizes, after_sizes[p])) if a != b
                           and len(sizes) == len(after_sizes[p])]
        r.resized = [(m, d) for m, d, *_ in r.resized_sizes]
        r.parameters = {e.path for e in [*failed, *new] if e.type == "TENSOR_MATCH" and e.tensor_type.endswith("Parameter")}
    if ch.kind == "size_0_1" and ch.before.startswith(">="):
        # the failed guard is the dynamic version's lower bound; the new compile's tensor guard says the size
        lookup = _Reason(GuardChange("size"), r.guard)
        ch.new_guard = _find_guard(new, lookup)
        e = _entry(new, ch.new_guard)
        if e is not None and ch.dim is not None and ch.dim < len(e.sizes) and e.sizes[ch.dim] is not None:
            ch.after = str(e.sizes[ch.dim])
        low = [f"{x.type}: {x.expr}" for x in failed if x.lower_bound is not None and x.path == r.src]
        ch.failed_guard = low[0] if low else ch.failed_guard  # the bound that failed, else the tensor's guard
        return False
    ch.new_guard = _find_guard(new, r)
    e_new, e_old = _entry(new, ch.new_guard), _entry(failed, ch.failed_guard)
    if ch.kind == "type" and e_old is not None and e_old.type == "TENSOR_MATCH":
        # a Parameter replaced by a plain Tensor (or the other way): both guards name the type
        ch.before = e_old.tensor_type or ch.before
        if e_new is not None and e_new.type == "TENSOR_MATCH":
            ch.after = e_new.tensor_type or ch.after
    if ch.kind in ("size", "size_0_1", "stride") and ch.dim is not None and e_new is not None:
        values = e_new.sizes if ch.kind != "stride" else e_new.strides
        return ch.dim < len(values) and values[ch.dim] is None
    if ch.kind in ("value", "global", "length", "training"):
        if e_new is not None:
            ch.after = str(e_new.length) if ch.kind == "length" and e_new.length is not None else e_new.value
            return False
        if r.guard.symbol:
            ch.after = r.guard.symbol
            return True
        ch.after = ch.after or _what_it_is_now(r.src, new)
    if ch.kind in ("training", "value") and not ch.after and ch.before in ("True", "False"):  # a failed `== True` on a bool
        ch.after = str(ch.before != "True")
    return False


# -- plain words ------------------------------------------------------------------
def _a(type_name: str) -> str:
    """``"a Parameter"``, ``"an int"``, ``"a Tensor"`` (``torch.Tensor`` named as torch prints it)."""
    name = type_name.strip().rsplit(".", 1)[-1] if type_name.strip().startswith("torch.") else type_name.strip()
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _arrow(a: str, b: str) -> str:
    return f"{a} → {b}" if b else f"{a} → another value"


def _value_kind(value: str) -> str:
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


def _shown(r: _Reason) -> str:
    """The value in words: the user's name, else what capture said of it, else torch's path."""
    g = r.guard
    if g.name and r.numpy:
        return f"the NumPy array `{g.name}` (torch reads it as a tensor)"
    if g.name:
        return f"`{g.name}`"
    if g.described:
        return g.described
    return f"`{r.change.subject}`" if r.change.subject else "an input of the compiled code"


def _text(r: _Reason, dynamic_after: bool) -> str:
    ch = r.change
    x = _shown(r)
    k = ch.kind
    if k == "size":
        out = f"size of dim {ch.dim} of {x} went {_arrow(ch.before, ch.after)}"
        if ch.new_guard:
            out += (f" (torch made dim {ch.dim} dynamic in the new version: other sizes reuse it)" if dynamic_after
                    else " (the new version is static again: each new size compiles once more)")
        return out
    if k == "size_0_1":
        if ch.before in ("0", "1"):
            return (f"dim {ch.dim} of {x} was {ch.before} when compiled, now {ch.after or 'another size'}: torch "
                    f"always specialises sizes 0 and 1, so the version made for size {ch.before} fits no other size "
                    "(and mark_dynamic or dynamic=True keep this recompile: they too specialise 0 and 1)")
        size = f" (now {ch.after})" if ch.after else ""
        return (f"dim {ch.dim} of {x} became 0 or 1{size}: torch always specialises sizes 0 and 1, so the "
                "version compiled for other sizes does not apply")
    if k == "stride":
        return (f"stride of dim {ch.dim} of {x} went {_arrow(ch.before, ch.after)}: its memory layout changed "
                "(a transposed, sliced or expanded view instead of a contiguous tensor, or the other way)")
    if k == "rank":
        return f"{x} went from {ch.before} to {ch.after} dimensions: each rank is a compiled version of its own"
    if k == "dtype":
        return (f"dtype of {x} went {_arrow(ch.before, ch.after)}: dtypes never become dynamic, each dtype is a "
                "compiled version of its own (fine for a few)")
    if k == "requires_grad":
        now = "requires grad now (it did not" if ch.after == "True" else "no longer requires grad (it did"
        return f"{x} {now} when compiled): one compiled version for each"
    if k == "device":
        return f"{x} moved from device index {_arrow(ch.before, ch.after)}: one compiled version per device"
    if k == "dispatch_keys":
        return (f"the dispatch keys of {x} changed ({_arrow(ch.before, ch.after)}): a tensor subclass, or a "
                "dispatch mode, or grad mode around the call")
    if k == "type":
        before = _a(ch.before) if ch.before else "another type"
        after = _a(ch.after) if ch.after else "another type"
        if before == after:
            return f"the type of {x} changed: torch guards on the exact type"
        return f"{x} was {before} when compiled, now {after}: torch guards on the exact type, one version per type"
    if k == "aliasing":
        names = " and ".join(f"`{n.strip()}`" for n in ch.subject.split(","))
        return (f"{names} are now the same tensor (they were different tensors when compiled, or the other way): "
                "torch compiles one version for inputs that alias each other and one for inputs that do not")
    if k == "global_state":
        what = ", ".join(_STATE.get(w.strip(), w.strip()) for w in ch.subject.split(","))
        return f"torch's global state changed: {what}; one compiled version for each state"
    if k == "training":
        mod = ch.subject[: -len(".training")] or "a module"
        mode = "eval()" if ch.after == "False" else "train()"
        return (f"`{mod}` was switched to {mode} (`training` went {_arrow(ch.before, ch.after)}): torch compiles "
                "one version per mode and keeps both")
    if k == "keywords" and ch.before.endswith("="):  # a keyword the compiled version read is not passed now
        return (f"the call passed `{ch.before}` when compiled and does not now (it passes other keyword arguments): "
                "each set of keyword arguments is a compiled version of its own")
    if k == "keywords":
        was = "none" if ch.before == "0" else "some"
        return (f"{x} changed: the call passed {was} when compiled and {'some' if was == 'none' else 'none'} now; "
                "each set of keyword arguments is a compiled version of its own")
    if k == "length":
        return f"{x} had {ch.before} items, now {ch.after or 'another number'}: each length is a compiled version"
    if k == "identity":
        return (f"a different object was passed as {x}: torch guards on the identity of the functions and "
                "objects it inlines, so each one is a compiled version")
    if k in ("value", "global"):
        kind = _value_kind(ch.before)
        what = {"int": "Python int", "float": "Python float", "bool": "Python bool", "str": "string"}.get(kind, "value")
        who = f"the global {x}" if k == "global" else f"the {what} {x}"
        if r.closure_of:
            who += f" (a variable `{r.closure_of}` closes over)"
        out = f"{who} went {_arrow(ch.before, ch.after)}"
        if kind in ("int", "float"):
            if dynamic_after:
                out += f" (torch made {x} dynamic in the new version: other values reuse it)"
            elif ch.new_guard:
                loop = " (a loop count: each value unrolls the loop differently)" if _in_range(r) else ""
                out += f"; the new version is specialised on {ch.after} again: each new value compiles once more{loop}"
        elif kind == "bool":
            out += ": one compiled version per value"
        return out
    if k == "attribute" and ch.before.endswith(("class's", "own")):
        return (f"{x} was {ch.before} when compiled and is {ch.after} now (an assignment on the instance, "
                "`obj.name = value`, hides the class's value): torch compiles one version for each")
    if k == "attribute":
        return f"{x} was {ch.before} when compiled, {ch.after} now: the code asks whether it exists (hasattr / getattr with a default)"
    if k == "symbolic" and ch.dim is not None and ch.before.startswith(">="):
        low = ch.before[2:].strip()
        guard = f"`{r.guard.name}.size()[{ch.dim}] >= {low}`" if r.guard.name and _simple(r.guard.name) else f"size >= {low}"
        now = f" ({ch.after} now)" if ch.after else ""
        line = f", which the code asked at `{r.code}`" if r.code else ""
        where = f" ({r.guard.where.split(' in ', 1)[0].rsplit('/', 1)[-1]})" if r.guard.where else ""
        return (f"dim {ch.dim} of {x} is below the bound the compiled version held for{now}: that version holds only "
                f"while {guard}{line}{where}, so this call takes the other side of that condition and compiles "
                "a version of its own")
    if k == "symbolic":
        return f"a condition on dynamic sizes no longer holds: {ch.reason}"
    return f"a guard failed: {ch.reason}"


def _as_read(r: _Reason) -> str:
    """The name the line torch quoted reads the value by: the last attribute of its path
    (``self.scale`` reads ``fn.scale``), else the path's name (``k``)."""
    path = r.change.subject if r.closure_of else (r.src or r.change.subject)
    return path.replace("]", "").replace("[", ".").rsplit(".", 1)[-1]


def _in_range(r: _Reason) -> bool:
    """The user's line torch quoted passes ``r``'s value to ``range(...)`` (a loop count)."""
    name = _as_read(r)
    tree = _parse_line(r.code)
    if not name or tree is None:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range"
               and any(isinstance(x, (ast.Name, ast.Attribute)) and (getattr(x, "id", None) == name or getattr(x, "attr", None) == name)
                       for a in n.args for x in ast.walk(a))
               for n in ast.walk(tree))


def _parse_line(code: str) -> Optional[ast.AST]:
    """One line of the user's code, parsed (a block's header with ``pass`` under it: on a line of
    its own, so that a comment closing the header does not swallow it); None if it is not Python."""
    for text in (code.strip() or "_", code.strip() + "\n pass"):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


# -- suggestions --------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RecompileRule:
    """One fix for a recompile: the kind it writes (``Suggestion.kind``, and the first word
    of its title), what it means, and the fix for one change (None where it does not apply)."""

    kind: Kind
    doc: str
    fix: Callable[[_Reason, bool], Optional[Suggestion]]


_NAME = r"[A-Za-z_]\w*"
_NAMEABLE = re.compile(rf"{_NAME}(?:\.{_NAME}|\[\d+\]|\[(?P<q>['\"])[^'\"\[\]]*(?P=q)\])*")


def _simple(x: str) -> bool:
    """``x`` is code that names the input in the user's source: a name, its attributes,
    constant indices and keys (``self.scale``, ``holder['tensor']``), and no dunder of torch's
    guard sources (``g.__closure__[0].cell_contents``, ``f.__defaults__``)."""
    return bool(_NAMEABLE.fullmatch(x)) and "__" not in x


def _only_in_arithmetic(r: _Reason) -> bool:
    """In the user's line torch quoted, ``r``'s input is only an operand of arithmetic with
    something that is not a plain number (where a 0-d tensor gives the same result)."""
    tree = _parse_line(r.code)
    if tree is None:
        return False
    x = _as_read(r)
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    uses = [n for n in ast.walk(tree) if (isinstance(n, ast.Name) and n.id == x) or (isinstance(n, ast.Attribute)
            and n.attr == x) and not isinstance(parents.get(n), ast.Attribute)]
    if not uses:
        return False
    for u in uses:
        parent = parents.get(u)
        if not isinstance(parent, ast.BinOp):
            return False
        other = parent.right if parent.left is u else parent.left
        if isinstance(other, ast.Constant):
            return False
    return True


def _fix(kind: Kind, title: str, explanation: str, fix: Optional[Fix] = None,
         confidence: Confidence = Confidence.HIGH) -> Suggestion:
    if fix is None:
        return Suggestion(f"{kind}: {title}", explanation, "", confidence, kind)
    return Suggestion.of(f"{kind}: {title}", explanation, fix, confidence, kind)


#: the words beside a statement to run before the compiled code's first call
BEFORE = "before the first call"
#: ``torch.compile(..., dynamic=True)``: every size dynamic from the first call
DYNAMIC = Fix(compile_options={"dynamic": "True"})


def _dynamo_setting(name: str, value: str, comment: str = BEFORE) -> Fix:
    return Fix(settings=[Setting("dynamo", name, value, comment=comment)])


def _marks(r: _Reason) -> list[tuple[str, int]]:
    """The (tensor, dim) pairs to mark dynamic: every size that changed (from the guards of
    both compiles), else the one the reason names; a tensor no code of the user's names is ""."""
    return r.resized or [(r.change.subject if r.nameable else "", r.change.dim)]


def _force_parameter_static_shapes(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch = r.change
    if not (ch.kind in ("size", "size_0_1") and r.parameter and ch.dim is not None):
        return None
    marks = [(x, d) for x, d in _marks(r) if _simple(x)]
    code = Fix(settings=[Setting("dynamo", "force_parameter_static_shapes", "False", comment=BEFORE)],
               marks=[Mark("mark_dynamic", x, d, "and, for one version of all sizes") for x, d in marks])
    return _fix(
        Kind.FORCE_PARAMETER_STATIC_SHAPES, f"{_shown(r)} is an nn.Parameter, whose sizes torch keeps static",
        f"The size of dim {ch.dim} of {_shown(r)} changes between calls, and it is an nn.Parameter: "
        "torch keeps the shapes of parameters static (torch._dynamo.config.force_parameter_static_shapes, True "
        "by default), so every new size compiles again, and mark_dynamic or dynamic=True on it is ignored. As "
        "torch's own message says, set force_parameter_static_shapes to False: torch then makes the size dynamic "
        "after one recompile, and with mark_dynamic before the first call, compiles once for all sizes.",
        code)


def _maybe_mark_dynamic(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A size the user can mark that also changed, the same way, in a value of another compiled frame that no
    line of the user's can mark (a tensor library code made from it and passed on after a graph break: the
    logits a transformers model hands to its loss, compiled as a frame of its own). In that frame the marked
    size meets a tensor whose size is static on its first compile, and torch specialises it: a strict
    ``mark_dynamic`` raises ConstraintViolationError there (transformers' GPT-2 trained on batches of varying
    length: ``Eq(16, 2*s38)`` in ``ForCausalLMLoss``). ``maybe_mark_dynamic`` asks without that promise; it is
    still "to try": where the size travels across a graph break into code that needs it as a number, torch 2.13
    can refuse it there too (torch_geometric's ``scatter`` after its ``.item()`` break), and the doctor cannot
    tell that from the record."""
    ch, x = r.change, r.change.subject
    if not (r.tied and ch.kind == "size" and ch.dim is not None and r.nameable) or r.retyped:
        return None
    marks = [(m, d) for m, d in _marks(r) if _simple(m)]
    if not marks:
        return None
    return Suggestion.of(
        f"mark_dynamic: say that dim {ch.dim} of `{x}` may vary (maybe_mark_dynamic), before the first call",
        f"The size of dim {ch.dim} of `{x}` changes between calls ({_arrow(ch.before, ch.after)}), and the same "
        f"size changes in another compiled frame, in {r.tied}: a value made inside compiled code (or passed by a "
        "library), which no line of yours can mark. Where it meets the size you mark, its size is static on that "
        "frame's first compile, so torch specialises yours there too, and a strict `torch._dynamo.mark_dynamic` "
        "raises ConstraintViolationError. `torch._dynamo.maybe_mark_dynamic` asks for a dynamic size without that "
        "promise: the frames that take it compile one version for all sizes (>= 2), and a frame where torch "
        "specialises it compiles once more, after which torch makes its sizes dynamic by itself (automatic "
        "dynamic shapes). Where the size travels across a graph break into code that needs it as a number, "
        "torch can still refuse it there (ConstraintViolationError: seen with torch_geometric's scatter): try it "
        "on your loop.",
        Fix(marks=[Mark("maybe_mark_dynamic", m, d, BEFORE) for m, d in marks]),
        Confidence.HIGH, Kind.MARK_DYNAMIC)


def _mark_dynamic(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    marks = _marks(r)
    if (ch.kind == "size" and ch.dim is not None and not r.nameable and r.guard.origin == "argument"
            and not dynamic_after and not r.retyped and not r.sizes_0_1):  # an expression in the call (`f(torch.ones(n, 2))`): no name
        return Suggestion.of(
            f"mark_dynamic: dim {ch.dim} of {_shown(r)} varies: mark it where it is made, or compile with dynamic=True",
            f"The size of dim {ch.dim} of {_shown(r)} changes between calls, and the new version is static too, so "
            "every new size is another compile. No name in your call holds the tensor: give it one and mark it "
            f"before the first call (`torch._dynamo.mark_dynamic(t, {ch.dim})`), or compile with `dynamic=True`, "
            "which makes every size dynamic from the first call.",
            DYNAMIC, Confidence.HIGH, Kind.MARK_DYNAMIC)
    if not (ch.kind == "size" and ch.dim is not None and all(_simple(m) for m, _ in marks)) or r.retyped:
        return None
    when = ("torch made the size dynamic by itself after this change, at the cost of this recompile"
            if dynamic_after else "the new version is static too, so every new size is another compile")
    others = [f"dim {d} of `{m}`" for m, d in marks if (m, d) != (x, ch.dim)]
    also = (f" Its size changes together with {', '.join(others)}: mark them all, or torch finds the sizes equal "
            "and refuses the mark (ConstraintViolationError)." if others else "")
    return Suggestion.of(
        f"mark_dynamic: say that dim {ch.dim} of `{x}` varies, before the first call",
        f"The size of dim {ch.dim} of `{x}` changes between calls; {when}. Marking the dimension dynamic "
        "before the first call compiles one version for all sizes (>= 2). `dynamic=True` does the same "
        "for every dimension of every input, where no size is ever 0 or 1 and no setting of torch's "
        "(`automatic_dynamic_shapes_mark_as`) changes how automatic dynamic sizes are marked." + also,
        Fix(marks=[Mark("mark_dynamic", m, d, BEFORE) for m, d in marks]),
        Confidence.HIGH, Kind.MARK_DYNAMIC,
    )


def _automatic_dynamic(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch = r.change
    if not (ch.kind == "size" and dynamic_after and not r.retyped) or r.guard.origin == "library":
        return None  # a library's value: library_value says whose it is
    return _fix(
        Kind.AUTOMATIC_DYNAMIC, f"torch made dim {ch.dim} of {_shown(r)} dynamic after this one recompile",
        f"The size of dim {ch.dim} of {_shown(r)} changed, and torch made that dimension dynamic in the new "
        "version by itself (automatic dynamic shapes): other sizes reuse it, so this recompile happens once. "
        "Nothing to fix. To save even this one, mark the dimension dynamic before the first call where the "
        "tensor is an input you pass (`torch._dynamo.mark_dynamic(t, dim)`); a tensor made inside the compiled "
        "code (a value torch carries across a graph break) cannot be marked, and needs nothing.")


def _internal_words(text: str) -> bool:
    """Whether ``text`` (torch's guard) names torch's internals (``L['args'][0]``, ``args[0]``, ``___stack0``)."""
    return any(w in text for w in ("L[", "G[", "args[", "kwargs[", "___", "__resume"))


def _unbacked_compared(r: _Reason, dynamic_after: bool) -> Suggestion:
    """A size that is 0 or 1 in one call, which the compiled code compares (its dynamic version is guarded on
    ``2 <= idx.size()[1] <= 16``: nanoGPT's ``assert t <= block_size``). ``mark_unbacked`` gives the size
    no value, so each such comparison becomes data-dependent: torch breaks the graph there (GB0170) or raises,
    and the recompile stays. What torch does instead, in words: size 1 has a version of its own, and the size
    is dynamic from the next version on."""
    ch, x = r.change, _shown(r)
    on = f"on `{r.compared}`" if not _internal_words(r.compared) else "on that comparison"  # torch's words: no internals
    guarded = f" (torch guards its dynamic version {on})" if not _internal_words(r.compared) else ""
    why = (f" `mark_unbacked` is not the fix here: the compiled code compares this size{guarded}, and an unbacked "
           "size has no value to compare with, so each such comparison "
           "becomes data-dependent: torch breaks the graph there (or raises) instead, and the recompile stays.")
    if ch.before.startswith(">=") and ch.before.split()[-1] != "2":
        # the failed version's bound is the code's comparison (``481 <= array.size()[0]``), not the 0/1
        # specialisation: the size is dynamic, and each outcome of the comparison is a version
        return _fix(
            Kind.AUTOMATIC_DYNAMIC, f"dim {ch.dim} of {x} is dynamic, and the code compares it: each outcome is a "
            "version of its own",
            f"Torch made dim {ch.dim} of {x} dynamic, and the compiled code compares it: the version compiled before "
            f"holds for sizes {ch.before}, this call's size{' (' + ch.after + ')' if ch.after else ''} is outside that "
            f"range, and the new version is guarded {on}. Each outcome of a comparison on the size (a "
            "branch, an assert) is a version of its own, compiled once and reused: a few at most. Nothing to fix." + why)
    if dynamic_after and ch.before in ("0", "1"):
        return _fix(
            Kind.AUTOMATIC_DYNAMIC, f"dim {ch.dim} of {x} was {ch.before} when compiled: one more version, then "
            "torch made it dynamic",
            f"Sizes 0 and 1 are always specialised (broadcasting differs for them), so the version compiled when dim "
            f"{ch.dim} of {x} was {ch.before} fits no other size: torch compiled once more when it became "
            f"{ch.after or 'another size'}, and made the dimension dynamic in that version by itself (automatic "
            "dynamic shapes): every later size from 2 up reuses it. This recompile happens once; nothing to fix." + why)
    return _fix(
        Kind.MARK_UNBACKED, f"dim {ch.dim} of {x} is 0 or 1 in one call: such a size has a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        f"specialise them too: the calls where dim {ch.dim} of {x} is 1 share one version of their own (so do those "
        "where it is 0), compiled once and reused; the other sizes share another. Nothing to fix for that one "
        "version." + why, confidence=Confidence.MEDIUM)


def _mark_unbacked(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if ch.kind == "size_0_1" and ch.dim is not None and r.compared:
        return _unbacked_compared(r, dynamic_after)
    if ch.kind == "size_0_1" and ch.dim is not None and not r.nameable and r.guard.origin == "argument":
        return Suggestion(  # no name in the call holds the tensor: the way, in words
            f"mark_unbacked: dim {ch.dim} of {_shown(r)} is 0 or 1 in one call and not in another",
            "Sizes 0 and 1 are always specialised, and `mark_dynamic` or `dynamic=True` specialise them too. No "
            "name in your call holds the tensor: give it one where it is made and mark the dimension unbacked "
            f"before the first call (`torch._dynamo.decorators.mark_unbacked(t, {ch.dim})`); one version then "
            "serves every size.", "", Confidence.MEDIUM, Kind.MARK_UNBACKED)
    if not (ch.kind == "size_0_1" and ch.dim is not None and r.nameable):
        return None
    return Suggestion.of(
        f"mark_unbacked: let dim {ch.dim} of `{x}` be 0 or 1 without a recompile",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or "
        "`dynamic=True` specialise them too: a size that goes 1 → 2 (or 2 → 1) compiles again with either. If "
        "this dimension can be 0 or 1, mark it unbacked before the first call: torch then makes no assumption "
        "about its value, and one version serves every size (code that branches on the size raises instead of "
        "specialising).",
        Fix(marks=[Mark("mark_unbacked", x, ch.dim, BEFORE)]),
        Confidence.HIGH, Kind.MARK_UNBACKED,
    )


def _unbacked_in_library(r: _Reason, rc: Recompile) -> Suggestion:
    """A size that is 0 or 1 in one call where the compiled code is a library's (a transformers model's
    ``forward``): ``mark_unbacked`` holds only where that code never branches on the size, which no rule
    here can see in a library's code (on transformers' Llama the mark made it compile again and again, past
    the recompile limit), so the answer is what torch does, in words."""
    ch, x = r.change, r.change.subject
    package = installed_package(rc.filename)
    where = f"`{package}`'s" if package and package.isidentifier() else "a library's"
    return Suggestion(
        f"mark_unbacked: dim {ch.dim} of `{x}` is 0 or 1 in one call: such a size has a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        f"specialise them too: the calls where dim {ch.dim} of `{x}` is 1 share one version of their own (so do those "
        "where it is 0), compiled once and reused; the other sizes share another (dynamic after one recompile). "
        "Nothing to fix for that one version. "
        f"`torch._dynamo.decorators.mark_unbacked({x}, {ch.dim})` before the call makes one version serve every size "
        f"only where the compiled code never branches on that size, and the code compiled here is {where}, not "
        "yours, which may: where it does, the mark makes torch compile again for each size "
        "or break instead. Keep such a mark only where a run with it shows the recompile gone, the outputs equal and "
        "no new break.", "", Confidence.MEDIUM, Kind.MARK_UNBACKED)


def _reads_size(expr: ast.AST, name: str, dim: int) -> bool:
    """``expr`` reads dim ``dim`` of ``name``'s size: ``name.shape[dim]``, ``name.size(dim)``,
    ``name.size()[dim]``, ``len(name)`` for dim 0."""
    def of(n: ast.AST, attr: str) -> bool:
        return isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name) and n.value.id == name

    for n in ast.walk(expr):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == dim and (
                of(n.value, "shape") or (isinstance(n.value, ast.Call) and of(n.value.func, "size") and not n.value.args)):
            return True
        if isinstance(n, ast.Call) and of(n.func, "size") and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) \
                and n.args[0].value == dim:
            return True
        if dim == 0 and isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args \
                and isinstance(n.args[0], ast.Name) and n.args[0].id == name:
            return True
    return False


def _size_branch(report: "CompileReport", rc: Recompile, r: _Reason) -> str:
    """Where the compiled function's kept source branches on the size ``r`` is about (an ``if``/``while``/``assert``
    test, a conditional expression, a Python loop over ``range`` of it): ``"`line` at file:n"``; "" where it does not
    or the source is not kept. The function's parameter is torch's name for the argument."""
    from .source import Sources

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
        if any(_reads_size(t, name, dim) for t in tests):
            line = getattr(n, "lineno", None) or tests[0].lineno
            return f"`{parsed.line(line).strip()}` at {report.where(rc.filename, line)}"
    return ""


def _unbacked_branches(r: _Reason, branch: str) -> Suggestion:
    """``mark_unbacked`` where the compiled code branches on that size: the mark would turn the branch into a
    data-dependent one (a graph break, or ``GuardOnDataDependentSymNode`` raised), so it is said, not given as code."""
    ch, x = r.change, _shown(r)
    return _fix(
        Kind.MARK_UNBACKED, f"dim {ch.dim} of {x} is 0 or 1 in one call, and the code branches on it: such a size has "
        "a version of its own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them): the calls where dim "
        f"{ch.dim} of {x} is 1 share one version of their own (so do those where it is 0), compiled once and reused. "
        f"`mark_unbacked` is not the fix here: the compiled code branches on that size ({branch}), and an unbacked "
        "size has no value to branch on, so the branch becomes data-dependent: torch breaks the graph there or raises "
        "(`GuardOnDataDependentSymNode`). `torch._dynamo.mark_dynamic` on the tensor keeps every size from 2 up in "
        "one version (it specialises 0 and 1 too, as torch does by itself after one recompile). Nothing to fix for "
        "the one version of size 1.", confidence=Confidence.MEDIUM)


def _contiguous(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if not (ch.kind == "stride" and r.nameable):
        return None
    return Suggestion.of(
        f"contiguous: pass `{x}` in one memory layout",
        f"`{x}` arrived with another memory layout (a transposed or sliced view). Make it contiguous where "
        "it is made (or where it is passed), so every call sees the same strides.",
        Fix(rebinds=[Rebind(x, "contiguous", "before the call")]),
        Confidence.HIGH, Kind.CONTIGUOUS,
    )


def _is_number(r: _Reason) -> bool:
    return (r.change.kind in ("value", "global") and _value_kind(r.change.before) in ("int", "float")
            and _value_kind(r.change.after) in ("int", "float", ""))


def _loop_body(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    x = r.change.subject
    if not (_is_number(r) and _in_range(r) and not dynamic_after and r.nameable):
        return None
    return Suggestion(
        f"loop_body: `{x}` is a loop count; compile one step and loop in Python",
        f"`{x}` sets how often a loop runs, so Dynamo unrolls the loop and each value of `{x}` is a new "
        "graph. Compile the loop's body as a function and run the loop outside it: one compile for "
        "every count. (Or rewrite the loop with `scan` over a tensor whose length is the count.)",
        "step = torch.compile(body)  # body: one iteration of the loop, state -> state\n"
        f"for _ in range({x}):\n    state = step(state)",
        Confidence.MEDIUM, Kind.LOOP_BODY,
    )


def _tensor_value(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch, x = r.change, r.change.subject
    if not (_is_number(r) and r.nameable and _only_in_arithmetic(r)):
        return None
    where = "the global" if ch.kind == "global" else "the value"
    alt = ([] if ch.kind == "global" or "." in x or r.closure_of else
           ["or compile dynamic from the first call: torch.compile(..., dynamic=True)  (%%compile --dynamic)"])
    # a variable a function closes over is set where that function is made, which the call does not show: no
    # line before the call can give it a tensor (the closure keeps its own cell), so the way is in words
    at = f" (read at {r.guard.where})" if r.guard.where else ""
    closure = (f" `{x}` is a variable `{r.closure_of}` closes over{at}: give it the tensor where it is set, before "
               f"`{r.closure_of}` is defined (`{x} = torch.tensor({x})`), and a new tensor for each new value."
               if r.closure_of else "")
    fix = None if r.closure_of else Fix(
        rebinds=[Rebind(x, "tensor", f"once; later: {x} = torch.tensor(new_value)")], notes=alt)
    return Suggestion(
        f"tensor_value: hold `{x}` in a tensor",
        f"torch guards on {where} `{x}` as a constant, so each value is a new compile"
        + (" (and changing a global between calls is a recompile every time)" if ch.kind == "global" else "")
        + f". `{r.code.strip()}` uses it only in arithmetic with tensors, where a 0-d tensor gives the same "
        "result; a 0-d tensor is guarded on its dtype and shape only: its value is data, and changing it "
        "compiles nothing. Reassign a new tensor (or `.fill_()` it) to change the value." + closure,
        fix.code if fix is not None else "",
        Confidence.MEDIUM if r.closure_of else Confidence.HIGH, Kind.TENSOR_VALUE, fix=fix,
    )


def _specialized_number(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    ch = r.change
    if not _is_number(r):
        return None
    how = ("torch made it dynamic after this recompile: later values reuse that version"
           if dynamic_after else "the new version is specialised again (dynamic=False, or automatic dynamic "
           "shapes off, or a value torch must know), so each new value compiles once more")
    return _fix(
        Kind.SPECIALIZED_NUMBER, f"each value of {_shown(r)} is a compiled version",
        f"torch treats a Python number as a constant of the graph; {how}. If the value changes from call to "
        "call, compile with the default `dynamic=None` (automatic dynamic: one recompile, then a symbol) or "
        "`dynamic=True`; if the code needs the value itself (a size, a loop count, a branch), each value is "
        "a version of its own: keep the set of values small, or pass it as a 0-d tensor where it only feeds "
        "tensor arithmetic.")


def _say(template: str, r: _Reason) -> str:
    """``template`` with the value in it: "`{x}`" as :func:`_shown` words it (the user's name, else what
    capture said of it: never an empty name), a bare "{x}" (inside code: `torch.stack({x})`) as the subject."""
    return template.replace("`{x}`", "\0").format(x=r.change.subject or "the input").replace("\0", _shown(r))


def _explained(kind: Kind, change_kinds: tuple[str, ...], title: str, words: str) -> "RecompileRule":
    """A change that needs no code change (or allows none): its kind and what to do, in words."""

    def fix(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
        retyped_size = kind is Kind.TYPE_CHANGE and r.change.kind in ("size", "size_0_1") and r.retyped
        if r.change.kind not in change_kinds and not retyped_size:
            return None
        if retyped_size:  # the size changed, and another input is a tensor in one compile and not the other
            return _fix(kind, "another input changes type between calls",
                        f"The size of `{r.change.subject}` changed, and another input was a tensor in one compiled "
                        "version and not in the other (a tensor, then a number): each combination of types is a "
                        "version of its own, and marking a size dynamic cannot help while that changes. Pass one "
                        "type every call (`torch.as_tensor(...)` the number), then mark the size dynamic.")
        if kind is Kind.FLAG_VALUE and _value_kind(r.change.before) in ("int", "float"):
            return None
        return _fix(kind, _say(title, r), _say(words, r))

    return RecompileRule(kind, title.format(x="x"), fix)


def _instance_attribute(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """An attribute the compiled code read from the object's class (no value of the object's own) is now the
    object's own (``model.config.block_size = 12`` on a config whose class gives the default), or back."""
    ch = r.change
    if not (ch.kind == "attribute" and ch.before.endswith(("class's", "own"))):
        return None
    x = ch.subject or "the attribute"
    return _fix(Kind.ATTRIBUTE_PRESENCE, f"`{x}` is now {ch.after} value, where it was {ch.before}",
                f"When compiled, `{x}` had no value on the object itself and was read from its class; an assignment "
                "on the object (`obj.name = value`) now gives it its own, and torch, which guards on where the value "
                "comes from, compiles again. Nothing to fix for one such change (a setting changed once, a model "
                "cut down once). The value itself is part of what was compiled too: a value that keeps changing "
                "compiles again for each, wherever it is held; keep such a value in a tensor where only tensor "
                "arithmetic reads it.")


def _carried(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A value torch carries across a graph break (made inside the compiled code): no line of the user's can
    mark it. A size: dynamic=True makes the code after the break dynamic too; a number from ``.item()``:
    capture_scalar_outputs keeps ``.item()`` in the graph, so there is no break to carry it across."""
    g, ch = r.guard, r.change
    if g.origin != "carried":
        return None
    where = f" (`{g.carried_from}`)" if g.carried_from else ""
    head = (f"The value that changed is made inside the compiled code and carried by torch across the graph "
            f"break{where} into the code after it: no line of yours names it, so nothing can be marked on it. ")
    if ch.kind == "size" and not dynamic_after and not r.sizes_0_1:
        return _fix(Kind.CARRIED_VALUE, "a size carried across a graph break changes: compile with dynamic=True",
                    head + "Its size follows your inputs' sizes. Compiling with `dynamic=True` makes the sizes of "
                    "the code after the break dynamic too (marking an input does not reach it); removing the graph "
                    "break removes the carried value altogether.",
                    DYNAMIC)
    if ch.kind in ("value", "global") and _value_kind(ch.before) in ("int", "float") and ".item()" in g.carried_from:
        return _fix(Kind.CARRIED_VALUE, "a number from `.item()` is carried across the graph break `.item()` makes",
                    head + "It is the Python number `.item()` returned: `.item()` breaks the graph, and the code "
                    "after the break is compiled for that number. With `capture_scalar_outputs`, `.item()` stays "
                    "in the graph (as torch's own hint for this break says): no break, nothing carried, and a new "
                    "number compiles nothing.",
                    _dynamo_setting("capture_scalar_outputs", "True"))
    return _fix(Kind.CARRIED_VALUE, "a value carried across a graph break changes",
                head + ("Torch made it dynamic in the new version, so this recompile happens once: nothing to fix. "
                        if dynamic_after else "") + "To avoid the recompile, remove the graph break (see the graph "
                        "breaks), so that the value never leaves the graph.")


def _library(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """A value a library's call passes (a decoder layer called by the model's own ``forward``)."""
    g, ch = r.guard, r.change
    if g.origin != "library":
        return None
    if ch.kind == "size" and dynamic_after:
        return _fix(Kind.LIBRARY_VALUE, "a size library code passes changed; torch made it dynamic after this one recompile",
                    f"What changed ({_shown(r)}) is made and passed by library code: no line of yours makes it, so "
                    "no code of yours can mark it. Torch made the size dynamic in the new version by itself (automatic "
                    "dynamic shapes): other sizes reuse it, so this recompile happens once. Nothing to fix.")
    if ch.kind in ("size", "size_0_1") and r.sizes_0_1:
        return _fix(Kind.LIBRARY_VALUE, "sizes library code passes change, one of them to or from 1: dynamic=True "
                    "would not remove these recompiles",
                    f"What changed ({_shown(r)}) is made and passed by library code: no line of yours makes it, so no "
                    f"code of yours can mark it. Among this function's recompiles, {r.sizes_0_1}: torch always "
                    "specialises sizes 0 and 1, and `dynamic=True` (or `mark_dynamic`) specialise them too, so "
                    "compiling with `dynamic=True` would leave these recompiles. Only an unbacked size "
                    "(`torch._dynamo.decorators.mark_unbacked`) serves 1 and other sizes in one version, and it is "
                    "marked on the tensor, which the library makes. Nothing in your code removes them; they are "
                    "few (each size torch has not made dynamic compiles once, then is reused): look for the "
                    "library's own switch for fixed sizes if they matter.")
    size = ch.kind == "size" and not dynamic_after
    return _fix(Kind.LIBRARY_VALUE, "what changed is passed by library code, not by a line of yours",
                f"What changed ({_shown(r)}) is passed to the compiled code by a library's own call: no line of "
                "yours makes it, so no code of yours can mark or convert it. "
                + ("Compiling with `dynamic=True` makes its sizes dynamic from the first call. " if size else "")
                + "Look for the library's own switch for this, or compile the library's outer module once, so "
                "that its calls are traced instead of entered anew.",
                DYNAMIC if size else None)


def _needs_the_int(r: _Reason) -> tuple[str, str]:
    """How the user's line torch quoted uses ``r``'s int where torch must know its value whatever the settings
    (``self.stages[self._pos]``: an index that picks a Python object; ``range(self.n)``: a loop count; a
    condition): ``(the use's code, what it is)``; ``("", "")`` where no such use is seen."""
    tree = _parse_line(r.code)
    if tree is None:
        return "", ""
    x = _as_read(r)

    def reads(node: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id == x) or (isinstance(n, ast.Attribute) and n.attr == x)
                   for n in ast.walk(node))

    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and reads(n.slice):
            return ast.unparse(n), "an index, which picks an item"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" and any(reads(a) for a in n.args):
            return ast.unparse(n), "a loop count"
        if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) and reads(n.test):
            return ast.unparse(n.test), "a condition"
        if isinstance(n, ast.Compare) and reads(n):
            return ast.unparse(n), "a comparison"
    return "", ""


def _module_int_attribute(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """An int attribute of an nn.Module changes (torch keeps them static: its HINT names the setting).
    ``allow_unspec_int_on_nn_module`` makes such an int a symbol (torch 2.13: ``is_int_specialization_case``
    no longer specialises it; ``dynamic=True`` does not change that test) only where the code needs no
    value: used as an index into a Python container, a loop count or a branch, it is specialised again and
    each value still compiles. The setting is offered only where the line torch quoted uses the int in
    arithmetic alone (``x * self.scale``); an index, a ``range`` or a condition gets words."""
    g, ch = r.guard, r.change
    if not (ch.kind == "value" and _value_kind(ch.before) == "int" and "allow_unspec_int_on_nn_module" in g.note):
        return None
    use, what = _needs_the_int(r)
    if use or not _only_in_arithmetic(r):
        how = (f"`{r.code.strip()}` needs its value (`{use}`: {what})" if use
               else f"`{r.code.strip()}` uses it other than in arithmetic")
        return _fix(Kind.MODULE_INT_ATTRIBUTE, f"each value of the int attribute {_shown(r)} of a module is a compiled version",
                    f"torch treats int attributes of an nn.Module as constants (each value is a version of its own), "
                    f"and {how}. `torch._dynamo.config.allow_unspec_int_on_nn_module = True`, torch's hint, makes such "
                    "an int a symbol only where the code needs no value: "
                    + ("an index into a Python container (a ModuleList, a list), a loop count or a branch makes torch "
                       "specialise it again, so each value still compiles; " if use else
                       "it is not shown to remove these recompiles here; ")
                    + "`dynamic=True` does not change how module ints are treated. Nothing to fix while the values "
                    "are few: each value compiles once and later calls reuse its version. Torch keeps at most "
                    "`torch._dynamo.config.recompile_limit` versions per function (8 by default): with more values "
                    "than that, the calls past it run eagerly (uncompiled); then raise the limit to the number of "
                    "values, or move what depends on the value out of the compiled code (compile each selected "
                    "module on its own).")
    return _fix(Kind.MODULE_INT_ATTRIBUTE, f"the int attribute {_shown(r)} of a module changes: let torch treat it as a symbol",
                f"torch treats int attributes of an nn.Module as constants (each value is a version), whatever "
                "`dynamic=` says. `torch._dynamo.config.allow_unspec_int_on_nn_module = True` (torch's own hint) makes "
                "them symbols like any other int: after the usual specialisation of 0 and 1, one version serves "
                "every value.",
                _dynamo_setting("allow_unspec_int_on_nn_module", "True"))


#: The fixes for one change, tried in order: the first that applies wins. Where no code
#: change is needed or possible, a named kind says what to do in words.
RULES: list[RecompileRule] = [
    RecompileRule(Kind.FORCE_PARAMETER_STATIC_SHAPES, "an nn.Parameter's size changes: "
                  "force_parameter_static_shapes = False (torch's own advice), then mark_dynamic",
                  _force_parameter_static_shapes),
    RecompileRule(Kind.MARK_DYNAMIC, "a tensor's size changes, and the same size in a value of another compiled frame "
                  "that no code of the user's can mark: maybe_mark_dynamic (never ConstraintViolationError)", _maybe_mark_dynamic),
    RecompileRule(Kind.MARK_DYNAMIC, "a tensor's size changes: mark the dimension dynamic before the first call", _mark_dynamic),
    RecompileRule(Kind.AUTOMATIC_DYNAMIC, "a size torch made dynamic by itself after one recompile (a value no "
                  "code of the user's can mark): nothing to fix", _automatic_dynamic),
    RecompileRule(Kind.CARRIED_VALUE, "a value torch carries across a graph break changes: dynamic=True, "
                  "capture_scalar_outputs for `.item()`, or remove the break", _carried),
    RecompileRule(Kind.MARK_UNBACKED, "a size becomes 0 or 1: mark the dimension unbacked", _mark_unbacked),
    RecompileRule(Kind.CONTIGUOUS, "a tensor's strides change: pass it contiguous", _contiguous),
    RecompileRule(Kind.LOOP_BODY, "a Python int is a loop count: compile one step, loop in Python", _loop_body),
    RecompileRule(Kind.TENSOR_VALUE, "a Python number (or a global) changes: hold it in a 0-d tensor", _tensor_value),
    RecompileRule(Kind.MODULE_INT_ATTRIBUTE, "an int attribute of a module changes: allow_unspec_int_on_nn_module",
                  _module_int_attribute),
    RecompileRule(Kind.LIBRARY_VALUE, "a value a library's call passes changes: a setting or the library's switch",
                  _library),
    RecompileRule(Kind.SPECIALIZED_NUMBER, "a Python number the code needs as a number changes: dynamic=None/True, or "
                  "one version per value", _specialized_number),
    _explained(Kind.DTYPE_CHANGE, ("dtype",), "one compiled version per dtype of `{x}`",
               "dtypes never become dynamic: each dtype of `{x}` is a version of its own, kept side by side, and "
               "calls with a dtype seen before reuse it. Nothing to fix for a few dtypes. If the dtype change is "
               "unintended, convert where `{x}` is made (`.float()`, `.to(torch.float32)`) so every call sees one "
               "dtype; past torch._dynamo.config.recompile_limit (8 by default) versions, the function runs uncompiled."),
    _explained(Kind.RANK_CHANGE, ("rank",), "one compiled version per number of dimensions of `{x}`",
               "the number of dimensions never becomes dynamic: each rank of `{x}` is a version of its own, kept "
               "and reused. Nothing to fix for a few ranks; if one rank is meant, reshape where `{x}` is made "
               "(`.reshape(-1, n)`, `.unsqueeze(0)`) so every call sees the same rank."),
    _explained(Kind.REQUIRES_GRAD_CHANGE, ("requires_grad",), "one compiled version with gradients for `{x}`, one without",
               "torch compiles a version that tracks gradients through `{x}` and one that does not; both are kept. "
               "Nothing to fix when training and inference calls mix; for inference only, call under "
               "`torch.no_grad()` or pass `{x}.detach()` so every call sees the same."),
    _explained(Kind.GLOBAL_STATE_CHANGE, ("global_state",), "one compiled version per state of {x}",
               "torch's global state ({x}) is part of what a compiled version assumes: a call under another state "
               "(torch.no_grad() around one call and not another, autocast, a default dtype) compiles its own "
               "version, kept and reused. Nothing to fix when both states are meant; else make the calls agree "
               "(the same `with torch.no_grad():` around every call)."),
    _explained(Kind.DEVICE_CHANGE, ("device", "dispatch_keys"), "one compiled version per device or kind of tensor for `{x}`",
               "`{x}` arrived on another device, or as another kind of tensor (a subclass, a meta or sparse "
               "tensor, a tensor under a dispatch mode): each is a version of its own. Nothing to fix when both "
               "are meant; else move `{x}` to one device (`.to(device)`) before the call."),
    _explained(Kind.TYPE_CHANGE, ("type",), "one compiled version per type of `{x}`",
               "torch guards on the exact Python type of `{x}` (a Parameter and a plain Tensor are different types; "
               "so are a tensor and an int): each type is a version of its own. Nothing to fix when both are meant; "
               "else pass one type (`.detach()` a Parameter, `torch.as_tensor(...)` a number)."),
    _explained(Kind.FLAG_VALUE, ("value",), "one compiled version per value of `{x}`",
               "`{x}` is a Python value (a flag, None, a string) that the code branches on or reads: torch compiles "
               "one version per value and keeps them all. That is the right behaviour for a flag with a few "
               "values (True / False, a mode name): nothing to fix. A value that changes on every call belongs "
               "in a tensor (with torch.where / torch.cond for the branch)."),
    _explained(Kind.LIST_LENGTH, ("length",), "one compiled version per length of `{x}`",
               "the code loops over (or unpacks) `{x}`, so torch unrolls it for its length: each length is a version "
               "of its own. Nothing to fix for a few lengths; for many, stack the items into one tensor "
               "(`torch.stack({x})`) and work on the tensor, whose size can be dynamic."),
    _explained(Kind.KEYWORD_ARGUMENTS, ("keywords",), "one compiled version per set of keyword arguments",
               "the compiled code was called with one set of keyword arguments one time and another set another "
               "time (`m(x)`, then `m(x, mask=mask)`; `m(input_ids=ids)`, then `m(inputs_embeds=emb)`): torch guards "
               "on which keywords a call passes, so each set is a version of its "
               "own, kept and reused. Nothing to fix for a few; else pass the same keywords every call (the default "
               "value explicitly, `mask=None`)."),
    _explained(Kind.TRAIN_EVAL, ("training",), "one compiled version for train(), one for eval()",
               "`{x}` switched between train() and eval(): dropout and batch norm behave differently, so torch "
               "compiles one version per mode and keeps both. Nothing to fix: switching back reuses the first."),
    _explained(Kind.IDENTITY_CHANGE, ("identity",), "one compiled version per object passed as `{x}`",
               "torch inlines the function or object passed as `{x}` and guards on its identity: each different "
               "object is a version of its own. Nothing to fix for a few; for many (a new lambda or module on "
               "every call), create it once outside the loop and pass the same one, or compile it on its own."),
    RecompileRule(Kind.ATTRIBUTE_PRESENCE, "an attribute read from the class is now set on the instance: one more "
                  "version, nothing to fix", _instance_attribute),
    _explained(Kind.ATTRIBUTE_PRESENCE, ("attribute",), "one compiled version with `{x}`, one without",
               "the code asks whether `{x}` exists (`hasattr`, `getattr(..., default)`), so torch compiles one "
               "version for each answer and keeps both. Nothing to fix when both are meant; else give the object the "
               "attribute always (a default value in `__init__` or the config's fields), so every call sees the same."),
    _explained(Kind.ALIASING, ("aliasing",), "one compiled version for {x} as one tensor, one for separate tensors",
               "the inputs {x} were separate tensors when compiled and are one tensor now (or the other way): "
               "an in-place write through one changes the other, so torch compiles a version for each case. "
               "Nothing to fix when both are meant; else pass a copy (`.clone()`) where one tensor is passed twice."),
]

#: The kinds of recompile suggestion (``Suggestion.kind``; ``Suggestion.title`` starts with
#: the same word), each with its test in tests/test_doctor_recompiles.py: a fix removes the
#: recompile with the same outputs, a named no-fix kind's explanation says what to do.
#: The kinds decided for a recompile from its function's other compiles, not from one change alone.
FRAME_KINDS: tuple[Kind, ...] = (Kind.PER_LAYER, Kind.RECOMPILE_LIMIT, Kind.SIZE_CONDITION)
SUGGESTION_KINDS: tuple[Kind, ...] = (*(r.kind for r in RULES), *FRAME_KINDS)


#: the exceptions rules raised during one explain_recompiles call, (where, exception); counted on its report
_ERRORS: list = []


def _suggest(r: _Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """The fix (or the named no-fix kind) for one change; None for a change of no known form. A rule that
    raises is counted (``doctor:recompile rule <kind>``) and the next rule is tried."""
    for rule in RULES:
        try:
            s = rule.fix(r, dynamic_after)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not lose the answer
            _ERRORS.append((f"recompile rule {rule.kind}", exc))
            continue
        if s is not None:
            return s
    return None


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
    if rc.limit is not None and setting == rc.limit and _simple(subject):
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


def _per_layer(report: "CompileReport", rc: Recompile, r: _Reason, new: list[GuardEntry]) -> Optional[tuple[int, bool]]:
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
    int_attr = g.kind == "value" and _value_kind(g.before) == "int" and (
        "allow_unspec_int_on_nn_module" in g.note or g.origin == "module"
        or g.path.startswith("self."))  # an int attribute of the layer (FSDP2's wrapped layers get no HINT)
    if not (indexed or int_attr):
        return None
    versions = sum(1 for x in frame if x.status != "recompile limit")
    return versions, indexed and not int_attr


def _per_layer_suggestion(rc: Recompile, r: _Reason, versions: int, limit: int) -> Suggestion:
    g = r.guard
    hit = rc.limit_hit
    use, what = _needs_the_int(r) if r.code and _loose(g.path) == g.path else ("", "")  # an indexed entry: the index
    why = ("the index picks a Python object" if not use or what.startswith("an index")
           else f"`{use}` is {what}, which torch specialises")
    return _fix(
        Kind.PER_LAYER, ("each layer compiles a version of its own: the recompile limit was hit, later layers run eagerly"
                         if hit else f"each layer compiles a version of its own; past {limit} layers the rest run eagerly"),
        f"The same code is compiled once per layer of `{rc.loop_over}` (each layer's `forward` compiled on its own, as per-layer "
        f"`compile()` or FSDP2's `fully_shard` per layer do), and each layer reads its own entry ({_shown(r)}, by the "
        f"layer's index), which torch must know: each layer is a version of its own. {versions} version(s) so far; "
        f"torch keeps at most `recompile_limit` ({limit}) versions per function, so in a model with more layers "
        f"{'the layers past it ran' if hit else 'the layers past it run'} eagerly (uncompiled). `dynamic=True` and "
        f"`allow_unspec_int_on_nn_module` do not help: {why}. Raise the limit to at least "
        "the number of layers (each layer then compiles once, and every later call reuses its version), or compile "
        "the whole model once (one trace of its loop over the layers)." + (
            "" if hit else " Nothing to fix while the model has fewer layers than the limit."),
        # the setting only where the limit was hit: below it, a higher limit changes nothing
        _dynamo_setting("recompile_limit", "64", "at least the number of layers; before the first call") if hit else None)


# -- a condition on a dynamic size: the code branches on it, or needs it as a number ---------------------------
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


def _symbol_names(g: ShapeGuard, entries: list[GuardEntry], r: _Reason) -> dict[str, str]:
    """Each symbol of ``g`` as the user's code would read it (``x.shape[1]``); a tensor no name of the
    user's holds is "dim 1 of an input"."""
    names = {e.path: e.name for e in entries if e.type == "TENSOR_MATCH" and e.path and e.name}
    if r.nameable and r.src:
        names[r.src] = r.change.subject
    out = {}
    for x in g.symbols:
        name = names.get(x.path, "")
        if x.kind == "size" and x.dim is not None:
            out[x.symbol] = f"{name}.shape[{x.dim}]" if _simple(name) else f"(dim {x.dim} of an input)"
        elif x.kind == "stride" and x.dim is not None:
            out[x.symbol] = f"{name}.stride({x.dim})" if _simple(name) else f"(stride {x.dim} of an input)"
        elif x.kind == "int" and r.nameable and x.path == r.src:
            out[x.symbol] = r.change.subject
    return out


def _size_condition(report: "CompileReport", rc: Recompile, r: _Reason, dynamic: bool,
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
    before, after = _tensor_sizes(failed), _tensor_sizes(new)
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
        return _fix(
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
    return _fix(
        Kind.SIZE_CONDITION, f"the compiled code branches on a size (`{cond}`, {where}): one version per side, "
        "which no mark removes",
        head + " It is bounded: sizes on one side of the condition share one version (while they meet torch's other "
        f"guards), so this recompile happens once for the other side, not once per size. To avoid it, {fix_side}. "
        "Otherwise nothing to fix.", confidence=Confidence.MEDIUM)


def _sizes_0_1(report: "CompileReport", rc: Recompile) -> str:
    """A size of ``rc``'s function's inputs that went to or from 0 or 1 in any of its recompiles, in words
    (``dim 1 of `input_ids` went 6 → 1``); "" if none."""
    for x in report.recompiles:
        if (x.compile_id.frame_id, x.compile_id.compiled_autograd_id) != (rc.compile_id.frame_id, rc.compile_id.compiled_autograd_id):
            continue
        for g in x.guards:
            if g.kind == "size_0_1" and g.dim is not None:
                what = f"`{g.name}`" if g.name else g.described or "an input"
                if g.before.startswith(">="):
                    return f"dim {g.dim} of {what} became 0 or 1"
                return f"dim {g.dim} of {what} went {_arrow(g.before, g.after)}"
    return ""


def _hidden_sizes(r: _Reason) -> list:
    """The sizes the call changed besides the one torch's reason names, from the guards of both compiles:
    torch reports only the first failed check of a guard set (``get_guard_fail_reason_helper``), so a call
    that changes several inputs at once is named by one of them. Each ``(tensor, dim, before, after, path)``."""
    own = r.change.dim if r.change.kind in ("size", "size_0_1") else None
    return [x for x in r.resized_sizes if not (x[4] == r.src and x[1] == own)]


def _hidden_values(r: _Reason, failed: list[GuardEntry], new: list[GuardEntry]) -> list[tuple[str, str, str]]:
    """The values of the user's inputs (``EQUALS_MATCH``: a number, a flag, a string) the call changed besides
    the one torch's reason names: a value the failed compile guarded that the new compile guards on another
    value, or no longer on a value (made dynamic). Each ``(torch's path, before, after)``; after "" where the
    new compile holds no value for it. Torch's own checks (``hasattr(x, '_dynamo_dynamic_indices') == False``,
    the default device) are no input's value."""
    if not failed or not new:
        return []

    def of_input(e: GuardEntry) -> bool:
        return (e.type == "EQUALS_MATCH" and bool(e.path) and bool(e.value) and e.length is None and _simple(e.path)
                and _value_kind(e.value) != "")

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


def _value_words(values: list[tuple[str, str, str]]) -> str:
    """```factor` (2 → 3)`` for each; a path that is torch's own (``___stack0``, ``L['args']``) as "another value"."""
    def one(path: str, a: str, b: str) -> str:
        root = path.split(".", 1)[0].split("[", 1)[0]
        what = f"`{path}`" if _simple(path) and not path.startswith("_") and root not in ("args", "kwargs", "fn", "self") \
            else "another value"  # torch's names (its wrappers' `args`, `fn`; the `self` of a method it compiled)
        return f"{what} ({a} → {b})" if b else f"{what} ({a}, then another value)"

    items = [one(*v) for v in values]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _size_words(hidden: list) -> str:
    """``dim 0 of `x` (2 → 3) and dim 0 of `y` (2, then dynamic)``."""
    def one(m: str, d: int, a, b) -> str:
        what = f"dim {d} of `{m}`" if m else f"dim {d} of another tensor input"
        return f"{what} ({a} → {b})" if b is not None else f"{what} ({a}, then another size: dynamic in the new version)"

    items = [one(m, d, a, b) for m, d, a, b, _ in hidden]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _markable(hidden: list, parameters: set = frozenset()) -> bool:
    """Every hidden size is a dimension of a tensor the user's code names, never 0 or 1 on either side
    (``mark_dynamic`` specialises those too), and no nn.Parameter (whose marks torch ignores)."""
    return all(m and _simple(m) and a is not None and a not in (0, 1) and b not in (0, 1) and p not in parameters
               for m, _, a, b, p in hidden)


def _with_hidden(root: Optional[Suggestion], r: _Reason, hidden: list, values: Sequence = ()) -> Optional[Suggestion]:
    """``root``, the fix for the change torch's reason names, made right for the whole call where the call
    changed other sizes too: the marks for those added to its code (each such size never 0 or 1), else its
    code withheld (words: a fix for one change leaves the recompile). A fix that marks every changed size
    already (``mark_dynamic``) or makes every size dynamic (``dynamic=True``) stays as it is; ``mark_unbacked``
    is withheld (several sizes at 0 or 1 together: see :func:`_unbacked_with_others`)."""
    if root is None or not root.code or not (hidden or values):
        return root
    if values:  # a number or a flag changed too: no mark reaches it, and its use is not known here
        unmarked = [h for h in hidden if f"mark_dynamic({h[0]}, {h[1]})" not in root.code]
        return dataclasses.replace(
            root, code="", fix=None, confidence=Confidence.MEDIUM,
            explanation=root.explanation + " The same call changed "
            + " and ".join(w for w in (_size_words(unmarked) if unmarked else "", _value_words(list(values))) if w)
            + " too (torch's reason names only the first guard that failed), which this fix does not reach: alone "
            "it would leave this recompile, so no code is given. Fix what changes in each input.")
    if root.kind == Kind.MARK_UNBACKED:
        return _unbacked_with_others(r, hidden)
    marks = [Mark("mark_dynamic", m, d, BEFORE) for m, d, *_ in hidden]
    if root.fix is not None:
        have = {(mk.function, mk.target, mk.dim) for mk in root.fix.marks}
        if all(("mark_dynamic", mk.target, mk.dim) in have for mk in marks) or root.fix.compile_options.get("dynamic") == "True":
            return root
    else:  # code that is no record (a template): the marks written after its lines, as text
        lines = root.code.split("\n")
        fix_lines = [ln for ln in lines if not ln.lstrip().startswith("#")]
        comments = [ln for ln in lines if ln.lstrip().startswith("#")]
        if all(mk.statement in root.code for mk in marks) or any("dynamic=True" in ln for ln in fix_lines):
            return root
    words = _size_words(hidden)
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


def _unbacked_with_others(r: _Reason, hidden: list) -> Suggestion:
    """A size that went to or from 0 or 1 together with other sizes of the same call (``box_lists[0].tensor``
    and ``box_lists[1].tensor``, 2 → 1): one ``mark_unbacked`` leaves the others specialised; one on each makes
    each an unknown size with no relation to the others, and code that reads them as numbers or needs them
    equal then breaks or compiles again, which no record shows beforehand (on detectron2's
    ``convert_boxes_to_pooler_format`` it broke at the line that reads the lengths). Words, no code."""
    ch, x = r.change, r.change.subject
    marks = "; ".join(f"`torch._dynamo.decorators.mark_unbacked({m}, {d})`" for m, d in [(x, ch.dim)] + [(m, d) for m, d, *_ in hidden] if m)
    return Suggestion(
        f"mark_unbacked: dim {ch.dim} of {_shown(r)} and other sizes are 0 or 1 in one call: such sizes have a "
        "version of their own, compiled once",
        "Sizes 0 and 1 are always specialised (broadcasting differs for them), and `mark_dynamic` or `dynamic=True` "
        "specialise them too: the calls with these sizes share one version of their own, compiled once and reused; "
        "other sizes share another. Nothing to fix for that one version. The same call changed "
        f"{_size_words(hidden)} too (torch's reason names only the first guard that failed), so a mark on one "
        "leaves the others specialised, and a mark on each makes each an unknown size with no relation to the "
        "others: code that reads them as numbers (`len()`, a shape turned into a tensor) or needs them equal then "
        "breaks or compiles again, which cannot be seen from here. "
        + (f"To try it: {marks}, before the first call; keep them only where a run with them shows the recompile "
           "gone, the outputs equal and no new break." if marks else ""),
        "", Confidence.MEDIUM, Kind.MARK_UNBACKED)


def _same_size_elsewhere(report: "CompileReport", rc: Recompile, g: FailedGuard,
                         entries: Callable[[Optional[CompileId]], list[GuardEntry]]) -> str:
    """Words for a tensor of another compiled frame that no line of the user's can mark (a library passes it,
    or torch carries it across a graph break: its failed guard says so, or its tensor guard has no name of
    the user's) whose size changed as ``g``'s did (``8`` to ``12``, or to a dynamic size); "" if none."""
    if g.kind != "size" or not (g.before and g.after) or g.origin in ("library", "carried"):
        return ""
    for x in report.recompiles:
        if x.compile_id.frame_id == rc.compile_id.frame_id or not x.guards:
            continue
        for h in x.guards:
            if h.kind == "size" and h.origin in ("library", "carried") and (h.before, h.after) == (g.before, g.after):
                return h.described or (f"`{h.path}`" if h.path and not h.path.startswith("_") else "a value of that frame")
        new = entries(x.compile_id)
        before, after = _tensor_sizes(entries(x.guards[0].failed_compile_id)), _tensor_sizes(new)
        named = {e.path for e in new if e.type == "TENSOR_MATCH" and e.name}
        for p, sizes in before.items():
            if p in named or p not in after or len(sizes) != len(after[p]):
                continue
            if any(str(a) == g.before and (b is None or str(b) == g.after) for a, b in zip(sizes, after[p])):
                fn = x.shown_function or x.function
                return f"`{p}`" + (f" of `{fn}`" if fn else "") + ", a tensor made inside the compiled code"
    return ""


def _explain(report: "CompileReport", rc: Recompile, earlier: Sequence[GuardSet] = ()) -> Recompile:
    guards = {g.compile_id: g for g in earlier}
    guards.update({g.compile_id: g for g in report.guards})
    if rc.reasons and not rc.guards:  # saved before capture read guards: keep what the doctor said then
        return dataclasses.replace(rc)

    def entries(cid: Optional[CompileId]) -> list[GuardEntry]:
        gs = guards.get(cid) if cid is not None else None
        return list(gs.entries) if gs is not None else []

    new_entries = entries(rc.compile_id)
    through_0_1 = _sizes_0_1(report, rc)
    read: list[tuple[_Reason, bool]] = []
    for g in rc.guards:
        r = _read(g)
        r.sizes_0_1 = through_0_1
        r.tied = _same_size_elsewhere(report, rc, g, entries)
        dynamic = _complete(r, entries(g.failed_compile_id), new_entries)
        if r.change.kind == "symbolic" and r.change.dim is not None and not r.change.after:
            # this call's size, from torch's reason of another version's check on the same size (`actual 7`)
            r.change.after = next((h.after for h in rc.guards if h.kind in ("size", "size_0_1") and h.path == g.path
                                   and h.dim == g.dim and h.after.isdigit()), "")
        r.change.text = _text(r, dynamic)
        read.append((r, dynamic))
    changes = [r.change for r, _ in read]
    parts = []
    if read:
        parts.append(read[0][0].change.text[:1].upper() + read[0][0].change.text[1:])
        older = [r.change for r, _ in read[1:]]
        same = [str(o.failed_compile_id) for o in older if o.text == read[0][0].change.text]
        other = [o for o in older if o.text != read[0][0].change.text]
        if same:
            parts.append(f"The same guard failed for the older version(s) {', '.join(same)}")
        if other:
            parts.append(f"The guards of {len(other)} other older version(s) failed too: "
                         + "; ".join(f"{o.text} ({o.failed_compile_id})" for o in other))
    root = _suggest(*read[0]) if read else None
    hidden = _hidden_sizes(read[0][0]) if read else []
    values = _hidden_values(read[0][0], entries(rc.guards[0].failed_compile_id), new_entries) if read else []
    if hidden or values:
        said = " and ".join(w for w in (_size_words(hidden) if hidden else "", _value_words(values) if values else "") if w)
        parts.insert(1, f"The same call changed {said} too (torch's reason names only the first guard that failed)")
        if root is not None and root.code:
            root = _with_hidden(root, read[0][0], hidden, values)
    if root is not None and root.kind == Kind.MARK_UNBACKED and root.code and report.owner(rc.filename).value == "library":
        root = _unbacked_in_library(read[0][0], rc)
    if root is not None and root.kind == Kind.MARK_UNBACKED and root.code:
        branch = _size_branch(report, rc, read[0][0])
        if branch:
            root = _unbacked_branches(read[0][0], branch)
    # a condition on the size that no mark removes: said, instead of the mark (a value a library passes keeps
    # library_value's answer: no line of the user's could mark it anyway)
    condition = (_size_condition(report, rc, *read[0], entries(read[0][0].guard.failed_compile_id), new_entries)
                 if read and read[0][0].guard.origin != "library" else None)
    if condition is not None:
        root = condition
    limit = rc.limit or report.recompile_limits.get("recompile_limit") or 8
    layered = _per_layer(report, rc, read[0][0], new_entries) if read else None
    if layered is not None:
        versions, indexed = layered
        setting = None if indexed else _module_int_attribute(*read[0])
        if setting is None or not setting.code:  # an index, a loop count or a condition: torch needs the value
            root = _per_layer_suggestion(rc, read[0][0], versions, limit)
        else:
            root = setting  # one setting for every layer, torch's own hint, where the int only feeds arithmetic
            parts.append(f"Each layer of `{rc.loop_over}` compiles a version of its own ({versions} so far): in a model with more than "
                         f"{limit} such layers (`recompile_limit`), the layers past it run eagerly")
    suggestion = root
    if rc.limit_hit:
        frame = [x for x in report.compiles if x.compile_id.frame_id == rc.compile_id.frame_id
                 and x.compile_id.compiled_autograd_id == rc.compile_id.compiled_autograd_id]
        versions = sum(1 for x in frame if x.status != "recompile limit")
        parts.insert(0, f"Recompile limit hit: torch stopped compiling `{rc.shown_function or '?'}` after "
                        f"{versions} version(s); calls that fail every guard run eagerly (uncompiled) from now on.")
        first = read[0][0] if read else None
        subject = first.change.subject if first is not None and first.nameable else ""
        carried = _shown(first) if first is not None and first.guard.origin == "carried" else ""
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
        if not (root is not None and root.kind == Kind.PER_LAYER):  # per_layer's answer is the limit's
            suggestion = _limit_suggestion(rc, root, versions, report.recompile_limits.get(rc.limit_type or "recompile_limit"),
                                           subject, carried, others)
    explanation = " ".join(p if p.endswith(".") else p + "." for p in parts)
    return dataclasses.replace(rc, changes=changes, explanation=explanation, suggestion=suggestion)


def explain_recompiles(report: "CompileReport", *, earlier: Sequence[GuardSet] = ()) -> "CompileReport":
    """Doctor pass: every recompile gets ``changes``, ``explanation`` and (where a fix is known)
    ``suggestion``. Returns a new report. ``earlier``: guard sets of compiles this report does
    not hold (made by earlier runs), for the failed guards of its recompiles."""
    if not report.recompiles:
        return report
    from .errors import noted

    _ERRORS.clear()
    out = []
    for rc in report.recompiles:
        try:
            out.append(_explain(report, rc, earlier))
        except Exception as exc:  # noqa: BLE001 - one recompile the doctor cannot read keeps the others' answers
            _ERRORS.append((f"explain_recompiles {rc.compile_id}", exc))
            out.append(dataclasses.replace(rc))
    errors, _ERRORS[:] = list(_ERRORS), []
    return noted(dataclasses.replace(report, recompiles=out), "explain_recompiles", errors)
