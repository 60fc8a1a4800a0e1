"""Per-kernel time (``profile_kernels`` / ``%%compile --profile-kernels``): a real CPU
Inductor compile profiled with torch.profiler, the attribution of its events, the
model's JSON round trip, the Kernels table; GPU attribution on an H100 trace's kernels,
and for real where CUDA is available."""

from __future__ import annotations

import functools
import json

import pytest
import torch

import ipycompile
from ipycompile import CompileReport, build_report
from ipycompile.run.kernel_times import (
    CALL_MARKER,
    KERNEL_PROFILE_OPTION,
    ProfiledEvent,
    attribute,
    events_from_profiler,
    extern_op,
    profile_calls,
)
from ipycompile.report import OTHER_CPU_TIME, OTHER_DEVICE_TIME, Kernel, KernelTime
from ipycompile.run.settings import make_settings
from ipycompile.views import html as html_view
from ipycompile.views.viewmodel import Table, view_model
from tracefile import gpu_records

# a matmul (an extern kernel) and pointwise ops and a reduction (one C++ kernel)
SOURCE = "y = x @ w\n(torch.relu(y) * 2 + 1).sum(dim=1).sin()"
RUNS = 3


def namespace(device: str = "cpu") -> dict:
    torch.manual_seed(0)
    return {"torch": torch, "x": torch.randn(64, 128, device=device), "w": torch.randn(128, 32, device=device)}


@pytest.fixture(scope="module")
def ns() -> dict:
    return namespace()


@pytest.fixture(scope="module")
def run(ns):
    """One real Inductor compile on CPU, run with profile_kernels=True (shared: compiling costs seconds)."""
    return ipycompile.run_cell(SOURCE, ns, profile_kernels=True, runs=RUNS, record=False)


def kernels_table(report: CompileReport) -> Table:
    return next(b for b in view_model(report).tab("kernels").blocks() if isinstance(b, Table))


# -- a real CPU run -------------------------------------------------------------------
def test_cpp_kernels_and_the_extern_mm_get_cpu_time(run):
    r, p = run.report, run.report.profile
    assert p.kernels.device == "cpu" and p.kernels.calls == 5
    cpp = [k for k in r.kernels if k.backend == "cpp"]
    (mm,) = [k for k in r.kernels if k.name == "extern_kernels.mm"]
    assert cpp
    by_kernel = {(t.kernel, t.compile_id): t for t in p.kernels.times if t.kernel}
    for k in [*cpp, mm]:
        t = by_kernel[(k.name, k.compile_id)]
        assert t.name == k.name and t.graph_stage == k.graph_stage
        assert t.total_s > 0 and t.calls == 5 and t.share > 0
        assert t.per_call_s == pytest.approx(t.total_s / 5)
    (other,) = [t for t in p.kernels.times if t.name == OTHER_CPU_TIME]
    assert other.kernel == "" and other.calls == 0 and other.total_s > 0
    assert sum(t.share for t in p.kernels.times) <= 1 + 1e-6
    assert [t.total_s for t in p.kernels.times] == sorted((t.total_s for t in p.kernels.times), reverse=True)


