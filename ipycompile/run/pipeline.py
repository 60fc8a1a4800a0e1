"""The measurement pipeline: :func:`measure` profiles one compiled call (a :class:`Target`).

As the data flows, one phase after another, each returning its record (and its notes and
noise lines) and never writing into the :class:`Profile`: one-time process start-up (the
first Inductor compile in a process) is paid first; the first call under
:func:`ipycompile.capture` and :class:`PeakMemory` (:func:`_first_call` -> ``FirstCall``, its
wall time ``compile_s``); warm-up calls (still captured, so late compiles are seen); with the
capture detached, the steady state (``SteadyState``: run time, latency and device time, the
GPU's busy time, what torch compiled meanwhile); optionally a few calls under
``torch.profiler`` (``KernelTimes``, charged to the report's kernels by
:mod:`ipycompile.run.kernel_times`) and the comparison with eager (``EagerComparison``);
memory (``Memory``). ``measure`` then assembles the :class:`Profile` from the records of the
phases that finished (all of them, unless the user's code raised) and returns the capture's
report with it, as a :class:`CellRun`.

What is measured is a :class:`Target`: a cell (:mod:`ipycompile.run.runner`), a sweep's
point (:mod:`ipycompile.run.sweeps`), or with ``--observe`` the cell as ordinary code, run
once under the capture with nothing more measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Sequence, TypeVar

from .observe import capture
from .session import SESSION
from .accuracy import check_outputs, fp64_reference
from .kernel_times import KERNEL_PROFILE_OPTION, attribute, profile_calls, profiled_call_count
from .activity import CompileActivity
from .device_time import time_device
from .devices import device_name, job_ranks, synchronize
from .memory import PeakMemory
from .timing import time_blocks, time_calls, time_paired
from .busy import busy_method, busy_noise, measure_busy, why_slower
from .contention import Contention
from .stats import break_even_calls, paired_ratio, run_time_noise
from ..analysis.modes import mode_note
from ..analysis.roofline import roofline
from ..report import (CompileReport, EagerComparison, FirstCall, Kernel, KernelTimes, Memory, Profile, RunSettings,
                      SteadyState)
from .options import RunOptions
from .progress import (EAGER, FIRST_CALL, KERNEL_PROFILE, NO_PROGRESS, REPORT, START_UP, TIMING, WARM_UP,
                       RunProgress)
from .settings import CompileSettings


R = TypeVar("R")


@dataclass
class CellRun:
    """What one run produced: the cell's value, its report, and the exception it raised (if any)."""

    value: Any
    report: CompileReport
    error: Optional[BaseException] = None
    fn: Optional[Callable] = None  # the compiled cell function (None with observe)
    records: Optional[list] = None  # the capture's raw (metadata, payload) records, torch's and ipycompile's hooks'
    #: with ``verify_later``: what tries the report's fixes on the cell (:meth:`verify` calls it once)
    pending: Optional[Callable[[], CompileReport]] = None

    def verify(self) -> CompileReport:
        """Try the report's fixes on the cell now, when the run deferred it (``verify_later``: the
        report was shown first, saying they are being tried), and return the report with each fix's
        check (also ``self.report``, and the run's row of the history). Nothing to do: the report as it
        is. Stopped (KeyboardInterrupt): the fixes are "not verified: stopped", the user's state put back
        as after any verification."""
        pending, self.pending = self.pending, None
        if pending is None:
            return self.report
        self.report = pending()
        return self.report


def _one_time_startup(settings: CompileSettings) -> Optional[float]:
    """Pay Inductor's per-process start-up (imports, compiler checks) on a tiny function."""
    if not settings.uses_inductor or "inductor" in SESSION.warmed_backends:
        return None
    import torch

    def _tiny(x):
        return (x * 2).sum()

    t0 = time.perf_counter()
    torch.compile(_tiny, backend="inductor")(torch.ones(4))
    synchronize()
    SESSION.warmed_backends.add("inductor")
    return time.perf_counter() - t0


