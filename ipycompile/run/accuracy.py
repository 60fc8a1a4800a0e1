"""Output checks that understand precision: compiled against eager, judged against float64.

Reduced-precision arithmetic rounds differently when Inductor fuses, reorders or
picks another kernel: an fp16 result one ulp away from eager's is not a
miscompile. This module follows PyTorch's own accuracy check for compiled code
(``torch._dynamo.utils.same``, as its benchmarks and the accuracy minifier use it,
with the float64 reference of ``torch._dynamo.debug_utils.cast_to_fp64``):

1. **close**: ``allclose`` with ``atol = rtol = 1e-4`` (``same``'s default ``tol``)
   passes at once;
2. **fp64 reference** (when the cell could be re-run with its inputs upcast): the
   compiled output passes when its RMSE against the float64 result is at most
   ``multiplier * RMSE(eager, fp64) + tol / 10``; ``multiplier`` is 3 for fp16 and
   bf16 outputs and for tensors under 1000 elements, else 2. Compiled is flagged only
   when its error clearly exceeds eager's own;
3. **dtype tolerances** (no float64 reference): ``|compiled - eager| <= rtol * |eager|
   + rtol * rms(eager)`` elementwise, ``rtol`` scaled to the dtype (four units in the
   last place: fp16 3.9e-3, bf16 3.1e-2; fp32 1e-4; fp64 1e-7): the absolute part scales
   with the tensor's magnitude, as accumulated rounding does.

Non-floating tensors and other leaves must be equal; structure, shapes and dtypes
must match (:func:`ipycompile.run.outputs.compare_outputs` decides those).

``import ipycompile.run.accuracy`` does not import torch.
"""

from __future__ import annotations

import contextlib
import copy
import math
import types
from typing import Any, Callable, Iterator, Optional

from ..report import OutputCheck

__all__ = ["OutputCheck", "check_outputs", "upcast_namespace", "referenced_names", "float64_defaults", "SAME_TOL"]

#: ``torch._dynamo.utils.same``'s default tolerance
SAME_TOL = 1e-4
#: the per-dtype relative tolerance of the fallback (four ulps; fp32: ``same``'s tol)
_FALLBACK_RTOL = {"float16": 4 * 2.0**-10 * 0.98, "bfloat16": 4 * 2.0**-7 * 0.99, "float32": 1e-4, "float64": 1e-7}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _rmse(torch: Any, a: Any, b: Any) -> float:
    return float(torch.sqrt(torch.mean(torch.square(a.double() - b.double()))))


def _multiplier(torch: Any, res: Any, ref64: Any) -> float:
    """``torch._dynamo.utils.same``'s multiplier (without its opt-in variants)."""
    if ref64.numel() < 1000 or res.dtype in (torch.float16, torch.bfloat16):
        return 3.0
    return 2.0


