"""A run's progress as plain data: what :mod:`ipycompile.run.progress` hands to the views.

:class:`Status` is what a run is doing now (or, with ``final``, what it took);
:class:`SweepPoint` where a sweep is. The phase names below are the run layer's phases, in the
order a run goes through them; while torch compiles, a status names torch's step instead
(:data:`ipycompile.capture.phases.PHASES`). The views (:mod:`ipycompile.views.progress`)
render it; nothing here imports torch, IPython or a view.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

# the run layer's phases, in the order a run goes through them
START_UP = "start-up"
FIRST_CALL = "first call"
WARM_UP = "warm-up"
TIMING = "timing"
KERNEL_PROFILE = "kernel profile"
EAGER = "eager comparison"
REPORT = "building the report"
VERIFY = "verifying fixes"
SWEEP_WARM_START = "one-time start-up"
#: torch compiling between the steps it times (inside a frame's compile, outside any mapped span)
COMPILING = "compiling"


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """Where a sweep is: point ``index`` (from 0) of ``total``, its label and parameters, an
    estimate of the seconds left (None until a point is done; it counts down while the point
    runs), the points failed so far."""

    index: int
    total: int
    label: str = ""
    params: tuple[tuple[str, str], ...] = ()  # (name, repr of the value)
    remaining_s: Optional[float] = None
    point_s: Optional[float] = None  # the estimate for this point alone (in remaining_s)
    failed: int = 0
    warm_start: bool = False  # paying one-time start-up before the first point
    title: str = "sweep"


@dataclasses.dataclass(frozen=True)
class Status:
    """What a run is doing now. ``phase`` is the run's phase (:data:`FIRST_CALL`, :data:`TIMING`,
    ...) or, while torch compiles, torch's step (``"Dynamo tracing"``, ``"Autotuning"``, ...:
    :data:`ipycompile.capture.phases.PHASES`), with ``detail`` (the op being autotuned) and
    ``done`` / ``total`` (its choices). ``elapsed_s``: since the run (or sweep) started;
    ``phase_s``: since this phase started. ``final``: the run is over; ``took`` the seconds of
    each phase that took any, in order, and ``outcome`` (``"done"``, ``"stopped"``, ``"failed"``)."""

    phase: str
    detail: str = ""
    elapsed_s: float = 0.0
    phase_s: float = 0.0
    done: Optional[int] = None
    total: Optional[int] = None
    run_phase: str = ""  # the run layer's phase under a compile step (FIRST_CALL, WARM_UP, ...)
    point: Optional[SweepPoint] = None
    final: bool = False
    took: tuple[tuple[str, float], ...] = ()
    outcome: str = ""
