"""The GPU's busy share judged against a run time measured next to it (issue 21, item 2): plain
blocks of the same calls alternate with the profiled ones. The alternation and the judgement are
tested here with ordinary callables (the profiler part needs CUDA: tests/test_gpu.py)."""

from __future__ import annotations

import statistics
import time

from ipycompile.run.busy import BusyBlock, alternate, busy_beside_run, busy_noise, plain_calls
from ipycompile.run.stats import RUN_NOISE, range_noise


def test_plain_and_profiled_blocks_alternate_plain_first_and_last():
    order = []
    plains, profs = alternate(lambda: order.append("plain") or 1.0, lambda: order.append("profiled") or "p")
    assert order == ["plain", "profiled", "plain", "profiled", "plain"]
    assert plains == [1.0, 1.0, 1.0] and profs == ["p", "p"]


def test_busy_share_is_judged_against_the_run_time_timed_beside_it():
    """The steady state timed 5 ms per call; the calls take about 0.2 ms now (clocks or load
    moved). Each profiled block reports the device busy 90 % of its own calls' time: judged
    against plain blocks of the same calls timed between the profiled ones, the share is near
    90 %, where against the earlier 5 ms it would read a few %, "host-bound"."""
    from ipycompile.run.busy import judge
    from ipycompile.run.timing import _timed_block

    def call():
        time.sleep(0.0002)

    n = 10
    busy = busy_beside_run(lambda: _timed_block(call, n) / n,
                           lambda: BusyBlock(0.9 * _timed_block(call, n) / n, 12, {"aten::mm": 1e-5}),
                           calls=n, cudagraphs=False, suggest=True)
    assert len(busy.run_times_s) == 3 and 0 < busy.run_s == statistics.median(busy.run_times_s)
    assert len(busy.busy_times_s) == 2 and busy.busy_s == statistics.median(busy.busy_times_s)
    assert busy.share > 0.5 and busy.verdict != "host-bound", busy.text
    assert judge(busy.busy_s, 5e-3, kernels=12, calls=n, cudagraphs=False, suggest=True).verdict == "host-bound"
    assert busy.host_ops == ["aten::mm 100%"] and busy.kernels_per_call == 12 and busy.calls == n


def test_busy_share_is_noisy_when_the_plain_blocks_disagree():
    times = iter([100e-6, 130e-6, 100e-6])
    loud = busy_beside_run(lambda: next(times), lambda: BusyBlock(40e-6, 3), calls=5, cudagraphs=False,
                           suggest=True)
    assert loud.run_s == 100e-6 and loud.verdict == "host-bound" and "reduce-overhead" in loud.advice
    why = busy_noise(loud)
    assert why.startswith("GPU busy share: the run time measured beside the profiled calls disagree"), why
    assert "from 100.0 us to 130.0 us per call" in why and f"{RUN_NOISE:.0%}" in why
    times = iter([100e-6, 105e-6, 101e-6])
    quiet = busy_beside_run(lambda: next(times), lambda: BusyBlock(40e-6, 3), calls=5, cudagraphs=False,
                            suggest=False)
    assert busy_noise(quiet, "eager GPU busy share") == "" and quiet.advice == ""
    assert range_noise([1.0], "x") == "" and range_noise([1.0, 1.0 + RUN_NOISE], "x") == ""




def test_plain_blocks_last_at_least_the_shortest_block():
    """At least 10 ms (BLOCK_MIN_S) of calls, and never fewer than the profiled block's."""
    assert plain_calls(20, 400e-6) == 25  # 10 ms of 400 us calls
    assert plain_calls(20, 10e-6) == 1000 and plain_calls(3, 0.1) == 3
    assert plain_calls(5, 0.0) == 100_000


def test_the_summary_marks_each_noisy_busy_share_by_its_own_name():
    from ipycompile.report import CompileReport, DeviceBusy, EagerComparison, Profile, SteadyState

    def busy(run_times):
        return busy_beside_run(iter(run_times).__next__, lambda: BusyBlock(40e-6, 3), calls=5, cudagraphs=False,
                               suggest=False)

    compiled, eager = busy([100e-6, 101e-6, 100e-6]), busy([100e-6, 140e-6, 100e-6])
    report = CompileReport()
    report.profile = Profile(steady=SteadyState(busy=compiled), eager=EagerComparison(run_median_s=1e-4, busy=eager),
                             noise=[n for n in (busy_noise(compiled), busy_noise(eager, "eager GPU busy share")) if n])
    lines = str(report).splitlines()
    assert isinstance(compiled, DeviceBusy) and len(report.profile.noise) == 1
    assert any(line.startswith("GPU busy 40.0 us of each 100.0 us call") and "NOISY" not in line for line in lines)
    assert any(line.startswith("eager: GPU busy 40.0 us of each 100.0 us call") and line.endswith("NOISY")
               for line in lines), lines


def test_why_compiled_is_slower_names_the_host_or_the_gpu():
    """Issue 21, item 3: the eager comparison's busy figures say why compiled is slower."""
    from ipycompile.run.busy import judge, why_slower

    def busy(busy_s, run_s, kernels):
        return judge(busy_s, run_s, kernels=kernels, calls=10, cudagraphs=False, suggest=False)

    # compiled: one fused kernel (3 us) in a 40 us call; eager: two kernels (4 us) in a 12 us call
    host = why_slower(busy(3e-6, 40e-6, 1), busy(4e-6, 12e-6, 2), 0.3, [0.28, 0.33])
    assert host.startswith("compiled is slower on the host, not on the GPU"), host
    assert "3.0 us per call against eager's 4.0 us" in host and "37.0 us of each compiled call" in host
    assert "8.0 us of each eager call" in host
    # compiled's kernels take longer: the GPU, with where to look
    gpu = why_slower(busy(90e-6, 100e-6, 3), busy(50e-6, 60e-6, 5), 0.6, [0.55, 0.65])
    assert gpu.startswith("compiled is slower on the GPU: its 3 kernels keep it busy 90.0 us"), gpu
    assert "--profile-kernels" in gpu
    # not slower beyond doubt, or a side not profiled: nothing said
    assert why_slower(busy(3e-6, 40e-6, 1), busy(4e-6, 12e-6, 2), 0.9, [0.7, 1.1]) == ""
    assert why_slower(busy(3e-6, 40e-6, 1), busy(4e-6, 12e-6, 2), 1.2, [1.1, 1.3]) == ""
    assert why_slower(None, busy(4e-6, 12e-6, 2), 0.3, [0.2, 0.4]) == ""