def _cache_summary(report: CompileReport, reused: bool, fresh: bool) -> dict[str, str]:
    dynamo = "fresh (reset)" if fresh else ("reused compiled code" if reused else "compiled")
    if not fresh and not reused and report.compiled_nothing:
        dynamo = "nothing compiled"  # e.g. --observe around code that was compiled before
    out: dict[str, str] = {"dynamo": dynamo}
    for layer, attr in (("fx_graph", "fx_graph"), ("aot_autograd", "aot_autograd")):
        seen = [getattr(c.cache, attr) for c in report.compiles if getattr(c.cache, attr)]
        if seen:
            counts = {s: seen.count(s) for s in sorted(set(seen))}
            out[layer] = ", ".join(f"{n} {s}" for s, n in counts.items())
    return out


def _copy_tensors(tree: Any) -> Any:
    """Tensors copied out of CUDA-graph memory, which the next replay overwrites."""
    import torch

    if isinstance(tree, torch.Tensor):
        return tree.detach().clone()
    if isinstance(tree, (list, tuple)) and type(tree) in (list, tuple):
        return type(tree)(_copy_tensors(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _copy_tensors(v) for k, v in tree.items()}
    return tree


def _in_job_note(ranks: int) -> str:
    return (f"inside a rank of a {ranks}-rank torch.distributed job the cell ran once, captured: no warm-up, timing "
            "or eager comparison (each rank would choose its own call counts, and a collective called more often "
            "on one rank than another waits for ever); the job's own step timer times it")


@dataclass
class Target:
    """What :func:`measure` runs: the compiled call, its eager twin, and how to compare their outputs."""

    compiled: Callable[[], Any]
    eager: Callable[[], Any]
    snapshot: Callable[[Any], Any]  # the value to compare with eager (a cell: its value, else its names)
    scope: Callable[[], Any] = contextlib.nullcontext  # a context around the first call
    reference: Optional[Callable[[], Any]] = None  # the eager snapshot with float64 inputs (raises when not possible)
    state: Optional[Callable[[], Callable[[], None]]] = None  # after the first call: what puts its state back


def new_profile(settings: CompileSettings, *, observe: bool = False, label: str = "", fresh: bool = False) -> Profile:
    """A :class:`Profile` whose settings record says what the run was asked for: the compile
    settings, the torch config the user changed, the torch version and the device."""
    import torch

    return Profile(settings=RunSettings(
        mode=settings.mode,
        backend=settings.backend_name,
        dynamic=settings.dynamic,
        fullgraph=settings.fullgraph,
        options=dict(settings.options),
        config=changed_config(),
        observe=observe,
        fresh=fresh,
        label=label,
        torch_version=str(torch.__version__),
        device=device_name(),
    ))


def changed_config() -> dict[str, str]:
    """Dynamo and Inductor config values the user changed from torch's defaults (in code, e.g.
    ``torch._inductor.config.freezing = True``): ``{"inductor.freezing": "True"}``; read, never
    changed. Defaults that come from environment variables count as defaults.
    Empty where torch's config module cannot say what is a default."""
    import torch

    out: dict[str, str] = {}
    for prefix, module in (("dynamo", torch._dynamo.config), ("inductor", torch._inductor.config)):
        is_default = getattr(module, "_is_default", None)
        names = getattr(module, "_config", None)
        if not callable(is_default) or not isinstance(names, dict):
            continue
        for name in sorted(names):
            try:
                if is_default(name):
                    continue
                value, entry = getattr(module, name), names[name]
                if getattr(entry, "alias", None) or value == getattr(entry, "default", object()):
                    continue  # an alias, or set back to its default (torch itself does so for some)
                out[f"{prefix}.{name}"] = repr(value)
            except Exception:  # an entry torch cannot read back: leave it out
                continue
    return out


@dataclass
class Measured(Generic[R]):
    """What one phase of :func:`measure` returns: its record, and what it says beside it (notes,
    and noise: figures whose spread is large, each with why)."""

    record: R
    notes: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)


@dataclass
class _Said:
    """The notes and noise lines of a run's phases, in the order the phases ran."""

    notes: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)

    def take(self, measured: Measured[R]) -> R:
        self.notes += measured.notes
        self.noise += measured.noise
        return measured.record


@dataclass
class FirstCallRun:
    """What the first call hands on: its record, the cell's value, what eager's output is
    compared with, whether it worked on the device, how host memory was measured."""

    record: FirstCall
    value: Any = None
    expected: Any = None
    device_work: bool = False
    host_method: str = ""
    host_before_bytes: Optional[int] = None  # the process's RSS just before the call
    recorder: Any = None  # the allocator's history of the call (--memory-timeline), else None


