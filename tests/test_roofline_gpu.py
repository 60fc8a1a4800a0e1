"""Issue 22 on a real CUDA device (marker ``gpu``; skipped without CUDA): the roofline of
one compiled cell with ``--profile-kernels``.

One cell, compiled once for the module, holds three kernels whose costs are known
exactly: a 4096^3 fp16 matrix product (cuBLAS, through ``extern_kernels.mm``), a
64M-element fp32 elementwise op (one Triton kernel reading and writing each element
once) and the same op on 1024 elements (too small for either roof). The checks are
what must hold on any run of any listed device: exact FLOPs and bytes, the verdicts,
achieved rates that do not exceed the datasheet's peaks, shares that add up, and the
host gap from the run layer's GPU busy-time phase. The figures' agreement with Nsight
Compute is ``benchmarks/roofline_truth.py``'s.

Run on the GPU machine: ``python -m pytest -q -p no:logging -m gpu tests/test_roofline_gpu.py``.
"""

from __future__ import annotations

import math

import pytest
import torch

import ipycompile
from ipycompile.analysis.roofline import roofline
from ipycompile.views.phrases import roofline_line

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

MNK = 4096  # the matrix product: M = N = K
BIG = 64 * 2**20  # elements of the large elementwise op (fp32: 256 MiB in, 256 MiB out)
TINY = 1024  # elements of the tiny one

CELL = """\
c = a @ b
y = x * 2 + 1
z = t.sin() + 1
(c, y, z)
"""


@pytest.fixture(scope="module")
def run():
    ns = {
        "torch": torch,
        "a": torch.randn(MNK, MNK, device="cuda", dtype=torch.float16),
        "b": torch.randn(MNK, MNK, device="cuda", dtype=torch.float16),
        "x": torch.randn(BIG, device="cuda"),
        "t": torch.randn(TINY, device="cuda"),
    }
    return ipycompile.run_cell(CELL, ns, record=False, profile_kernels=True)


@pytest.fixture(scope="module")
def roof(run):
    r = roofline(run.report)
    assert r is not None, "no --profile-kernels times in the report"
    if r.peak is None:
        pytest.skip(f"{run.report.profile.settings.device!r} is not in ipycompile/analysis/device_peaks.py: no roofs, no verdicts")
    return r


def _numels(row) -> set[int]:
    """The element counts of the tensors its launches recorded."""
    return {math.prod(shape) for launch in row.time.launches for shape in launch.shapes
            if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape)}


def _triton(roof, numel: int):
    rows = [x for x in roof.rows if x.time.name.startswith("triton_") and numel in _numels(x)]
    assert len(rows) == 1, [(x.time.name, sorted(_numels(x))) for x in roof.rows]
    return rows[0]


def test_matmul_is_2mnk_compute_bound_and_under_the_fp16_peak(roof):
    mm = next((x for x in roof.rows if x.time.name == "extern_kernels.mm"), None)
    assert mm is not None, [x.time.name for x in roof.rows]
    assert mm.flops_per_launch == 2 * MNK**3  # exactly, from the launching aten::mm's shapes
    assert "aten::mm shapes" in mm.how and mm.dtype == "float16"
    assert mm.bytes_per_launch == 3 * MNK * MNK * 2  # A, B and the output, each once
    assert mm.verdict == "compute-bound"
    peak = roof.peak.flops_for("float16")
    assert 0 < mm.flops_s < 1.05 * peak, (mm.flops_s / 1e12, peak / 1e12)
    assert mm.flops_pct == pytest.approx(100 * mm.flops_s / peak)


def test_large_elementwise_moves_each_element_twice_memory_bound_and_under_the_bandwidth_peak(roof):
    ew = _triton(roof, BIG)
    assert ew.bytes_per_launch == pytest.approx(BIG * 4 * 2, rel=0.01), ew.how  # x read once, y written once
    assert ew.flops_per_launch == 0
    assert ew.verdict == "memory-bound"
    assert 0 < ew.bw_pct < 105, (ew.bytes_s / 1e12, roof.peak.dram_bytes_s / 1e12)
    assert ew.bytes_s == pytest.approx(ew.bytes_per_launch * ew.time.calls / ew.time.total_s)


def test_tiny_op_is_latency_bound(roof):
    tiny = _triton(roof, TINY)
    assert tiny.bytes_per_launch == pytest.approx(TINY * 4 * 2, rel=0.01)
    assert tiny.verdict == "latency-bound"
    assert not tiny.near_roof


def test_shares_add_up_and_the_host_gap_is_the_busy_phases(run, roof):
    from ipycompile.views.blocks import figure_png
    from ipycompile.views.tabs import kernels_tab

    s = roof.shares
    parts = s.near_roof_s + s.memory_far_s + s.compute_far_s + s.latency_s + s.unknown_s
    assert s.busy_s > 0 and parts == pytest.approx(s.busy_s, rel=1e-9)
    by = {x.verdict: x.time.total_s / max(run.report.profile.kernels.calls, 1) for x in roof.rows if x.verdict}
    assert set(by) >= {"compute-bound", "memory-bound", "latency-bound"}, by
    assert s.latency_s >= by["latency-bound"] > 0  # each kernel's time is in the share its verdict names
    p = run.report.profile
    busy = p.steady.busy  # the run layer's GPU busy-time phase: CUDA work, timed runs > 1
    assert busy is not None, p.notes
    # two profiled phases of the same calls: the kernel sum and the busy (union) time agree loosely
    assert s.busy_s == pytest.approx(busy.busy_s, rel=0.3), (s.busy_s, busy.busy_s)
    assert isinstance(s.host_gap_s, float) and s.host_gap_s >= 0
    assert s.host_gap_s == pytest.approx(max(0.0, busy.run_s - busy.busy_s)) and s.run_s == busy.run_s
    assert p.roofline == s  # what the run layer stored is what the analysis gives
    line = roofline_line(s)
    assert line.startswith("roofline: of ") and "host gap " in line and "not measured" not in line
    assert line in str(run.report)  # the summary's line
    blocks = kernels_tab(run.report)
    assert any(type(b).__name__ == "Text" and b.text == line for b in blocks)  # the Kernels view's, the same
    fig = next(b for b in blocks if type(b).__name__ == "Figure" and b.title.startswith("Roofline"))
    png = figure_png(fig)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