def _leaf_check(torch: Any, path: str, res: Any, ref: Any, ref64: Any) -> tuple[bool, str, dict[str, float]]:
    """One floating tensor: (passes, one-line account, figures)."""
    res_d, ref_d = res.detach().cpu(), ref.detach().cpu()
    figures: dict[str, float] = {}
    diff = (res_d.double() - ref_d.double()).abs()
    both_nan = res_d.isnan() & ref_d.isnan()
    diff = torch.where(both_nan | (res_d == ref_d), torch.zeros_like(diff), diff)
    max_diff = float(diff.max()) if diff.numel() else 0.0
    figures["max_abs_diff"] = max_diff
    if res_d.numel() == 0 or torch.equal(res_d, ref_d):
        return True, f"{path}: equal", figures
    if torch.allclose(res_d, ref_d, atol=SAME_TOL, rtol=SAME_TOL, equal_nan=True):
        return True, f"{path}: close (max |diff| {max_diff:.3g} within atol=rtol={SAME_TOL:g})", figures
    dtype = _dtype_name(res_d.dtype)
    if ref64 is not None and isinstance(ref64, torch.Tensor) and ref64.dtype == torch.float64 and ref64.shape == res_d.shape:
        r64 = ref64.detach().cpu()
        res_err, ref_err = _rmse(torch, res_d, r64), _rmse(torch, ref_d, r64)
        mult = _multiplier(torch, res_d, r64)
        allowed = mult * ref_err + SAME_TOL / 10.0
        ok = res_err <= allowed or (math.isnan(res_err) and math.isnan(ref_err))
        figures.update(compiled_error=res_err, eager_error=ref_err, allowed_error=allowed)
        verdict = "within" if ok else "ABOVE"
        return ok, (f"{path} ({dtype}): RMSE vs float64 compiled {res_err:.3g}, eager {ref_err:.3g}; "
                    f"{verdict} {mult:g} x eager + {SAME_TOL / 10:g} = {allowed:.3g} (max |diff| {max_diff:.3g})"), figures
    rtol = _FALLBACK_RTOL.get(dtype, SAME_TOL)
    finite = ref_d[ref_d.isfinite()].double()
    scale = float(torch.sqrt(torch.mean(torch.square(finite)))) if finite.numel() else 0.0
    bound = rtol * ref_d.double().abs() + rtol * scale
    over = (diff > bound) | (res_d.isnan() != ref_d.isnan())
    n_over = int(over.sum())
    ok = n_over == 0
    figures["allowed_error"] = rtol * scale
    return ok, (f"{path} ({dtype}): {'all' if ok else n_over} of {res_d.numel()} elements "
                f"{'within' if ok else 'beyond'} rtol {rtol:.2g} x (|eager| + rms(eager) {scale:.3g}) "
                f"(max |diff| {max_diff:.3g})"), figures


def _other_leaf_mismatch(torch: Any, path: str, x: Any, y: Any) -> Optional[str]:
    """Why a non-floating leaf pair (or a tensor pair's shape, dtype, layout) differs; None when it does not."""
    if isinstance(x, torch.Tensor):
        for attribute, left, right in (("shape", tuple(x.shape), tuple(y.shape)), ("dtype", x.dtype, y.dtype),
                                       ("layout", x.layout, y.layout)):
            if left != right:
                return f"{path}: {attribute} {left} vs {right}"
        if x.is_floating_point() or x.is_complex():
            return None
        try:
            return None if torch.equal(x.detach().cpu(), y.detach().cpu()) else f"{path}: values differ ({x.dtype})"
        except Exception as exc:  # a tensor with no data to compare
            return f"{path}: cannot compare ({type(exc).__name__})"
    try:
        return None if bool(x == y) else f"{path}: {x!r:.60} != {y!r:.60}"
    except Exception as exc:
        return f"{path}: cannot compare {type(x).__name__} with == ({exc})"


def check_outputs(compiled: Any, eager: Any, fp64: Any = None, *, fp64_note: str = "") -> OutputCheck:
    """Judge a compiled output against eager's (and float64's, when given); never raises.

    ``fp64`` is the same computation run with float64 inputs (same structure), or
    None; ``fp64_note`` says why there is none (shown in the message). The method
    reported is the strictest one a floating leaf needed: ``"equal"``,
    ``"close"``, ``"fp64 reference"`` or ``"dtype tolerances"``.
    """
    import torch

    from .outputs import _pair_leaves

    leaves: list[tuple[str, Any, Any]] = []
    why = _pair_leaves(torch, compiled, eager, "output", leaves)
    if why is not None:
        return OutputCheck(False, "structure", message=why)
    for path, x, y in leaves:
        why = _other_leaf_mismatch(torch, path, x, y)
        if why is not None:
            return OutputCheck(False, "structure" if ("shape" in why or "dtype" in why or "layout" in why) else "equal",
                               message=why)
    refs64: dict[str, Any] = {}
    if fp64 is not None:
        pairs: list[tuple[str, Any, Any]] = []
        if _pair_leaves(torch, eager, fp64, "output", pairs) is None:
            refs64 = {path: b for path, _, b in pairs}
    rank = {"equal": 0, "close": 1, "fp64 reference": 2, "dtype tolerances": 3}
    method, lines, failed = "equal", [], []
    worst: dict[str, float] = {}
    max_diff: Optional[float] = None
    for path, res, ref in leaves:
        if not isinstance(res, torch.Tensor) or not (res.is_floating_point() or res.is_complex()):
            continue
        ref64 = refs64.get(path)
        if res.is_complex():
            res, ref = torch.view_as_real(res), torch.view_as_real(ref)
            ref64 = torch.view_as_real(ref64) if isinstance(ref64, torch.Tensor) and ref64.is_complex() else None
        try:
            ok, line, figures = _leaf_check(torch, path, res, ref, ref64)
        except Exception as exc:  # e.g. a tensor with no data (meta)
            ok, line, figures = False, f"{path}: cannot compare ({type(exc).__name__}: {exc})", {}
        lines.append(line)
        d = figures.get("max_abs_diff")
        if d is not None:
            max_diff = d if max_diff is None or math.isnan(d) else max(max_diff, d)
        leaf_method = ("equal" if line.endswith(": equal") else "close" if ": close " in line
                       else "fp64 reference" if "compiled_error" in figures else "dtype tolerances")
        method = max(method, leaf_method, key=rank.__getitem__)
        if not ok:
            failed.append(line)
        if figures.get("compiled_error") is not None and figures["compiled_error"] >= worst.get("compiled_error", -1.0):
            worst = figures
    check = OutputCheck(not failed, method, max_diff, worst.get("compiled_error"), worst.get("eager_error"),
                        worst.get("allowed_error"), leaves=lines)
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        check.message = f"{failed[0]}{more}"
    else:
        what = f"{len(lines)} floating tensor(s)" if lines else "no floating tensors"
        check.message = f"outputs match ({method}): {what}" + (f", max |diff| {max_diff:.3g}" if max_diff else "")
    if method == "dtype tolerances" and fp64_note:
        check.message += f"; no float64 reference: {fp64_note}"
    return check