def test_timed_runs_are_the_timed_runs_and_the_option_is_in_the_settings(run):
    p = run.report.profile
    assert p.steady.runs == RUNS and len(p.steady.run_times_s) == RUNS  # the profiled calls are not timed runs
    assert p.steady.run_median_s == sorted(p.steady.run_times_s)[RUNS // 2] and p.first_call.compile_s > 0
    assert p.settings.options == {KERNEL_PROFILE_OPTION: True}
    assert f"{KERNEL_PROFILE_OPTION}=True" in str(run.report)  # the settings line
    assert any(KERNEL_PROFILE_OPTION in n and "record-function" in n for n in p.notes)
    # the option is part of the settings key: a cell compiled without it is not reused
    assert make_settings(options={KERNEL_PROFILE_OPTION: True}).key() != make_settings().key()


def test_json_round_trip_keeps_kernel_times(run):
    r = run.report
    text = json.dumps(r.to_dict())
    back = CompileReport.from_dict(json.loads(text))
    assert back == r
    assert back.profile.kernels.times == r.profile.kernels.times and all(
        isinstance(t, KernelTime) for t in back.profile.kernels.times)
    assert json.dumps(back.to_dict()) == text


def test_attribution_of_real_profiler_events(run):
    events = profile_calls(run.fn, 2, cuda=False)
    assert sum(1 for e in events if e.name == CALL_MARKER) == 2
    cpp = [e for e in events if e.name.startswith("graph_") and "cpp_fused" in e.name]
    assert cpp and all(CALL_MARKER in e.ops and any(o.startswith("Torch-Compiled Region: ") for o in e.ops)
                       for e in cpp)
    times = attribute(events, run.report.kernels, device=False)
    assert {t.kernel for t in times} == {k.name for k in run.report.kernels} | {""}
    assert all(t.per_call_s == pytest.approx(t.total_s / 2) for t in times)
    # compiled code reused (a report of no kernels): C++ kernels keep their names, the matmul is other time
    reused = attribute(events, [], device=False)
    names = {t.name for t in reused}
    assert {k.name for k in run.report.kernels if k.backend == "cpp"} < names and "extern_kernels.mm" not in names
    assert all(t.kernel == "" for t in reused) and sum(t.share for t in reused) == pytest.approx(1)
    assert attribute([], run.report.kernels, device=False) == []


def test_rerun_of_the_unchanged_cell_reuses_code_and_still_times_kernels(run, ns):
    again = ipycompile.run_cell(SOURCE, ns, profile_kernels=True, runs=1, record=False)
    r, p = again.report, again.report.profile
    # nothing compiled: the report holds the diagnosis of the run that compiled the code, its kernels too
    assert p.reused_compiled_code and r.reused_from and r.kernels == run.report.kernels
    names = {t.name for t in p.kernels.times}
    assert {k.name for k in run.report.kernels if k.backend == "cpp"} < names and OTHER_CPU_TIME in names
    assert all(t.kernel == t.name for t in p.kernels.times if t.name in {k.name for k in r.kernels})  # charged to them
    t = kernels_table(r)  # the Kernels tab lists what the profiler saw
    assert {row[0] for row in t.rows} == {k.name for k in r.kernels} | {OTHER_CPU_TIME} and t.columns[4] == "CPU time (us/call)"


# -- the views ----------------------------------------------------------------------
def test_kernels_table_has_time_and_share_columns_sorted_by_time(run):
    t = kernels_table(run.report)
    assert t.columns[4:6] == ["CPU time (us/call)", "share %"]
    times = [row[4] for row in t.rows]
    assert all(isinstance(v, float) for v in times) and times == sorted(times, reverse=True)
    names = [row[0] for row in t.rows]
    assert OTHER_CPU_TIME in names and set(names) == {k.name for k in run.report.kernels} | {OTHER_CPU_TIME}
    assert len(t.details) == len(t.rows)
    page = html_view.render_html(run.report)
    assert "<th>CPU time (us/call)</th>" in page and "<th>share %</th>" in page and OTHER_CPU_TIME in page
    profile_rows = next(b for b in view_model(run.report).tab("profile").blocks() if isinstance(b, Table)).rows
    assert any(row[0] == "kernel profile" and "5 calls" in row[1] for row in profile_rows)


def test_kernels_table_without_kernel_times_is_as_before(run, tmp_path):
    r = CompileReport.from_dict(run.report.to_dict())
    r.profile.kernels.times = []
    t = kernels_table(r)
    assert t.columns == ["kernel", "backend", "kind", "fused ATen ops", "launches", "compile ms", "compile", "stage",
                         "user line"]
    assert [row[0] for row in t.rows] == [k.name for k in r.kernels]
    with pytest.warns(UserWarning, match="contains your model's code"):
        path = run.report.to_html(str(tmp_path / "report.html"))
    page = open(path, encoding="utf-8").read()
    assert "CPU time (us/call)" in page and "share %" in page
    assert "CPU time (us/call)" not in html_view.render_html(r)


# -- GPU attribution, on the kernels of a real H100 trace ---------------------------------
@functools.cache
def h100_report() -> CompileReport:
    return build_report(gpu_records("quickstart"))


def graph(*ops: str) -> tuple[str, ...]:
    return ("## Call CompiledFxGraph fabc ##", *ops)


def test_gpu_device_kernels_are_charged_by_name_then_by_their_extern_op():
    r = h100_report()
    fwd = ("CompiledFunction", "Torch-Compiled Region: 0/1", CALL_MARKER)
    bwd = ("CompiledFunctionBackward", "autograd::engine::evaluate_function: CompiledFunctionBackward")
    events = [
        ProfiledEvent(CALL_MARKER, 500.0), ProfiledEvent(CALL_MARKER, 480.0),
        # Triton kernels, launched by their own record-function; two compiles hold this name
        *[ProfiledEvent("triton_poi_fused_gelu_0", 2.0, True, ("triton_poi_fused_gelu_0", *graph(*fwd)), i) for i in (1, 2)],
        # cuBLAS under the extern call's op: one launch, several device kernels (as the profiler shows addmm)
        *[ProfiledEvent(name, us, True, ("aten::addmm", *graph(*fwd)), 3)
          for name, us in (("Memset (Device)", 1.0), ("void sgemm_largek_lds64<true, false>", 14.0),
                           ("void cublasLt::epilogue::impl::globalKernel<8, 32, float>", 2.0))],
        # the backward runs on autograd's thread: no compiled region around it, its stage tells
        ProfiledEvent("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt>", 5.0, True, ("aten::mm", *graph(*bwd)), 4),
        # an Inductor kernel the report does not hold (compiled code reused)
        ProfiledEvent("triton_red_fused_sum_9", 3.0, True, ("triton_red_fused_sum_9", *graph(*fwd)), 5),
        # eager work, a kernel the profiler linked to no op, a matmul outside compiled code, cuBLAS in a CUDA graph
        ProfiledEvent("void at::native::reduce_kernel<512, 1>", 8.0, True, ("aten::sum", CALL_MARKER), 6),
        ProfiledEvent("void at::native::vectorized_elementwise_kernel<4>", 1.0, True),
        ProfiledEvent("sm90_xmma_gemm_f32f32", 4.0, True, ("aten::mm", CALL_MARKER), 7),
        ProfiledEvent("sm80_xmma_gemm_f32f32", 4.0, True, graph("Torch-Compiled Region: 0/1", CALL_MARKER), 8),
    ]
    times = attribute(events, r.kernels, device=True)
    by = {t.name: t for t in times}
    gelu = by["triton_poi_fused_gelu_0"]
    assert (gelu.kernel, str(gelu.compile_id), gelu.calls, gelu.total_s) == ("triton_poi_fused_gelu_0", "0/1", 2, 4e-6)
    assert gelu.graph_stage == next(k.graph_stage for k in r.kernels if k.name == gelu.kernel and str(k.compile_id) == "0/1")
    assert "triton_poi_fused_gelu_0" in {k.name for k in r.kernels_for("0/0")}  # the region picked 0/1, not the first
    addmm = by["extern_kernels.addmm"]
    assert (addmm.kernel, str(addmm.compile_id), addmm.calls) == ("extern_kernels.addmm", "0/1", 1)
    assert addmm.total_s == pytest.approx(17e-6)
    mm = by["extern_kernels.mm"]
    assert mm.graph_stage == "backward" and mm.total_s == pytest.approx(5e-6) and mm.calls == 1
    lost = by["triton_red_fused_sum_9"]
    assert lost.kernel == "" and str(lost.compile_id) == "0/1" and lost.total_s == pytest.approx(3e-6)
    other = by[OTHER_DEVICE_TIME]
    assert other.kernel == "" and other.calls == 0 and other.total_s == pytest.approx(17e-6)
    total = sum(e.duration_us for e in events if e.on_device) / 1e6
    assert sum(t.total_s for t in times) == pytest.approx(total)
    assert sum(t.share for t in times) == pytest.approx(1) and by["extern_kernels.addmm"].share == pytest.approx(17e-6 / total)
    assert all(t.per_call_s == pytest.approx(t.total_s / 2) for t in times)
    assert times[0].name in ("extern_kernels.addmm", OTHER_DEVICE_TIME) and times[-1].total_s == min(t.total_s for t in times)
    # the view: device time, rows of every report kernel plus the entries no row holds
    rep = CompileReport.from_dict(r.to_dict())
    rep.profile = ipycompile.report.Profile(kernels=ipycompile.report.KernelTimes(times, "cuda", 2))
    t = kernels_table(rep)
    assert t.columns[4:6] == ["device time (us/call)", "share %"]
    assert len(t.rows) == len(r.kernels) + 2  # + triton_red_fused_sum_9 and the other device time
    assert t.rows[0][4] == pytest.approx(8.5) and [row[0] for row in t.rows][:2] in (
        ["extern_kernels.addmm", OTHER_DEVICE_TIME], [OTHER_DEVICE_TIME, "extern_kernels.addmm"])
    timed = [row for row in t.rows if row[4] != ""]
    assert len(timed) == 5 and all(row[4] == "" for row in t.rows[5:])


def test_extern_ops_as_the_profiler_names_them():
    kernels = {k.name: k for k in h100_report().kernels}
    assert extern_op(kernels["extern_kernels.mm"]) == "aten::mm"
    assert extern_op(kernels["extern_kernels.addmm"]) == "aten::addmm"
    # max-autotune's bias_addmm (an Inductor function around torch.addmm, as on the H100 in roofline_truth)
    assert extern_op(Kernel("extern_kernels.bias_addmm", "extern", "extern")) == "aten::addmm"
    assert extern_op(kernels["triton_poi_fused_gelu_0"]) == ""
    assert extern_op(Kernel("aten.index_put_.default", "extern", "extern")) == "aten::index_put_"


# -- %%compile --profile-kernels ------------------------------------------------------
def test_magic_profile_kernels(run, ip, shows_html):
    from IPython.utils.capture import capture_output

    ip.user_ns.update(namespace())
    with capture_output() as out:  # the same graph as the fixture's: the FX graph cache holds it
        res = ip.run_cell(f"%%compile --profile-kernels --runs 2\n{SOURCE}", store_history=True)
    assert res.error_in_exec is None, res.error_in_exec
    p = ipycompile.history()["report"].iloc[-1].profile
    assert p.settings.options == {KERNEL_PROFILE_OPTION: True} and p.steady.runs == 2
    assert p.kernels.device == "cpu" and any(t.kernel == "extern_kernels.mm" for t in p.kernels.times)
    (shown,) = out.outputs  # HTML, as a notebook frontend shows it (shows_html: the test shell is a terminal's)
    assert "CPU time (us/call)" in shown.data["text/html"]
    with pytest.raises(Exception, match="--profile-kernels: not with --observe"):
        ip.run_cell("%%compile --profile-kernels --observe\n1", store_history=False).raise_error()


# -- a real GPU run -------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_triton_and_extern_kernels_get_device_time():
    ns = namespace("cuda")
    run = ipycompile.run_cell(SOURCE, ns, profile_kernels=True, runs=RUNS, record=False)
    r, p = run.report, run.report.profile
    assert p.kernels.device == "cuda" and 1 <= p.kernels.calls <= 5
    assert p.steady.runs == RUNS and not any("record-function" in n for n in p.notes)
    triton = [k for k in r.kernels if k.backend == "triton"]
    (mm,) = [k for k in r.kernels if k.name == "extern_kernels.mm"]
    assert triton
    by_kernel = {(t.kernel, t.compile_id): t for t in p.kernels.times if t.kernel}
    for k in triton:
        t = by_kernel[(k.name, k.compile_id)]
        assert t.name == k.name and t.total_s > 0 and t.calls == p.kernels.calls
    t = by_kernel[(mm.name, mm.compile_id)]
    assert t.total_s > 0 and t.calls == p.kernels.calls  # cuBLAS kernels, launched by aten::mm
    assert sum(t.share for t in p.kernels.times) == pytest.approx(1)
    assert kernels_table(r).columns[4:6] == ["device time (us/call)", "share %"]
    # CUDA graphs: the replay launches every kernel; Triton's keep their names, cuBLAS's go to the one extern
    # matrix-product kernel of the compile (a10c7de: library kernels of a replay go to their family's extern kernel)
    graphs = ipycompile.run_cell(SOURCE, ns, mode="reduce-overhead", profile_kernels=True, runs=RUNS, record=False)
    times = graphs.report.profile.kernels.times
    named = {t.name for t in times if t.kernel}
    assert {k.name for k in graphs.report.kernels if k.backend == "triton"} <= named
    assert named <= {k.name for k in graphs.report.kernels}, named  # every time charged to a kernel of the report
    assert named - {k.name for k in graphs.report.kernels if k.backend == "triton"} <= {"extern_kernels.mm"}
    assert sum(t.share for t in times) == pytest.approx(1)
    # training: the backward's kernels run on autograd's thread, and are found by name and stage
    ns["lin"] = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)).cuda()
    train = ipycompile.run_cell("loss = lin(x).sum()\nloss.backward()", ns, profile_kernels=True, runs=2, record=False)
    times = train.report.profile.kernels.times
    stages = {t.graph_stage for t in times if t.kernel}
    assert {"forward", "backward"} <= stages, times
    assert sum(t.share for t in times) == pytest.approx(1)


