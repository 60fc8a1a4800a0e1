"""Reports built from real H100 TORCH_TRACE logs (torch 2.11, Triton): GPU views without a GPU."""

from __future__ import annotations

import functools

import pytest

from ipycompile import CompileReport, build_report
from tracefile import gpu_records


@functools.cache
def gpu_report(workload: str) -> CompileReport:
    return build_report(gpu_records(workload))


def test_triton_kernels_of_each_kind_with_their_aten_ops():
    kernels = [k for w in ("quickstart", "max_autotune", "reduce_overhead") for k in gpu_report(w).kernels]
    by_kind = {}
    for k in kernels:
        by_kind.setdefault((k.backend, k.kind), []).append(k)
    assert ("triton", "pointwise") in by_kind
    assert ("triton", "reduction") in by_kind or ("triton", "persistent_reduction") in by_kind
    assert ("triton", "template") in by_kind
    assert ("extern", "extern") in by_kind
    for k in kernels:
        if k.backend == "triton":
            assert "@triton.jit" in k.source and k.aten_ops, k.name
    templates = by_kind[("triton", "template")]
    assert all(k.name.startswith("triton_tem_") and "aten.addmm" in k.aten_ops for k in templates)
    assert any(k.name.startswith("triton_per_") or k.name.startswith("triton_red_") for k in kernels)
    # Triton compile time and the chosen config, from triton_kernel_info
    assert all(k.info.get("compile_time_us", 0) > 0 for k in templates)


def test_training_log_has_aot_forward_backward_graphs_breaks_and_recompiles():
    r = gpu_report("quickstart")
    stages = {g.stage for g in r.graphs}
    assert {"dynamo", "aot_forward", "aot_backward", "aot_joint"} <= stages
    assert {k.graph_stage for k in r.kernels} >= {"forward", "backward"}
    (gb,) = r.graph_breaks
    assert gb.reason == "Data-dependent branching" and gb.gb_code == "GB0170"
    assert (gb.frame.function, gb.frame.lineno) == ("forward", 17) and gb.count == 2
    reasons = {why for rc in r.recompiles for why in rc.reasons}
    assert "tensor 'x' size mismatch at index 0. expected 32, actual 64" in reasons
    assert "tensor 'h' size mismatch at index 0. expected 32, actual 64" in reasons
    assert all(rc.function for rc in r.recompiles)


def test_max_autotune_log_shows_autotuning_time():
    r = gpu_report("max_autotune")
    assert r.compile_time.phase("Autotuning") > 1.0
    assert r.compile_time.total_s == pytest.approx(r.compiles[0].entire_frame_compile_s, rel=0.2)


def test_reduce_overhead_log_has_the_item_break():
    r = gpu_report("reduce_overhead")
    assert [b.gb_code for b in r.graph_breaks] == ["GB0124"]
    assert r.graph_breaks[0].frame.function == "cpu_scalar"


@pytest.mark.parametrize("workload", ["quickstart", "max_autotune", "reduce_overhead"])
def test_gpu_logs_parse_without_errors(workload):
    r = gpu_report(workload)
    assert not r.stats.parse_errors, r.stats.errors
    assert not r.stats.unknown, r.stats.unknown
    assert r.compiles and all(c.function for c in r.compiles)
    assert CompileReport.from_dict(r.to_dict()) == r