def measure(target: Target, opts: RunOptions, profile: Profile, *, reused_kernels: Sequence[Kernel] = (),
            progress: "RunProgress | None" = None) -> CellRun:
    """Profile one compiled call as ``opts`` says: the captured first call, warm-up, timed
    steady state, the GPU's busy time, eager; ``profile`` (its settings filled) gets the
    records the phases return.

    ``opts.observe``: ``target.compiled`` is the cell as ordinary code (torch.compile only where
    the user's code calls it); it runs once, under the capture, and that one run is the steady
    state's only run (``SteadyState.runs == 1``); nothing more is measured.

    Never raises the user's exception: it is returned in ``CellRun.error`` with
    the partial report (the records of the phases that finished). ``opts.fresh`` resets
    Dynamo and uses fresh Inductor caches. ``opts.profile_kernels``: after the timed runs, a
    few calls under the profiler, their time charged to the report's kernels
    (``Profile.kernels``), or, when nothing was compiled, to ``reused_kernels`` (those of the
    compiled code reused). ``opts.memory_timeline``: the CUDA allocator's history of the
    compiling call and of one steady-state call (``Profile.memory.timelines``).

    Times (see :mod:`ipycompile.run.timing` and :mod:`ipycompile.run.device_time`):
    ``compile_s`` is the first call's wall time net of the trace logging torch tallied for
    the capture (``compile_wall_s`` keeps the wall time); ``run_median_s`` is run time
    (blocks of calls back to back); ``latency_median_s`` single synchronised calls;
    ``device_median_s`` CUDA events per call. Warm-up goes on while calls still
    compile or record CUDA graphs (up to 10 more calls), and a timed block in
    which torch compiled or recorded is dropped and re-run.

    ``progress``: the :class:`~ipycompile.run.progress.RunProgress` told of each phase as it
    starts, and of torch's compile steps as they arrive (:mod:`ipycompile.capture.steps`).
    """
    import torch

    settings, runs = opts.settings, opts.runs
    ranks = job_ranks()  # inside a rank of a job: the one call only (check_in_job refused the rest)
    said = _Said()
    track = progress or NO_PROGRESS  # progress: told each phase as it starts (it draws nothing)
    track.phase(START_UP)
    one_time = None if opts.observe else _one_time_startup(settings)
    if one_time is not None:
        said.notes.append(f"first Inductor use in this process: {one_time:.2f} s of one-time start-up was paid "
                          "before the timed compile and is not in compile_s")
    if opts.fresh:
        torch._dynamo.reset()

    # the records, as the phases return them; those of phases that did not finish keep their defaults
    first, steady, kernels, eager = FirstCall(one_time_s=one_time), SteadyState(), KernelTimes(), None
    call = FirstCallRun(first)
    error: Optional[BaseException] = None
    events = None  # the kernel profile's events
    fresh_ctx = fresh_inductor_cache() if opts.fresh else contextlib.nullcontext()
    cap = capture(opts.trace_dir)
    compiled = target.compiled
    activity = CompileActivity()
    restore: Optional[Callable[[], None]] = None
    recorders = []
    # the user's exception is caught inside the fresh-cache block, so that torch deletes its temporary cache
    with fresh_ctx, activity:
        try:
            with cap, _watching(progress):
                track.phase(FIRST_CALL)
                call = _first_call(target, settings, one_time_s=one_time, memory_timeline=opts.memory_timeline,
                                   keep_expected=opts.compare_eager and not opts.observe)
                cap.cache_hits_until_now()  # the warm-up runs what the first call compiled: not code compiled earlier
                first = call.record
                if not opts.observe:
                    restore = target.state() if target.state is not None else None
                    recorders += [call.recorder] if call.recorder is not None else []
                    if ranks <= 1:
                        track.phase(WARM_UP)
                    warmed = 0 if ranks > 1 else _warm_up(
                        compiled, opts.warmup if opts.warmup is not None else settings.warmup_calls, activity)
            if opts.observe:  # the cell's one run as ordinary code is all there is
                first, steady = FirstCall(), _observed_run(first)
            elif ranks > 1:  # one call on every rank, as the job's own code makes it: nothing more
                said.notes.append(_in_job_note(ranks))
            else:  # the capture is closed: timed runs carry none of its cost
                cuda = call.device_work and torch.cuda.is_available()
                before = dict(activity.by_trigger)
                track.phase(TIMING)
                steady = said.take(_run_time(compiled, runs, activity, warmed, opts.budget_s or RUN_TIME_BUDGET_S))
                steady = said.take(_latency_and_device_time(steady, compiled, runs, cuda))
                steady = said.take(_gpu_busy(steady, compiled, settings, runs, cuda))
                steady = said.take(_recorded_in_timing(steady, before, activity.by_trigger))
                if opts.memory_timeline:
                    recorders.append(said.take(_steady_memory_timeline(compiled)))
                if opts.profile_kernels:
                    track.phase(KERNEL_PROFILE)
                    kernels, events = said.take(_kernel_profile(compiled, steady.run_median_s))
                if opts.compare_eager:
                    track.phase(EAGER)
                    eager = said.take(_compare_eager(target, call.expected, runs=runs, warmup=opts.warmup,
                                                     device_work=call.device_work, first=first, steady=steady,
                                                     budget_s=2 * (opts.budget_s or RUN_TIME_BUDGET_S)))
                    steady = dataclasses.replace(steady, timing_method=steady.timing_method + _eager_method(eager))
        except BaseException as exc:  # the user's SystemExit too: the run is recorded, the magic re-raises it
            error = exc
        finally:
            if restore is not None:  # the namespace as the first call left it, as after a plain cell
                restore()
    track.phase(REPORT)
    t0 = time.perf_counter()
    report = cap.report  # its sources name notebook cells already (capture reads them)
    profile.report_build_s = time.perf_counter() - t0
    if events is not None:
        kernels = _attributed(kernels, events, report.kernels if not report.compiled_nothing else list(reused_kernels))
    said.notes += _kernel_option_note(settings, opts.profile_kernels, kernels)
    memory = said.take(_memory(call.host_method, recorders, report))
    memory.host_before_bytes = call.host_before_bytes
    profile.first_call, profile.steady, profile.memory, profile.kernels = first, steady, memory, kernels
    profile.eager = eager
    profile.notes += said.notes
    profile.noise += said.noise
    if error is not None:
        profile.error = error_text(error)
    # the capture's report with the run's profile, and the CUDA graphs that were asked for but not recorded
    report = dataclasses.replace(report, profile=profile,
                                 cudagraphs=[*report.cudagraphs, *_unrecorded_cudagraphs(report, settings)])
    if profile.kernels.times:
        roof = roofline(report)
        profile.roofline = roof.shares if roof is not None else None
    said_mode = mode_note(report)  # a mode that did nothing, and torch's rule why
    if said_mode:
        profile.notes.append(said_mode)
    profile.caches = _cache_summary(report, False, opts.fresh)
    _note_trace(cap, profile)
    return CellRun(call.value, report, error, None if opts.observe else compiled, cap.records)


