"""The run layer's phases (issue 21, item 5): each phase of ``measure`` returns its own record
(and its notes and noise lines), tested here on a real CPU compile; ``measure`` assembles the
``Profile`` from the records of the phases that finished."""

from __future__ import annotations

import ast
import pathlib

import pytest
import torch

import ipycompile
from ipycompile.report import EagerComparison, FirstCall, KernelTimes, Memory, OutputCheck, PROFILE_FIELDS_V1, SteadyState
from ipycompile.run import pipeline
from ipycompile.run.activity import CompileActivity
from ipycompile.run.options import RunOptions

RUN = pathlib.Path(ipycompile.__file__).parent / "run"


def _mlp(x, w):
    return torch.relu(x @ w).sum(dim=1)


@pytest.fixture(scope="module")
def target():
    """One real compile (the eager backend: Dynamo, no Inductor) shared by the phase tests."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(32, 64, generator=g), torch.randn(64, 64, generator=g)
    compiled = torch.compile(_mlp, backend="eager")
    return pipeline.Target(lambda: compiled(x, w), lambda: _mlp(x, w), lambda value: value)


@pytest.fixture(scope="module")
def settings():
    return RunOptions.build(backend="eager").settings


@pytest.fixture(scope="module")
def first(target, settings):
    with CompileActivity():
        return pipeline._first_call(target, settings, one_time_s=None, memory_timeline=False, keep_expected=True)


@pytest.fixture(scope="module")
def steady(target, first):
    with CompileActivity() as activity:
        warmed = pipeline._warm_up(target.compiled, 2, activity)
        return pipeline._run_time(target.compiled, 12, activity, warmed)


def test_first_call_returns_its_record_and_what_it_hands_on(first, target):
    rec = first.record
    assert isinstance(rec, FirstCall) and rec.compile_s > 0 and rec.compile_wall_s >= rec.compile_s
    assert rec.peak_host_bytes is None or rec.peak_host_bytes > 0
    assert torch.allclose(first.value, target.eager()) and first.expected is first.value  # no CUDA graphs: no copy
    assert not first.device_work and first.host_method in ("vmhwm", "sampling", "unavailable")
    assert first.recorder is None


def test_warm_up_counts_its_calls():
    calls = []
    with CompileActivity() as activity:
        assert pipeline._warm_up(lambda: calls.append(1), 3, activity) == 3
    assert len(calls) == 3


def test_run_time_returns_a_filled_steady_state(steady):
    s = steady.record
    assert isinstance(s, SteadyState) and s.run_median_s > 0 and s.runs >= 6 and s.run_block_calls >= 1
    assert s.run_min_s <= s.run_median_s <= s.run_max_s and len(s.run_times_s) * s.run_block_calls == s.runs
    assert s.warmup >= 2 and s.timing_method.startswith("run time: median over")
    assert s.latency_median_s is None and s.busy is None  # later phases' figures
    assert all(n.startswith("run time:") for n in steady.noise)


def test_latency_and_device_time_return_a_new_record(steady, target):
    s = steady.record
    more = pipeline._latency_and_device_time(s, target.compiled, 12, cuda=False).record
    assert more.latency_median_s > 0 and len(more.latency_times_s) >= 3 and more.device_median_s is None
    assert more.timing_method.startswith(s.timing_method) and "; latency: " in more.timing_method
    assert s.latency_median_s is None  # the record handed in is not changed
    one = pipeline._latency_and_device_time(s, target.compiled, 1, cuda=False).record
    assert one.latency_median_s is None and one.timing_method.endswith("not measured (--runs 1)")
    assert pipeline._gpu_busy(s, target.compiled, RunOptions.build(backend="eager").settings, 12,
                            cuda=False).record is s  # no CUDA: no busy phase


def test_recorded_in_timing_is_counted_from_the_callbacks_and_noted(steady):
    quiet = pipeline._recorded_in_timing(steady.record, {"DYNAMO": 1}, {"DYNAMO": 1})
    assert quiet.record is steady.record and not quiet.notes
    loud = pipeline._recorded_in_timing(steady.record, {"DYNAMO": 1}, {"DYNAMO": 3, "CUDAGRAPH_RECORDING": 1})
    assert loud.record.recorded_in_timing == {"DYNAMO": 2, "CUDAGRAPH_RECORDING": 1}
    assert loud.notes == [f"torch compiled or recorded during the timed runs (2 dynamo, 1 cudagraph recording): "
                          f"{steady.record.run_dropped_blocks} block(s) with it were dropped and re-run"]


def test_kernel_profile_returns_kernel_times_and_events(steady, target):
    kernels, events = pipeline._kernel_profile(target.compiled, steady.record.run_median_s).record
    assert isinstance(kernels, KernelTimes) and kernels.device == "cpu" and kernels.calls == 5 and events
    timed = pipeline._attributed(kernels, events, [])
    assert timed.times and timed.calls == 5 and kernels.times == []  # no report kernels: all "other CPU time"


def test_compare_eager_returns_its_record_notes_and_noise(first, steady, target):
    m = pipeline._compare_eager(target, first.expected, runs=12, warmup=1, device_work=False, first=first.record,
                              steady=steady.record)
    e = m.record
    assert isinstance(e, EagerComparison) and e.check.match and e.pairs == 6 and e.speedup > 0
    assert isinstance(e.check, OutputCheck) and e.check.method == "equal"  # what run/accuracy.py returned, kept whole
    assert e.run_median_s > 0 and e.latency_median_s > 0 and e.busy is None and len(e.block_calls) == 2
    assert e.break_even_calls is None or e.break_even_calls >= 1
    assert not m.notes and all(n.startswith(("speedup vs eager:", "eager run time:")) for n in m.noise)
    assert pipeline._eager_method(e).startswith(f"; vs eager: 6 pairs of blocks (compiled {e.block_calls[0]} calls")


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
