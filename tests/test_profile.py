"""Behaviour of the measurement primitives (``ipycompile.run.timing``, ``memory``, ``outputs``,
``stats``; gathered in ``ipycompile.run.profile``), on real functions.

These are not timing-precision tests: bounds are generous so that a loaded
2-core CI machine passes; they check that the right calls are made and timed.
"""

from __future__ import annotations

import collections
import dataclasses
import subprocess
import sys
import time

import pytest
import torch

from ipycompile.run.devices import device_name, synchronize
from ipycompile.run.memory import PeakMemory, _current_rss, _RssSampler
from ipycompile.run.outputs import compare_outputs
from ipycompile.run.stats import break_even_calls, speedup
from ipycompile.run.timing import Timing, time_calls

MiB = 2**20


class Sleeper:
    """A callable that sleeps ``seconds`` and counts its calls."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        time.sleep(self.seconds)


# --------------------------------------------------------------------------- devices


_CPU_ONLY = pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the CPU-only behaviour (no CUDA on the machine)"
)


def test_import_does_not_import_torch():
    code = "import sys, ipycompile.run.profile; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@_CPU_ONLY
def test_synchronize_and_device_name_on_cpu():
    synchronize()
    synchronize("cpu")
    assert device_name().startswith("cpu: ")
    assert len(device_name()) > len("cpu: ")


# --------------------------------------------------------------------------- time_calls


@_CPU_ONLY
def test_auto_range_picks_runs_from_target():
    fn = Sleeper(0.005)
    timing = time_calls(fn, target_s=0.05)
    assert 4.5e-3 <= timing.median_s  # a sleep lasts at least its time; a busy machine may make it longer
    assert timing.auto and timing.warmup == 2
    # round(0.05 / ~5 ms) = 10; a slow sleep on a busy machine gives fewer, never below min_runs.
    assert 3 <= timing.runs <= 10
    assert fn.calls == timing.warmup + timing.runs
    assert all(t >= 4.5e-3 for t in timing.times_s)


@_CPU_ONLY
def test_call_much_slower_than_target_runs_once():
    fn = Sleeper(0.3)
    timing = time_calls(fn, target_s=0.05)
    assert timing.runs == 1
    assert fn.calls == 3  # two warm-up calls (the last one is the probe) and one timed call
    assert timing.median_s >= 0.29


def test_call_slower_than_target_gets_min_runs():
    fn = Sleeper(0.08)  # between target_s and 5 * target_s
    timing = time_calls(fn, target_s=0.05, min_runs=3)
    assert timing.runs == 3
    assert fn.calls == timing.warmup + 3


def test_fast_call_is_capped_at_max_runs():
    calls = []
    timing = time_calls(lambda: calls.append(1), target_s=0.05, max_runs=7)
    assert timing.runs == 7
    assert len(calls) == timing.warmup + 7


def test_explicit_runs_and_warmup_are_honoured():
    fn = Sleeper(0.001)
    timing = time_calls(fn, runs=4, warmup=3)
    assert (timing.runs, timing.warmup, timing.auto, fn.calls) == (4, 3, False, 7)

    fn = Sleeper(0.001)
    timing = time_calls(fn, runs=2, warmup=0)
    assert (timing.runs, timing.warmup, fn.calls) == (2, 0, 2)


def test_auto_range_probe_counts_as_warmup():
    fn = Sleeper(0.001)
    timing = time_calls(fn, warmup=0, target_s=0.01)
    assert timing.warmup == 1 and timing.auto
    assert fn.calls == 1 + timing.runs


def test_warmup_calls_are_not_timed():
    calls = []

    def slow_then_fast() -> None:
        calls.append(1)
        time.sleep(0.1 if len(calls) <= 2 else 0.001)

    timing = time_calls(slow_then_fast, runs=5, warmup=2)
    assert len(calls) == 7
    assert timing.max_s < 0.05


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"runs": 0}, "runs: 0 "),
        ({"runs": 2.5}, "runs: 2.5 "),
        ({"runs": True}, "runs: True "),
        ({"warmup": -1}, "warmup: -1 "),
        ({"warmup": "2"}, "warmup: '2' "),
        ({"target_s": 0}, "target_s: 0 "),
        ({"min_runs": 0}, "min_runs: 0 "),
        ({"min_runs": 5, "max_runs": 4}, "max_runs: 4 "),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(kwargs, argument):
    calls = []
    with pytest.raises(ValueError, match=argument + "is not allowed; expected"):
        time_calls(lambda: calls.append(1), **kwargs)
    assert calls == []


@_CPU_ONLY
def test_cuda_events_without_cuda_raise_before_any_call():
    calls = []
    with pytest.raises(ValueError, match="use_cuda_events: True is not allowed; CUDA is not available"):
        time_calls(lambda: calls.append(1), use_cuda_events=True)
    assert calls == []


def test_timing_statistics():
    timing = Timing(times_s=[1.0, 2.0, 3.0, 4.0, 100.0], warmup=0, auto=False)
    assert (timing.runs, timing.median_s, timing.mean_s, timing.min_s, timing.max_s) == (5, 3.0, 22.0, 1.0, 100.0)
    assert timing.iqr_s == pytest.approx(2.0)  # quartiles 2 and 4
    assert timing.spread == pytest.approx(2.0 / 3.0)
    assert timing.stdev_s == pytest.approx(43.6176, rel=1e-4)

    single = Timing(times_s=[0.5], warmup=2, auto=True)
    assert (single.median_s, single.stdev_s, single.iqr_s, single.spread) == (0.5, 0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- PeakMemory


@_CPU_ONLY
def test_peak_memory_sees_allocation_and_resets_between_blocks():
    with PeakMemory() as with_allocation:
        data = b"\x01" * (200 * MiB)  # written, so resident
        del data
    with PeakMemory() as without_allocation:
        small = bytearray(MiB)
        del small

    if sys.platform.startswith("linux"):
        assert with_allocation.host_method == "vmhwm"
        assert without_allocation.host_method == "vmhwm"
    assert with_allocation.host_bytes - with_allocation.baseline_host_bytes >= 150 * MiB
    # Were the peak counter not reset, the second block would still see the 200 MiB peak.
    assert without_allocation.host_bytes - without_allocation.baseline_host_bytes < 50 * MiB
    assert with_allocation.device_bytes is None and without_allocation.device_bytes is None


@_CPU_ONLY
def test_peak_memory_sees_torch_allocation():
    with PeakMemory() as peak:
        ones = torch.ones(50_000_000)  # 200 MB of float32
        del ones
    assert peak.host_bytes - peak.baseline_host_bytes >= 150 * MiB
    assert peak.device_bytes is None


def test_rss_sampler_fallback_sees_allocation():
    baseline = _current_rss()
    sampler = _RssSampler()
    data = b"\x01" * (200 * MiB)
    time.sleep(0.05)  # the sampler thread needs the GIL to take a sample
    del data
    assert sampler.stop() - baseline >= 150 * MiB


# --------------------------------------------------------------------------- compare_outputs


Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    extras: dict


def test_compare_equal_and_close_tensors():
    x = torch.randn(64, 64)
    assert compare_outputs(x, x.clone()) == (True, 0.0, "outputs match: 1 tensor(s), max |diff| 0")

    match, diff, message = compare_outputs(x, x + 1e-7)
    assert match and 0 < diff < 1e-6, message

    grad = torch.ones(3, requires_grad=True) * 2
    assert compare_outputs(grad, torch.full((3,), 2.0))[0]


def test_compare_different_tensors_reports_max_diff():
    match, diff, message = compare_outputs(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]))
    assert not match
    assert diff == pytest.approx(0.5)
    assert "Mismatched elements: 1 / 3" in message and message.startswith("output:")


def test_compare_tolerances_default_per_dtype_and_can_be_overridden():
    x = torch.ones(8)
    assert not compare_outputs(x, x * 1.001)[0]
    assert compare_outputs(x, x * 1.001, atol=1e-2)[0]  # rtol keeps its float32 default
    assert compare_outputs(x, x * 1.001, rtol=1e-2)[0]
    assert not compare_outputs(x, x * 1.1, rtol=1e-2, atol=1e-2)[0]
    # bfloat16 is compared with its own, looser default tolerance.
    assert compare_outputs(x.bfloat16(), (x * 1.0078125).bfloat16())[0]
    # Integers must be equal.
    assert not compare_outputs(torch.arange(4), torch.arange(4) + 1)[0]
    with pytest.raises(ValueError, match="atol: -1 is not allowed"):
        compare_outputs(x, x, atol=-1)


def test_compare_nested_structures():
    def make(bump: float) -> dict:
        return {
            "pair": Pair(torch.zeros(2), [torch.ones(3) + bump, 7]),
            "out": Output(logits=torch.eye(2), extras={"name": "x"}),
            "max": torch.max(torch.eye(3), dim=0),
        }

    match, diff, message = compare_outputs(make(0.0), make(0.0))
    assert match and diff == 0.0 and "5 tensor(s)" in message  # torch.max gives values and indices

    match, diff, message = compare_outputs(make(0.0), make(1.0))
    assert not match and diff == pytest.approx(1.0)
    assert message.startswith("output['pair'][1][0]: Mismatched elements: 3 / 3")


def test_compare_structure_mismatches():
    x = torch.ones(2)
    assert compare_outputs([x, x], [x]) == (False, None, "output: length 2 vs 1")
    assert compare_outputs((x,), [x]) == (False, None, "output: tuple vs list")
    assert compare_outputs({"a": x}, {"b": x}) == (
        False,
        None,
        "output: keys differ (only in first: ['a'], only in second: ['b'])",
    )
    assert compare_outputs([x], [1.0]) == (False, None, "output[0]: Tensor vs float")


def test_compare_shape_and_dtype_mismatches():
    assert compare_outputs(torch.ones(2, 3), torch.ones(3, 2)) == (False, None, "output: shape (2, 3) vs (3, 2)")
    assert compare_outputs([torch.ones(2)], [torch.ones(2, dtype=torch.float64)]) == (
        False,
        None,
        "output[0]: dtype torch.float32 vs torch.float64",
    )


def test_compare_non_tensor_leaves_and_nan():
    assert compare_outputs([1, "a"], [1, "a"]) == (True, None, "outputs are equal (no tensors)")
    assert compare_outputs([1, "a"], [1, "b"]) == (False, None, "output[1]: 'a' != 'b'")

    nan = torch.tensor([float("nan"), 1.0])
    match, diff, _ = compare_outputs(nan, nan.clone())  # assert_close's default: NaN != NaN
    assert not match and diff != diff


def test_compare_never_raises_on_uncomparable_tensors():
    meta = torch.ones(2, device="meta")
    match, diff, message = compare_outputs(meta, meta)
    assert not match and diff is None and "cannot copy to CPU" in message


# --------------------------------------------------------------------------- economics


def test_break_even_calls():
    n = break_even_calls(10.0, 0.001, 0.002)
    assert n == 9_999
    # The definition: compiled total (first call = compile_s) catches up with eager at call n, not before.
    assert 10.0 + (n - 1) * 0.001 <= n * 0.002 + 1e-9
    assert 10.0 + (n - 2) * 0.001 > (n - 1) * 0.002

    assert break_even_calls(10.0, 0.002, 0.001) is None  # compiled slower
    assert break_even_calls(10.0, 0.001, 0.001) is None  # no faster
    assert break_even_calls(0.001, 0.001, 0.002) == 1  # compiling cost nothing extra
    with pytest.raises(ValueError, match="compile_s: -1.0 is not allowed"):
        break_even_calls(-1.0, 0.001, 0.002)


def test_speedup():
    assert speedup(2.0, 1.0) == 2.0
    assert speedup(1.0, 2.0) == 0.5
    assert speedup(1.0, 0.0) is None
    with pytest.raises(ValueError, match="compiled_s: nan is not allowed"):
        speedup(1.0, float("nan"))
