"""The run layer's phases (issue 21, item 5): each phase of ``measure`` fills its own record of the
profile (the first call, the steady state, the eager comparison, the kernel times) with its notes and
noise lines, checked here on a real CPU compile run as the user runs it (``ipycompile.run_cell``);
``measure`` assembles the ``Profile`` from the records of the phases that finished."""

from __future__ import annotations

import ast
import pathlib

import pytest
import torch

import ipycompile
from ipycompile.report import EagerComparison, FirstCall, KernelTimes, Memory, OutputCheck, PROFILE_FIELDS_V1, SteadyState
from ipycompile.run import pipeline
from ipycompile.run.options import RunOptions

RUN = pathlib.Path(ipycompile.__file__).parent / "run"
CELL = "y = torch.relu(x @ w).sum(dim=1)"


def _namespace() -> dict:
    g = torch.Generator().manual_seed(0)
    return {"torch": torch, "x": torch.randn(32, 64, generator=g), "w": torch.randn(64, 64, generator=g)}


@pytest.fixture(scope="module")
def measured():
    """One real compile (the eager backend: Dynamo, no Inductor), measured with every CPU phase: the
    first call, warm-up, run time and latency, the eager comparison and the kernel profile."""
    ns = _namespace()
    run = ipycompile.run_cell(CELL, ns, backend="eager", runs=12, warmup=2, compare_eager=True, profile_kernels=True,
                              record=False)
    return run, ns


def test_the_first_call_phase_fills_its_record(measured):
    run, ns = measured
    rec = run.report.profile.first_call
    assert isinstance(rec, FirstCall) and rec.compile_s > 0 and rec.compile_wall_s >= rec.compile_s
    assert rec.peak_host_bytes is None or rec.peak_host_bytes > 0
    assert torch.allclose(ns["y"], torch.relu(ns["x"] @ ns["w"]).sum(dim=1))  # the cell ran, its name bound


def test_the_timing_phases_fill_a_steady_state(measured):
    run, _ = measured
    s = run.report.profile.steady
    assert isinstance(s, SteadyState) and s.run_median_s > 0 and s.runs >= 6 and s.run_block_calls >= 1
    assert s.run_min_s <= s.run_median_s <= s.run_max_s and len(s.run_times_s) * s.run_block_calls == s.runs
    assert s.warmup >= 2 and s.timing_method.startswith("run time: median over")
    # the latency phase added its figures and its part of the method; no CUDA: no device time, no busy phase
    assert s.latency_median_s > 0 and len(s.latency_times_s) >= 3 and s.device_median_s is None and s.busy is None
    assert "; latency: " in s.timing_method
    assert s.recorded_in_timing == {} and s.run_dropped_blocks == 0  # nothing compiled while it was timed


def test_one_run_measures_no_latency():
    run = ipycompile.run_cell(CELL, _namespace(), backend="eager", runs=1, record=False)
    s = run.report.profile.steady
    assert s.latency_median_s is None and s.timing_method.endswith("not measured (--runs 1)"), s.timing_method


def test_compiles_during_the_timed_runs_are_counted_and_noted():
    """A cell whose input grows from its fourth call on (after the first call and two warm-up calls), not
    compiled dynamic: torch recompiles during the timed runs (up to its recompile limit). The steady
    state counts those compiles and the profile says that the blocks with them were dropped and re-run."""
    import itertools

    calls = itertools.count()
    pick = torch._dynamo.disable(lambda: torch.randn(4 + max(0, next(calls) - 3)))
    run = ipycompile.run_cell("y = pick().sin() * 2", {"torch": torch, "pick": pick}, backend="eager", runs=12,
                              warmup=2, dynamic=False, record=False)
    s = run.report.profile.steady
    assert s.recorded_in_timing.get("DYNAMO", 0) >= 1, s
    assert (f"torch compiled or recorded during the timed runs ({s.recorded_in_timing['DYNAMO']} dynamo): "
            f"{s.run_dropped_blocks} block(s) with it were dropped and re-run") in run.report.profile.notes


def test_the_kernel_profile_phase_fills_kernel_times(measured):
    run, _ = measured
    kernels = run.report.profile.kernels
    assert isinstance(kernels, KernelTimes) and kernels.device == "cpu" and kernels.calls == 5
    # the eager backend makes no kernels of its own: the profiled time is all "other CPU time"
    assert kernels.times and not run.report.kernels


def test_the_eager_comparison_phase_fills_its_record_and_method(measured):
    run, _ = measured
    p = run.report.profile
    e = p.eager
    assert isinstance(e, EagerComparison) and e.check.match and e.pairs == 6 and e.speedup > 0
    assert isinstance(e.check, OutputCheck) and e.check.method == "equal"  # what run/accuracy.py returned, kept whole
    assert e.run_median_s > 0 and e.latency_median_s > 0 and e.busy is None and len(e.block_calls) == 2
    assert e.break_even_calls is None or e.break_even_calls >= 1
    assert f"; vs eager: 6 pairs of blocks (compiled {e.block_calls[0]} calls" in p.steady.timing_method


def test_measure_assembles_the_records_of_the_phases_that_finished():
    """A function that raises on its fourth call: the first call and warm-up finished, the run
    time did not; the partial report has the first call's record and the error, the steady
    state's record stays empty."""
    calls = [0]
    x = torch.ones(4)
    compiled_fn = torch.compile(lambda t: t * 2 + 1, backend="eager")

    def flaky():
        calls[0] += 1
        if calls[0] > 3:
            raise RuntimeError("the fourth call fails")
        return compiled_fn(x)

    opts = RunOptions.build(backend="eager", warmup=2, record=False)
    profile = pipeline.new_profile(opts.settings, label="flaky")
    run = pipeline.measure(pipeline.Target(flaky, lambda: x * 2 + 1, lambda v: v), opts, profile)
    p = run.report.profile
    assert isinstance(run.error, RuntimeError) and p.error == "RuntimeError: the fourth call fails"
    assert p is profile and p.settings.label == "flaky" and p.settings.backend == "eager"
    assert p.first_call.compile_s > 0 and torch.equal(run.value, torch.full((4,), 3.0))
    assert p.steady == SteadyState() and p.eager is None and isinstance(p.memory, Memory)


def test_no_code_in_the_run_layer_writes_a_profiles_flat_names():
    """Schema 1's flat names (``profile.run_median_s = ...``) are gone (only ``Profile.from_v1`` knows them); the run layer fills
    the records (each phase returns its own), so no module of it assigns one, nor builds a Profile
    from them."""
    found = []
    for path in sorted(RUN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]:
                if isinstance(t, ast.Attribute) and t.attr in PROFILE_FIELDS_V1 and ast.unparse(t.value).endswith("profile"):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(t)} =")
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Profile"):
                found += [f"{path.name}:{node.lineno}: Profile({k.arg}=...)" for k in node.keywords
                          if k.arg in PROFILE_FIELDS_V1]
    assert not found, found
