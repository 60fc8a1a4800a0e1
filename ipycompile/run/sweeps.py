"""Sweeps: one honest compile per point of a parameter grid, as a table (its DataFrame in ``.df``).

A sweep answers questions such as "how do compile time and memory grow with
the trip count, for a Python loop and for ``scan``?". Every point is compiled
from scratch (``torch._dynamo.reset()`` and fresh, temporary Inductor caches),
profiled like any ``%%compile`` run, and recorded in the history with each
parameter in a column of its own.

* :func:`sweep` sweeps Python functions (``{"loop": f, "scan": g}``);
  :func:`sweep_cell` sweeps a cell's code with the parameters bound as
  notebook names (``%%compile --sweep NAME=v1,v2``).
* One-time process costs are paid before the first point: each function (or
  the cell) is compiled and called once at the first point, untimed, so the
  first point is not inflated by start-up (imports, compiler checks, Triton
  start-up, the first use of a higher-order op); what that cost is reported
  separately (``df.attrs["warm_up_s"]``).
* A failing point is recorded with status ``failed`` (a compile failure) or
  ``error`` (the code raised) and its reason, and the
  sweep goes on; Ctrl-C stops it, keeping the points done so far.
* A report keeps its point's parameters (``report.profile.settings.params``) in a form
  JSON holds, so that it saves and loads: Python literals as themselves, torch
  dtypes and devices as tagged strings (``"torch.float32"``,
  ``"torch.device('cuda:0')"``) that :func:`sweep_params` turns back into
  torch's objects, anything else as its ``repr`` (with a note saying so).
* :class:`Progress` tracks which point runs, its phase (each point's run reports into the
  same :class:`~ipycompile.run.progress.RunProgress`), the time elapsed and an estimate of
  what remains, and hands the status to a callback at least every second (the views'
  live status line, registered when ``ipycompile`` is imported).
"""

from __future__ import annotations

import ast
import itertools
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from . import history_log as _history
from .cell import check_name
from .kernel_times import cell_devices
from .options import OPTION_NAMES, RunOptions
from .progress import SWEEP_WARM_START, ProgressCallback, RunProgress, SweepPoint, tracker
from .view_hooks import register_table_view, table_view as _table_view  # noqa: F401 (the registry: see .view_hooks)
from .pipeline import CellRun, Target, error_text, measure, new_profile
from .runner import execute

if TYPE_CHECKING:
    import pandas as pd

_sweep_ids = itertools.count(1)

# Columns a sweep's DataFrame shows first, after its parameters.
_FIRST = ("sweep", "label", "status", "error", "compile_s", "run_median_s", "run_iqr_s", "peak_device_bytes", "peak_host_bytes")


class SweepResult:
    """A sweep's points: shown as a formatted table (units, noisy marks, only the columns
    that vary); the full DataFrame, one row per point, is ``.df``. Indexing and the
    DataFrame's attributes reach ``.df`` (``result["compile_s"]``, ``result.attrs``), so
    code written for the DataFrame result goes on working."""

    def __init__(self, df: "pd.DataFrame") -> None:
        self.df = df

    def _repr_html_(self) -> str:
        render = _table_view()
        return render(self.df, "html") if render is not None else self.df._repr_html_()

    def __repr__(self) -> str:
        render = _table_view()
        return render(self.df, "text") if render is not None else repr(self.df)

    def __getitem__(self, key: Any) -> Any:
        return self.df[key]

    def __len__(self) -> int:
        return len(self.df)

    def __getattr__(self, name: str) -> Any:
        if name == "df" or name.startswith("__"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.df, name)


class SweepError(ValueError):
    """A bad sweep specification: the message names the argument, the value and what is allowed."""


_DEVICE_TAG = re.compile(r"^torch\.device\('([^']*)'\)$")
_DTYPE_TAG = re.compile(r"^torch\.(\w+)$")