def test_wrapper_launch_shapes_cost_what_the_profilers_shapes_cost(run):
    """The extern mm's arguments read from Inductor's wrapper code (what a CUDA-graph replay leaves
    the roofline) cost what the profiler's record_shapes of the same launch cost."""
    from ipycompile.analysis.kernel_costs import launch_cost

    (mm,) = [k for k in run.report.kernels if k.name == "extern_kernels.mm"]
    (static,) = mm.static_launches
    (timed,) = [t for t in run.report.profile.kernels.times if t.kernel == mm.name]
    (recorded,) = timed.launches
    assert static.op == recorded.op == "aten::mm" and static.shapes[:2] == recorded.shapes[:2] == [[64, 128], [128, 32]]
    a, b = launch_cost(static, mm), launch_cost(recorded, mm)
    assert (a.bytes, a.flops) == (b.bytes, b.flops) == ((64 * 128 + 128 * 32 + 64 * 32) * 4, 2 * 64 * 128 * 32)


def test_cuda_graph_replays_library_gemm_and_the_other_time_by_cause():
    """Kernels replayed from a CUDA graph hang off the graph-launch runtime call, not an op: a library GEMM
    there is the compile's one extern mm-family kernel; what stays unmatched is told by cause."""
    from ipycompile.report.model import OTHER_CAUSES

    r = h100_report()
    # compile 0/0's forward graph: one extern mm-family kernel (addmm; its backward has an mm)
    replay = ("cudaGraphLaunch", "CompiledFunction", "Torch-Compiled Region: 0/0", CALL_MARKER)
    events = [
        ProfiledEvent(CALL_MARKER, 100.0),
        ProfiledEvent("triton_poi_fused_gelu_0", 2.0, True, replay, 1),
        ProfiledEvent("sm90_xmma_gemm_f32f32_tn_n", 6.0, True, replay, 1),
        ProfiledEvent("void at::native::vectorized_elementwise_kernel<4, at::native::CopyFunctor>", 1.5, True,
                      ("aten::copy_", "Torch-Compiled Region: 0/0", CALL_MARKER), 2),
        ProfiledEvent("Memcpy DtoD (Device -> Device)", 0.5, True, ("cudaMemcpyAsync", CALL_MARKER), 3),
        ProfiledEvent("void at::native::reduce_kernel<512, 1>", 3.0, True, ("aten::sum", CALL_MARKER), 4),
        ProfiledEvent("void cudnn::some_kernel", 4.0, True, ("cudaGraphLaunch", "Torch-Compiled Region: 7/0"), 5),
    ]
    mm_family = {k.name for k in r.kernels if str(k.compile_id) == "0/0" and k.graph_stage == "forward"
                 and k.name.startswith("extern_kernels.")}
    assert mm_family == {"extern_kernels.addmm"}
    by = {t.name: t for t in attribute(events, r.kernels, device=True)}
    (gemm,) = [by[name] for name in mm_family]
    assert str(gemm.compile_id) == "0/0" and gemm.graph_stage == "forward"
    assert gemm.total_s == pytest.approx(6e-6) and gemm.calls == 1
    # the backward's replay in a compile with two extern mm-family names in one stage would not be guessed:
    # its kernel joins the other time, as the 7/0 event here (no report kernel at all)
    assert by["triton_poi_fused_gelu_0"].total_s == pytest.approx(2e-6)
    other = by[OTHER_DEVICE_TIME]
    assert other.total_s == pytest.approx(9e-6) and sum(other.parts.values()) == pytest.approx(other.total_s)
    assert other.parts == pytest.approx({OTHER_CAUSES["copies"]: 2e-6, OTHER_CAUSES["eager"]: 3e-6,
                                         OTHER_CAUSES["replay"]: 4e-6})
    # kept in the saved report
    back = CompileReport.from_json(CompileReport(profile=ipycompile.report.Profile(kernels=ipycompile.report.KernelTimes(list(by.values())))).to_json())
    assert next(t for t in back.profile.kernels.times if t.name == OTHER_DEVICE_TIME).parts == other.parts
