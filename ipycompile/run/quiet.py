"""Keep torch's own log lines about what the report shows out of a ``%%compile`` cell's output.

Torch warns about a recompile limit or a graph break in ``W...`` lines that say again what
the report's first screen says (with the user's line and the fix). :func:`quiet_torch_log`
installs one :class:`logging.Filter` on the handlers that print torch's records into the cell's
output (the stream handlers, of every ``torch`` logger and of the root logger, that write to
``sys.stderr`` or ``sys.stdout``: torch's own handler, a ``logging.basicConfig``) for the duration
of the cell and removes it after, leaving logging exactly as it was. It drops only records of
torch's loggers whose message is about a graph break or a recompile (the report covers both);
everything else torch logs still prints. The dropped lines are kept, in order, in
:attr:`TorchLogFilter.kept`. A handler of the user's that writes elsewhere (a file, a stream of
their own, ``torch._logging.set_logs`` with a file handler, a log collector) is left alone: it
receives every record it would have received without ``%%compile``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Iterator

from ..capture.parse.warnings import REPORTED_LOG

__all__ = ["TorchLogFilter", "quiet_torch_log", "COVERED"]

#: What the report shows, as torch words it in its warnings: graph breaks, recompiles and
#: the recompile limit (capture's reader of torch's text).
COVERED = REPORTED_LOG


class TorchLogFilter(logging.Filter):
    """Drops torch's records about graph breaks and recompiles; keeps their text in ``kept``."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[str] = []
        self._last = None

    def filter(self, record: logging.LogRecord) -> bool:
        if not (record.name == "torch" or record.name.startswith("torch.")):
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        if COVERED.search(message):
            if record is not self._last:  # one record reaches each handler the filter is on: kept once
                self.kept.append(f"{record.levelname[:1]} {record.name}: {message}")
            self._last = record
            return False
        return True


def prints_to_output(handler: logging.Handler) -> bool:
    """Whether ``handler`` prints into the cell's output: torch's own stream handler (the one its
    logging settings install, on stderr as it was when torch made it), or any stream handler (not a
    file's) on ``sys.stderr`` or ``sys.stdout`` (as they are now, or the process's own)."""
    if isinstance(handler, logging.FileHandler):
        return False
    internal = sys.modules.get("torch._logging._internal")
    # torch's own console handler: a StreamHandler up to torch 2.13, a Handler that follows sys.stderr
    # (``_StderrHandler``) from 2.14
    if internal is not None and handler in getattr(internal, "handlers", ()) and (
            type(handler) is logging.StreamHandler or type(handler).__name__ == "_StderrHandler"):
        return True
    if not isinstance(handler, logging.StreamHandler) and type(handler).__name__ != "_StderrHandler":
        return False
    stream = getattr(handler, "stream", None)
    return stream is not None and any(stream is s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__))


@contextlib.contextmanager
def quiet_torch_log() -> Iterator[TorchLogFilter]:
    """The filter on the handlers of torch's and the root logger that print into the cell's output
    (:func:`prints_to_output`) while the block runs; removed after. Other handlers are left alone."""
    f = TorchLogFilter()
    handlers = []
    names = [n for n in list(logging.root.manager.loggerDict) if n == "torch" or n.startswith("torch.")]
    for name in [""] + names:
        logger = logging.getLogger(name)
        for h in getattr(logger, "handlers", ()):
            if f not in h.filters and prints_to_output(h):
                h.addFilter(f)
                handlers.append(h)
    try:
        yield f
    finally:
        for h in handlers:
            h.removeFilter(f)
