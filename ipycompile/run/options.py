"""One run's options, built and validated once: what ``%%compile``'s arguments and
``run_cell``'s keywords mean.

:meth:`RunOptions.build` takes every option by name (the magic's parsed arguments, or
the Python call's keywords), checks them (a ``ValueError`` naming the option, the value
and what is allowed), and returns one frozen object that ``execute``, ``measure``,
``sweep`` and ``sweep_cell`` read; a variant (a sweep's untimed warm start) is
``options.replace(...)``. The names are declared once, as the fields of :class:`RunOptions`
and :class:`CompileSettings` (:data:`OPTION_NAMES`); the public calls take them as keywords
(``**options``) and name none of them in their own signatures, and the magic's flags are
checked against them by the tests.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Optional

from .settings import CompileSettings, make_settings


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options of one run. Their names are the fields of :class:`CompileSettings` (``mode``,
    ``backend``, ``dynamic``, ``fullgraph``, ``options``: what ``torch.compile`` is given) and the
    fields below: :data:`OPTION_NAMES` is derived from both, and :meth:`build` takes exactly
    those keywords, so an option is declared once, here (the magic's flags are checked against
    it by the tests)."""

    settings: CompileSettings
    runs: Optional[int] = None  # timed calls (None: auto-ranged)
    warmup: Optional[int] = None  # warm-up calls (None: the settings' warmup_calls)
    fresh: bool = False  # Dynamo reset and fresh Inductor caches
    compare_eager: bool = False
    observe: bool = False
    profile_kernels: bool = False
    memory_timeline: bool = False
    trace_dir: Optional[str] = None
    label: str = ""
    record: bool = True  # add a row to the history
    verify_fixes: bool = False  # try each suggested fix on the cell in a scratch compile (run.verify)
    verify_budget_s: Optional[float] = None  # seconds for it (None: run.verify.DEFAULT_BUDGET_S)
    # with verify_fixes: the run returns at once, its report saying the fixes are being tried; CellRun.verify()
    # tries them (a notebook's default: the report shows first, then updates in place)
    verify_later: bool = False
    budget_s: Optional[float] = None  # ceiling on the run-time measurement (None: RUN_TIME_BUDGET_S)

    @classmethod
    def build(cls, *, devices: Optional[Callable[[], set[str]]] = None, **chosen: Any) -> "RunOptions":
        """Validate every option once; ``chosen`` are :data:`OPTION_NAMES` keywords (an unknown
        one is a ``TypeError`` naming it). ``devices``: the devices the code's tensors are on
        (called only with ``profile_kernels``, which then compiles C++ kernels with profiling on
        where CPU kernels can come; see :func:`~ipycompile.run.kernel_times.kernel_profile_options`).
        Bad settings raise :class:`~ipycompile.run.settings.SettingsError`, other bad options a
        ``ValueError`` (or, for a value of the wrong type, a ``TypeError``) naming the option."""
        unknown = sorted(set(chosen) - set(OPTION_NAMES))
        if unknown:
            raise TypeError(f"unknown option {unknown[0]!r}; the options are {', '.join(OPTION_NAMES)}")
        compile_args = {k: chosen.pop(k) for k in _SETTINGS_NAMES if k in chosen}
        run = {f.name: f.default for f in dataclasses.fields(cls) if f.name != "settings"}
        run.update(chosen)
        if run["profile_kernels"] and run["observe"]:
            raise ValueError("--profile-kernels: not with --observe (the cell runs once, as ordinary code)")
        if run["memory_timeline"] and run["observe"]:
            raise ValueError("--memory-timeline: not with --observe (the cell runs once, as ordinary code)")
        if run["memory_timeline"]:
            import torch

            if not torch.cuda.is_available():
                raise ValueError("--memory-timeline: needs CUDA (it records the CUDA caching allocator's history); "
                                 "CUDA is not available here")
        if run["profile_kernels"]:
            from .kernel_times import kernel_profile_options

            compile_args["options"] = kernel_profile_options(
                compile_args.get("options"), compile_args.get("backend"),
                **({"devices": devices()} if devices else {}))
        settings = make_settings(**compile_args)
        check_counts(run["runs"], run["warmup"])
        budget = run["budget_s"]
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0):
            raise ValueError(f"--budget: {budget!r} is not allowed; give the seconds the timing may take, a number > 0")
        label = "" if run["label"] is None else run["label"]
        if not isinstance(label, str):
            raise TypeError(f"label: a str (the run's tag in the history), not {type(label).__name__} ({label!r:.60})")
        trace_dir = run["trace_dir"]
        if trace_dir is not None:
            if not isinstance(trace_dir, (str, os.PathLike)):
                raise TypeError(f"trace_dir: a folder path (str or os.PathLike), not {type(trace_dir).__name__} "
                                f"({trace_dir!r:.60})")
            trace_dir = os.fspath(trace_dir)
            if not isinstance(trace_dir, str):
                raise TypeError(f"trace_dir: a folder path as text, not {type(trace_dir).__name__}")
            check_trace_dir(trace_dir)
        check_verify(run["verify_fixes"], run["verify_budget_s"], run["observe"])
        if run["verify_later"] and not run["verify_fixes"]:
            raise ValueError("verify_later: only with verify_fixes (it defers trying the fixes until the report is shown)")
        if run["verify_budget_s"] is not None:
            run["verify_budget_s"] = float(run["verify_budget_s"])
        flags = {k: bool(v) for k, v in run.items() if isinstance(_DEFAULTS[k], bool)}
        return cls(settings=settings, **{**run, **flags, "label": label, "trace_dir": trace_dir})

    @classmethod
    def given(cls, run_options: Optional["RunOptions"], chosen: dict[str, Any], *, where: str,
              devices: Optional[Callable[[], set[str]]] = None) -> "RunOptions":
        """The options of a call that takes them built (``run_options``) or as :data:`OPTION_NAMES`
        keywords (``chosen``, built here by :meth:`build`), not both (a ``TypeError`` naming ``where``)."""
        if run_options is None:
            return cls.build(**chosen, devices=devices)
        if chosen:
            raise TypeError(f"{where}: give the options as run_options or as keywords, not both ({sorted(chosen)[0]})")
        return run_options

    def replace(self, **changes: Any) -> "RunOptions":
        return dataclasses.replace(self, **changes)

    def warm_start(self) -> "RunOptions":
        """A sweep's untimed warm start: one call, nothing but the compile (no eager, no kernel
        profile, no memory timeline, no history row), with the same settings."""
        return self.replace(runs=1, warmup=0, compare_eager=False, profile_kernels=False, memory_timeline=False,
                            record=False)


