"""Bytes moved and FLOPs of one kernel launch, estimated from what torch knows of it.

Pure functions; no torch. Sources, best first, each named in :attr:`Cost.how`:

- **torch's own estimate**: a Triton kernel compiled with Inductor's
  ``benchmark_kernel`` option carries ``kernel_num_gb`` (its inputs and outputs,
  each once: Inductor's ``estimate_kernel_num_bytes``) and ``kernel_flop`` (the
  FLOP counter over its nodes) in its ``inductor_meta``.
- **a C++ kernel's source** (its record-function has no inputs): each pointer
  argument's elements are the product of the ranges of the loop variables its
  accesses use (``in_ptr0 + static_cast<int64_t>(x0 + 512L*x1)``: x0 and x1),
  times the C type's size, twice for ``in_out_ptr`` s; static shapes only.
  A C++ GEMM template (max-autotune's ``CppGemmTemplate`` / ``CppBmmTemplate``:
  a ``micro_gemm``) from the constants it declares (``constexpr int64_t M = 64L``,
  ``N``, ``K``, and a batched one's ``B``): ``2*B*M*N*K`` FLOPs, and X, W and Y each
  once (``B*M*K``, ``B*K*N``, ``B*M*N`` elements of their C types); a batched
  template opens its record-function in each batch's GEMM, so a launch there is
  one GEMM (B=1).
- **the launching op's shapes** (the profiler's ``record_shapes``, kept in
  :class:`~ipycompile.report.KernelLaunch`): bytes are each tensor input read
  or written once, as ``torch/_inductor/analysis/profile_analysis.py`` counts
  them (``_default_estimate_gb``) -- a Triton kernel's inputs are all its
  buffers, outputs included; an op's output that is not one of its inputs is
  added from its shape. FLOPs of matrix products and convolutions follow
  ``torch.utils.flop_counter``'s formulas (``2*M*N*K``; a convolution
  ``2 * out elements * in channels/groups * kernel size``; its backward once per
  gradient asked for); a Triton matmul template's from its operands' shapes.
  Elementwise and reduction kernels count no FLOPs (as torch's counter).

Everything of a kernel's source is read by capture into :attr:`Kernel.code
<ipycompile.report.Kernel.code>` (``capture/parse/kernel_code.py``); this module reads those
records and the launches' shapes, never the text.

What these cannot see: re-reads served by the L2 cache (bytes counted once may
cost nothing, or a buffer read twice from DRAM is counted once), in-place
buffers read and written (counted once), and broadcast inputs (counted at
their own size).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from ..report.model import Kernel, KernelCode, KernelLaunch

__all__ = ["COSTED_OPS", "Cost", "itemsize", "launch_cost", "meta_cost", "matmul_dtype", "cpp_source_cost",
           "cpp_template_cost", "template_mnk", "written_bytes", "DYNAMIC"]

#: ``how`` of a C++ kernel whose sizes are symbols in its source (compiled with dynamic shapes)
DYNAMIC = "not estimated: dynamic shapes (loop bounds are symbols)"

#: Ops whose cost has a formula here: the profiler's launching event is walked out to one of them.
COSTED_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::convolution", "aten::convolution_backward",
    "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
})

# The profiler's dtype names (c10's) and torch's short ones -> bytes per element.
_ITEMSIZE = {
    "float": 4, "double": 8, "c10::half": 2, "c10::bfloat16": 2, "long int": 8, "long": 8, "int": 4,
    "short int": 2, "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::complex<float>": 8,
    "c10::complex<double>": 16, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "c10::float8_e4m3fnuz": 1,
    "c10::float8_e5m2fnuz": 1, "float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
    "int8": 1, "uint8": 1, "half": 2,
}
_FLOAT_NAMES = {"float": "float32", "double": "float64", "c10::half": "float16", "c10::bfloat16": "bfloat16",
                "float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "float64": "float64",
                "half": "float16", "c10::float8_e4m3fn": "float8", "c10::float8_e5m2": "float8"}


@dataclass(frozen=True)
class Cost:
    """One launch's estimated cost. ``bytes``/``flops`` None: not estimated; ``how`` says how."""

    bytes: Optional[float] = None
    flops: Optional[float] = None
    how: str = ""
    dtype: str = ""  # the arithmetic's dtype (float16, bfloat16, float32, ...), for the peak FLOP/s


def itemsize(dtype: str) -> Optional[int]:
    """Bytes per element of a dtype as the profiler names it (``c10::Half``: 2); None for non-tensors."""
    return _ITEMSIZE.get(str(dtype).strip().lower().removeprefix("torch."))


