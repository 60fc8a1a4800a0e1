"""One run's options, built and validated once: what ``%%compile``'s arguments and
``run_cell``'s keywords mean.

:meth:`RunOptions.build` takes every option by name (the magic's parsed arguments, or
the Python call's keywords), checks them (a ``ValueError`` naming the option, the value
and what is allowed), and returns one frozen object that ``execute``, ``measure``,
``sweep`` and ``sweep_cell`` read; a variant (a sweep's untimed warm start) is
``options.replace(...)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from .settings import CompileSettings, make_settings


@dataclasses.dataclass(frozen=True)
class RunOptions:
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

    @classmethod
    def build(
        cls,
        *,
        mode: Optional[str] = None,
        backend: Any = None,
        dynamic: Optional[bool] = None,
        fullgraph: bool = False,
        options: Optional[dict[str, Any]] = None,
        runs: Optional[int] = None,
        warmup: Optional[int] = None,
        fresh: bool = False,
        compare_eager: bool = False,
        observe: bool = False,
        profile_kernels: bool = False,
        memory_timeline: bool = False,
        trace_dir: Optional[str] = None,
        label: str = "",
        record: bool = True,
        verify_fixes: bool = False,
        verify_budget_s: Optional[float] = None,
        devices: Optional[Callable[[], set[str]]] = None,
    ) -> "RunOptions":
        """Validate every option once. ``devices``: the devices the code's tensors are on
        (called only with ``profile_kernels``, which then compiles C++ kernels with
        profiling on where CPU kernels can come; see :func:`~ipycompile.run.kernel_times.kernel_profile_options`).
        Bad settings raise :class:`~ipycompile.run.settings.SettingsError`, other bad
        options a ``ValueError`` naming the option."""
        if profile_kernels and observe:
            raise ValueError("--profile-kernels: not with --observe (the cell runs once, as ordinary code)")
        if memory_timeline and observe:
            raise ValueError("--memory-timeline: not with --observe (the cell runs once, as ordinary code)")
        if memory_timeline:
            import torch

            if not torch.cuda.is_available():
                raise ValueError("--memory-timeline: needs CUDA (it records the CUDA caching allocator's history); "
                                 "CUDA is not available here")
        if profile_kernels:
            from .kernel_times import kernel_profile_options

            options = kernel_profile_options(options, backend, **({"devices": devices()} if devices else {}))
        settings = make_settings(mode=mode, backend=backend, dynamic=dynamic, fullgraph=fullgraph, options=options)
        check_counts(runs, warmup)
        if trace_dir is not None:
            check_trace_dir(trace_dir)
        check_verify(verify_fixes, verify_budget_s, observe)
        return cls(settings, runs, warmup, bool(fresh), bool(compare_eager), bool(observe), bool(profile_kernels),
                   bool(memory_timeline), trace_dir, label, bool(record), bool(verify_fixes),
                   None if verify_budget_s is None else float(verify_budget_s))

    def replace(self, **changes: Any) -> "RunOptions":
        return dataclasses.replace(self, **changes)


#: the keyword arguments :meth:`RunOptions.build` takes (the rest of a call's are the cell's)
OPTION_NAMES = ("mode", "backend", "dynamic", "fullgraph", "options", "runs", "warmup", "fresh", "compare_eager",
                "observe", "profile_kernels", "memory_timeline", "trace_dir", "label", "record", "verify_fixes",
                "verify_budget_s")


def check_counts(runs: Optional[int], warmup: Optional[int]) -> None:
    """``runs`` >= 1 and ``warmup`` >= 0 when given; a ``ValueError`` naming the option otherwise."""
    for arg, value, low in (("--runs", runs, 1), ("--warmup", warmup, 0)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise ValueError(f"{arg}: {value!r} is not allowed; give a whole number >= {low}")


def check_trace_dir(trace_dir: str) -> None:
    """A ``ValueError`` naming the directory when a trace log cannot be written there (nothing runs)."""
    import os

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
