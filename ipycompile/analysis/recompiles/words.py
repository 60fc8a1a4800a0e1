"""A recompile's change in plain words: the value as the user names it (:func:`shown`), what changed
and how (:func:`change_text`), and the words for the other sizes and values a call changed, or for the same
size changed in another compiled frame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from ...report.model import CompileId, FailedGuard, GuardEntry, Recompile
from .reading import Reason, simple, tensor_sizes, value_kind
from .lines import in_range

if TYPE_CHECKING:  # pragma: no cover
    from ...report import CompileReport


_STATE = {
    "grad_mode": "grad mode (torch.no_grad() / torch.enable_grad() around the call)",
    "autocast_state": "autocast (torch.autocast around the call)",
    "default_dtype": "the default dtype (torch.set_default_dtype)",
    "deterministic_algorithms": "deterministic algorithms (torch.use_deterministic_algorithms)",
    "num_threads": "the number of threads (torch.set_num_threads)",
    "torch_function": "torch function mode",
    "allow_tf32": "TF32 matmul (torch.backends.cuda.matmul.allow_tf32)",
}


def _a(type_name: str) -> str:
    """``"a Parameter"``, ``"an int"``, ``"a Tensor"`` (``torch.Tensor`` named as torch prints it)."""
    name = type_name.strip().rsplit(".", 1)[-1] if type_name.strip().startswith("torch.") else type_name.strip()
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def arrow(a: str, b: str) -> str:
    return f"{a} → {b}" if b else f"{a} → another value"


def shown(r: Reason) -> str:
    """The value in words: the user's name, else what capture said of it, else torch's path."""
    g = r.guard
    if g.name and r.numpy:
        return f"the NumPy array `{g.name}` (torch reads it as a tensor)"
    if g.name:
        return f"`{g.name}`"
    if g.described:
        return g.described
    return f"`{r.change.subject}`" if r.change.subject else "an input of the compiled code"


def change_text(r: Reason, dynamic_after: bool) -> str:
    ch = r.change
    x = shown(r)
    k = ch.kind
    if k == "size":
        out = f"size of dim {ch.dim} of {x} went {arrow(ch.before, ch.after)}"
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
        return (f"stride of dim {ch.dim} of {x} went {arrow(ch.before, ch.after)}: its memory layout changed "
                "(a transposed, sliced or expanded view instead of a contiguous tensor, or the other way)")
    if k == "rank":
        return f"{x} went from {ch.before} to {ch.after} dimensions: each rank is a compiled version of its own"
    if k == "dtype":
        return (f"dtype of {x} went {arrow(ch.before, ch.after)}: dtypes never become dynamic, each dtype is a "
                "compiled version of its own (fine for a few)")
    if k == "requires_grad":
        now = "requires grad now (it did not" if ch.after == "True" else "no longer requires grad (it did"
        return f"{x} {now} when compiled): one compiled version for each"
    if k == "device":
        return f"{x} moved from device index {arrow(ch.before, ch.after)}: one compiled version per device"
    if k == "dispatch_keys":
        return (f"the dispatch keys of {x} changed ({arrow(ch.before, ch.after)}): a tensor subclass, or a "
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
        return (f"`{mod}` was switched to {mode} (`training` went {arrow(ch.before, ch.after)}): torch compiles "
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
        kind = value_kind(ch.before)
        what = {"int": "Python int", "float": "Python float", "bool": "Python bool", "str": "string"}.get(kind, "value")
        who = f"the global {x}" if k == "global" else f"the {what} {x}"
        if r.closure_of:
            who += f" (a variable `{r.closure_of}` closes over)"
        out = f"{who} went {arrow(ch.before, ch.after)}"
        if kind in ("int", "float"):
            if dynamic_after:
                out += f" (torch made {x} dynamic in the new version: other values reuse it)"
            elif ch.new_guard:
                loop = " (a loop count: each value unrolls the loop differently)" if in_range(r) else ""
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
        guard = f"`{r.guard.name}.size()[{ch.dim}] >= {low}`" if r.guard.name and simple(r.guard.name) else f"size >= {low}"
        now = f" ({ch.after} now)" if ch.after else ""
        line = f", which the code asked at `{r.code}`" if r.code else ""
        where = f" ({r.guard.where.split(' in ', 1)[0].rsplit('/', 1)[-1]})" if r.guard.where else ""
        return (f"dim {ch.dim} of {x} is below the bound the compiled version held for{now}: that version holds only "
                f"while {guard}{line}{where}, so this call takes the other side of that condition and compiles "
                "a version of its own")
    if k == "symbolic":
        return f"a condition on dynamic sizes no longer holds: {ch.reason}"
    return f"a guard failed: {ch.reason}"


def say(template: str, r: Reason) -> str:
    """``template`` with the value in it: "`{x}`" as :func:`shown` words it (the user's name, else what
    capture said of it: never an empty name), a bare "{x}" (inside code: `torch.stack({x})`) as the subject."""
    return template.replace("`{x}`", "\0").format(x=r.change.subject or "the input").replace("\0", shown(r))


def value_words(values: list[tuple[str, str, str]]) -> str:
    """```factor` (2 → 3)`` for each; a path that is torch's own (``___stack0``, ``L['args']``) as "another value"."""
    def one(path: str, a: str, b: str) -> str:
        root = path.split(".", 1)[0].split("[", 1)[0]
        what = f"`{path}`" if simple(path) and not path.startswith("_") and root not in ("args", "kwargs", "fn", "self") \
            else "another value"  # torch's names (its wrappers' `args`, `fn`; the `self` of a method it compiled)
        return f"{what} ({a} → {b})" if b else f"{what} ({a}, then another value)"

    items = [one(*v) for v in values]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def size_words(hidden: list) -> str:
    """``dim 0 of `x` (2 → 3) and dim 0 of `y` (2, then dynamic)``."""
    def one(m: str, d: int, a, b) -> str:
        what = f"dim {d} of `{m}`" if m else f"dim {d} of another tensor input"
        return f"{what} ({a} → {b})" if b is not None else f"{what} ({a}, then another size: dynamic in the new version)"

    items = [one(m, d, a, b) for m, d, a, b, _ in hidden]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def sizes_0_1(report: "CompileReport", rc: Recompile) -> str:
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
                return f"dim {g.dim} of {what} went {arrow(g.before, g.after)}"
    return ""


