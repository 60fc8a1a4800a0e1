"""Issue 22: the kernel roofline (bytes, FLOPs, achieved rates against the device's peaks, verdicts).

Formulas on shapes as the profiler records them; the peak table against torch's own;
a real CPU compile with ``--profile-kernels`` (no peak: no verdicts, said so); and the
roofline of hand-built GPU kernel times on the H100's peaks. The figures' agreement
with Nsight Compute is ``benchmarks/roofline_truth.py``'s (GPU machine).
"""

from __future__ import annotations

import pytest
import torch

import ipycompile
from ipycompile.analysis.device_peaks import device_peak
from ipycompile.analysis.kernel_costs import launch_cost, meta_cost
from ipycompile.capture.parse.kernel_code import with_code
from ipycompile.analysis.roofline import roofline
from ipycompile.report import CompileReport, Kernel, KernelLaunch, KernelTime, KernelTimes, Profile, RunSettings


def test_matmul_and_convolution_costs_follow_the_flop_counter():
    from torch.utils.flop_counter import conv_flop_count, mm_flop

    mm = launch_cost(KernelLaunch("aten::mm", [[256, 512], [512, 1024], [256, 1024]], ["c10::Half"] * 3, [], 1))
    assert mm.flops == mm_flop([256, 512], [512, 1024]) and mm.dtype == "float16"
    assert mm.bytes == (256 * 512 + 512 * 1024 + 256 * 1024) * 2  # the out= tensor counted once
    no_out = launch_cost(KernelLaunch("aten::mm", [[256, 512], [512, 1024]], ["float", "float"], [], 1))
    assert no_out.bytes == (256 * 512 + 512 * 1024 + 256 * 1024) * 4  # the output added from the shapes
    addmm = launch_cost(KernelLaunch("aten::addmm", [[1024], [256, 512], [512, 1024], [], []],
                                     ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"], [], 1))
    assert addmm.flops == 2 * 256 * 512 * 1024 and addmm.dtype == "bfloat16"
    # max-autotune's bias_addmm on the H100: a 1-D bias, the out= tensor last
    bias = launch_cost(KernelLaunch("aten::addmm", [[4096], [8192, 1024], [1024, 4096], [], [], [8192, 4096]],
                                    ["c10::Half"] * 3 + ["Scalar", "Scalar", "c10::Half"], [], 5))
    assert bias.flops == 2 * 8192 * 1024 * 4096
    assert bias.bytes == (4096 + 8192 * 1024 + 1024 * 4096 + 8192 * 4096) * 2
    conv = launch_cost(KernelLaunch("aten::convolution", [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
                                    ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
                                    ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"], 1))
    out = [32, 64, 112, 112]
    assert conv.flops == conv_flop_count([32, 3, 224, 224], [64, 3, 7, 7], out, transposed=False)
    back = launch_cost(KernelLaunch(
        "aten::convolution_backward", [out, [32, 3, 224, 224], [64, 3, 7, 7]] + [[]] * 8, ["float"] * 3 + [""] * 8,
        ["", "", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, True]"], 1))
    assert back.flops == conv.flops  # the weight's gradient only: the image asks for none


def test_triton_kernels_bytes_are_their_buffers_and_templates_count_their_product():
    shapes, dtypes = [[8192, 1024], [1024], [8192, 1024], [], []], ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"]
    pointwise = launch_cost(KernelLaunch("triton_poi_fused_add_0", shapes, dtypes, [], 1), Kernel("triton_poi_fused_add_0", "triton", "pointwise"))
    assert pointwise.bytes == (2 * 8192 * 1024 + 1024) * 2 and pointwise.flops == 0
    assert "no FLOPs counted" in pointwise.how
    inplace = with_code(Kernel("triton_poi_fused_gelu_0", "triton", "pointwise",
                               source="@triton.jit\ndef triton_poi_fused_gelu_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):\n"))
    c = launch_cost(KernelLaunch(inplace.name, [[8192, 4096], [4096], []], ["c10::Half", "c10::Half", "Scalar"], [], 1), inplace)
    assert c.bytes == (2 * 8192 * 4096 + 4096) * 2  # read and written in place
    tem = Kernel("triton_tem_fused_mm_0", "triton", "template")
    c = launch_cost(KernelLaunch(tem.name, [[8192, 1024], [1024, 4096], [8192, 4096]], ["c10::Half"] * 3, [], 1), tem)
    assert c.flops == 2 * 8192 * 1024 * 4096
    meta = with_code(Kernel("k", "triton", "pointwise", source="inductor_meta={'kernel_name': 'k', 'kernel_num_gb': 0.0125, 'kernel_flop': 0},"))
    assert meta_cost(meta).bytes == pytest.approx(0.0125e9) and "torch's estimate" in meta_cost(meta).how
    assert meta_cost(with_code(Kernel("k", "triton", "pointwise", source="inductor_meta={}"))) is None


def test_peaks_agree_with_torchs_own_table():
    h100 = device_peak("NVIDIA H100 80GB HBM3")
    assert h100.name == "H100 SXM" and h100.dram_bytes_s == 3.35e12
    assert device_peak("NVIDIA H200").dram_bytes_s == 4.8e12
    assert device_peak("NVIDIA A100-SXM4-80GB").flops_for("bfloat16") == 312e12
    assert device_peak("cpu: AMD EPYC") is None and device_peak("") is None
    info = pytest.importorskip("torch._inductor.analysis.device_info")
    for name, ours in (("NVIDIA H100", h100), ("NVIDIA A100", device_peak("NVIDIA A100-SXM4-80GB"))):
        theirs = info._device_mapping[name]
        assert ours.dram_bytes_s == pytest.approx(theirs.dram_bw_gbs * 1e9)
        dense = theirs.tops[torch.bfloat16] / theirs.tops_sparsity_factor
        assert ours.flops_for("bfloat16") == pytest.approx(dense * 1e12, rel=0.01)


def test_cpp_kernel_bytes_from_its_loops():
    """Each pointer's elements from the loop nest around each access (the innermost loop of a name);
    a loop bound that is no number (dynamic shapes) gives no estimate, and says so."""
    from ipycompile.analysis.kernel_costs import cpp_source_cost

    src = """extern "C"  void  kernel(const float* in_ptr0, const float* in_ptr1, float* out_ptr0)
{
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(512L); x0+=static_cast<int64_t>(1L))
    {
        for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(256L); x1+=static_cast<int64_t>(16L))
        {
            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 256L*x0), static_cast<int64_t>(16));
            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
        }
    }
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(512L); x0+=static_cast<int64_t>(16L))
    {
        tmp3.store(out_ptr0 + static_cast<int64_t>(x0));
    }
}"""
    c = cpp_source_cost(with_code(Kernel("cpp_fused_0", "cpp", "reduction", source=src)))
    assert c.bytes == (512 * 256 + 256 + 512) * 4 and c.dtype == "float32"
    dynamic = src.replace("x0<static_cast<int64_t>(512L)", "x0<static_cast<int64_t>(ks0)")
    c = cpp_source_cost(with_code(Kernel("cpp_fused_0", "cpp", "reduction", source=dynamic)))
    assert c.bytes is None and c.how == "not estimated: dynamic shapes (loop bounds are symbols)"


def _gpu_report(times: list[KernelTime], kernels: list[Kernel]) -> CompileReport:
    r = CompileReport(kernels=kernels)
    r.profile = Profile(settings=RunSettings(device="NVIDIA H100 80GB HBM3"), kernels=KernelTimes(times, "cuda", 1))
    return r


def test_verdicts_on_the_h100s_roofs():
    half = ["c10::Half"] * 3
    big = 8192 * 8192  # elements: 134 MB of fp16 in, 134 MB out
    times = [
        # a copy at 3 TB/s: memory-bound, near the roof
        KernelTime("triton_poi_fused_0", "triton_poi_fused_0", total_s=2 * big * 2 / 3.0e12, calls=1,
                   launches=[KernelLaunch("triton_poi_fused_0", [[big], [big]], half[:2], [], 1)]),
        # the same bytes at 0.5 TB/s: memory-bound, far from the roof
        KernelTime("triton_poi_fused_1", "triton_poi_fused_1", total_s=2 * big * 2 / 0.5e12, calls=1,
                   launches=[KernelLaunch("triton_poi_fused_1", [[big], [big]], half[:2], [], 1)]),
        # an 8192^3 fp16 product at 800 TFLOP/s: compute-bound, near the roof
        KernelTime("extern_kernels.mm", "extern_kernels.mm", total_s=2 * 8192 ** 3 / 800e12, calls=1,
                   launches=[KernelLaunch("aten::mm", [[8192, 8192]] * 3, half, [], 1)]),
        # 4 KB in 4 us: latency-bound
        KernelTime("triton_poi_fused_2", "triton_poi_fused_2", total_s=4e-6, calls=1,
                   launches=[KernelLaunch("triton_poi_fused_2", [[1024], [1024]], half[:2], [], 1)]),
        KernelTime("other device time", total_s=1e-6),
    ]
    kernels = [Kernel(t.kernel, "triton" if t.kernel.startswith("triton") else "extern",
                      "pointwise" if t.kernel.startswith("triton") else "extern") for t in times if t.kernel]
    roof = roofline(_gpu_report(times, kernels))
    by = {x.time.name: x for x in roof.rows}
    assert by["triton_poi_fused_0"].verdict == "memory-bound" and by["triton_poi_fused_0"].near_roof
    assert by["triton_poi_fused_0"].bw_pct == pytest.approx(100 * 3.0 / 3.35)
    assert by["triton_poi_fused_1"].verdict == "memory-bound" and not by["triton_poi_fused_1"].near_roof
    assert by["extern_kernels.mm"].verdict == "compute-bound" and by["extern_kernels.mm"].near_roof
    assert by["extern_kernels.mm"].flops_pct == pytest.approx(100 * 800 / 989.5)
    assert by["triton_poi_fused_2"].verdict == "latency-bound"
    s = roof.shares
    assert s.near_roof_s == pytest.approx(times[0].total_s + times[2].total_s)
    assert s.memory_far_s == pytest.approx(times[1].total_s) and s.latency_s == pytest.approx(4e-6)
    assert s.unknown_s == pytest.approx(1e-6) and s.host_gap_s is None
    from ipycompile.views.phrases import roofline_line

    line = roofline_line(s)
    assert line.startswith("roofline: of ") and "within 70% of a roof" in line and "latency-bound" in line
    assert "host gap: not measured (no GPU busy-time phase" in line  # the report has no Profile.busy


def _h100_matmul_report() -> CompileReport:
    half = ["c10::Half"] * 3
    times = [KernelTime("extern_kernels.mm", "extern_kernels.mm", total_s=2 * 4096 ** 3 / 700e12, calls=1,
                        launches=[KernelLaunch("aten::mm", [[4096, 4096]] * 3, half, [], 1)])]
    return _gpu_report(times, [Kernel("extern_kernels.mm", "extern", "extern")])


def test_host_gap_is_the_busy_phases_idle_time_per_call():
    """The host gap: the run time less the busy-time phase's GPU busy time (the record
    run.busy's own judge makes from those two numbers), in the shares, the summary and the Kernels view."""
    from ipycompile.views.phrases import roofline_line
    from ipycompile.run.busy import judge
    from ipycompile.views.html import render_html
    from ipycompile.views.tabs import kernels_tab

    r = _h100_matmul_report()
    r.profile.steady.run_median_s = 260e-6
    r.profile.steady.busy = judge(196e-6, 260e-6, kernels=1, calls=20, cudagraphs=False, suggest=True)
    roof = roofline(r)
    s = roof.shares
    assert s.host_gap_s == pytest.approx(64e-6) and s.run_s == 260e-6
    r.profile.roofline = s  # as the run layer stores it
    line = roofline_line(s)
    assert "host gap 64.0 us of each 260.0 us call (the GPU idle while the host runs Python" in line
    assert "not measured" not in line
    assert line in str(r)  # the text summary's line
    texts = [b.text for b in kernels_tab(r) if type(b).__name__ == "Text"]
    assert line in texts  # the Kernels view shows the same line
    assert "host gap 64.0 us of each 260.0 us call" in render_html(r)
    assert CompileReport.from_json(r.to_json()).profile.roofline == s

    # the busy phase measured more busy time than its run time (two phases, two samples): no negative gap
    r.profile.steady.busy = judge(300e-6, 260e-6, kernels=1, calls=20, cudagraphs=False, suggest=True)
    assert roofline(r).shares.host_gap_s == 0.0

    # no busy phase (the CPU, or --runs 1): None, and the line promises nothing
    r.profile.steady.busy = None
    s = roofline(r).shares
    assert s.host_gap_s is None and s.run_s is None
    assert "host gap: not measured (no GPU busy-time phase in this run" in roofline_line(s)


@pytest.mark.slow
def test_cpu_profile_kernels_gives_bytes_and_flops_and_no_verdicts():
    """A real compile on the CPU: the extern matmul's bytes and FLOPs from its recorded shapes; no
    peak for a CPU, so no verdicts, and the summary says so; the view shows the columns and the figure."""
    from ipycompile.views.phrases import roofline_line
    from ipycompile.views.html import render_html
    from ipycompile.views.tabs import kernels_tab

    a, w = torch.randn(64, 128), torch.randn(128, 256)
    run = ipycompile.run_cell("torch.relu(a @ w) * 2", {"a": a, "w": w, "torch": torch}, profile_kernels=True,
                              fresh=True, runs=2, record=False)
    r = run.report
    roof = roofline(r)
    mm = next(x for x in roof.rows if x.time.name == "extern_kernels.mm")
    assert mm.flops_per_launch == 2 * 64 * 128 * 256
    assert mm.bytes_per_launch == (64 * 128 + 128 * 256 + 64 * 256) * 4
    assert mm.bytes_s > 0 and mm.verdict == "" and mm.bw_pct is None
    cpp = next(x for x in roof.rows if x.kernel is not None and x.kernel.backend == "cpp")
    assert cpp.bytes_per_launch == 64 * 256 * 4 * 2  # relu and *2 in place on the product: read and written
    assert cpp.flops_per_launch == 0 and "C++ source" in cpp.how
    assert r.profile.roofline is not None and not r.profile.roofline.peak_known
    assert "no verdicts: the peak of cpu" in str(r)
    assert r.profile.steady.busy is None and r.profile.roofline.host_gap_s is None  # no GPU busy-time phase on the CPU
    assert "host gap" not in roofline_line(r.profile.roofline)  # nothing promised
    blocks = kernels_tab(r)
    table = next(b for b in blocks if type(b).__name__ == "Table")
    assert "GB/s" in table.columns and "verdict" in table.columns
    fig = next(b for b in blocks if type(b).__name__ == "Figure" and b.title.startswith("Roofline"))
    assert fig.build().axes[0].get_xscale() == "log"
    assert CompileReport.from_dict(r.to_dict()) == r
    assert "Roofline (--profile-kernels)" in render_html(r)


def test_roofline_of_recorded_h100_runs():
    """Reports --profile-kernels wrote on the H100 (torch 2.11; benchmarks/roofline_truth.py), replayed:
    a ResNet-18 training step, a tiny bf16 Llama, an fp16 MLP under max-autotune (Triton templates won)."""
    import gzip
    from pathlib import Path

    from ipycompile.views.html import render_html

    data = Path(__file__).parent / "data" / "gpu-h100"
    for name in ("resnet", "llama", "mlp"):
        r = CompileReport.from_json(gzip.open(data / f"roofline_{name}.json.gz", "rt").read())
        roof = roofline(r)
        assert roof.peak.name == "H100 SXM"
        rows = [x for x in roof.rows if x.time.kernel]
        assert rows and all(x.bytes_per_launch for x in rows if x.time.name.startswith("triton_"))
        assert {x.verdict for x in rows} <= {"memory-bound", "compute-bound", "latency-bound"}
        s = roof.shares
        parts = s.near_roof_s + s.memory_far_s + s.compute_far_s + s.latency_s + s.unknown_s
        assert parts == pytest.approx(s.busy_s)
        assert "roofline: of " in str(r) and "Roofline (--profile-kernels)" in render_html(r)
        if name == "mlp":  # the two matmul templates: 2*M*N*K from their operands' shapes
            tem = sorted(x.flops_per_launch for x in rows if x.kernel.kind == "template")
            assert tem == [2 * 8192 * 1024 * 4096] * 2


@pytest.fixture(scope="module")
def cpp_bmm():
    """max-autotune on the CPU with only the C++ GEMM backend: a batched matmul becomes
    Inductor's C++ GEMM template (CppBmmTemplate: a micro_gemm per batch)."""
    a, b = torch.randn(4, 64, 128), torch.randn(4, 128, 256)
    return ipycompile.run_cell("torch.bmm(a, b)", {"a": a, "b": b, "torch": torch}, mode="max-autotune",
                               options={"max_autotune_gemm_backends": "CPP"}, profile_kernels=True, fresh=True,
                               runs=3, record=False)


@pytest.mark.slow
def test_cpp_gemm_template_costs_2mnk_and_its_matrices_from_its_sizes(cpp_bmm):
    from ipycompile.analysis.kernel_costs import cpp_template_cost

    r = cpp_bmm.report
    (tem,) = [k for k in r.kernels if k.backend == "cpp" and k.kind == "template"]
    assert "micro_gemm" in tem.source
    row = next(x for x in roofline(r).rows if x.kernel is tem)
    # timed under the template's own record-function (graph_N_gemm_m64n256k128_kernel), found in its source
    assert row.time.kernel == tem.name and row.time.calls > 0
    # a launch is one batch's GEMM: its record-function is in the per-batch GEMM
    assert row.flops_per_launch == 2 * 64 * 256 * 128
    assert row.bytes_per_launch == (64 * 128 + 128 * 256 + 64 * 256) * 4 and row.dtype == "float32"
    assert "C++ GEMM template's sizes (B=4 M=64 N=256 K=128)" in row.how and "one batch's GEMM" in row.how
    assert row.bytes_s > 0 and row.verdict == ""  # a CPU: no peak, no verdict
    # the same source without the per-batch record-function: one launch is the whole batch
    whole = cpp_template_cost(with_code(Kernel(tem.name, "cpp", "template", source=tem.source.replace(
        "RAIIAtenRecordFunctionHandle", "NoRecordFunction"))))
    assert whole.flops == 4 * 2 * 64 * 256 * 128 and whole.bytes == 4 * (64 * 128 + 128 * 256 + 64 * 256) * 4


@pytest.mark.slow
def test_cpp_gemm_template_of_a_frozen_linear():
    """The unbatched template (CppGemmTemplate) needs a constant weight: an nn.Linear under
    freezing, in inference. Freezing goes in torch's global config: Dynamo decides at trace time
    from it (``torch._dynamo.utils.is_parameter_freezing``) whether parameters enter the graph as
    constants, and ``torch.compile(options={"freezing": True})`` reaches only Inductor."""
    lin, x = torch.nn.Linear(128, 256, bias=False).eval(), torch.randn(64, 128)
    with torch.no_grad(), torch._inductor.config.patch(freezing=True):
        run = ipycompile.run_cell("lin(x)", {"lin": lin, "x": x}, mode="max-autotune",
                                  options={"max_autotune_gemm_backends": "CPP"}, profile_kernels=True, fresh=True,
                                  runs=3, record=False)
    (tem,) = [k for k in run.report.kernels if k.backend == "cpp" and k.kind == "template"]
    row = next(x for x in roofline(run.report).rows if x.kernel is tem)
    assert row.time.kernel == tem.name and row.time.calls > 0
    assert row.flops_per_launch == 2 * 64 * 256 * 128  # one launch: the whole product
    assert row.bytes_per_launch == (64 * 128 + 128 * 256 + 64 * 256) * 4
    assert "C++ GEMM template's sizes (M=64 N=256 K=128)" in row.how and "batch" not in row.how


@pytest.mark.slow
def test_cpp_kernel_with_dynamic_shapes_is_not_estimated_and_says_why():
    run = ipycompile.run_cell("(a.sin() * 2).sum(1)", {"a": torch.randn(64, 128), "torch": torch}, dynamic=True,
                              profile_kernels=True, fresh=True, runs=3, record=False)
    roof = roofline(run.report)
    (row,) = [x for x in roof.rows if x.kernel is not None and x.kernel.backend == "cpp"]
    assert "ks0" in row.kernel.source and row.time.calls > 0
    assert row.bytes_per_launch is None and row.how == "not estimated: dynamic shapes (loop bounds are symbols)"
    assert roof.shares.unknown_s > 0


def test_cuda_graph_replays_are_estimated_from_the_wrapper_codes_shapes():
    """Under CUDA graphs (mode max-autotune) the profiler records no shapes for replayed kernels: the
    max-autotune MLP's template GEMMs (recorded on the H100) are estimated from the arguments Inductor's
    wrapper passes them, with 2*M*N*K of the sizes their source declares, and say so."""
    from tracefile import gpu_records

    from ipycompile import build_report
    from ipycompile.analysis.roofline import FROM_WRAPPER

    r = build_report(gpu_records("max_autotune"))
    templates = [k for k in r.kernels if k.kind == "template"]
    times = [KernelTime(k.name, k.name, k.compile_id, k.graph_stage, total_s=30e-6, calls=1) for k in templates]
    r.profile = Profile(settings=RunSettings(device="NVIDIA H100 80GB HBM3"), kernels=KernelTimes(times, "cuda", 1))
    rows = {x.time.name: x for x in roofline(r).rows}
    first = rows["triton_tem_fused_addmm_gelu_t_0"]
    assert first.flops_per_launch == 2 * 512 * 4096 * 1024 and first.dtype == "float16"
    assert first.bytes_per_launch == 2 * (4096 + 512 * 1024 + 4096 * 1024 + 512 * 4096)
    assert FROM_WRAPPER in first.how and first.verdict in ("compute-bound", "memory-bound", "latency-bound")
    assert rows["triton_tem_fused_addmm_gelu_t_1"].flops_per_launch == 2 * 512 * 1024 * 4096
    assert roofline(r).shares.unknown_s == 0
    # with the profiler's shapes the same launch costs the same, and the shapes it recorded win
    recorded = [KernelLaunch(first.kernel.name, l.shapes, ["c10::Half"] * 4 + ["Scalar"] * 3, l.concrete, 5)
                for l in first.kernel.static_launches]
    times[0].launches = recorded
    again = {x.time.name: x for x in roofline(r).rows}["triton_tem_fused_addmm_gelu_t_0"]
    assert (again.bytes_per_launch, again.flops_per_launch) == (first.bytes_per_launch, first.flops_per_launch)
    assert FROM_WRAPPER not in again.how


@pytest.mark.parametrize("workload, flop_counter", [("mlp", 137438953472.0), ("llama", 81604411392.0)])
def test_cuda_graph_workloads_recorded_on_the_h100_cost_what_the_flop_counter_counts(workload, flop_counter):
    """max-autotune with CUDA graphs on the H100 (torch 2.11; benchmarks/roofline_truth.py's mlp_cg and
    llama_cg): the run's own trace and its profiler events, replayed here. Every replayed kernel is
    attributed (Triton by name; cuBLAS and cuDNN to their compile's one extern kernel of their family), its
    bytes and FLOPs come from the wrapper code's launch shapes, their FLOPs per call equal FlopCounterMode's
    count of the eager cell (measured in that run), and the time left over is the graph's input copies."""
    import gzip
    import json

    from tracefile import DATA, read_records

    from ipycompile import build_report
    from ipycompile.report.model import OTHER_CAUSES, OTHER_DEVICE_TIME
    from ipycompile.run.kernel_times import ProfiledEvent, attribute, profiled_call_count

    r = build_report(read_records(DATA / "gpu-h100" / f"cudagraphs_{workload}.log.gz"))
    with gzip.open(DATA / "gpu-h100" / f"cudagraphs_{workload}_events.json.gz", "rt") as f:
        events = [ProfiledEvent(**{**e, "ops": tuple(e["ops"]), "inputs": None}) for e in json.load(f)]
    assert not any(e.inputs for e in events if e.on_device)  # replayed: the profiler recorded no shapes
    times = attribute(events, r.kernels, device=True)
    calls = profiled_call_count(events)
    r.profile = Profile(settings=RunSettings(device="NVIDIA H100 80GB HBM3"), kernels=KernelTimes(times, "cuda", calls))
    roof = roofline(r)
    flops = sum((x.flops_per_launch or 0) * x.time.calls / calls for x in roof.rows)
    assert flops == pytest.approx(flop_counter, rel=1e-6)
    other = next(t for t in times if t.name == OTHER_DEVICE_TIME)
    assert set(other.parts) == {OTHER_CAUSES["copies"]}
    assert other.share < 0.1 and roof.shares.unknown_s == pytest.approx(other.per_call_s)
    library = [t for t in times if t.kernel.startswith(("extern_kernels.", "aten."))]
    assert library and all(t.calls > 0 for t in library)