def _literal(value: Any) -> bool:
    """Whether JSON holds ``value`` and reads it back equal (tuples read back as lists)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _literal(v) for k, v in value.items())
    return False


def stored_params(point: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(params as a report keeps them, notes)``: each value in a form that survives JSON
    (see the module's docstring); a note for each value kept only as its ``repr``."""
    import torch

    params: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in point.items():
        if _literal(value):
            params[name] = list(value) if isinstance(value, tuple) else value
        elif isinstance(value, torch.dtype):
            params[name] = str(value)  # "torch.float32"
        elif isinstance(value, torch.device):
            params[name] = f"torch.device({str(value)!r})"
        else:
            params[name] = repr(value)
            notes.append(f"sweep parameter {name!r} is kept as its repr ({type(value).__name__} is not a value "
                         "a saved report can hold)")
    return params, notes


def param_value(value: Any) -> Any:
    """A stored sweep parameter as the run layer uses it: tagged dtypes and devices as torch's objects."""
    import torch

    if isinstance(value, str):
        m = _DEVICE_TAG.match(value)
        if m:
            return torch.device(m.group(1))
        m = _DTYPE_TAG.match(value)
        if m and isinstance(getattr(torch, m.group(1), None), torch.dtype):
            return getattr(torch, m.group(1))
    return value


def sweep_params(report: Any) -> dict[str, Any]:
    """The sweep parameters of a report (a saved one too), with dtypes and devices as torch's objects."""
    profile = getattr(report, "profile", None)
    return {k: param_value(v) for k, v in (profile.settings.params if profile is not None else {}).items()}


def _keep_params(profile: Any, point: Mapping[str, Any]) -> None:
    profile.settings.params, notes = stored_params(point)
    profile.notes.extend(notes)


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """``NAME=v1,v2,...`` with each value a Python literal (a bare word is a string)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name or not raw.strip():
        raise SweepError(f"--sweep: {text!r} is not allowed; expected NAME=v1,v2,... e.g. --sweep chunks=2,4,8")
    try:
        check_name("--sweep", name, "--sweep chunks=2,4,8")
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    values = []
    for item in _split_values(raw):
        try:
            values.append(ast.literal_eval(item))
        except (ValueError, SyntaxError):
            if not item.replace("_", "").replace("-", "").replace(".", "").isalnum():
                raise SweepError(
                    f"--sweep: value {item!r} of {name} is not allowed; give Python literals (2, 0.5, 'text') or bare words"
                ) from None
            values.append(item)
    return name, values


def _split_values(raw: str) -> list[str]:
    """Split on top-level commas (a tuple or string value may hold commas)."""
    items, depth, quote, cur = [], 0, "", ""
    for ch in raw:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        cur += ch
    items.append(cur.strip())
    if any(not item for item in items):
        raise SweepError(f"--sweep: {raw!r} has an empty value; separate values with single commas, e.g. 2,4,8")
    return items


def grid(params: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the parameters' values, the first parameter varying slowest."""
    if not params:
        raise SweepError("sweep: give at least one parameter, e.g. chunks=[2, 4, 8]")
    clashes = sorted(set(params) & (set(_history.COLUMNS) | {"sweep", "error"}))
    if clashes:
        raise SweepError(f"sweep: parameter {clashes[0]!r} clashes with a history column of that name; rename it")
    for name, values in params.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise SweepError(f"sweep: {name}={values!r} is not allowed; give a list of values, e.g. {name}=[2, 4, 8]")
        if not list(values):
            raise SweepError(f"sweep: {name} has no values; give at least one")
    names = list(params)
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(v) for v in params.values()))]


