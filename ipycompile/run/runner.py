"""``run_cell``: run a cell's code under torch.compile and profile it.

Everything ``%%compile`` does is here, as plain Python: the magic only parses its arguments
and displays what this returns. One run is

1. the checks that refuse a run before anything runs (a bad cell or namespace, an option
   that would call the cell again inside a rank of a job, a run nested in another's cell);
2. the cell's code becomes one function (:mod:`ipycompile.run.cell`), cached by (code,
   settings) so re-running an unchanged cell reuses compiled code, and what the first call
   changes in place is kept to be put back after the calls that follow;
3. :func:`~ipycompile.run.pipeline.measure` (the measurement pipeline) profiles it;
4. the report of reused code gets the diagnosis of the run that compiled it, its fixes are
   tried (``verify_fixes``, now or when :meth:`CellRun.verify` is called), and it gets a row
   in the history.

``--observe`` takes the same path: the cell as ordinary code (:func:`~ipycompile.run.cell.plain_cell`)
is ``measure``'s target, run once under the capture, with nothing more measured.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import threading
from typing import Any, Callable, Optional, Sequence

from . import history_log as _history
from . import reuse as _reuse
from .session import SESSION
from .cell import CellFunction, make_cell_function, namespace_state, placeholders, plain_cell
from .accuracy import referenced_names, upcast_namespace
from .kernel_times import cell_devices
from .devices import job_ranks
from ..report import CompileReport, FixVerification, KeptState
from .state import Watch
from .options import RunOptions
from .pipeline import CellRun, Target, _cache_summary, _copy_tensors, measure, new_profile
from .progress import NO_PROGRESS, VERIFY, ProgressCallback, RunProgress, tracker


def _snapshot(cf: CellFunction, value: Any) -> Any:
    """What a run produced, to compare compiled and eager: its value, else its assigned names."""
    if cf.has_result:
        return value
    ns = cf.fn.__globals__
    return {name: ns.get(name) for name in cf.assigned if name in ns}


def execute(
    source: str,
    namespace: Optional[dict] = None,
    *,
    run_options: Optional[RunOptions] = None,
    filename: Optional[str] = None,
    header: Optional[str] = None,
    sources: Optional[dict[str, str]] = None,
    execution_count: Optional[int] = None,
    progress: "bool | ProgressCallback | RunProgress | None" = None,
    **options: Any,
) -> CellRun:
    """Run ``source`` compiled (or observed) and profile it; never raises the user's exception.

    The run's options are one :class:`~ipycompile.run.options.RunOptions`: given as
    ``run_options``, or built here once from the keywords (the names in
    :data:`~ipycompile.run.options.OPTION_NAMES`: ``mode``, ``backend``, ``runs``,
    ``compare_eager``, ...; see :meth:`RunOptions.build`).

    ``verify_fixes``: after the report is diagnosed, try each suggested fix on the cell in a
    scratch compile of the same cell on copies of the same inputs (:mod:`ipycompile.run.verify`),
    within ``verify_budget_s`` seconds; each fix's result is ``Suggestion.check``, what was
    covered ``report.fix_verification``. Nothing of the user's (namespace, random state, config,
    compiled code) is changed.

    ``header`` is the text shown above ``source`` in an editor (the magic's
    ``%%compile ...`` line), so that line numbers match what the user sees;
    ``None`` (plain Python) numbers the source from line 1.

    ``profile_kernels``: after the timed runs, profile a few more calls and
    charge their time to the report's kernels (``Profile.kernel_times``); with
    the inductor backend this compiles with ``cpp.enable_kernel_profile=True``
    (C++ kernels are visible to the profiler only so) when the cell may generate
    C++ kernels (a tensor or module it uses is on the CPU, or none is on CUDA),
    unless ``options`` say otherwise.

    ``memory_timeline``: record the CUDA allocator's history for the compiling call
    and one steady-state call (``Profile.memory_timelines``); needs CUDA.

    ``trace_dir``: also write the captured events to a TORCH_TRACE log in that
    directory (see :func:`ipycompile.capture`); the report's notes name the file.

    ``progress``: show the run's phase while it runs (:mod:`ipycompile.run.progress`): True (the
    registered view: a live status line in a notebook, one updating line in a terminal), a
    callback ``show(status)``, or a sweep's :class:`~ipycompile.run.progress.RunProgress`; None or
    False (the default) shows nothing.

    Bad settings raise :class:`~ipycompile.settings.SettingsError` (nothing runs);
    a bad cell raises :class:`~ipycompile.cell.CellError` (nothing runs).
    """
    check_cell(source, namespace)
    opts = RunOptions.given(run_options, options, where="execute",
                            devices=lambda: cell_devices(source, namespace or {}))
    check_in_job(opts)
    with _one_run_at_a_time():  # (a refused nested run shows no progress)
        track = tracker(progress)
        own = track is not None and track is not progress  # a sweep's tracker is the sweep's to finish
        with track if own else contextlib.nullcontext():
            run = _execute(source, {} if namespace is None else namespace, opts, filename, header, sources,
                           execution_count, track)
            if own:
                track.finish("stopped" if isinstance(run.error, KeyboardInterrupt) else
                             "failed" if run.error is not None else "done")
            return run


#: options that make calls beyond the cell's own one (and so, in a job, collectives other ranks would not match)
_EXTRA_CALLS = (("compare_eager", "--compare-eager"), ("profile_kernels", "--profile-kernels"),
                ("verify_fixes", "--verify-fixes"), ("memory_timeline", "--memory-timeline"))


def check_in_job(opts: RunOptions) -> None:
    """Inside a rank of a multi-rank job, a ``ValueError`` naming any option that would call the
    cell again: each rank times with call counts of its own choosing (from its own clock), and
    a collective that one rank calls more often than another waits for ever (NCCL hangs)."""
    ranks = job_ranks()
    if ranks <= 1:
        return
    for field_name, flag in _EXTRA_CALLS:
        if getattr(opts, field_name, False):
            raise ValueError(
                f"{flag}: not inside a rank of a {ranks}-rank torch.distributed job: it calls the cell again a number "
                "of times this rank chooses, and a collective another rank does not call as often would wait for "
                "ever. The cell runs once here, captured (graphs, breaks, recompiles, kernels); time the job with its "
                "own step timer, or run the cell outside the job")


class NestedRunError(RuntimeError):
    """A run started from inside another run's cell (``%%compile`` or ``run_cell`` in code that a
    ``%%compile`` cell calls): refused, so each report holds its own cell only."""


_RUNNING = threading.local()


@contextlib.contextmanager
def _one_run_at_a_time() -> Any:
    if getattr(_RUNNING, "active", False):
        raise NestedRunError(
            "ipycompile: a %%compile run (or run_cell) was started from code that a %%compile cell is running; "
            "runs do not nest (their reports would mix): call the function in a plain cell, or run it with "
            "plain torch.compile inside the %%compile cell")
    _RUNNING.active = True
    try:
        yield
    finally:
        _RUNNING.active = False


def check_cell(source: Any, namespace: Any) -> None:
    """A ``TypeError`` naming the argument when ``source`` is not text or ``namespace`` not a dict."""
    if not isinstance(source, str):
        raise TypeError(f"source: the cell's code as a str, not {type(source).__name__} ({_short(source)})")
    if namespace is not None and not isinstance(namespace, dict):
        raise TypeError(f"namespace: a dict of the names the cell sees (e.g. globals()), not "
                        f"{type(namespace).__name__} ({_short(namespace)})")


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _execute(source: str, namespace: dict, opts: RunOptions, filename: Optional[str], header: Optional[str],
             sources: Optional[dict[str, str]], execution_count: Optional[int],
             progress: Optional[RunProgress] = None) -> CellRun:
    import torch

    settings = opts.settings
    filename = filename or f"<ipycompile-cell-{next(SESSION.counter)}>"

    profile = new_profile(settings, observe=opts.observe, label=opts.label, fresh=opts.fresh)
    if opts.observe:  # the cell as ordinary code, once, under the capture
        cell = plain_cell(source, namespace, filename=filename, header=header)
        run = measure(Target(cell, cell, lambda value: value), opts, profile)
        report = dataclasses.replace(run.report, sources={**run.report.sources, **(sources or {})})
        if opts.record:
            _history.record(report, execution_count=execution_count)
        return CellRun(run.value, report, run.error, None, run.records)

    cf_key = (source, header, id(namespace), settings.key())
    reused = cf_key in SESSION.compiled and not opts.fresh
    if reused:
        cf, compiled = SESSION.compiled[cf_key]
    else:
        cf = make_cell_function(source, namespace, filename=filename, header=header)
        compiled = torch.compile(cf.fn, **settings.compile_kwargs())
        missing = [name for name in cf.read_first if name not in namespace]
        if missing:  # Dynamo gives up on this code for good: the next run gets a new function
            profile.notes.append(
                f"{_names(missing)} did not exist when the cell started and the cell reads "
                f"{'it' if len(missing) == 1 else 'them'} before assigning: torch's Dynamo cannot compile a frame "
                "that reads back a global it created, so this run may have run the cell uncompiled; "
                "run the cell again to compile it")
        else:
            SESSION.compiled[cf_key] = (cf, compiled)
    profile.reused_compiled_code = reused

    def reference() -> Any:  # the cell again, eagerly, its inputs upcast to float64 (the output check's reference)
        ns64 = upcast_namespace(namespace, referenced_names(cf.fn.__code__))
        cf64 = make_cell_function(source, ns64, filename=f"<ipycompile-fp64-{next(SESSION.counter)}>", header=header)
        return _snapshot(cf64, cf64.fn())

    copy = _copy_tensors if settings.uses_cudagraphs() else None
    run_compiled, run_eager = compiled, cf.fn
    if cf.read_first:  # each call after the first starts from the namespace the first call started from
        before = namespace_state(cf)
        run_compiled, run_eager = _after(before, compiled), _after(before, cf.fn)
        profile.notes.append(f"the cell reads {_names(cf.read_first)} before assigning them: each call after the "
                             "first (warm-up, timing, eager) starts from the namespace as it was before the cell")
    watch = Watch(cf.fn.__code__, namespace, source)  # what the first call changes in place (a training step)
    first = _first_state(cf, source, namespace) if opts.verify_fixes else None  # the fixes are tried from it

    def state() -> Callable[[], None]:  # after the first call: what puts the namespace and its objects back
        names, kept = namespace_state(cf, copy), watch.keep()
        if kept.restored or kept.not_restored:
            profile.kept = KeptState(kept.restored, kept.not_restored)
        if kept.restored:
            profile.notes.append(f"{_names(kept.restored)}: changed in place by the first call, and put back as it left "
                                 f"{'it' if len(kept.restored) == 1 else 'them'} after warm-up, timing and the eager "
                                 "comparison (which ran the cell again): you continue as after one plain run")

        def restore() -> None:
            names()
            kept.restore()

        return restore

    target = Target(run_compiled, run_eager, lambda value: _snapshot(cf, value), lambda: placeholders(cf),
                    reference, state)
    run = measure(target, opts, profile, reused_kernels=_reuse.kernels_for(cf_key) if reused else (),
                  progress=progress)
    report = dataclasses.replace(run.report, sources={**run.report.sources, **(sources or {})})
    profile.caches = _cache_summary(report, reused and report.compiled_nothing, opts.fresh)
    if reused and not report.compiled_nothing:
        profile.notes.append("the cell was unchanged, but torch recompiled: a guard failed (see Recompiles)")
    if reused:  # the diagnosis of the compiled code that ran, from the run that compiled it
        report = _reuse.diagnosis_for(cf_key, _reuse.with_earlier_guards(cf_key, report))
    diagnosed = report
    pending = None
    if opts.verify_fixes and opts.verify_later:  # tried by CellRun.verify(), once the report is shown
        unverified, report = report, _pending_verification(report, run.error, opts)
        if report is not unverified:
            def pending() -> CompileReport:
                try:
                    verified = _verify_fixes(unverified, run.error, cf, source, header, namespace, opts, first)
                except KeyboardInterrupt:  # the cell's own run is done: its report stays, the fixes untried
                    verified = dataclasses.replace(unverified, fix_verification=FixVerification(
                        budget_s=report.fix_verification.budget_s,
                        not_verified="stopped (interrupted) while the fixes were tried; your state was put back"))
                if row is not None:
                    row["report"] = verified
                return verified
    elif opts.verify_fixes:  # each suggested fix tried on the cell, in a scratch compile (run.verify)
        (progress or NO_PROGRESS).phase(VERIFY)
        report = _verify_fixes(report, run.error, cf, source, header, namespace, opts, first)
    row = _history.record(report, execution_count=execution_count) if opts.record else None
    where = f"run {row['run']}" + (f", In [{execution_count}]" if execution_count else "") if row else "an earlier run"
    _reuse.remember(cf_key, diagnosed, where)
    return CellRun(run.value, report, run.error, compiled, run.records, pending)


def _pending_verification(report: CompileReport, error: Optional[BaseException], opts: RunOptions) -> CompileReport:
    """``report`` saying that its fixes are being tried (``FixVerification.pending``), when it has a
    fix with code to try and the cell did not raise; else ``report`` itself (nothing to try later)."""
    from ..report import FixVerification
    from .verify import DEFAULT_BUDGET_S, has_fix_to_try

    if error is not None or not has_fix_to_try(report):
        return report
    budget = opts.verify_budget_s if opts.verify_budget_s is not None else DEFAULT_BUDGET_S
    return dataclasses.replace(report, fix_verification=FixVerification(budget_s=budget, pending=True))


def _first_state(cf: CellFunction, source: str, namespace: dict) -> Any:
    from .verify import before_first_call

    return before_first_call(cf, source, namespace)


def _verify_fixes(report: CompileReport, error: Optional[BaseException], cf: CellFunction, source: str,
                  header: Optional[str], namespace: dict, opts: RunOptions, first: Any = None) -> CompileReport:
    from ..report import FixVerification
    from .verify import DEFAULT_BUDGET_S, verify_fixes

    budget = opts.verify_budget_s if opts.verify_budget_s is not None else DEFAULT_BUDGET_S
    if error is not None:
        return dataclasses.replace(report, fix_verification=FixVerification(
            budget_s=budget, not_verified=f"the cell raised {type(error).__name__}: verify its fixes once it runs"))
    report = verify_fixes(report, cf, source, header, namespace, opts.settings, budget_s=budget, first=first)
    if report.profile is not None and report.fix_verification is not None:  # the diagnosed report's profile is kept
        profile = copy.copy(report.profile)
        profile.notes = [*profile.notes, report.fix_verification.text]
        report = dataclasses.replace(report, profile=profile)
    return report


def _after(restore: Callable[[], None], fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` called after ``restore()``, except the first time (the first call starts where it is)."""
    first = [True]

    def call() -> Any:
        if first[0]:
            first[0] = False
        else:
            restore()
        return fn()

    return call


def _names(names: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def run_cell(source: str, namespace: Optional[dict] = None, **kwargs: Any) -> CellRun:
    """Run ``source`` as ``%%compile`` would, from plain Python; see :func:`execute` for the options.

    If the cell raises, the exception propagates after the run is recorded,
    with the partial report attached as ``exc.ipycompile_report``.
    """
    run = execute(source, namespace, **kwargs)
    if run.error is not None:
        with contextlib.suppress(Exception):  # an exception class with __slots__ takes no attribute
            run.error.ipycompile_report = run.report  # type: ignore[attr-defined]
        raise run.error
    return run


def reset(*, history: bool = False) -> None:
    """Reset Dynamo (all compiled code) and forget compiled cells; with ``history``, clear it too."""
    import torch

    torch._dynamo.reset()
    SESSION.clear(history=history)