# --------------------------------------------------------------------------- the phases, in order


def _first_call(target: Target, settings: CompileSettings, *, one_time_s: Optional[float], memory_timeline: bool,
                keep_expected: bool) -> FirstCallRun:
    """The first call (compile and one run), synchronised, under :class:`PeakMemory` (and the
    allocator's history with ``memory_timeline``); ``keep_expected``: its output is kept for the
    comparison with eager (copied out of CUDA-graph memory, which later replays overwrite)."""
    recorder = _memory_recorder("compiling call") if memory_timeline else contextlib.nullcontext()
    logging_s = None
    with PeakMemory() as mem, target.scope(), recorder:
        logged = _trace_logging_s()
        synchronize()
        t0 = time.perf_counter()
        value = target.compiled()
        synchronize()
        wall = time.perf_counter() - t0
        if logged is not None:
            logging_s = max(0.0, _trace_logging_s() - logged)
    graphs = settings.uses_cudagraphs()
    if graphs:  # keep the first call's output: warm-up and timed replays overwrite it
        value = _copy_tensors(value)
    snap = target.snapshot(value)
    record = FirstCall(compile_s=wall - (logging_s or 0.0), compile_wall_s=wall, trace_logging_s=logging_s,
                       one_time_s=one_time_s, peak_device_bytes=mem.device_bytes, peak_host_bytes=mem.host_bytes)
    device_work = bool(mem.device_bytes) and (mem.device_bytes or 0) > (mem.baseline_device_bytes or 0)
    return FirstCallRun(record, value, _copy_tensors(snap) if keep_expected and graphs else snap,
                        device_work or _has_cuda_tensor(snap), mem.host_method, mem.baseline_host_bytes,
                        recorder if memory_timeline else None)