# -- the float64 reference -------------------------------------------------------
def referenced_names(code: types.CodeType) -> set[str]:
    """Global names a code object (and the code objects nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= referenced_names(const)
    return names


class NotUpcastable(Exception):
    """The cell cannot be re-run in float64 without touching the user's state; says why."""


def _upcast(torch: Any, value: Any, memo: dict[int, Any], name: str) -> Any:
    if id(value) in memo:
        return memo[id(value)]
    out = value
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.dtype != torch.float64:
            out = value.detach().to(torch.float64).requires_grad_(value.requires_grad)
        elif value.is_floating_point():
            out = value.detach().clone().requires_grad_(value.requires_grad)
    elif isinstance(value, torch.nn.Module):
        try:
            out = copy.deepcopy(value).to(torch.float64)
        except Exception as exc:  # a module that cannot be copied
            raise NotUpcastable(f"{name}: the module cannot be copied ({type(exc).__name__})") from None
    elif isinstance(value, torch.optim.Optimizer):
        raise NotUpcastable(f"{name}: an optimizer holds the original parameters")
    elif type(value) in (list, tuple):
        out = type(value)(_upcast(torch, v, memo, name) for v in value)
    elif type(value) is dict:
        out = {k: _upcast(torch, v, memo, name) for k, v in value.items()}
    memo[id(value)] = out
    return out


def upcast_namespace(namespace: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """A shallow copy of ``namespace`` where the ``names`` the cell reads are upcast to
    float64: floating tensors (copied), modules (deep-copied, then ``.double()``), and
    lists, tuples and dicts of them. Raises :class:`NotUpcastable` (with the reason)
    for values the copy would share with the user's state in a way that matters
    (an optimizer of the original parameters, a module that cannot be copied)."""
    import torch

    out = dict(namespace)
    memo: dict[int, Any] = {}
    for name in sorted(names):
        if name in namespace:
            out[name] = _upcast(torch, namespace[name], memo, name)
    return out


@contextlib.contextmanager
def float64_defaults() -> Iterator[None]:
    """Tensors the cell creates without a dtype are float64 inside the block."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def fp64_reference(run64: Callable[[], Any]) -> tuple[Any, str]:
    """``(outputs, "")`` of ``run64()`` (a float64 re-run), or ``(None, why not)``; never raises."""
    try:
        with float64_defaults():
            return run64(), ""
    except NotUpcastable as exc:
        return None, str(exc)
    except Exception as exc:  # the cell does not run in float64 (a dtype it forces, an op without fp64)
        return None, f"the cell does not run with float64 inputs ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
