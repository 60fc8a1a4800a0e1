"""What torch is doing right now: its events, as they arrive, read into a :class:`CompileStep`.

A progress line needs the step a compile is in while it is in it, not after. Torch says so
itself, live, in three voices (torch 2.11 and 2.13):

- its structured trace (``torch.__trace``): a ``chromium_event`` when each ``dynamo_timed``
  span begins (``"ph": "B"``) and ends (``"E"``): ``bytecode_tracing``, ``backend_compile``,
  ``GraphLowering.run``, ``{op}_template_autotuning``, ``compile_file``, ...; each name maps to
  a phase the one way the report maps it (:func:`.phases.phase_of`), the innermost open span
  giving the step; ``compilation_metrics`` ends a compile;
- ``torch._inductor.select_algorithm``'s log: "Max autotune selects from %s choices." (the
  total), "Multithreaded precompilation for %d choices ..." and "Precompiling benchmark choice
  %s took %.02fs" (one per choice compiled, from the precompile pool's threads);
- the ``autotuning`` artifact log (``torch._inductor.autotune_process``): "make_run_fn: ..." /
  "benchmark module key: ..." as a choice's benchmark starts, and "InChildProcess %s: load %f,
  create tensor %f, bench %f" when a C++ choice's benchmark is done.

Those messages are known here by their format strings (``record.msg``) and arguments, never by
their formatted text; a message not listed is ignored, so another torch only says less.
Choices torch does not log (extern kernels such as ``_mkl_linear``) count as done when the op's
autotuning span ends.

:class:`CompileWatcher` listens while its block runs: a subscriber of the process's trace
router (:mod:`.routing`: it sees the events of its own thread, like a capture) and a handler on
the two loggers (put back as they were on exit; what they would have printed is still
printed). It calls ``on_step(step)`` at each change, ``None`` when no compile step is open (the
compiled code runs). It keeps nothing: the report is the capture's.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from typing import Any, Callable, Optional

from ..report.progress import COMPILING
from .hooks import pass_on
from .phases import phase_of
from .routing import ROUTER

#: the loggers whose messages say how far autotuning is
AUTOTUNE_LOGGERS = ("torch._inductor.select_algorithm", "torch._inductor.autotune_process.__autotuning")

AUTOTUNING = "Autotuning"

# torch's autotuning messages, by format string -> what they say
_TOTAL = {"Max autotune selects from %s choices."}
_PRECOMPILE_TOTAL = {"Multithreaded precompilation for %d choices using %d worker threads"}
_PRECOMPILED = {"Precompiling benchmark choice %s took %.02fs"}
_BENCH_START = {"make_run_fn: self.kernel_name=%s, self.DLL=%s, args=%s, self.extra_args=%s",
                "make_run_fn: self.kernel_name=%s, self.source_file=%s, self.hash_key=%s, self.DLL=%s, args=%s, "
                "self.extra_args=%s",
                "benchmark module key: %s, path: %s"}
_BENCH_DONE = {"InChildProcess %s: load %f, create tensor %f, bench %f"}

_TEMPLATE_SPAN = re.compile(r"^(?P<op>.+)_template_(?P<what>autotuning|precompiling)$")


@dataclasses.dataclass(frozen=True)
class CompileStep:
    """The step a compile is in: ``phase`` is one of :data:`.phases.PHASES` (``"Dynamo tracing"``,
    ``"AOTAutograd"``, ``"Inductor lowering"``, ``"Autotuning"``, ``"Kernel compilation"``, ...)
    or :data:`COMPILING`; ``detail`` what it works on (the op being autotuned and how far);
    ``done`` / ``total`` the choices of that op benchmarked (or compiled) out of all."""

    phase: str
    detail: str = ""
    done: Optional[int] = None
    total: Optional[int] = None


@dataclasses.dataclass
class _Autotune:
    op: str = ""
    total: Optional[int] = None
    precompile_total: Optional[int] = None
    precompiled: int = 0
    started: int = 0
    benchmarked: int = 0
    precompiling: bool = False


class _LogTap(logging.Handler):
    def __init__(self, watcher: "CompileWatcher") -> None:
        super().__init__(level=logging.DEBUG)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.watcher.heard(record.msg, record.args)
        except Exception:  # a progress line must never break a compile
            pass
        pass_on(record, self.watcher.saved_levels)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


class CompileWatcher:
    """``with CompileWatcher(on_step):`` calls ``on_step(CompileStep | None)`` as torch's events
    arrive (see the module's docstring)."""

    def __init__(self, on_step: Callable[[Optional[CompileStep]], None]) -> None:
        self.on_step = on_step
        self.thread = threading.get_ident()
        self.compile_keys: set = set()
        self.saved_levels: dict[str, int] = {}
        self._saved: dict[str, tuple] = {}
        self._tap = _LogTap(self)
        self._lock = threading.RLock()
        self._open: list[str] = []  # the open spans' names, outermost first
        self._tune = _Autotune()
        self._last: Optional[CompileStep] = None
        self.active = False

    # -- listening --------------------------------------------------------------------
    def __enter__(self) -> "CompileWatcher":
        self.thread = threading.get_ident()
        self.compile_keys = set()
        self._open, self._tune, self._last = [], _Autotune(), None
        for name in AUTOTUNE_LOGGERS:
            logger = logging.getLogger(name)
            self._saved[name] = (logger.level, logger.propagate, list(logger.handlers))
            self.saved_levels[name] = logger.getEffectiveLevel()
            logger.addHandler(self._tap)
            logger.propagate = False  # the tap passes on what would have been printed
            logger.setLevel(logging.DEBUG)
        self.active = True
        ROUTER.open(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.active:
            return
        self.active = False
        ROUTER.close(self)
        for name, (level, propagate, handlers) in self._saved.items():
            logger = logging.getLogger(name)
            logger.handlers[:] = handlers + [h for h in logger.handlers if h not in handlers and h is not self._tap]
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved.clear()
        self.saved_levels.clear()

    # -- torch's trace events (the router calls this on the watcher's thread) ---------
    def deliver(self, metadata: dict, payload: Optional[str], where: tuple) -> None:
        try:
            if "chromium_event" in metadata:
                self._span(payload)
            elif "compilation_metrics" in metadata:  # a compile ended (whatever spans it left open)
                with self._lock:
                    self._open.clear()
                    self._tune = _Autotune()
                self._changed()
        except Exception:  # a progress line must never break a compile
            pass

    def _span(self, payload: Optional[str]) -> None:
        if not payload:
            return
        from ..report.serialize import loads

        event = loads(payload)
        if not isinstance(event, dict) or not isinstance(event.get("name"), str):
            return
        name, ph = event["name"], event.get("ph")
        with self._lock:
            template = _TEMPLATE_SPAN.match(name)
            if ph == "B":
                self._open.append(name)
                if template:
                    self._tune.op = template.group("op")
                    self._tune.precompiling = template.group("what") == "precompiling"
            elif ph == "E" and name in self._open:
                del self._open[len(self._open) - 1 - self._open[::-1].index(name):]
                if template and template.group("what") == "autotuning":
                    self._tune = _Autotune()  # done; the next op's total comes with it
                elif template:
                    self._tune.precompiling = False
            else:
                return
        self._changed()

    # -- the autotuning loggers (any thread: the precompile pool's too) ---------------
    def heard(self, msg: Any, args: Any) -> None:
        args = args if isinstance(args, tuple) else ()
        with self._lock:
            tune = self._tune
            if msg in _TOTAL and args and isinstance(args[0], int):
                tune.total, tune.started, tune.benchmarked = args[0], 0, 0
            elif msg in _PRECOMPILE_TOTAL and args and isinstance(args[0], int):
                tune.precompile_total = args[0]
            elif msg in _PRECOMPILED:
                tune.precompiled += 1
            elif msg in _BENCH_START:
                tune.started += 1
            elif msg in _BENCH_DONE:
                tune.benchmarked += 1
            else:
                return
        self._changed()

    # -- the step --------------------------------------------------------------------
    def step(self) -> Optional[CompileStep]:
        """The step now: None when no span is open."""
        with self._lock:
            if not self._open:
                return None
            phases = [phase_of(name) for name in self._open]
            if any(_TEMPLATE_SPAN.match(name) for name in self._open) or AUTOTUNING in phases:
                return self._autotune_step(phases)
            inner = next((p for p in reversed(phases) if p is not None and p != "Other"), None)
            return CompileStep(inner or COMPILING)

    def _autotune_step(self, phases: list[Optional[str]]) -> CompileStep:
        tune = self._tune
        op = tune.op or "an op"
        compiling = phases[-1] == "Kernel compilation"
        if tune.precompiling:
            if tune.precompile_total:
                return CompileStep(AUTOTUNING, f"{op}: compiling choices", tune.precompiled, tune.precompile_total)
            return CompileStep(AUTOTUNING, f"{op}: compiling choices", None, tune.total)
        if tune.total:
            done = min(tune.benchmarked, tune.total)
            what = "compiling and benchmarking choice" if compiling else "benchmarking choice"
            current = min(max(tune.started, done + 1), tune.total)
            return CompileStep(AUTOTUNING, f"{op}: {what} {current} of {tune.total}", done, tune.total)
        return CompileStep(AUTOTUNING, op + (": compiling a choice" if compiling else ""))

    def _changed(self) -> None:
        step = self.step()
        if step == self._last:
            return
        self._last = step
        self.on_step(step)