_SETTINGS_NAMES = tuple(f.name for f in dataclasses.fields(CompileSettings))
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunOptions) if f.name != "settings"}

#: every option's name: :class:`CompileSettings`' fields, then :class:`RunOptions`' own
OPTION_NAMES = _SETTINGS_NAMES + tuple(_DEFAULTS)


def check_counts(runs: Optional[int], warmup: Optional[int]) -> None:
    """``runs`` >= 1 and ``warmup`` >= 0 when given; a ``ValueError`` naming the option otherwise."""
    for arg, value, low in (("--runs", runs, 1), ("--warmup", warmup, 0)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise ValueError(f"{arg}: {value!r} is not allowed; give a whole number >= {low}")


def check_trace_dir(trace_dir: str) -> None:
    """A ``ValueError`` naming the directory when a trace log cannot be written there (nothing runs)."""
    try:
        os.makedirs(trace_dir, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--trace-dir {trace_dir!r}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(trace_dir, os.W_OK):
        raise ValueError(f"--trace-dir {trace_dir!r}: not writable")


def check_verify(verify_fixes: Any, budget_s: Any, observe: bool) -> None:
    """``verify_fixes`` a bool, ``verify_budget_s`` a number of seconds > 0 (with ``verify_fixes``), not
    with ``observe``; a ``ValueError`` naming the option otherwise."""
    if not isinstance(verify_fixes, bool):
        raise ValueError(f"--verify-fixes: {verify_fixes!r} is not allowed; give True or False")
    if budget_s is not None:
        if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0 \
                or budget_s == float("inf"):
            raise ValueError(f"--verify-budget: {budget_s!r} is not allowed; give a number of seconds > 0")
        if not verify_fixes:
            raise ValueError("--verify-budget: only with --verify-fixes (it bounds the time spent verifying fixes)")
    if verify_fixes and observe:
        raise ValueError("--verify-fixes: not with --observe (the cell runs as ordinary code; fixes are verified on "
                         "a compiled cell)")
