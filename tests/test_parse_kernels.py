"""Kernels from Inductor's output code: real H100 traces (torch 2.11) and a real CPU compile's recorded log."""

from __future__ import annotations

import pytest
import recorded
from tracefile import gpu_records, read_records

from ipycompile.capture.parse.kernels import ops_from_kernel_name, parse_output_code
from ipycompile.report.model import KERNEL_BACKENDS, KERNEL_KINDS, CompileId, Kernel

WORKLOADS = ("quickstart", "max_autotune", "reduce_overhead")


def _gpu_kernels(workload: str) -> list[Kernel]:
    kernels = []
    for meta, payload in gpu_records(workload):
        if "inductor_output_code" in meta:
            cid = CompileId(meta["frame_id"], meta["frame_compile_id"])
            kernels += parse_output_code(payload, cid, "stage")
    return kernels


@pytest.fixture(scope="module")
def gpu() -> dict[str, list[Kernel]]:
    return {workload: _gpu_kernels(workload) for workload in WORKLOADS}


def _one(kernels: list[Kernel], name: str) -> Kernel:
    (kernel,) = [k for k in kernels if k.name == name]
    return kernel


def test_gpu_traces_have_every_kind_with_its_aten_ops(gpu):
    every = [k for kernels in gpu.values() for k in kernels]
    assert {k.kind for k in every} == {"pointwise", "reduction", "persistent_reduction", "template", "extern"}
    assert all(k.backend in KERNEL_BACKENDS and k.kind in KERNEL_KINDS for k in every)

    quick = gpu["quickstart"]
    gelu = _one(quick[:4], "triton_poi_fused_gelu_0")  # the first forward graph
    assert (gelu.kind, gelu.aten_ops, gelu.source_nodes) == ("pointwise", ["aten.gelu"], ["h"])
    mean = _one(quick[:4], "triton_red_fused_mean_1")
    assert (mean.kind, mean.aten_ops) == ("reduction", ["aten.mean"])
    gt_mean = _one(quick[:4], "triton_per_fused_gt_mean_2")
    assert (gt_mean.kind, gt_mean.aten_ops) == ("persistent_reduction", ["aten.mean", "aten.gt"])
    layer_norm = next(k for k in quick if k.name.startswith("triton_per_fused_add_addmm_native_layer_norm"))
    assert layer_norm.aten_ops == [
        "aten.addmm", "aten.add", "aten.native_layer_norm", "aten.native_layer_norm_backward"
    ]
    assert "" not in layer_norm.source_nodes  # torch writes "[, add, layer_norm, div]"

    templates = [k for k in gpu["max_autotune"] if k.kind == "template"]
    assert [k.name for k in templates] == ["triton_tem_fused_addmm_gelu_t_0", "triton_tem_fused_addmm_gelu_t_1"]
    assert templates[0].aten_ops == ["aten.t", "aten.addmm", "aten.gelu"]
    assert templates[0].source_nodes == ["input_1", "input_2"]
    assert "tl.dot(" in templates[0].source


def test_gpu_extern_kernels_and_backward_graphs(gpu):
    quick = gpu["quickstart"]
    addmm = next(k for k in quick if k.name == "extern_kernels.addmm")
    assert (addmm.backend, addmm.kind, addmm.launches) == ("extern", "extern", 1)
    assert addmm.aten_ops == ["aten.t", "aten.addmm"] and addmm.source_nodes == ["linear"]
    assert addmm.source.startswith("extern_kernels.addmm(primals_2, ")

    backward = _gpu_kernels_of_graph("quickstart", "# AOT ID: ['1_backward']")
    mm = _one(backward, "extern_kernels.mm")
    assert mm.launches == 2 and mm.aten_ops == ["aten.t", "aten.mm"]
    assert mm.source_nodes == ["linear", "permute_1", "mm", "permute_2", "permute_4"]
    assert len(mm.source.splitlines()) == 2
    ln_bwd = _one(backward, "triton_per_fused_native_layer_norm_backward_0")
    assert ln_bwd.aten_ops == ["aten.native_layer_norm_backward"]
    assert ln_bwd.source_nodes[:3] == ["mul_4", "mul_5", "sum_1"]