def _is_shape(s: Any) -> bool:
    return isinstance(s, list) and all(isinstance(d, int) for d in s)


def _tensors(launch: KernelLaunch) -> list[tuple[list[int], int, str]]:
    """(shape, itemsize, dtype) of each tensor input (a number has no itemsize, or shape [] with 'Scalar')."""
    out = []
    for i, shape in enumerate(launch.shapes):
        dtype = launch.dtypes[i] if i < len(launch.dtypes) else ""
        size = itemsize(dtype)
        if size is not None and _is_shape(shape):
            out.append((shape, size, dtype))
    return out


def matmul_dtype(dtypes: list[str]) -> str:
    """The first floating dtype among a launch's inputs, as torch spells it (``bfloat16``)."""
    for d in dtypes:
        name = _FLOAT_NAMES.get(str(d).strip().lower().removeprefix("torch."))
        if name:
            return name
    return ""


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _concrete_ints(value: Any) -> Optional[list[int]]:
    """A recorded int list ("[2, 2]" or [2, 2]) as ints; None when not one."""
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value
    if isinstance(value, str):  # the profiler's concrete input, as it writes it
        inner = value.strip()
        if inner.startswith("[") and inner.endswith("]"):
            parts = [p.strip() for p in inner[1:-1].split(",")]
            if all(c in "0123456789, \t\n\r\f\v" for c in inner[1:-1]):
                return [int(p) for p in parts if p]
    if isinstance(value, int):
        return [value]
    return None


def _concrete(launch: KernelLaunch, i: int) -> Any:
    return launch.concrete[i] if i < len(launch.concrete) else None


def _conv_out(x: list[int], w: list[int], stride, padding, dilation) -> Optional[list[int]]:
    spatial = len(x) - 2
    stride = (stride or [1]) * (spatial if len(stride or [1]) == 1 else 1)
    padding = (padding or [0]) * (spatial if len(padding or [0]) == 1 else 1)
    dilation = (dilation or [1]) * (spatial if len(dilation or [1]) == 1 else 1)
    try:
        dims = [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(spatial)]
    except (IndexError, TypeError):
        return None
    return [x[0], w[0], *dims]


def _op_cost(launch: KernelLaunch) -> Optional[Cost]:
    """Matrix products, convolutions and attention, from their shapes (torch.utils.flop_counter's formulas)."""
    op = launch.op
    t = _tensors(launch)
    shapes = [s for s, _, _ in t]
    dtype = matmul_dtype(launch.dtypes)
    read = float(sum(_numel(s) * b for s, b, _ in t))
    size = t[0][1] if t else 0
    how = f"{op} shapes (2*M*N*K, each tensor once)"
    if op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
        # addmm(bias, a, b): the bias (1-D, or a full matrix) comes first
        mats = shapes[1:] if op in ("aten::addmm", "aten::baddbmm") else shapes
        pair = [s for s in mats if len(s) >= 2]
        if len(pair) < 2 or pair[0][-1] != pair[1][-2]:
            return None
        a, b = pair[0], pair[1]
        batch = _numel(a[:-2])
        m, k, n = a[-2], a[-1], b[-1]
        out = batch * m * n
        has_out = any(s[-2:] == [m, n] and _numel(s) == out for s in shapes[2:] if len(s) >= 2) or (
            op in ("aten::addmm", "aten::baddbmm") and len(shapes) >= 3 and _numel(shapes[0]) == out)
        written = 0 if has_out else out * size
        return Cost(read + written, 2.0 * batch * m * n * k, how, dtype)
    if op.startswith("aten::convolution") and dtype == "float32":
        dtype = "tfloat32"  # cuDNN runs float32 convolutions on TF32 tensor cores by default (cudnn.allow_tf32)
    if op == "aten::convolution" and len(shapes) >= 2 and len(shapes[0]) >= 3:
        x, w = shapes[0], shapes[1]
        out = _conv_out(x, w, _concrete_ints(_concrete(launch, 3)), _concrete_ints(_concrete(launch, 4)),
                        _concrete_ints(_concrete(launch, 5)))
        if out is None or str(_concrete(launch, 6)).lower() in ("true", "1"):  # transposed: not handled
            return None
        cin_k = _numel(w[1:])
        return Cost(read + _numel(out) * size, 2.0 * _numel(out) * cin_k,
                    "aten::convolution shapes (2 * outputs * in channels * kernel size, each tensor once)", dtype)
    if op == "aten::convolution_backward" and len(shapes) >= 3:
        grad_out, x, w = shapes[0], shapes[1], shapes[2]
        mask = str(_concrete(launch, 10) or "")
        asked = [v.strip().lower() in ("true", "1") for v in mask.strip("[]() ").split(",")] if mask else [True, True, False]
        grads = sum(asked[:2]) if asked else 2
        written = (_numel(x) if asked[:1] == [True] else 0) + (_numel(w) if asked[1:2] == [True] else 0)
        return Cost(read + written * size, 2.0 * _numel(grad_out) * _numel(w[1:]) * grads,
                    "aten::convolution_backward shapes (2 * grad outputs * in channels * kernel size per gradient)", dtype)
    if op.startswith("aten::_scaled_dot_product") and len(shapes) >= 3 and len(shapes[0]) == 4:
        q, k, v = shapes[0], shapes[1], shapes[2]
        b, h, lq, d = q
        lk = k[-2]
        flops = 2.0 * b * h * lq * lk * d + 2.0 * b * h * lq * lk * v[-1]
        return Cost(read + _numel(q[:-1] + [v[-1]]) * size, flops,
                    f"{op} shapes (QK^T and PV: 4*B*H*Lq*Lk*D, no causal discount)", dtype)
    return None


