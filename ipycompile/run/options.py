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
import os
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
        label: Optional[str] = "",
        record: bool = True,
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
        label = "" if label is None else label
        if not isinstance(label, str):
            raise TypeError(f"label: a str (the run's tag in the history), not {type(label).__name__} ({label!r:.60})")
        if trace_dir is not None:
            if not isinstance(trace_dir, (str, os.PathLike)):
                raise TypeError(f"trace_dir: a folder path (str or os.PathLike), not {type(trace_dir).__name__} "
                                f"({trace_dir!r:.60})")
            trace_dir = os.fspath(trace_dir)
            if not isinstance(trace_dir, str):
                raise TypeError(f"trace_dir: a folder path as text, not {type(trace_dir).__name__}")
            check_trace_dir(trace_dir)
        return cls(settings, runs, warmup, bool(fresh), bool(compare_eager), bool(observe), bool(profile_kernels),
                   bool(memory_timeline), trace_dir, label, bool(record))

    def replace(self, **changes: Any) -> "RunOptions":
        return dataclasses.replace(self, **changes)


#: the keyword arguments :meth:`RunOptions.build` takes (the rest of a call's are the cell's)
OPTION_NAMES = ("mode", "backend", "dynamic", "fullgraph", "options", "runs", "warmup", "fresh", "compare_eager",
                "observe", "profile_kernels", "memory_timeline", "trace_dir", "label", "record")


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