def _gpu_kernels_of_graph(workload: str, marker: str) -> list[Kernel]:
    (payload,) = [p for m, p in gpu_records(workload) if "inductor_output_code" in m and marker in p]
    return parse_output_code(payload)


def test_gpu_triton_sources_launches_and_ids(gpu):
    for workload, kernels in gpu.items():
        assert kernels, workload
        for k in kernels:
            assert k.launches >= 1, k.name
            assert k.compile_id is not None and k.graph_stage == "stage"
            if k.backend == "triton":
                assert "@triton.jit" in k.source and f"def {k.name}(" in k.source, k.name
    # reduce-overhead launches its kernels from cudagraph partition functions, not from call()
    relu_sum = _one(gpu["reduce_overhead"], "triton_per_fused_relu_sum_0")
    assert (relu_sum.launches, relu_sum.aten_ops) == (1, ["aten.relu", "aten.sum"])
    assert _one(gpu["reduce_overhead"], "extern_kernels.mm").aten_ops == ["aten.mm"]


@pytest.mark.parametrize(
    "name, ops",
    [
        ("cpp_fused_mul_sin_0", ["aten.mul", "aten.sin"]),
        ("triton_poi_fused__to_copy_add_mul_0", ["aten._to_copy", "aten.add", "aten.mul"]),
        ("triton_poi_fused_add_copy__mul_sin_0", ["aten.add", "aten.copy_", "aten.mul", "aten.sin"]),
        ("triton_per_fused_gelu_gelu_backward_sum_0", ["aten.gelu", "aten.gelu_backward", "aten.sum"]),
        (
            "triton_per_fused_add_addmm_native_layer_norm_native_layer_norm_backward_1",
            ["aten.add", "aten.addmm", "aten.native_layer_norm", "aten.native_layer_norm_backward"],
        ),
        (
            "cpp_fused_add_cat_constant_pad_nd_permute_slice_stack_sum_view_16",
            ["aten.add", "aten.cat", "aten.constant_pad_nd", "aten.permute", "aten.slice", "aten.stack", "aten.sum",
             "aten.view"],
        ),
        (
            "cpp_fused_add_clone_copy__select_zeros_13",
            ["aten.add", "aten.clone", "aten.copy_", "aten.select", "aten.zeros"],
        ),
        ("cpp_fused_gt_lift_fresh_mul_5", ["aten.gt", "aten.lift_fresh", "aten.mul"]),
        ("triton_red_fused__log_softmax_convert_element_type_2", ["aten._log_softmax", "prims.convert_element_type"]),
        ("triton_poi_fused__softmax__to_copy_3", ["aten._softmax", "aten._to_copy"]),
        ("cpp_fused_0", []),
        ("extern_kernels.mm", []),
    ],
)
def test_ops_from_descriptive_kernel_names(name, ops):
    assert ops_from_kernel_name(name) == ops


@pytest.fixture(scope="module")
def cpu_kernels() -> list[Kernel]:
    """One real Inductor compile on CPU, with a data-dependent ``torch.cond``: its output code as the recorded
    log keeps it (``tests/inputs``, recipe ``kernels-cpu-cond``)."""
    (payload,) = [p for m, p in read_records(recorded.log_path("kernels-cpu-cond")) if "inductor_output_code" in m]
    return parse_output_code(payload, CompileId(0, 0), "inference")


def test_cpu_compile_gives_cpp_kernels_with_fused_ops(cpu_kernels):
    cpp = [k for k in cpu_kernels if k.backend == "cpp"]
    assert cpp and all('extern "C"' in k.source and k.launches == 1 for k in cpp)
    assert all(k.compile_id == CompileId(0, 0) and k.graph_stage == "inference" for k in cpu_kernels)

    (relu,) = [k for k in cpp if "aten.relu" in k.aten_ops]
    assert relu.name.startswith("cpp_fused_") and "aten.sin" in relu.aten_ops
    summed = [k for k in cpp if "aten.sum" in k.aten_ops]
    assert summed and all(k.kind == "reduction" and "tmp_acc" in k.source for k in summed)

    (extern,) = [k for k in cpu_kernels if k.backend == "extern"]
    assert extern.name in ("extern_kernels.mm", "extern_kernels.addmm") and extern.kind == "extern"
    assert extern.launches == 1 and extern.source.startswith(extern.name + "(")
    assert f"aten.{extern.name.split('.')[1]}" in extern.aten_ops
    fused = {op for k in cpp for op in k.aten_ops}
    assert not fused & set(extern.aten_ops), extern.aten_ops  # the C++ kernels' ops are not the extern call's