def _observed_run(call: FirstCall) -> SteadyState:
    """``--observe``: the cell's one run as ordinary code, under the capture, is the steady state's
    only run: its wall time and peaks."""
    return SteadyState(run_times_s=[call.compile_wall_s], run_median_s=call.compile_wall_s, runs=1,
                       peak_device_bytes=call.peak_device_bytes, peak_host_bytes=call.peak_host_bytes)


def _warm_up(compiled: Callable[[], Any], calls: int, activity: CompileActivity) -> int:
    """``calls`` calls, and up to 10 more while the last one compiled or recorded a CUDA graph:
    the calls made."""
    last = activity.count
    for _ in range(calls):
        last = activity.count
        compiled()
    made = calls
    if calls and activity.count != last:  # the last warm-up call compiled or recorded: warm up more
        for _ in range(10):
            seen = activity.count
            compiled()
            synchronize()
            made += 1
            if activity.count == seen:
                break
    return made


#: the run-time measurement's ceiling by default: about what ``%timeit`` takes (7 rounds of at least
#: 0.2 s after its calibration) with room for the probes; three times the plan's 1 s, so a quiet run
#: never meets it. The comparison with eager (two sides, a 2 s plan) gets twice this.
RUN_TIME_BUDGET_S = 3.0


def _run_time(compiled: Callable[[], Any], runs: Optional[int], activity: CompileActivity,
              warmed: int, budget_s: float = RUN_TIME_BUDGET_S) -> Measured[SteadyState]:
    """Run time (:func:`time_blocks`: blocks of calls back to back, within ``budget_s``), the
    steady state's peak memory, and whether the blocks disagree, the budget ran out, or the
    machine was oversubscribed meanwhile."""
    with PeakMemory() as mem, Contention() as contention:
        blocks = time_blocks(compiled, runs=runs, activity=activity, budget_s=budget_s if runs is None else None)
    steady = SteadyState(
        run_times_s=list(blocks.times_s), run_median_s=blocks.median_s, run_iqr_s=blocks.iqr_s,
        run_min_s=min(blocks.times_s), run_max_s=max(blocks.times_s), runs=blocks.runs,
        warmup=warmed + blocks.probe_calls,  # the probe calls that sized the blocks count as warm-up
        auto_runs=runs is None, run_block_calls=blocks.block_calls, run_dropped_blocks=blocks.dropped_blocks,
        timing_method=(f"run time: median over {blocks.blocks} blocks of {blocks.block_calls} calls back to back, "
                       "each block between two device synchronisations, sized by blocked_autorange's rule "
                       "(the timer's overhead at most 1e-4 of a block, at least 10 ms) from the median of probe "
                       "blocks" + (f"; budget {budget_s:g} s, spent {blocks.spent_s:.2f} s on {blocks.blocks} blocks "
                          f"({blocks.runs} calls)" if runs is None else "")),
        peak_device_bytes=mem.device_bytes, peak_host_bytes=mem.host_bytes)
    why = run_time_noise(blocks.times_s)
    noise = [why] if why and blocks.blocks >= 3 else []
    if blocks.over_budget:
        noise.insert(0, f"run time: the timing budget of {budget_s:g} s was spent after {blocks.blocks} block(s) "
                        f"({blocks.runs} calls) before the plan was done (a busy machine, or calls still settling): "
                        "timing stopped there; --budget SECONDS gives it more")
    if contention.why("run time") and not noise:
        noise.append(contention.why("run time"))
    return Measured(steady, noise=noise)


def _latency_and_device_time(steady: SteadyState, fn: Callable[[], Any], runs: Optional[int],
                             cuda: bool) -> Measured[SteadyState]:
    """Latency (single synchronised calls) and, on CUDA, device time, beside the run time in
    ``steady``; skipped for ``runs=1`` (one call is all that was asked for)."""
    median = steady.run_median_s or 0.0
    if runs == 1:
        return Measured(dataclasses.replace(
            steady, timing_method=steady.timing_method + "; latency and device time not measured (--runs 1)"))
    n = _latency_calls(median)
    latency = time_calls(fn, runs=n, warmup=0, use_cuda_events=False)
    more: dict[str, Any] = {"latency_times_s": list(latency.times_s), "latency_median_s": latency.median_s}
    method = steady.timing_method
    if cuda:
        times = _device_times(fn, median)
        more.update(device_times_s=times, device_median_s=statistics.median(times))
        method += (f"; device time: CUDA events around each of {len(times)} calls, L2 flushed "
                   "before each (do_bench's method)")
    method += f"; latency: {n} single calls, each between two synchronisations"
    return Measured(dataclasses.replace(steady, timing_method=method, **more))