def same_size_elsewhere(report: "CompileReport", rc: Recompile, g: FailedGuard,
                        entries: Callable[[Optional[CompileId]], list[GuardEntry]]) -> str:
    """Words for a tensor of another compiled frame that no line of the user's can mark (a library passes it,
    or torch carries it across a graph break: its failed guard says so, or its tensor guard has no name of
    the user's) whose size changed as ``g``'s did (``8`` to ``12``, or to a dynamic size); failing that, a
    tensor on the other side of a graph break (a frame of torch's resume function, or the frame it resumes)
    whose size changed so: there the size meets tensors the code before the break made; "" if none."""
    if g.kind != "size" or not (g.before and g.after) or g.origin in ("library", "carried"):
        return ""
    for x in report.recompiles:
        if x.compile_id.frame_id == rc.compile_id.frame_id or not x.guards:
            continue
        for h in x.guards:
            if h.kind == "size" and h.origin in ("library", "carried") and (h.before, h.after) == (g.before, g.after):
                return h.described or (f"`{h.path}`" if h.path and not h.path.startswith("_") else "a value of that frame")
        new = entries(x.compile_id)
        before, after = tensor_sizes(entries(x.guards[0].failed_compile_id)), tensor_sizes(new)
        named = {e.path for e in new if e.type == "TENSOR_MATCH" and e.name}
        for p, sizes in before.items():
            if p in named or p not in after or len(sizes) != len(after[p]):
                continue
            if any(str(a) == g.before and (b is None or str(b) == g.after) for a, b in zip(sizes, after[p])):
                fn = x.shown_function or x.function
                return f"`{p}`" + (f" of `{fn}`" if fn else "") + ", a tensor made inside the compiled code"
    for x in report.recompiles:
        if x.compile_id.frame_id == rc.compile_id.frame_id:
            continue
        for h in x.guards:
            if h.kind == "size" and (x.resumes or rc.resumes) and (h.before, h.after) == (g.before, g.after):
                # the code after a graph break, compiled as a frame of its own: its inputs are what the code before
                # the break left (tensors made by the first graph among them, which carry no mark of the user's)
                # (or this frame is such code, and the size is the same as one of the code before the break)
                what = f"`{h.path}`" if h.path and not h.path.startswith("_") else "a value"
                return what + (f" of the code after the graph break in `{x.resumes}`" if x.resumes
                               else f" of `{x.shown_function or x.function}`, before the graph break")
    return ""