def _code(kernel: Optional[Kernel]) -> KernelCode:
    """What capture read of the kernel's source (an empty record where it read none)."""
    return (kernel.code if kernel is not None else None) or KernelCode()


def template_mnk(kernel: Optional[Kernel]) -> Optional[tuple[int, int, int]]:
    """A Triton matmul template's ``M``, ``N``, ``K`` as its source declares them (``M = 8192``), or
    None (not a template, or sizes that are symbols: dynamic shapes)."""
    if kernel is None or kernel.kind != "template":
        return None
    mnk = _code(kernel).template_mnk
    return (mnk[0], mnk[1], mnk[2]) if len(mnk) == 3 else None


def _template_flops(shapes: list[list[int]], kernel: Optional[Kernel] = None) -> Optional[float]:
    """A Triton matmul template's FLOPs: ``2*M*N*K`` of the sizes its source declares (times the batch
    of a 3-D operand), else from its operands: A [.., M, K], B [.., K, N] and an output [.., M, N]."""
    mats = [s for s in shapes if len(s) >= 2]
    mnk = template_mnk(kernel)
    if mnk is not None:
        m, n, k = mnk
        batch = max((_numel(s[:-2]) for s in mats if s[-2:] == [m, n]), default=1)
        return 2.0 * batch * m * n * k
    for i, a in enumerate(mats):
        for j, b in enumerate(mats):
            if i == j or a[-1] != b[-2]:
                continue
            m, k, n = a[-2], a[-1], b[-1]
            if any(o[-2:] == [m, n] for x, o in enumerate(mats) if x not in (i, j)):
                return 2.0 * _numel(a[:-2]) * m * n * k
    return None


def _arg_names(kernel: Optional[Kernel]) -> list[str]:
    """A Triton kernel's argument names (``in_ptr0``, ``out_ptr0``, ``in_out_ptr0``, ``xnumel``), from its ``def``."""
    return _code(kernel).args


def _in_out(kernel: Optional[Kernel]) -> list[bool]:
    """Per argument of a Triton kernel, whether it is read and written (``in_out_ptrN``), from its ``def``."""
    return [a.startswith("in_out_ptr") for a in _arg_names(kernel)]


def written_bytes(launch: KernelLaunch, kernel: Optional[Kernel]) -> Optional[float]:
    """The bytes a Triton kernel's launch writes, each output once: its ``out_ptrN`` and
    ``in_out_ptrN`` arguments' recorded shapes. None when its ``def`` or shapes are not known
    (extern and C++ kernels, a kernel without source)."""
    names = _arg_names(kernel)
    if not names or not launch.shapes:
        return None
    total = 0.0
    for i, name in enumerate(names[:len(launch.shapes)]):
        size = itemsize(launch.dtypes[i]) if i < len(launch.dtypes) else None
        if name.startswith(("out_ptr", "in_out_ptr")) and size is not None and _is_shape(launch.shapes[i]):
            total += _numel(launch.shapes[i]) * size
    return total


