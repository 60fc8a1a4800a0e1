"""The names torch's profiler gives the events of a compiled call, read once (what
:mod:`ipycompile.run.kernel_times` attributes time by):

- Dynamo's record-function around a compiled frame, ``Torch-Compiled Region: 0/1`` (its compile id);
- Inductor's around one compiled graph, ``## Call CompiledFxGraph ...``;
- a C++ kernel's, with ``cpp.enable_kernel_profile``: ``graph_1_cpp_fused_add_0`` (the kernel's name);
- a dispatcher op: ``aten::mm``;
- the runtime call that replays a CUDA graph (``cudaGraphLaunch``, ``cuGraphLaunch``);
- the families of library kernels a CUDA-graph replay runs (attention, convolution, matrix
  product: by the vendors' kernel names), and memory copies and sets.

Pure functions of a name; never raise.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["GRAPH_CALL", "region_id", "cpp_kernel", "is_op", "is_graph_launch", "library_ops", "is_copy"]

#: Inductor's record-function around one compiled graph (a prefix)
GRAPH_CALL = "## Call CompiledFxGraph"
_REGION = re.compile(r"^Torch-Compiled Region: (?P<cid>\S+)$")  # Dynamo's record-function around a compiled frame
_CPP_KERNEL = re.compile(r"^graph_\d+_(?P<name>\w+)$")  # cpp.enable_kernel_profile's record-function
_OP = re.compile(r"^\w+::\w+$")  # a dispatcher op as the profiler names it: aten::mm
_GRAPH_LAUNCH = re.compile(r"^cu(?:da)?GraphLaunch")
#: Library kernels a CUDA-graph replay runs, by family: (the kernel-name pattern, the ops of the extern
#: kernels that launch them), tried in order (cuDNN's attention kernels have "gemm"-like parts in their names)
_LIBRARY_FAMILIES = (
    (re.compile(r"sdpa|fmha|flash|attention", re.I), ("aten::_scaled_dot_product_cudnn_attention",
     "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention")),
    (re.compile(r"conv|dgrad|wgrad", re.I), ("aten::convolution", "aten::convolution_backward")),
    (re.compile(r"gemm|nvjet|cutlass|xmma|cublas|wgmma|s16816|s1688|h16816|h1688", re.I),
     ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_int_mm", "aten::_scaled_mm")),
)
_COPY = re.compile(r"^(?:Memcpy|Memset)\b|copy", re.I)


def region_id(name: str) -> Optional[str]:
    """The compile id (its text, ``0/1``) of Dynamo's record-function around a compiled frame; None for
    another event."""
    m = _REGION.match(name)
    return m.group("cid") if m else None


def cpp_kernel(name: str) -> Optional[str]:
    """The kernel a C++ kernel's record-function (``graph_1_cpp_fused_add_0``) names; None for another event."""
    m = _CPP_KERNEL.match(name)
    return m.group("name") if m else None


def is_op(name: str) -> bool:
    """A dispatcher op (``aten::mm``)."""
    return bool(_OP.match(name))


def is_graph_launch(name: str) -> bool:
    """The runtime call that replays a CUDA graph."""
    return bool(_GRAPH_LAUNCH.match(name))


def library_ops(name: str) -> Optional[tuple[str, ...]]:
    """The ops of the extern kernels that launch a library kernel of this name's family; None when the
    name is of no family known here."""
    return next((ops for pattern, ops in _LIBRARY_FAMILIES if pattern.search(name)), None)


def is_copy(name: str) -> bool:
    """A memory copy or set."""
    return bool(_COPY.search(name))