class Progress:
    """Which point of a sweep runs, the time elapsed, and an estimate of what remains.

    It draws nothing: it keeps a :class:`~ipycompile.run.progress.RunProgress` (the phase
    machine each point's run reports into) whose statuses carry the point
    (:class:`~ipycompile.report.progress.SweepPoint`), handed to ``show(status)``, the callback
    given (``progress=`` of :func:`sweep`), else the registered view (a notebook's live status
    line, a terminal's line). ``enabled=False`` shows nothing.
    """

    def __init__(self, total: int, *, enabled: bool = True, title: str = "sweep",
                 show: Optional[ProgressCallback] = None) -> None:
        self.total, self.enabled, self.title = total, enabled, title
        self.started = time.perf_counter()
        self.durations: list[tuple[str, float]] = []  # (label, seconds) of the points done
        self.failed = 0
        self.current: Optional[SweepPoint] = None
        self.tracker: Optional[RunProgress] = tracker(show if show is not None else True, "sweep") if enabled else None

    def __enter__(self) -> "Progress":
        self.started = time.perf_counter()
        if self.tracker is not None:
            self.tracker.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.tracker is not None:
            self.tracker.__exit__(*exc)

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def remaining_s(self, labels_left: Sequence[str]) -> Optional[float]:
        """Estimate: each remaining point costs the mean of the points done with its label (else of all)."""
        if not self.durations:
            return None
        return sum(self._point_s(lb) for lb in labels_left)

    def _point_s(self, label: str) -> float:
        same = [d for lb, d in self.durations if lb == label] or [d for _, d in self.durations]
        return sum(same) / len(same)

    def start(self, index: int, label: str, point: Mapping[str, Any], labels_left: Sequence[str]) -> SweepPoint:
        self.current = SweepPoint(index=index, total=self.total, label=label,
                                  params=tuple((k, repr(v)) for k, v in point.items()),
                                  remaining_s=self.remaining_s(labels_left),
                                  point_s=self._point_s(label) if self.durations else None,
                                  failed=self.failed, title=self.title)
        if self.tracker is not None:
            self.tracker.at_point(self.current)
        return self.current

    def done(self, label: str, seconds: float, ok: bool) -> None:
        self.durations.append((label, seconds))
        self.failed += 0 if ok else 1

    def warm_up(self, label: str) -> None:
        self.current = SweepPoint(index=0, total=self.total, label=label, warm_start=True, title=self.title)
        if self.tracker is not None:
            self.tracker.at_point(self.current)

    def finish(self, points_done: int, outcome: str, warm_up_s: Mapping[str, float]) -> None:
        """The last status: the points done, the failures, the one-time start-up paid first."""
        self.current = SweepPoint(index=points_done, total=self.total, failed=self.failed, title=self.title)
        if self.tracker is not None:
            self.tracker.finish(outcome, took=tuple((f"{SWEEP_WARM_START} ({lb})" if lb else SWEEP_WARM_START, s)
                                                    for lb, s in warm_up_s.items()), point=self.current)


def _run_points(
    points: list[dict[str, Any]],
    labels: list[str],
    run_point: Callable[[str, dict[str, Any], bool, Optional[RunProgress]], CellRun],
    *,
    progress: "bool | ProgressCallback",
    record: bool,
    warm_start: bool,
    execution_count: Optional[int] = None,
    title: str = "sweep",
) -> SweepResult:
    """Run every (point, label), warm start first; one row per run, failures included."""
    import pandas as pd

    sweep_id = next(_sweep_ids)
    jobs = [(point, label) for point in points for label in labels]
    with Progress(len(jobs), enabled=bool(progress), title=title,
                  show=progress if callable(progress) else None) as bar:
        return _run_jobs(points, labels, jobs, run_point, bar, sweep_id, record=record, warm_start=warm_start,
                         execution_count=execution_count, title=title)


