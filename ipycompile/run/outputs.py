"""Output checks without precision in mind: two outputs walked leaf by leaf and compared
with ``torch.testing.assert_close`` semantics (:mod:`ipycompile.run.accuracy` checks with
precision in mind, and uses the walk here)."""

from __future__ import annotations

import dataclasses
import math
import reprlib
from collections.abc import Mapping
from typing import Any

from .timing import _check_number

__all__ = ["compare_outputs"]


def _default_tolerances(torch: Any, dtype: Any) -> tuple[float, float]:
    """(rtol, atol) that ``torch.testing.assert_close`` uses by default for ``dtype`` (its documented table)."""
    table = {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
        torch.complex32: (1e-3, 1e-5),
        torch.complex64: (1.3e-6, 1e-5),
        torch.complex128: (1e-7, 1e-7),
    }
    for quantized in (torch.quint8, torch.qint8, torch.qint32, torch.quint4x2, torch.quint2x4):
        table[quantized] = (1.3e-6, 1e-5)
    return table.get(dtype, (0.0, 0.0))


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _pair_leaves(torch: Any, a: Any, b: Any, path: str, leaves: list[tuple[str, Any, Any]]) -> str | None:
    """Append the matching leaves of ``a`` and ``b`` to ``leaves``; return why the structures differ, if they do."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        leaves.append((path, a, b))
        return None
    containers = (isinstance(a, (Mapping, list, tuple)) or _is_dataclass_instance(a),
                  isinstance(b, (Mapping, list, tuple)) or _is_dataclass_instance(b))
    if not any(containers):
        leaves.append((path, a, b))
        return None
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, Mapping):
        if a.keys() != b.keys():
            only_a, only_b = [k for k in a if k not in b], [k for k in b if k not in a]
            return f"{path}: keys differ (only in first: {only_a}, only in second: {only_b})"
        children = [(f"{path}[{k!r}]", a[k], b[k]) for k in a]
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        children = [(f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b))]
    else:
        children = [(f"{path}.{f.name}", getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)]
    for child_path, x, y in children:
        why = _pair_leaves(torch, x, y, child_path, leaves)
        if why is not None:
            return why
    return None


def _max_abs_diff(torch: Any, x: Any, y: Any) -> float:
    """max |x - y| over elements in float64; equal values (same infinities too) count 0, NaN makes it NaN."""
    if x.is_quantized:
        x, y = x.dequantize(), y.dequantize()
    if x.layout != torch.strided:
        x, y = x.to_dense(), y.to_dense()
    if x.numel() == 0:
        return 0.0
    wide = torch.complex128 if x.is_complex() else torch.float64
    x, y = x.to(wide), y.to(wide)
    return float(torch.where(x == y, 0.0, (x - y).abs()).max())


def _tensor_value_mismatch(torch: Any, x: Any, y: Any, rtol: float | None, atol: float | None) -> str | None:
    """Why ``x`` and ``y`` are not close under ``assert_close`` (one line), or None when they are."""
    if rtol is not None or atol is not None:
        default_rtol, default_atol = _default_tolerances(torch, x.dtype)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
    try:
        torch.testing.assert_close(x, y, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        # Drop the "Tensor-likes are not close!" headline; keep counts and greatest differences.
        return "; ".join(lines[1:] or lines)
    return None


def compare_outputs(a: Any, b: Any, *, rtol: float | None = None, atol: float | None = None) -> tuple[bool, float | None, str]:
    """Compare two outputs (e.g. eager vs compiled) without ever raising: ``(match, max_abs_diff, message)``.

    Walks tensors in nested tuples, lists (namedtuples and ``torch.return_types``
    included), mappings and dataclasses; containers must have the same type,
    length and keys. Tensors are compared after ``.detach().cpu()``: same shape,
    dtype and layout required, values with ``torch.testing.assert_close``
    semantics (per-dtype default tolerances; NaN never equals NaN). Give ``rtol``
    and/or ``atol`` to override; one left out takes its per-dtype default.
    Other leaves are compared with ``==``.

    ``max_abs_diff`` is the largest elementwise ``|a - b|`` over all tensors (NaN
    if any tensor holds a NaN; None when no tensor was compared or the structure,
    a shape or a dtype differs). ``message`` says why outputs do not match,
    naming the first offending leaf (e.g. ``output[0]['logits']``).
    """
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None:
            _check_number(name, tol, positive=False)
    import torch

    leaves: list[tuple[str, Any, Any]] = []
    why = _pair_leaves(torch, a, b, "output", leaves)
    if why is not None:
        return False, None, why

    tensors = []
    for path, x, y in leaves:
        if isinstance(x, torch.Tensor):
            try:
                x, y = x.detach().cpu(), y.detach().cpu()
            except Exception as e:  # e.g. meta or fake tensors have no data to copy
                return False, None, f"{path}: cannot copy to CPU ({type(e).__name__}: {e})"
            for attribute, left, right in (
                ("shape", tuple(x.shape), tuple(y.shape)),
                ("dtype", x.dtype, y.dtype),
                ("layout", x.layout, y.layout),
            ):
                if left != right:
                    return False, None, f"{path}: {attribute} {left} vs {right}"
            tensors.append((path, x, y))

    diffs: list[float] = []
    mismatches: list[str] = []
    for path, x, y in leaves:
        if not isinstance(x, torch.Tensor):
            try:
                equal = bool(x == y)
            except Exception as e:  # == may raise or return something without a truth value
                mismatches.append(f"{path}: cannot compare {type(x).__name__} with == ({e})")
                continue
            if not equal:
                mismatches.append(f"{path}: {reprlib.repr(x)} != {reprlib.repr(y)}")
    for path, x, y in tensors:
        try:
            diffs.append(_max_abs_diff(torch, x, y))
            why = _tensor_value_mismatch(torch, x, y, rtol, atol)
        except Exception as e:  # e.g. a dtype neither comparison supports
            why = f"cannot compare ({type(e).__name__}: {e})"
        if why is not None:
            mismatches.append(f"{path}: {why}")

    max_diff = None
    if diffs:
        max_diff = math.nan if any(math.isnan(d) for d in diffs) else max(diffs)
    if mismatches:
        more = f" (and {len(mismatches) - 1} more mismatching leaves)" if len(mismatches) > 1 else ""
        return False, max_diff, mismatches[0] + more
    if max_diff is None:
        return True, None, "outputs are equal (no tensors)"
    return True, max_diff, f"outputs match: {len(tensors)} tensor(s), max |diff| {max_diff:.3g}"