def launch_cost(launch: KernelLaunch, kernel: Optional[Kernel] = None) -> Cost:
    """One launch's bytes and FLOPs from the launching op's recorded shapes (see the module's doc).
    A Triton kernel's ``in_out_ptr`` buffers (updated in place) are counted twice: read and written."""
    op_cost = _op_cost(launch)
    if op_cost is not None:
        return op_cost
    t = _tensors(launch)
    if not t:
        return Cost(how="no tensor shapes recorded for its launch")
    twice = _in_out(kernel)
    moved = 0.0
    for i, shape in enumerate(launch.shapes):
        size = itemsize(launch.dtypes[i]) if i < len(launch.dtypes) else None
        if size is not None and _is_shape(shape):
            moved += _numel(shape) * size * (2 if i < len(twice) and twice[i] else 1)
    dtype = matmul_dtype(launch.dtypes)
    if kernel is not None and kernel.kind == "template":
        flops = _template_flops([s for s, _, _ in t], kernel)
        if flops is not None:
            return Cost(moved, flops, "its buffers' shapes (each once); FLOPs 2*M*N*K of its operands", dtype)
    return Cost(moved, 0.0, "its buffers' shapes, each read or written once; no matmul: no FLOPs counted", dtype)


def meta_cost(kernel: Kernel) -> Optional[Cost]:
    """torch's own estimate in a Triton kernel's ``inductor_meta`` (``benchmark_kernel``): None when absent."""
    code = _code(kernel)
    if code.meta_bytes is None:
        return None
    return Cost(code.meta_bytes, code.meta_flops or 0.0,
                "torch's estimate in the kernel's inductor_meta (kernel_num_gb, kernel_flop)")


_C_TYPES = {"float": 4, "double": 8, "at::BFloat16": 2, "at::Half": 2, "c10::BFloat16": 2, "c10::Half": 2,
            "bfloat16": 2, "half": 2, "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1, "bool": 1}
_C_DTYPES = {"float": "float32", "double": "float64", "at::BFloat16": "bfloat16", "c10::BFloat16": "bfloat16",
             "at::Half": "float16", "c10::Half": "float16"}
def cpp_template_cost(kernel: Kernel) -> Optional[Cost]:
    """A C++ GEMM template's bytes and FLOPs from its declared sizes (see the module's doc); a
    :data:`DYNAMIC` cost when one of them is a symbol (``const int64_t M = ks0;``); None when
    its source is not one (no ``M``, ``N``, ``K``)."""
    gemm = _code(kernel).gemm
    if gemm is None:
        return None
    sizes = gemm.sizes
    if any(v is None for v in sizes.values()):
        return Cost(how=DYNAMIC)
    types = {name: t for name, t in gemm.params.items() if t in _C_TYPES}
    b, m_, n, k = sizes.get("B") or 1, sizes["M"], sizes["N"], sizes["K"]
    # a launch is one call of its record-function: in a batched template that is each batch's GEMM
    per_gemm = "B" in sizes and gemm.per_batch_record
    if per_gemm:
        b = 1
    size = lambda name: _C_TYPES.get(types.get(name, ""), 4)  # noqa: E731
    moved = b * (m_ * k * size("X") + k * n * size("W") + m_ * n * size("Y"))
    dtype = _C_DTYPES.get(types.get("X", ""), "")
    batch = f"B={sizes['B']} " if "B" in sizes else ""
    each = "; per launch one batch's GEMM (its record-function is in the per-batch GEMM)" if per_gemm else ""
    return Cost(float(moved), 2.0 * b * m_ * n * k,
                f"its C++ GEMM template's sizes ({batch}M={m_} N={n} K={k}): 2*M*N*K, X, W and Y each once "
                f"(a bias or epilogue inputs not counted){each}", dtype)


def cpp_source_cost(kernel: Kernel) -> Optional[Cost]:
    """A C++ kernel's bytes from its source (see the module's doc); a :data:`DYNAMIC` cost (no
    bytes) when a loop bound is not a number (a size symbol: dynamic shapes); None when the
    source has no ``kernel(...)`` signature with pointers."""
    loops = _code(kernel).loops
    if loops is None:
        return None
    pointers = {name: t for name, t in loops.params.items() if t in _C_TYPES}
    if not pointers:
        return None
    if loops.dynamic:
        return Cost(how=DYNAMIC)  # a bound that is no number: a size symbol (ks0), dynamic shapes
    total = 0.0
    for name, ctype in pointers.items():
        total += loops.elements.get(name, 0) * _C_TYPES[ctype] * (2 if name.startswith("in_out_ptr") else 1)
    dtype = next((_C_DTYPES[t] for t in pointers.values() if t in _C_DTYPES), "")
    return Cost(total, 0.0, "its C++ source: each pointer's elements from the loops its accesses use "
                "(read and written in place: twice); no matmul: no FLOPs counted", dtype)
