"""Device peaks for the roofline: DRAM bandwidth and dense FLOP/s by dtype, from vendors' datasheets.

The one home of these numbers. Dense (no 2:4 sparsity) figures, as NVIDIA's
datasheets print them for the SXM boards (torch's own table,
``torch/_inductor/analysis/device_info.py``, holds the same H100 and A100
figures, with sparsity for the H100's tensor cores, which it divides out in
``datasheet_tops``; it has no H200):

- H100 SXM / PCIe / NVL: https://www.nvidia.com/en-us/data-center/h100/ (datasheet table):
  HBM 3.35 / 2.0 / 3.9 TB/s; FP16 and BF16 tensor 1979 / 1513 / 1671 TFLOPS with
  sparsity (half dense); TF32 989 / 756 / 835 with sparsity; FP32 67 / 51 / 60.
- H200 SXM / NVL: https://www.nvidia.com/en-us/data-center/h200/: HBM3e 4.8 TB/s;
  FP16/BF16 1979 / 1671 with sparsity; TF32 989 / 835 with sparsity; FP32 67 / 60.
- A100 SXM 80GB / 40GB, PCIe 80GB / 40GB:
  https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf:
  2039 / 1555 / 1935 / 1555 GB/s; FP16/BF16 tensor 312 dense; TF32 156 dense; FP32 19.5.

Measured on this workplace's H100 (KINDS.md): a device-to-device copy moved about
3.0 TB/s (90 % of 3.35) and an 8192^3 bf16 matrix product ran at 798 TFLOP/s (81 %
of 989): a kernel at ~90 % of the datasheet's bandwidth is at the practical roof.

A CPU (or a device not listed) has no entry: its peak is unknown and the roofline
gives no verdicts there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["DevicePeak", "device_peak", "PEAKS"]


@dataclass(frozen=True)
class DevicePeak:
    name: str
    dram_bytes_s: float  # bytes/s
    flops: dict  # dtype name -> FLOP/s (dense)
    source: str

    def flops_for(self, dtype: str) -> float:
        """The dense peak for the arithmetic's dtype; float32 (no tensor cores, TF32 off by
        default in PyTorch) for anything else, e.g. elementwise kernels with no FLOPs counted."""
        return self.flops.get(dtype) or self.flops["float32"]

    def ridge(self, dtype: str) -> float:
        """FLOPs per byte where the memory roof meets the compute roof."""
        return self.flops_for(dtype) / self.dram_bytes_s


_T = 1e12
_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_A100 = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")


def _p(name, tb_s, half, tf32, fp32, fp64, src, fp8=None) -> DevicePeak:
    flops = {"float16": half * _T, "bfloat16": half * _T, "tfloat32": tf32 * _T, "float32": fp32 * _T,
             "float64": fp64 * _T}
    if fp8:
        flops["float8"] = fp8 * _T
    return DevicePeak(name, tb_s * 1e12, flops, src)


#: (what the device name must contain, all of them, upper case) -> peak; first match wins.
PEAKS: list[tuple[tuple[str, ...], DevicePeak]] = [
    (("H200", "NVL"), _p("H200 NVL", 4.8, 835.5, 417.5, 60, 30, _H200, 1670.5)),
    (("H200",), _p("H200 SXM", 4.8, 989.5, 494.5, 67, 34, _H200, 1979)),
    (("H100", "PCIE"), _p("H100 PCIe", 2.0, 756.5, 378, 51, 26, _H100, 1513)),
    (("H100", "NVL"), _p("H100 NVL", 3.9, 835.5, 417.5, 60, 30, _H100, 1670.5)),
    (("H100",), _p("H100 SXM", 3.35, 989.5, 494.5, 67, 34, _H100, 1979)),
    (("A100", "PCIE", "40GB"), _p("A100 PCIe 40GB", 1.555, 312, 156, 19.5, 9.7, _A100)),
    (("A100", "PCIE"), _p("A100 PCIe 80GB", 1.935, 312, 156, 19.5, 9.7, _A100)),
    (("A100", "40GB"), _p("A100 SXM 40GB", 1.555, 312, 156, 19.5, 9.7, _A100)),
    (("A100",), _p("A100 SXM 80GB", 2.039, 312, 156, 19.5, 9.7, _A100)),
]


def device_peak(device: str) -> Optional[DevicePeak]:
    """The peak of a device by the name torch gives it (``NVIDIA H100 80GB HBM3``); None when unknown."""
    name = (device or "").upper()
    for needles, peak in PEAKS:
        if all(n in name for n in needles):
            return peak
    return None
