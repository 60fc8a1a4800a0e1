"""What a generated kernel's source says of its costs, read once into :class:`~ipycompile.report.KernelCode`.

:mod:`ipycompile.analysis.kernel_costs` estimates a launch's bytes and FLOPs from these
records (its module doc says how); this module is the one reader of the kernel text
behind them:

- a Triton kernel's argument names, from its ``def`` (``in_ptr0``, ``out_ptr0``,
  ``in_out_ptr0``, ``xnumel``);
- a Triton matmul template's ``M``, ``N``, ``K`` as its source declares them (``M = 8192``;
  none where a size is a symbol: dynamic shapes);
- torch's own estimate in a Triton kernel's ``inductor_meta`` (``kernel_num_gb``,
  ``kernel_flop``: Inductor's ``benchmark_kernel`` option);
- the record-functions a C++ kernel's source opens (``graph_1_gemm_m64n256k128_kernel``);
- a C++ GEMM template's sizes (``constexpr int64_t M = 64L``, ``N``, ``K``, a batched one's
  ``B``; None for a symbol, ``const int64_t M = ks0;``), the pointer parameters of its
  ``kernel(...)`` with their C types, and whether its record-function opens in each batch's
  GEMM (before the ``kernel`` signature);
- a C++ kernel's pointer parameters, and per pointer the elements its accesses touch: the
  product of the ranges of the loop variables an access uses (``in_ptr0 +
  static_cast<int64_t>(x0 + 512L*x1)``: x0 and x1), the largest over its accesses; or
  ``dynamic`` where a loop bound is no number (a size symbol).

Pure text in, plain records out; never raises. :func:`fill_report` reads the kernels of a
report saved before these records were kept (``Kernel.code`` None), when it is loaded.
"""

from __future__ import annotations

import math
import re
from typing import Optional

from ...report.model import CppGemm, CppLoops, Kernel, KernelCode

__all__ = ["read_kernel_code", "with_code", "fill_report"]

_TEMPLATE_SIZE = r"^[ \t]*{}[ \t]*=[ \t]*(\d+)[ \t]*$"
_META_GB = re.compile(r"""['"]kernel_num_gb['"]\s*:\s*([0-9.eE+-]+)""")
_META_FLOP = re.compile(r"""['"]kernel_flop['"]\s*:\s*([0-9.eE+-]+)""")
_CPP_RECORD = re.compile(r'RAIIAtenRecordFunctionHandle\s+\w+\(\s*"(graph_\d+_\w+)"')
_C_PARAM = re.compile(r"^\s*(?:const\s+)?(?P<type>[\w:]+)\s*\*\s*(?:__restrict__\s+)?(?P<name>\w+)\s*$")
_C_LOOP = re.compile(r"for\s*\(\s*int64_t\s+(?P<var>\w+)\s*=\s*(?:static_cast<int64_t>\()?(?P<lo>-?\d+)L?\)?\s*;"
                     r"\s*(?P=var)\s*<\s*(?:static_cast<int64_t>\()?(?P<hi>-?\d+)L?\)?\s*;")
_C_SYMBOL_BOUND = re.compile(r"for\s*\(\s*int64_t\s+\w+\s*=[^;]*;\s*\w+\s*<\s*(?!static_cast<int64_t>\(-?\d)(?!-?\d)")
_C_CONST = r"(?:constexpr|const)\s+int64_t\s+{}\s*=\s*(?:static_cast<int64_t>\()?\s*(?P<v>[^;]+?)\)?\s*;"
_GEMM_SIGNATURE = re.compile(r'extern\s+"C"[^{]*?\bkernel\s*\(([^)]*)\)')
_SIGNATURE = re.compile(r'extern\s+"C"[^(]*\bkernel\s*\(([^)]*)\)')
_DIGITS = re.compile(r"\d+")


def _template_mnk(source: str) -> list[int]:
    sizes = [re.search(_TEMPLATE_SIZE.format(name), source, re.M) for name in "MNK"]
    return [int(x.group(1)) for x in sizes] if all(sizes) else []


