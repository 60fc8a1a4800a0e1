"""What a compile mode did, read from a finished report: when a mode asked for work that
torch's rules kept from happening, say so and why.

:func:`mode_note` is a pure function of the report's records (the run settings, the
autotune records, the kernels); the run layer adds its result to the profile's notes,
which the summary and the views show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["mode_note", "CPU_GEMM_RULE"]

# torch/_inductor/utils.py, use_cpp_gemm_template (torch 2.13): the C++ GEMM template is a
# choice for mm/addmm on the CPU only when the second matrix is a constant (a frozen weight)
CPU_GEMM_RULE = "and (mat2.is_module_buffer() or not require_constant_mat2)"

_AUTOTUNE_MODES = ("max-autotune", "max-autotune-no-cudagraphs")
_MM_EXTERNS = ("extern_kernels.mm", "extern_kernels.addmm")


def _freezing_on(settings) -> bool:
    opt = settings.options.get("freezing")
    return bool(opt) or settings.config.get("inductor.freezing") == "True"


def mode_note(r: "CompileReport") -> Optional[str]:
    """Why ``--mode max-autotune`` autotuned nothing, or None.

    It applies when the run asked for a max-autotune mode on the CPU, no autotuning was
    recorded, a matrix product ran as ATen's extern kernel (``extern_kernels.mm`` or
    ``addmm``), and freezing was off: torch then offers its C++ GEMM template for mm/addmm
    only with a constant second matrix (:data:`CPU_GEMM_RULE`), so ATen's kernel was the
    one choice and there was nothing to tune."""
    p = r.profile
    if p is None:
        return None
    s = p.settings
    if s.mode not in _AUTOTUNE_MODES or not s.device.startswith("cpu") or r.autotuning or _freezing_on(s):
        return None
    mms = sorted({k.name for k in r.kernels if k.backend == "extern" and k.name in _MM_EXTERNS})
    if not mms:
        return None
    return (f"--mode {s.mode} autotuned nothing here: on the CPU, Inductor offers its C++ GEMM template "
            f"for {' and '.join(mms)} only when the second matrix is a constant (torch/_inductor/utils.py, "
            f"use_cpp_gemm_template: `{CPU_GEMM_RULE}`), which takes freezing=True "
            "(torch._inductor.config.freezing; an nn.Module's weight, in inference under torch.no_grad()); "
            "without it ATen's kernel was the only choice")
