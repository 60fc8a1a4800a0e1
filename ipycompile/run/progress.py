"""Progress on a run while it runs: which phase, for how long, how far; it draws nothing.

A run (``%%compile``, :func:`~ipycompile.run.runner.execute`, each point of a sweep) goes
through phases: one-time start-up, the first call (Dynamo tracing, AOTAutograd, Inductor
lowering, autotuning, kernel compilation: the steps torch's own events name as they arrive,
read by :class:`ipycompile.capture.steps.CompileWatcher`; then the compiled code running),
warm-up, timing, the kernel profile, the eager comparison, building the report, verifying
fixes. :class:`RunProgress` is the phase machine: the runner says when a phase starts
(:meth:`RunProgress.phase`), the watcher says which compile step is open
(:meth:`RunProgress.step`), and a ticker thread hands the :class:`Status` to the view's
callback at least every ``tick_s`` seconds (and at once on a change, at most every
``min_gap_s``), so a long compile step or a long first call still shows its time going by.
A sweep's tracker also carries which point runs and an estimate of what is left
(:class:`SweepPoint`). When the run ends, one last status has ``final=True`` and the time
each phase took (``took``), for the view's one line of what it took.

The views register a factory (:func:`register_progress_view`; ``import ipycompile`` registers
:func:`ipycompile.views.progress.progress_view`: a live status line in a notebook, a single
updating line in a terminal). Without one, nothing is shown.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
import time
from typing import Any, Callable, Optional

from ..capture.steps import CompileStep

from ..report.progress import (EAGER, FIRST_CALL, KERNEL_PROFILE, REPORT, START_UP, SWEEP_WARM_START, TIMING,  # noqa: F401
                               VERIFY, WARM_UP, Status, SweepPoint)
from .view_hooks import register_progress_view, view_callback  # noqa: F401 (the registry: see .view_hooks)


ProgressCallback = Callable[[Status], None]


class RunProgress:
    """The phase machine of one run or one sweep (see the module's docstring). A context
    manager: the ticker runs inside the block. Thread-safe: torch's precompile threads
    report steps too."""

    def __init__(self, show: ProgressCallback, *, tick_s: float = 0.25, min_gap_s: float = 0.05) -> None:
        self.show_cb = show
        self.tick_s, self.min_gap_s = tick_s, min_gap_s
        self.started = time.perf_counter()
        self.took: dict[str, float] = {}  # run phase -> seconds, in order of first use
        self.point: Optional[SweepPoint] = None
        self._point_t0 = self.started
        self.shown = 0  # statuses handed to the view
        self._phase, self._phase_t0 = "", self.started
        self._step: Optional[CompileStep] = None
        self._step_t0 = self.started
        self._lock = threading.RLock()
        self._last_show = 0.0
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None
        self._finished = False

    # -- the block ------------------------------------------------------------------
    def __enter__(self) -> "RunProgress":
        if self._ticker is None:
            self.started = self._phase_t0 = self._step_t0 = time.perf_counter()
            context = contextvars.copy_context()  # a kernel's output goes to the cell that runs (its parent)
            self._ticker = threading.Thread(target=context.run, args=(self._tick,), name="ipycompile-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * self.tick_s)
        if not self._finished:
            self.finish("stopped" if isinstance(exc, KeyboardInterrupt) else "failed" if exc is not None else "done")

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            self._emit(force=True)

    # -- what the run says ------------------------------------------------------------
    def phase(self, name: str) -> None:
        """The run enters phase ``name`` (the previous one's time is kept for ``took``)."""
        with self._lock:
            self._close_phase()
            self._phase, self._phase_t0 = name, time.perf_counter()
            self._step = None
        self._emit(force=True)

    def step(self, step: Optional[CompileStep]) -> None:
        """Torch's compile step now (None: no compile step open)."""
        with self._lock:
            if step is not None and (self._step is None or step.phase != self._step.phase):
                self._step_t0 = time.perf_counter()
            self._step = step
        self._emit()

    def at_point(self, point: Optional[SweepPoint]) -> None:
        """A sweep moves to ``point`` (whose run starts with :data:`START_UP`)."""
        with self._lock:
            self._close_phase()
            self._phase, self._phase_t0, self._step = START_UP, time.perf_counter(), None
            self.point, self._point_t0 = point, time.perf_counter()
        self._emit(force=True)

    def finish(self, outcome: str = "done", took: Optional[tuple[tuple[str, float], ...]] = None,
               point: Optional[SweepPoint] = None) -> None:
        """The last status: ``final``, with what each phase took (``took`` says it instead), and
        where a sweep ended (``point``)."""
        with self._lock:
            if self._finished:
                return
            self.point = point if point is not None else self.point
            self._finished = True
            self._stop.set()
            self._close_phase()
            self._phase = ""
            if took is None:
                took = tuple((name, s) for name, s in self.took.items() if s >= 0.005)
            status = Status(phase="", elapsed_s=time.perf_counter() - self.started, took=took, point=self.point,
                            final=True, outcome=outcome)
        self._show(status)

    # -- the status -------------------------------------------------------------------
    def status(self) -> Status:
        with self._lock:
            now = time.perf_counter()
            step, point = self._step, self._point_now(now)
            if step is not None:
                return Status(phase=step.phase, detail=step.detail, elapsed_s=now - self.started,
                              phase_s=now - self._step_t0, done=step.done, total=step.total, run_phase=self._phase,
                              point=point)
            return Status(phase=self._phase, elapsed_s=now - self.started, phase_s=now - self._phase_t0,
                          run_phase=self._phase, point=point)

    def _point_now(self, now: float) -> Optional[SweepPoint]:
        """The sweep's point with what is left counted down: this point's estimate less its time so far
        (never below nothing), plus the points after it."""
        p = self.point
        if p is None or p.remaining_s is None or p.point_s is None:
            return p
        left = p.remaining_s - p.point_s + max(0.0, p.point_s - (now - self._point_t0))
        return dataclasses.replace(p, remaining_s=left)

    def _close_phase(self) -> None:
        if self._phase:
            self.took[self._phase] = self.took.get(self._phase, 0.0) + time.perf_counter() - self._phase_t0

    def _emit(self, force: bool = False) -> None:
        if self._finished:
            return
        now = time.perf_counter()
        if not force and now - self._last_show < self.min_gap_s:
            return  # the ticker shows it soon
        self._show(self.status())

    def _show(self, status: Status) -> None:
        with self._lock:  # one status at a time, in order
            if self._finished and not status.final:
                return
            self._last_show = time.perf_counter()
            self.shown += 1
            try:
                self.show_cb(status)
            except Exception:  # a view's failure never stops the run
                pass


class NoProgress:
    """What the runner talks to when nobody watches: every call does nothing."""

    point = None

    def phase(self, name: str) -> None:
        pass

    def step(self, step: Optional[CompileStep]) -> None:
        pass

    def at_point(self, point: Optional[SweepPoint]) -> None:
        pass


NO_PROGRESS = NoProgress()


def tracker(progress: "bool | ProgressCallback | RunProgress | None", kind: str = "run") -> "RunProgress | None":
    """A new :class:`RunProgress` for ``progress``: True (the registered view), a callback
    ``show(status)``; None for False/None, or where no view is registered."""
    if isinstance(progress, RunProgress):
        return progress
    if progress is None or progress is False:
        return None
    show = progress if callable(progress) else view_callback(kind)
    return RunProgress(show) if show is not None else None