def _args(name: str, source: str) -> list[str]:
    m = re.search(rf"def {re.escape(name)}\(([^)]*)\)", source)
    return [a.split(":")[0].strip() for a in m.group(1).split(",")] if m else []


def _meta(source: str) -> tuple[Optional[float], Optional[float]]:
    """(bytes, FLOPs) of torch's estimate; (None, None) when absent or unreadable."""
    gb = _META_GB.search(source)
    if not gb:
        return None, None
    flop = _META_FLOP.search(source)
    try:
        return float(gb.group(1)) * 1e9, float(flop.group(1)) if flop else 0.0
    except ValueError:
        return None, None


def _params(signature: str) -> dict[str, str]:
    out = {}
    for param in signature.split(","):
        m = _C_PARAM.match(param)
        if m:
            out[m.group("name")] = m.group("type")
    return out


def _gemm(source: str) -> Optional[CppGemm]:
    sig = _GEMM_SIGNATURE.search(source)
    sizes: dict[str, Optional[int]] = {}
    for name in ("M", "N", "K", "B"):
        m = re.search(_C_CONST.format(name), source)
        if m is None:
            continue
        v = m.group("v").strip().rstrip("L")
        sizes[name] = int(v) if _DIGITS.fullmatch(v) else None
    if sig is None or not {"M", "N", "K"} <= set(sizes):
        return None
    record = source.find("RAIIAtenRecordFunctionHandle")
    return CppGemm(sizes=sizes, params=_params(sig.group(1)), per_batch_record=0 <= record < sig.start())


def _loops(source: str) -> Optional[CppLoops]:
    sig = _SIGNATURE.search(source)
    if not sig:
        return None
    params = _params(sig.group(1))
    body = source[sig.end():]
    if _C_SYMBOL_BOUND.search(body):
        return CppLoops(params=params, dynamic=True)  # a bound that is no number: a size symbol (ks0)
    match, stack = {}, []  # each brace's partner, to find each loop's body
    for i, ch in enumerate(body):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            match[stack.pop()] = i
    loops = []  # (var, span, body start, body end)
    for m in _C_LOOP.finditer(body):
        open_ = body.find("{", m.end())
        if open_ >= 0 and open_ in match:
            loops.append((m.group("var"), int(m.group("hi")) - int(m.group("lo")), open_, match[open_]))
    elements: dict[str, int] = {}
    for name in params:
        n = 0
        for m in re.finditer(rf"\b{name}\s*(?:\+|\[)", body):
            expr = body[m.end(): m.end() + 200].split(";")[0]
            inner: dict[str, int] = {}
            for v, span, a, b in loops:  # the innermost loop of a name wins (tail loops are separate nests)
                if a < m.start() < b:
                    inner[v] = span
            used = [span for v, span in inner.items() if re.search(rf"\b{v}\b", expr)]
            n = max(n, math.prod(used) if used else 1)
        elements[name] = n
    return CppLoops(params=params, elements=elements)


def read_kernel_code(kernel: Kernel) -> KernelCode:
    """What ``kernel``'s source says of its costs (see the module's doc); an empty record for a
    kernel without source (an extern call)."""
    source = kernel.source if isinstance(kernel.source, str) else ""
    if not source:
        return KernelCode()
    code = KernelCode()
    if kernel.backend == "cpp":
        code.records = list(dict.fromkeys(_CPP_RECORD.findall(source)))
        if kernel.kind == "template":
            code.gemm = _gemm(source)
        else:
            code.loops = _loops(source)
        return code
    code.args = _args(kernel.name, source)
    code.meta_bytes, code.meta_flops = _meta(source)
    if kernel.kind == "template":
        code.template_mnk = _template_mnk(source)
    return code


def with_code(kernel: Kernel) -> Kernel:
    """``kernel`` with :attr:`Kernel.code` read from its source (a kernel built by hand)."""
    kernel.code = read_kernel_code(kernel)
    return kernel


def fill_report(report) -> None:
    """Read the source of each kernel of a loaded report whose ``code`` was not kept (a report
    saved before it was): the same records a report built now carries."""
    for k in report.kernels:
        if k.code is None:
            k.code = read_kernel_code(k)
