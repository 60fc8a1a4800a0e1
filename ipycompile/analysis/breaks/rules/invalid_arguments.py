"""A call torch ran on fake values to learn its result raised a ``TypeError`` (GB0112, "TypeError
when making fake tensor call"): the function rejected the types of its arguments.

torch runs each call on fake tensors of the same shapes, dtypes and ``requires_grad`` as the real ones,
and passes every other argument (an ``int``, a ``float``, ``None``) as it is. Where torch names the
argument and what it got (capture reads "cos(): argument 'input' (position 1) must be Tensor, not
int" into the record), the answer says whether the call raises the same without torch.compile:

* a plain Python value (``int``, ``float``, ``str``, ``NoneType``, ...): the code passes that same value
  without torch.compile, and the function rejects it there too;
* a tensor where the function takes a number (``Number``, ``int``, ``float``): torch's argument parser
  takes a tensor for a number only when it has no dimensions and does not require grad (an
  ``nn.Parameter`` requires grad); the fake tensor has the real one's dimensions and ``requires_grad``,
  so the real call is rejected too (pytorch/pytorch#183900: torch keeps eager's error on purpose).

Otherwise torch does not say which argument, and the answer says how to find out, without the claim."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained

#: the types torch names for arguments it passes to the fake call as they are
PYTHON_TYPES = frozenset({"int", "float", "bool", "complex", "str", "bytes", "NoneType", "list", "tuple", "dict",
                          "set", "slice", "ellipsis", "function", "type"})
#: the argument types of torch's signatures that a tensor can stand for only with no dimensions and no grad
NUMBER_TYPES = frozenset({"Number", "int", "float", "bool", "complex", "SymInt", "SymFloat"})
FAKE_TENSORS = frozenset({"FakeTensor", "FunctionalTensor"})


def applies(f: Facts) -> bool:
    return f.code == "GB0112" or f.kind.startswith("TypeError when making fake tensor call")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    s = f.said
    fn, arg, expected, given = s.type_error_function, s.type_error_argument, s.type_error_expected, s.type_error_given
    line = f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)}"
    words = f"`TypeError: {s.type_error_message}`" if s.type_error_message else "a TypeError"
    how = ("torch learns what each call returns by running it on fake tensors (the same shapes, dtypes and "
           "`requires_grad` as your tensors; other values passed as they are), and this call raised")
    if fn and arg and given in PYTHON_TYPES:
        return explained(
            Kind.INVALID_ARGUMENTS, f"`{fn}()` is given a Python `{given}` for `{arg}`: it raises the same without "
            "torch.compile",
            f"{line} calls `{fn}()` with a Python `{given}` as its argument `{arg}`, where it takes a {expected}. "
            f"{how} {words}. A Python `{given}` is passed to the fake call as it is, so this is the call your code "
            "makes: it raises the same TypeError without torch.compile "
            "(`torch.compiler.set_stance(\"force_eager\")` runs the compiled function without compiling and shows "
            f"it). Fix the call: give `{arg}` a {expected} (for a tensor, `torch.tensor(...)` of the value, or a "
            "tensor you already have).", f)
    if fn and arg and given in FAKE_TENSORS and expected in NUMBER_TYPES:
        return explained(
            Kind.INVALID_ARGUMENTS, f"`{fn}()` is given a tensor for `{arg}`, which takes a {expected}: it raises the "
            "same without torch.compile",
            f"{line} calls `{fn}()` with a tensor as its argument `{arg}`, where it takes a {expected}. {how} {words}. "
            f"Without torch.compile, torch takes a tensor for a {expected} only when it has no dimensions and does "
            "not require grad (an `nn.Parameter` requires grad); the fake tensor has your tensor's dimensions and "
            "`requires_grad`, so the call raises the same TypeError without torch.compile (torch keeps that error "
            "under torch.compile on purpose: pytorch/pytorch#183900). Pass a number (`float(t)`, `t.item()`) or "
            "a tensor without grad (`t.detach()`) if that is what is meant; no gradient flows through such an "
            f"argument of `{fn}()` in either case.", f)
    return explained(
        Kind.INVALID_ARGUMENTS, f"torch's fake run of {'`' + fn + '()`' if fn else 'a call'} raised a TypeError",
        f"{line}: {how} {words}. torch does not say whether the same call raises without torch.compile; "
        "`torch.compiler.set_stance(\"force_eager\")` runs the compiled function without compiling and shows it. "
        "If it raises there too, fix the arguments of the call; if not, it is torch's, and worth a report to "
        "PyTorch with this message.", f)


RULE = Rule(Kind.INVALID_ARGUMENTS, "a call torch ran on fake values raised a TypeError (GB0112): the argument torch "
            "names, and whether the call raises the same without torch.compile (a plain Python value, or a tensor "
            "that requires grad where a number is taken: it does)", applies, fix)
