"""One listener for the process, routed to the open captures by thread.

Torch's trace logger (``torch.__trace``) and the hooks of :mod:`.hooks` (CUDA-graph
loggers, Dynamo's compile callbacks, the autotune feedback saver) are process-wide.
Each capture must still see only its own compiles, and closing one must never take
another's listener away. So there is one listener, installed when the first capture
opens and removed when the last one closes, and it hands each event to the captures
it belongs to:

- an event from a thread where captures are open goes to every one of them: captures
  nested on one thread all see the inner block's compiles (the outer one sees
  everything its thread compiled while it was open), a capture on another thread sees
  none of them;
- an event from a thread with no open capture (torch's own threads, e.g. autograd's
  device threads compiling a backward lazily) goes to the captures that already saw
  its compile id (Dynamo's frame ids are unique in the process); one that names no
  compile id (Triton autotuning a kernel at its first run in a CUDA backward) goes to
  the open captures when they are all on one thread, else nowhere.

When the last capture closes, the logger is put back as it was when the first opened:
its level, propagation and disabled flag, and its handlers (torch's lazy TORCH_TRACE
handler removes itself on the first event when no TORCH_TRACE is set; it comes back,
as it was). Handlers someone else added meanwhile stay.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Optional, Protocol

from .hooks import TorchHooks

TRACE_LOGGER = "torch.__trace"


class Subscriber(Protocol):
    """What the router needs of a capture."""

    thread: int  # threading.get_ident() of the thread that opened it
    compile_keys: set  # the compile ids it has seen, as :func:`compile_key` gives them

    def deliver(self, metadata: dict, payload: Optional[str], where: tuple) -> None: ...


def compile_key(metadata: dict) -> Optional[tuple]:
    """The compile id a trace event names, as a hashable key (None when it names none)."""
    frame = metadata.get("frame_id")
    if frame is None:
        return None
    return (metadata.get("compiled_autograd_id"), frame, metadata.get("frame_compile_id"), metadata.get("attempt"))


class _Listener(logging.Handler):
    """The one handler on ``torch.__trace``."""

    def __init__(self, router: "Router") -> None:
        super().__init__(level=logging.DEBUG)
        self.router = router

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if isinstance(metadata, dict):
            where = (record.created, record.process, record.pathname, record.lineno, record.levelname)
            self.router.route(metadata, getattr(record, "payload", None), record.thread, where)

    def handleError(self, record: logging.LogRecord) -> None:  # never print tracebacks into user output
        pass


class Router:
    """Open captures, one listener; :data:`ROUTER` is the process's one instance."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: tuple = ()  # replaced whole under the lock, read without it
        self._saved: Optional[tuple] = None  # the trace logger's (level, propagate, disabled, handlers) before
        self.listener = _Listener(self)
        self.hooks = TorchHooks(self)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def open(self, capture: Subscriber) -> None:
        with self._lock:
            if any(c is capture for c in self._open):
                return
            if not self._open:
                self._install()
            else:
                self.hooks.refresh()  # torch._dynamo.reset() may have cleared the callbacks
            self.hooks.new_capture()
            self._open = self._open + (capture,)

    def close(self, capture: Subscriber) -> None:
        with self._lock:
            if not any(c is capture for c in self._open):
                return
            self._open = tuple(c for c in self._open if c is not capture)
            if not self._open:
                self._uninstall()

    def _install(self) -> None:
        logger = logging.getLogger(TRACE_LOGGER)
        self._saved = (logger.level, logger.propagate, logger.disabled, list(logger.handlers))
        # First in line: a handler that removes itself while handling a record would
        # make logging skip the handler after it.
        logger.handlers.insert(0, self.listener)
        if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
        logger.disabled = False
        self.hooks.attach()

    def _uninstall(self) -> None:
        self.hooks.detach()
        logger = logging.getLogger(TRACE_LOGGER)
        if self._saved is not None:
            level, propagate, disabled, handlers = self._saved
            added = [h for h in logger.handlers if h not in handlers]
            logger.handlers[:] = [h for h in handlers + added if h is not self.listener]
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled
            self._saved = None

    def route(self, metadata: dict, payload: Optional[str], thread: int, where: tuple) -> None:
        captures = self._open
        key = compile_key(metadata)
        own = [c for c in captures if c.thread == thread]
        if own:
            for c in own:
                if key is not None:
                    c.compile_keys.add(key)
                c.deliver(metadata, payload, where)
        elif key is not None:
            for c in captures:
                if key in c.compile_keys:
                    c.deliver(metadata, payload, where)
        elif captures and all(c.thread == captures[0].thread for c in captures):
            # no compile id, from a thread with no capture (Triton's autotuning at a kernel's first
            # run, on autograd's device thread in a CUDA backward): it works for the one thread
            # whose captures are open; with captures open on several threads, it is nobody's
            for c in captures:
                c.deliver(metadata, payload, where)

    def append(self, record: tuple) -> None:
        """The hooks' sink (:class:`.hooks.TorchHooks` appends ``(metadata, payload)``):
        routed as the thread that produced it."""
        metadata, payload = record
        self.route(metadata, payload, threading.get_ident(), (time.time(), os.getpid(), __file__, 0, "INFO"))


ROUTER = Router()


def listening() -> bool:
    """Whether any capture is open in this process."""
    return ROUTER.open_count > 0