def _device_times(fn: Callable[[], Any], run_s: float) -> list[float]:
    """Device time per call (do_bench's method), about 0.1 s of calls; ``run_s`` sizes them where calls are long."""
    return time_device(fn, target_s=0.1, estimate_s=run_s if run_s > 0.02 else None)


def _latency_calls(run_s: float) -> int:
    """Single calls for the latency: about 0.3 s of them, 3 to 50 (1 to 3 for calls over 0.1 s)."""
    if run_s < 0.1:
        return max(3, min(50, int(0.3 / max(run_s, 1e-9))))
    return max(1, min(3, int(1.0 / max(run_s, 1e-9))))


def _gpu_busy(steady: SteadyState, fn: Callable[[], Any], settings: CompileSettings, runs: Optional[int],
              cuda: bool) -> Measured[SteadyState]:
    """On CUDA, the GPU's busy time per call and its verdict (:func:`measure_busy`: judged
    against a run time measured next to it), unless ``runs=1``."""
    if not cuda or runs == 1 or not steady.run_median_s:
        return Measured(steady)
    graphs = settings.uses_cudagraphs()
    busy = measure_busy(fn, steady.run_median_s, cudagraphs=graphs, suggest=settings.uses_inductor and not graphs)
    why = busy_noise(busy, "GPU busy share")
    return Measured(dataclasses.replace(steady, busy=busy, timing_method=f"{steady.timing_method}; {busy_method(busy)}"),
                    noise=[why] if why else [])


def _recorded_in_timing(steady: SteadyState, before: dict[str, int], after: dict[str, int]) -> Measured[SteadyState]:
    """What torch compiled or recorded (by trigger) between ``before`` and ``after``: the timed runs."""
    recorded = {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}
    if not recorded:
        return Measured(steady)
    what = ", ".join(f"{n} {k.lower().replace('_', ' ')}" for k, n in recorded.items())
    return Measured(dataclasses.replace(steady, recorded_in_timing=recorded),
                    notes=[f"torch compiled or recorded during the timed runs ({what}): "
                           f"{steady.run_dropped_blocks} block(s) with it were dropped and re-run"])


def _steady_memory_timeline(compiled: Callable[[], Any]) -> Measured[Any]:
    """``--memory-timeline``: one steady-state call with the allocator's history recording."""
    with _memory_recorder("steady-state call") as rec:
        compiled()
    return Measured(rec, notes=["--memory-timeline: the compiling call ran with the CUDA allocator's history "
                                "recording (Python stacks of every allocation): compile_s includes that cost"])


def _kernel_profile(fn: Callable[[], Any], run_s: Optional[float]) -> Measured[tuple[KernelTimes, Optional[list]]]:
    """A few steady-state calls (5; fewer when a call is slow) under the profiler: what they
    measure and how many calls ran (their times come from :func:`_attributed`, once the report
    names the kernels), and the profiler's events, or None (and a note) when profiling failed.
    The timed runs are over: this changes none of their figures."""
    import torch

    calls = max(1, min(5, int(1.0 / run_s))) if run_s else 5  # about a second at most
    try:
        events = profile_calls(fn, calls, cuda=torch.cuda.is_initialized())
    except Exception as exc:  # the profiler's failure, not the run's
        return Measured((KernelTimes(), None), notes=[f"kernel profiling failed: {type(exc).__name__}: {exc}"])
    # device time when the calls ran device kernels; a CPU cell on a GPU machine (CUDA initialised) is CPU time
    device = "cuda" if any(e.on_device for e in events) else "cpu"
    return Measured((KernelTimes(device=device, calls=profiled_call_count(events)), events))


def _attributed(kernels: KernelTimes, events: list, report_kernels: Sequence[Kernel]) -> KernelTimes:
    """``kernels`` with the profiled time charged to ``report_kernels`` (:func:`attribute`)."""
    return dataclasses.replace(kernels, times=attribute(events, list(report_kernels), device=kernels.device == "cuda"))