def _run_jobs(points: list[dict[str, Any]], labels: list[str], jobs: list[tuple[dict[str, Any], str]],
              run_point: Callable[[str, dict[str, Any], bool, Optional[RunProgress]], CellRun], bar: Progress,
              sweep_id: int, *, record: bool, warm_start: bool, execution_count: Optional[int],
              title: str) -> SweepResult:
    import pandas as pd

    warm_up_s: dict[str, float] = {}
    if warm_start:
        for label in labels:
            bar.warm_up(label)
            t0 = time.perf_counter()
            warm = run_point(label, points[0], True, bar.tracker)
            warm_up_s[label] = time.perf_counter() - t0
            if isinstance(warm.error, KeyboardInterrupt):
                raise warm.error
    rows: list[dict[str, Any]] = []
    interrupted: Optional[BaseException] = None
    for i, (point, label) in enumerate(jobs):
        bar.start(i, label, point, [lb for _, lb in jobs[i:]])
        t0 = time.perf_counter()
        run = run_point(label, point, False, bar.tracker)
        if label in warm_up_s and not any(lb == label for lb, _ in bar.durations):  # this label's first point
            run.report.profile.notes.append(
                f"sweep: one-time start-up was paid before this first point ({warm_up_s[label]:.2f} s: an untimed "
                "compile and run at this point), so it is not in compile_s"
            )
        ok = run.error is None and not run.report.failures
        bar.done(label, time.perf_counter() - t0, ok)
        extra = {"sweep": sweep_id, **point}
        if record:
            row = _history.record(run.report, execution_count=execution_count, **extra)
        else:
            row = {**_history.row_of(run.report, execution_count=execution_count), **extra}
        rows.append(row)
        if isinstance(run.error, KeyboardInterrupt):
            interrupted = run.error
            break
    df = pd.DataFrame(rows)
    if not df.empty:
        names = list(points[0])
        first = names + [c for c in _FIRST if c in df.columns and c not in names]
        df = df[first + [c for c in df.columns if c not in first]]
    df.attrs.update(params=list(points[0]), labels=list(labels), warm_up_s=warm_up_s, sweep=sweep_id)
    bar.finish(len(rows), "stopped" if interrupted else "done", warm_up_s)
    if interrupted is not None:
        interrupted.ipycompile_sweep = SweepResult(df)  # type: ignore[attr-defined]
        raise interrupted
    return SweepResult(df)


def sweep(
    fns: Mapping[str, Callable] | Callable,
    *,
    make_args: Optional[Callable[..., Any]] = None,
    params: Optional[Mapping[str, Sequence[Any]]] = None,
    warm_start: bool = True,
    progress: "bool | ProgressCallback" = True,
    **keywords: Any,
) -> SweepResult:
    """Compile and profile each function at each point of a parameter grid; one row per run.

    ``fns`` maps labels to functions (or is one function, labelled by its
    name). Keywords named like a run option (:data:`~ipycompile.run.options.OPTION_NAMES`:
    ``mode``, ``backend``, ``options``, ``runs``, ``compare_eager``, ``profile_kernels``, ...)
    are options, meaning what they mean for ``%%compile``; the other keywords are parameters
    (``chunks=[2, 4, 8]``; several make a grid), and a ``params`` dict holds parameters whose
    names clash with an option or this function's own arguments. At each point,
    ``make_args(**point)`` gives the call's arguments (a tuple, a dict of keyword arguments,
    or one value); without it the function is called as ``fn(**point)``. Arguments are made
    outside the timed calls. Every point is compiled from scratch (Dynamo reset, fresh
    Inductor caches); ``observe`` and ``label`` do not apply (each function's label is its key).

    Returns a :class:`SweepResult`: shown as a formatted table; its ``.df`` is the
    DataFrame: the parameters, ``label``, ``status`` (``ok``,
    ``failed`` for a compile failure, ``error`` when the code raised),
    ``error`` (the reason), the profile's figures and the
    ``report``. ``df.attrs`` holds the parameter names and the one-time
    start-up paid before the first point (``warm_up_s``). ``progress``: True (the
    registered view: a live status line in a notebook, one updating line on a terminal, a line
    per point on stderr elsewhere), False, or a callback ``show(status)`` that receives each
    :class:`~ipycompile.report.progress.Status` (the point, its phase, the time elapsed and
    an estimate of what is left; the last one ``final``).
    """
    import torch

    chosen = {k: keywords.pop(k) for k in OPTION_NAMES if k in keywords}
    grid_params = keywords
    for name in ("observe", "label"):
        if chosen.get(name):
            raise SweepError(f"sweep: {name} does not apply to a sweep (each point compiles afresh; "
                             "each function's label is its key in fns)")
    chosen.pop("label", None)
    chosen["fresh"] = True
    record = chosen.get("record", True)
    opts = RunOptions.build(**chosen)  # as %%compile's options mean
    warm_opts = opts.warm_start()
    settings = opts.settings
    if callable(fns) and not isinstance(fns, Mapping):
        fns = {getattr(fns, "__name__", "fn"): fns}
    if not fns or not all(callable(f) for f in fns.values()):
        raise SweepError("sweep: fns must be a function or a non-empty dict of label -> function")
    both = set(params or {}) & set(grid_params)
    if both:
        raise SweepError(f"sweep: parameter {sorted(both)[0]!r} is given twice (in params and as a keyword)")
    points = grid({**(params or {}), **grid_params})
    if make_args is not None and not callable(make_args):
        raise SweepError(f"sweep: make_args must be a function of the parameters, not {make_args!r}")

    def call_of(fn: Callable, made: Any) -> Callable[[], Any]:
        if make_args is None or isinstance(made, dict):
            return lambda: fn(**made)
        args = made if isinstance(made, tuple) else (made,)
        return lambda: fn(*args)

    def run_point(label: str, point: dict[str, Any], warm: bool, progress: Optional[RunProgress]) -> CellRun:
        fn = fns[label]
        profile = new_profile(settings, label=label, fresh=True)
        _keep_params(profile, point)
        try:
            made = make_args(**point) if make_args is not None else point  # once: compiled and eager share them
        except Exception as exc:  # a failed point, with a report saying why
            from ..report import CompileReport

            profile.error = f"{error_text(exc)} (in make_args)"
            return CellRun(None, CompileReport(profile=profile), exc)
        eager = call_of(fn, made)
        compiled = call_of(torch.compile(fn, **settings.compile_kwargs()), made)
        target = Target(compiled, eager, lambda value: value)
        return measure(target, warm_opts if warm else opts, profile, progress=progress)

    return _run_points(points, list(fns), run_point, progress=progress, record=record, warm_start=warm_start)