def test_cpu_cond_subgraph_kernels_are_found(cpu_kernels):
    true_branch = [k for k in cpu_kernels if "aten.cos" in k.aten_ops]
    false_branch = [k for k in cpu_kernels if "aten.mul" in k.aten_ops and k.backend == "cpp"]
    assert len(true_branch) == 1 and len(false_branch) == 1
    for k in true_branch + false_branch:
        assert (k.kind, k.launches) == ("pointwise", 1)


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "garbage", "def call(args):\n    return (", "x = async_compile.triton('x', '''",
     "# Original ATen: [aten.\n", "\x00\x01'''\"\"\"((("],
)
def test_garbage_gives_nothing_or_what_it_names_without_raising(text):
    kernels = parse_output_code(text)
    assert all(isinstance(k, Kernel) for k in kernels)
    if "async_compile" not in text:
        assert kernels == []


def test_truncated_output_code_keeps_the_kernels_before_the_cut():
    payload = next(p for m, p in gpu_records("quickstart") if "inductor_output_code" in m)
    cut = payload.index("triton_red_fused_mean_1 = ")
    assert [k.name for k in parse_output_code(payload[:cut])] == ["triton_poi_fused_gelu_0"]
    for end in range(0, len(payload), 97):
        parse_output_code(payload[:end])
        parse_output_code(payload[end:])


# -- launches read from the wrapper code (what costs a CUDA-graph replay's kernels) ----------
def test_gpu_launch_shapes_from_the_wrapper_code(gpu):
    from ipycompile.analysis.kernel_costs import launch_cost, template_mnk

    # max-autotune's fp16 MLP (batch 512): each template launch's arguments as record_shapes gives them
    tem0, tem1 = [k for k in gpu["max_autotune"] if k.kind == "template"]
    (launch,) = tem0.static_launches
    assert launch.op == tem0.name and launch.count == 1
    assert launch.shapes == [[4096], [512, 1024], [4096, 1024], [512, 4096], [], [], []]
    assert launch.dtypes == ["float16"] * 4 + ["Scalar"] * 3 and launch.concrete == [None] * 4 + [256, 1, 1]
    assert template_mnk(tem0) == (512, 4096, 1024) and template_mnk(tem1) == (512, 1024, 4096)
    cost = launch_cost(launch, tem0)
    assert cost.flops == 2 * 512 * 4096 * 1024 and cost.dtype == "float16"
    assert cost.bytes == 2 * (4096 + 512 * 1024 + 4096 * 1024 + 512 * 4096)
    # reduce-overhead: the launches sit in a CUDA-graph partition function; an extern mm writes into out=
    mm = next(k for k in gpu["reduce_overhead"] if k.name == "extern_kernels.mm")
    (launch,) = mm.static_launches
    assert (launch.op, launch.shapes, launch.dtypes) == ("aten::mm", [[128, 128]] * 3, ["float32"] * 3)
    assert launch_cost(launch).flops == 2 * 128 ** 3
    # the quickstart: a view of a graph input (reinterpret_tensor) keeps the input's dtype
    quick = gpu["quickstart"]
    first_mm = next(k for k in quick if k.name == "extern_kernels.mm")
    assert first_mm.static_launches[0].shapes == [[32, 512], [512, 256], [32, 256]]
    # its dynamic-shape recompile: sizes are symbols, so those launches are left out, never guessed
    dynamic = [k for k in quick if any("s" in str(s) for s in k.source.split("xnumel")[:1]) and not k.static_launches]
    assert dynamic, "the recompiled graph's kernels launch with symbolic sizes"
    assert all(all(isinstance(d, int) for s in l.shapes for d in s) for k in quick for l in k.static_launches)


def test_static_launches_round_trip_in_json(gpu):
    from ipycompile.report import CompileReport

    r = CompileReport(kernels=gpu["max_autotune"])
    back = CompileReport.from_json(r.to_json())
    assert [k.static_launches for k in back.kernels] == [k.static_launches for k in r.kernels]