def _kernel_option_note(settings: CompileSettings, profile_kernels: bool, kernels: KernelTimes) -> list[str]:
    if profile_kernels and dict(settings.options).get(KERNEL_PROFILE_OPTION) and kernels.device != "cuda":
        return [f"--profile-kernels compiled with {KERNEL_PROFILE_OPTION}=True: each C++ kernel call opens a "
                "profiler record-function, in the timed runs too"]
    return []


def _compare_eager(target: Target, expected: Any, *, runs: Optional[int], warmup: Optional[int], device_work: bool,
                   first: FirstCall, steady: SteadyState,
                   budget_s: Optional[float] = None) -> Measured[EagerComparison]:
    """The comparison with eager: outputs checked, steady-state peak memory, compiled and eager
    blocks in ABBA pairs (the speedup the median of the pairs' ratios), latency, on CUDA device
    time and busy time, break-even from the same pairs."""
    import torch

    check = _check_against_eager(target, expected)
    # eager's window holds what the compiled side's held (the first call's output, kept for the
    # check) and eager's own calls: the check's outputs (eager's, the float64 reference's) are gone
    n_warm = warmup if warmup is not None else 1
    with PeakMemory() as mem:  # eager's steady-state peak: its warm-up calls (at least one)
        for _ in range(max(1, n_warm)):
            target.eager()
    with Contention() as contention:
        compiled_blocks, eager_blocks = time_paired(target.compiled, target.eager, runs=runs,
                                                    budget_s=budget_s if runs is None else None)
    ratio = paired_ratio(compiled_blocks.times_s, eager_blocks.times_s)
    fields: dict[str, Any] = {}
    noise = [why for why in (ratio.why_noisy("speedup vs eager") or contention.why("speedup vs eager"),
                             run_time_noise(eager_blocks.times_s, "eager run time")) if why]
    if compiled_blocks.over_budget:
        noise.insert(0, f"speedup vs eager: the timing budget of {budget_s:g} s was spent after {ratio.pairs} "
                        "pair(s) of blocks before the plan was done: timing stopped there; --budget SECONDS gives it more")
    if runs != 1:
        median = eager_blocks.median_s
        fields["latency_median_s"] = time_calls(target.eager, runs=_latency_calls(median), warmup=0,
                                                use_cuda_events=False).median_s
        if device_work and torch.cuda.is_available():
            fields["device_median_s"] = statistics.median(_device_times(target.eager, median))
            fields["busy"] = measure_busy(target.eager, median, cudagraphs=False, suggest=False)
            why = busy_noise(fields["busy"], "eager GPU busy share")
            noise += [why] if why else []
    if first.compile_s is not None and compiled_blocks.median_s:
        # the same pairs: compiled's median in them, eager's as that times the paired speedup
        compiled_run = compiled_blocks.median_s
        fields["break_even_calls"] = break_even_calls(max(first.compile_s, compiled_run), compiled_run,
                                                      compiled_run * ratio.median)
    on_device = bool(mem.device_bytes) and bool(steady.peak_device_bytes)  # 0: nothing ran on the device
    compiled_peak = steady.peak_device_bytes if on_device else steady.peak_host_bytes
    eager_peak = mem.device_bytes if on_device else mem.host_bytes
    if compiled_peak and eager_peak:
        fields["memory_ratio"] = compiled_peak / eager_peak
    eager = EagerComparison(
        run_times_s=list(eager_blocks.times_s),
        run_median_s=eager_blocks.median_s,
        peak_device_bytes=mem.device_bytes,
        peak_host_bytes=mem.host_bytes,
        check=check,
        speedup=ratio.median,
        speedup_ci95=list(ratio.ci95),
        pairs=ratio.pairs,
        compiled_run_median_s=compiled_blocks.median_s,
        block_calls=[compiled_blocks.block_calls, eager_blocks.block_calls],
        **fields,
    )
    eager.why_slower = why_slower(steady.busy, eager.busy, eager.speedup, eager.speedup_ci95)
    notes = []
    if not check.match:
        notes.append(f"compiled and eager outputs differ: {check.message}")
        warnings.warn(f"ipycompile: compiled and eager outputs differ: {check.message}", RuntimeWarning, stacklevel=2)
    return Measured(eager, notes=notes, noise=noise)


