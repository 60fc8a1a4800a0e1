"""Compile activity: what torch compiles or records (CUDA graphs) while a block is open."""

from __future__ import annotations

import time
from typing import Any, Optional

__all__ = ["CompileActivity"]


class CompileActivity:
    """Counts what torch compiles or records while the block is open: Dynamo compiles,
    lazy backward compiles and CUDA-graph recordings, through Dynamo's own compile
    callbacks (``torch._dynamo.callback_handler``; a registered callback, nothing
    patched). ``count`` is the number of such events so far; ``by_trigger`` counts
    them by torch's trigger name (``"DYNAMO"``, ``"CUDAGRAPH_RECORDING"``, ...) and
    ``seconds`` their time. Cheap: nothing runs unless torch compiles or records.
    Where torch has no callback handler, ``available`` is False and nothing is counted.
    """

    def __init__(self) -> None:
        self.count = 0
        self.by_trigger: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.available = False
        self._handler: Any = None
        self._t0: Optional[float] = None

    def _start(self, args: Any) -> None:
        self._t0 = time.perf_counter()

    def _end(self, args: Any) -> None:
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "UNKNOWN")
        self.count += 1
        self.by_trigger[trigger] = self.by_trigger.get(trigger, 0) + 1
        if self._t0 is not None:
            self.seconds[trigger] = self.seconds.get(trigger, 0.0) + time.perf_counter() - self._t0
        self._t0 = None

    def __enter__(self) -> "CompileActivity":
        try:
            from torch._dynamo import callback_handler
        except ImportError:
            return self
        if hasattr(callback_handler, "register_start_callback") and hasattr(callback_handler, "remove_end_callback"):
            callback_handler.register_start_callback(self._start)
            callback_handler.register_end_callback(self._end)
            self._handler = callback_handler
            self.available = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handler is not None:
            for remove, cb in ((self._handler.remove_start_callback, self._start),
                               (self._handler.remove_end_callback, self._end)):
                try:
                    remove(cb)
                except ValueError:
                    pass
            self._handler = None
