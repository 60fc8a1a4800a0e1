"""Torch's other voices, heard while a capture is open: CUDA graphs and autotuning.

Some of what torch does is not in its structured trace (torch 2.11 and 2.13):

- **CUDA graphs**: why a graph was skipped is written only to the ``cudagraphs``
  artifact loggers (``torch._inductor.cudagraph_utils`` and ``.cudagraph_trees``:
  "skipping cudagraphs due to mutated inputs (1 instances). Found from: ...",
  the same function that bumps ``counters["inductor"]["cudagraph_skips"]``);
  the recordings are announced to Dynamo's compile callbacks
  (``CallbackTrigger.CUDAGRAPH_RECORDING``, with the compile id) and, at DEBUG
  level, on the ``cudagraph_trees`` logger ("Recording function=..., mode=...",
  "Re-recording function=..., reason=...").
- **Python warnings**: Dynamo says some things only with ``warnings.warn`` (through
  ``torch._dynamo.utils.warn_once``): that it traced through a ``functools.lru_cache``
  wrapper, ignoring the cache (compiled results may differ from eager's), among others.
  While a capture is open, ``warnings.showwarning`` (the hook Python documents for
  replacing how warnings are shown) is wrapped: each warning raised from torch's own files
  becomes an event (``ipycompile_warning``: category, message, torch's file and line), and
  every warning, torch's and the user's, is handed on to the ``showwarning`` that was there
  before, so the user sees what they would have seen. Warnings the filters hide (``ignore``)
  are not shown, so not heard.
- **compiled code run from Dynamo's cache**: torch logs a compile, never a call of code it
  compiled before. Dynamo's guard-complete hook (``set_guard_complete_hook``, the hook
  ``torch.compiler.set_enable_guard_collectives`` uses; the one there before is called first
  and its answer kept) hears each cache lookup; the first hit after a capture opens that may
  have run a graph becomes an event (``ipycompile_cache_hit``), so a report that compiled no
  graph can tell whether code compiled earlier ran meanwhile. The hook is told no frame; its
  caller is on the stack: a ``torch.compile``'d callable's own wrapper (Dynamo's
  ``compile_wrapper``, whose ``fn`` is the code about to run) counts when that code holds a
  graph; any other caller counts when it is the user's code (a frame torch compiled on its own,
  called from the user's), not torch's or a library's (DDP's forward entering ``contextlib``'s
  frames, which hold no graph).
- **max-autotune**: the trace's chromium events carry a summary per op
  (``autotune_choices_stats``: the winner, the best Triton choice); every
  candidate's benchmarked time goes to torch's autotune feedback hook
  (``torch._inductor.select_algorithm.add_feedback_saver``).

:class:`TorchHooks` registers a handler on those loggers, Dynamo callbacks and a
feedback saver while any capture is open (once for the process:
:mod:`.routing` attaches them when the first capture opens, detaches them when the
last closes, and routes each event to the captures of the thread that produced it),
and appends what they say to the records as events of its own kinds (``ipycompile_cudagraph``,
``ipycompile_autotune``), keyed by compile id like torch's events; the builder
reads them like any other (:mod:`ipycompile.capture.parse.cudagraphs`,
:mod:`ipycompile.capture.parse.autotune`). Nothing is patched: every hook is one
torch offers, and each is removed, and each logger's level, propagation and
handlers put back, on exit. Warnings the loggers would have printed are still
printed (the handler passes them on to the handlers they went to before);
the DEBUG records that now reach the handler go nowhere else.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
import warnings
from typing import Any, Optional

from .records import (AUTOTUNE_EVENT, CACHE_HIT_EVENT, CAPTURE_EVENT, CUDAGRAPH_EVENT,  # noqa: F401 (the kinds of
                      WARNING_EVENT)  # the events this module and the listener add)
CUDAGRAPH_LOGGERS = ("torch._inductor.cudagraph_utils.__cudagraphs", "torch._inductor.cudagraph_trees.__cudagraphs")


def code_has_graph(code: Any) -> bool:
    """Whether Dynamo holds compiled code for ``code`` that runs a graph (a cache entry whose code
    calls a ``__compiled_fn``)."""
    from torch._dynamo import eval_frame

    return any(any(n.startswith("__compiled_fn") for n in e.code.co_names)
               for e in eval_frame._debug_get_cache_entry_list(code))


def _current_compile_id() -> Optional[str]:
    """The compile id torch is compiling, else the one the CUDA-graph tree manager runs."""
    try:
        import torch

        cid = torch._guards.CompileContext.current_compile_id()
        if cid is not None:
            return str(cid)
        if torch.cuda.is_initialized():
            from torch._inductor import cudagraph_trees

            manager = cudagraph_trees.get_manager(torch.cuda.current_device(), create_if_none_exists=False)
            if manager is not None and getattr(manager, "compile_id", None) is not None:
                return str(manager.compile_id)
    except Exception:  # torch without these internals: the event keeps no compile id
        pass
    return None


def _metadata(kind: str, body: dict[str, Any], compile_id: Optional[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {kind: body}
    if compile_id:
        from .records import compile_id_from_text

        cid = compile_id_from_text(compile_id)
        if cid is not None:
            meta["frame_id"], meta["frame_compile_id"] = cid.frame_id, cid.frame_compile_id
            if cid.compiled_autograd_id is not None:
                meta["compiled_autograd_id"] = cid.compiled_autograd_id
    return meta


def pass_on(record: logging.LogRecord, saved_levels: dict[str, int]) -> None:
    """Hand ``record`` to its logger's parent when its level would have been printed before a
    handler of ours lowered that logger's level (``saved_levels``: logger -> its effective level
    then): what torch would have printed anyway still is."""
    saved = saved_levels.get(record.name)
    if saved is not None and record.levelno >= saved:
        parent = logging.getLogger(record.name).parent
        if parent is not None:
            parent.handle(record)


class _CudagraphLogHandler(logging.Handler):
    def __init__(self, hooks: "TorchHooks") -> None:
        super().__init__(level=logging.DEBUG)
        self.hooks = hooks

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            return
        self.hooks.add(CUDAGRAPH_EVENT, {"event": "log", "level": record.levelname, "message": message},
                       _current_compile_id())
        pass_on(record, self.hooks.saved_levels)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


class TorchHooks:
    """The process's hooks (:data:`.routing.ROUTER` holds the one instance);
    ``attach()`` / ``detach()`` (idempotent); ``sink.append((metadata, payload))``
    receives each event."""

    def __init__(self, sink: list) -> None:
        self.sink = sink
        self.saved_levels: dict[str, int] = {}  # logger -> the effective level before
        self._saved: dict[str, tuple] = {}
        self._handler = _CudagraphLogHandler(self)
        self._callbacks: Any = None
        self._feedback_cache: Any = None
        self._recording: dict[str, float] = {}
        self._shown: Any = None  # warnings.showwarning before attach
        self._torch_dir = ""
        self.attached = False
        self._guard_hook_set: Any = None  # torch's set_guard_complete_hook, while ours is in place
        self._prev_guard_hook: Any = None  # the hook there before ours, called first
        self._guard_hook = self._guard_complete  # one bound method: compared by identity when it is taken out
        self._hit_heard = False  # a cache hit was heard since the last capture opened
        self._layout: Any = None  # whose code a file is, for the callers of cache hits (made on first use)
        self._users: dict[str, bool] = {}  # file -> the user's code (a caller of a cache hit that counts)

    def new_capture(self) -> None:
        """A capture opened: the next cache hit is told again."""
        self._hit_heard = False

    def add(self, kind: str, body: dict[str, Any], compile_id: Optional[str], payload: Optional[str] = None) -> None:
        self.sink.append((_metadata(kind, body, compile_id), payload))

    # -- Dynamo's guard-complete hook: compiled code run from the cache ----------------
    def _guard_complete(self, cache_hit: bool) -> bool:
        prev = self._prev_guard_hook
        answer = prev(cache_hit) if prev is not None else cache_hit
        if cache_hit and not self._hit_heard and self.attached:
            try:
                caller = sys._getframe(1)
                if self._may_run_a_graph(caller):
                    self._hit_heard = True
                    self.add(CACHE_HIT_EVENT, {"caller": caller.f_code.co_filename, "line": caller.f_lineno}, None)
            except Exception:  # noqa: BLE001 - never in the way of the user's call
                pass
        return answer

    def _may_run_a_graph(self, caller: Any) -> bool:
        """Whether the cached code about to run, called from ``caller``, may run a graph."""
        code = caller.f_code
        if code.co_name == "compile_wrapper" and code.co_filename.replace(os.sep, "/").endswith("_dynamo/eval_frame.py"):
            target = getattr(caller.f_locals.get("fn"), "__code__", None)
            return target is not None and code_has_graph(target)
        users = self._users
        if code.co_filename not in users:  # once per file: the hook runs at every cached call
            from ..report.owners import Owner, owner

            if self._layout is None:
                from .layout import current_layout

                self._layout = current_layout()
            users[code.co_filename] = owner(code.co_filename, self._layout) in (Owner.USER, Owner.UNKNOWN)
        return users[code.co_filename]

    def _attach_guard_hook(self) -> None:
        try:
            from torch._C._dynamo.eval_frame import set_guard_complete_hook
        except Exception:  # noqa: BLE001 - a torch without it: the report says it cannot tell
            return
        prev = set_guard_complete_hook(self._guard_hook)
        self._prev_guard_hook = None if prev == self._guard_hook else prev  # never ours: no loop
        self._guard_hook_set = set_guard_complete_hook

    def _detach_guard_hook(self) -> None:
        setter, self._guard_hook_set = self._guard_hook_set, None
        if setter is None:
            return
        current = setter(self._prev_guard_hook)
        if current is not self._guard_hook:  # someone put theirs in meanwhile: it stays
            setter(current)
        self._prev_guard_hook = None

    # -- Dynamo's compile callbacks: CUDA-graph recordings ------------------------
    def _start(self, args: Any) -> None:
        if self._feedback_cache is None:
            self._attach_feedback()
        if getattr(getattr(args, "callback_trigger", None), "name", "") == "CUDAGRAPH_RECORDING":
            self._recording[str(args.compile_id)] = time.perf_counter()

    def _end(self, args: Any) -> None:
        if getattr(getattr(args, "callback_trigger", None), "name", "") != "CUDAGRAPH_RECORDING":
            return
        cid = str(args.compile_id)
        t0 = self._recording.pop(cid, None)
        seconds = time.perf_counter() - t0 if t0 is not None else None
        self.add(CUDAGRAPH_EVENT, {"event": "recorded", "seconds": seconds}, cid)

    # -- the autotune feedback hook -----------------------------------------------
    def _feedback(self, timings: Any, name: Any, input_nodes: Any, choices: Any, *rest: Any) -> None:
        try:
            precompile = rest[1] if len(rest) > 1 and isinstance(rest[1], dict) else {}
            rows = []
            for choice, ms in dict(timings).items():
                kind = type(choice).__name__
                kind = "triton" if "Triton" in kind else "extern" if "Extern" in kind else kind
                t = float(ms) if isinstance(ms, (int, float)) else None
                rows.append({
                    "name": str(getattr(choice, "name", choice)),
                    "kind": kind,
                    "time_ms": t if t is None or math.isfinite(t) else None,
                    "failed": t is not None and not math.isfinite(t),
                    "description": str(getattr(choice, "description", "") or ""),
                    "precompile_s": precompile.get(choice),
                })
            shapes, dtypes = [], []
            for node in input_nodes or ():
                try:
                    shapes.append("x".join(str(s) for s in node.get_size()))
                except Exception:
                    shapes.append("?")
                try:
                    dtypes.append(str(node.get_dtype()))
                except Exception:
                    dtypes.append("?")
            import json

            body = {"op": str(name), "shape": ", ".join(shapes), "dtypes": ", ".join(dtypes)}
            self.add(AUTOTUNE_EVENT, body, _current_compile_id(),
                     json.dumps(rows, default=str))
        except Exception:  # the hook must never break a compile
            pass

    # -- Python warnings from torch's own code -------------------------------------
    def _showwarning(self, message: Any, category: Any, filename: str, lineno: int, *rest: Any, **kw: Any) -> None:
        try:
            if self.attached and self._torch_dir and str(filename).startswith(self._torch_dir):
                self.add(WARNING_EVENT, {"category": getattr(category, "__name__", str(category)),
                                         "message": str(message), "filename": str(filename), "lineno": lineno},
                         _current_compile_id())
        except Exception:  # hearing a warning must never cost the user its display
            pass
        shown = self._shown if self._shown is not None else warnings._showwarning_orig  # type: ignore[attr-defined]
        shown(message, category, filename, lineno, *rest, **kw)

    def _attach_warnings(self) -> None:
        try:
            import torch

            self._torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        except Exception:
            self._torch_dir = ""
        if self._shown is not None:  # still in the chain of a wrapper put on top of ours (see below)
            return
        self._shown = warnings.showwarning
        warnings.showwarning = self._showwarning

    def _detach_warnings(self) -> None:
        if warnings.showwarning == self._showwarning:
            warnings.showwarning = self._shown
            self._shown = None
        # else someone wrapped ours meanwhile: ours stays in their chain, hands every warning on and
        # records nothing while detached; attaching again uses that place rather than wrap twice

    def attach(self) -> None:
        if self.attached:
            return
        self.attached = True
        self._attach_warnings()
        for name in CUDAGRAPH_LOGGERS:
            logger = logging.getLogger(name)
            self._saved[name] = (logger.level, logger.propagate, list(logger.handlers))
            self.saved_levels[name] = logger.getEffectiveLevel()
            logger.addHandler(self._handler)
            logger.propagate = False  # the handler passes on what would have been printed
            logger.setLevel(logging.DEBUG)
        try:
            from torch._dynamo import callback_handler

            callback_handler.register_start_callback(self._start)
            callback_handler.register_end_callback(self._end)
            self._callbacks = callback_handler
        except Exception:
            self._callbacks = None
        self._attach_feedback()
        self._attach_guard_hook()

    def refresh(self) -> None:
        """Register Dynamo's callbacks again where ``torch._dynamo.reset()`` cleared them
        while the hooks were attached."""
        if not self.attached or self._callbacks is None:
            return
        for registered, register, cb in (
                (self._callbacks.start_callbacks, self._callbacks.register_start_callback, self._start),
                (self._callbacks.end_callbacks, self._callbacks.register_end_callback, self._end)):
            if cb not in registered:
                register(cb)

    def _attach_feedback(self) -> None:
        """Register the feedback saver once Inductor's autotuner is loaded (importing it here
        would cost a cell that never uses Inductor a second or more); Dynamo's compile-start
        callback tries again, so a compile that loads it late is heard from its first op on."""
        import sys

        select_algorithm = sys.modules.get("torch._inductor.select_algorithm")
        if select_algorithm is None or not self.attached:
            return
        try:
            cache = select_algorithm.get_algorithm_selector_cache()
            if hasattr(cache, "feedback_saver_fns") and self._feedback not in cache.feedback_saver_fns:
                cache.add_feedback_saver(self._feedback)
                self._feedback_cache = cache
        except Exception:
            self._feedback_cache = None

    def detach(self) -> None:
        if not self.attached:
            return
        self.attached = False
        self._detach_guard_hook()
        self._detach_warnings()
        for name, (level, propagate, handlers) in self._saved.items():
            logger = logging.getLogger(name)
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved.clear()
        if self._callbacks is not None:
            for remove, cb in ((self._callbacks.remove_start_callback, self._start),
                               (self._callbacks.remove_end_callback, self._end)):
                try:
                    remove(cb)
                except ValueError:  # torch._dynamo.reset() cleared the callbacks
                    pass
            self._callbacks = None
        if self._feedback_cache is not None:
            fns = self._feedback_cache.feedback_saver_fns
            while self._feedback in fns:
                fns.remove(self._feedback)
            self._feedback_cache = None