def _check_against_eager(target: Target, expected: Any) -> Any:
    """The compiled first call's output against an eager call's (and, where they are not even close,
    against the float64 reference); nothing of theirs outlives it (the peak memory windows after it
    measure each side's own calls)."""
    eager_snap = target.snapshot(target.eager())
    check = check_outputs(expected, eager_snap)
    if check.method == "dtype tolerances" and target.reference is not None:  # not even close: judge against float64
        fp64, why = fp64_reference(target.reference)
        check = check_outputs(expected, eager_snap, fp64, fp64_note=why)
    elif check.method == "dtype tolerances":
        check = check_outputs(expected, eager_snap, fp64_note="no way to re-run this code with float64 inputs")
    return check


def _eager_method(eager: EagerComparison) -> str:
    """How the comparison with eager was timed, in words (for the timing method)."""
    compiled_calls, eager_calls = eager.block_calls or [0, 0]
    return (f"; vs eager: {eager.pairs} pairs of blocks (compiled {compiled_calls} calls, eager {eager_calls}) in "
            "alternating order (ABBA), the speedup the median of the pairs' ratios with its 95 % interval")


def _memory(host_method: str, recorders: list, report: CompileReport) -> Measured[Memory]:
    """How host memory was measured, and the recorded timelines, their generated-code
    allocations named by the user's lines."""
    memory = Memory(host_method=host_method)
    if not recorders:
        return Measured(memory)
    from .memory_timeline import resolve_user_lines

    notes = []
    for rec in recorders:
        if rec.timeline is not None:
            memory.timelines.append(rec.timeline)
        elif rec.error:
            notes.append(f"--memory-timeline: the {rec.label} could not be recorded ({rec.error})")
    resolve_user_lines(memory.timelines, report.node_lines or {})
    return Measured(memory, notes=notes)


def _memory_recorder(label: str):
    from .memory_timeline import MemoryRecorder

    return MemoryRecorder(label)


def _unrecorded_cudagraphs(report: CompileReport, settings: CompileSettings) -> list:
    """With CUDA graphs on, each compile that generated GPU kernels but neither recorded nor was
    skipped: a ``CudaGraphs`` record that says so."""
    try:
        on = settings.uses_cudagraphs()
    except Exception:
        on = False
    if not on:
        return []
    from ..report import CudaGraphs

    seen = {c.compile_id for c in report.cudagraphs}
    gpu = []
    for k in report.kernels:
        if k.backend == "triton" and k.compile_id is not None and k.compile_id not in seen and k.compile_id not in gpu:
            gpu.append(k.compile_id)
    return [CudaGraphs(compile_id=cid, status="not recorded") for cid in gpu]


def _has_cuda_tensor(tree: Any) -> bool:
    import torch

    if isinstance(tree, torch.Tensor):
        return tree.is_cuda
    if isinstance(tree, (list, tuple)):
        return any(_has_cuda_tensor(t) for t in tree)
    if isinstance(tree, dict):
        return any(_has_cuda_tensor(t) for t in tree.values())
    return False


def _watching(progress: Optional[RunProgress]) -> Any:
    """Torch's compile steps, as they arrive, handed to ``progress`` (nothing without one)."""
    if progress is None:
        return contextlib.nullcontext()
    from ..capture.steps import CompileWatcher

    return CompileWatcher(progress.step)


def _trace_logging_s() -> Optional[float]:
    """Seconds torch has spent in structured logging so far in this process (its own
    running tally; read, never changed). The difference around a call is what
    the capture made torch do. None where torch keeps no tally."""
    from torch._logging import _internal

    tally = getattr(_internal, "structured_logging_overhead", None)
    return float(sum(tally.values())) if isinstance(tally, dict) else None


def error_text(exc: BaseException) -> str:
    """``Type: message`` for the report, even when the exception's ``__str__`` itself raises."""
    try:
        message = str(exc)
    except Exception as failed:  # the user's exception stays the one raised; only its text is missing
        message = f"<str() of the exception failed: {type(failed).__name__}>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _note_trace(cap, profile: Profile) -> None:
    if cap.trace_path:
        profile.notes.append(f"trace log written to {cap.trace_path} (tlparse reads it; so does ipycompile.load_trace)")


@contextlib.contextmanager
def fresh_inductor_cache():
    """Fresh, temporary Inductor caches for the block (honest compile times)."""
    from torch._inductor import utils

    fresh = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache  # renamed in newer torch
    with fresh():
        yield