def sweep_cell(
    source: str,
    namespace: dict,
    params: Mapping[str, Sequence[Any]],
    *,
    run_options: Optional[RunOptions] = None,
    warm_start: bool = True,
    progress: "bool | ProgressCallback" = True,
    execution_count: Optional[int] = None,
    filename: Optional[str] = None,
    header: Optional[str] = None,
    sources: Optional[dict[str, str]] = None,
    **options: Any,
) -> SweepResult:
    """Run a cell once per grid point, with the parameters bound as names in ``namespace``.

    Each point runs as :func:`ipycompile.run.execute` with ``fresh=True``; the
    namespace's previous values of the parameter names are restored afterwards
    (names that did not exist are removed). The options are ``run_options``, or built
    here from ``options`` (:data:`~ipycompile.run.options.OPTION_NAMES` keywords); ``label``
    names the rows, ``record`` adds them to the history. Returns the sweep's :class:`SweepResult`, as
    :func:`sweep` does.
    """
    run_options = RunOptions.given(run_options, options, where="sweep_cell",
                                   devices=lambda: cell_devices(source, namespace))
    if run_options.observe:
        raise SweepError("--sweep: cannot be combined with --observe; a sweep compiles the cell afresh at each point")
    label, record = run_options.label, run_options.record
    cell = {"filename": filename, "header": header, "sources": sources}
    points = grid(params)
    # each point compiles afresh; its history row is the sweep's (record=False here)
    opts = run_options.replace(fresh=True, record=False)
    warm_opts = opts.warm_start()
    missing = object()
    saved = {name: namespace.get(name, missing) for name in points[0]}

    def run_point(lab: str, point: dict[str, Any], warm: bool, progress: Optional[RunProgress]) -> CellRun:
        namespace.update(point)
        run = execute(source, namespace, run_options=warm_opts if warm else opts, execution_count=execution_count,
                      progress=progress, **cell)
        _keep_params(run.report.profile, point)
        return run

    try:
        return _run_points(
            points, [label], run_point, progress=progress, record=record, warm_start=warm_start,
            execution_count=execution_count,
        )
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value
