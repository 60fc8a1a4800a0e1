"""Which device measurements run on, and waiting for it: ``synchronize``, ``device_name``.

``import ipycompile.run.devices`` does not import torch. Functions that only need to know
whether an accelerator is *in use* look at ``sys.modules`` first: if torch was never
imported, no device work can be pending.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

__all__ = ["synchronize", "device_name", "job_ranks"]


def _torch_if_imported() -> Any:
    """The torch module if something already imported it, else None (never imports it)."""
    return sys.modules.get("torch")


def _cuda_in_use() -> bool:
    torch = _torch_if_imported()
    return torch is not None and torch.cuda.is_initialized()


def job_ranks() -> int:
    """The number of ranks of the ``torch.distributed`` job this process is a rank of (its
    default process group's world size); 1 outside a job. Never imports torch."""
    torch = _torch_if_imported()
    try:
        dist = torch.distributed if torch is not None else None
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return 1
        return int(dist.get_world_size())
    except Exception:  # a group torn down meanwhile: no job to keep in step with
        return 1


def synchronize(device: str | None = None) -> None:
    """Wait for all work queued on the accelerator, so a host clock reading afterwards is honest.

    With ``device`` (e.g. ``"cuda"``, ``"cuda:1"``, ``"xpu"``, ``"mps"``, ``"cpu"``)
    that device is synchronised (initialising it if needed); ``"cpu"`` is a no-op.
    Without it, every accelerator that is already in use is synchronised: CUDA
    (the current device) and XPU when initialised, MPS when available. When torch
    has not been imported nothing can be pending and this returns at once.
    """
    if device is not None:
        import torch

        dev = torch.device(device)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elif dev.type == "xpu":
            torch.xpu.synchronize(dev)
        elif dev.type == "mps":
            torch.mps.synchronize()
        return
    torch = _torch_if_imported()
    if torch is None:
        return
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_initialized():
        xpu.synchronize()
    if torch.backends.mps.is_available():
        torch.mps.synchronize()


def _cpu_brand() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _gpu_name(torch: Any) -> str | None:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.cuda.current_device())
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return xpu.get_device_name(xpu.current_device())
    return None


def device_name() -> str:
    """The accelerator measurements run on, e.g. ``"NVIDIA H100 80GB HBM3"``, else ``"cpu: <brand>"``.

    For CUDA/XPU this is the current device. When CUDA is available but not yet
    initialised, asking for its name initialises it (as any CUDA work would).
    On Apple silicon with MPS available: ``"mps: <brand>"``.
    """
    import torch

    name = _gpu_name(torch)
    if name is not None:
        return name
    if torch.backends.mps.is_available():
        return f"mps: {_cpu_brand()}"
    return f"cpu: {_cpu_brand()}"
