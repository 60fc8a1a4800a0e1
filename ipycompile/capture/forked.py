"""Work done in a forked process beside this one, its results read back as they come.

Reading a large log has two halves that can run at once: the reading and the building
(:mod:`.readahead`). :class:`Forked` runs one half in a child made by ``fork`` (it shares
this process's memory as it was, so nothing is sent to it), which hands its results back
through a pipe, pickled, one message at a time.

Forking is safe only in a process with one thread: a fork copies just the thread that
calls it, and a lock another thread held (the import lock, a logging handler's) would stay
held in the child for ever. :func:`can_fork` says whether it is safe and worth it here
(Linux, one thread, two or more cores); a Jupyter kernel has threads, so notebooks never fork.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
import sys
import threading
from typing import Any, Callable, Optional

__all__ = ["can_fork", "Forked", "ForkedError"]

_HEAD = struct.Struct("<Q")
_PIPE_BYTES = 1 << 20  # room for a few messages: the two processes wait on each other less


def can_fork() -> bool:
    """Whether :class:`Forked` may run work beside this process: Linux (where ``fork`` is the
    platform's own way to start a process), this process has one thread, and there is a
    second core to run it on."""
    return (sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1
            and len(os.sched_getaffinity(0)) >= 2)


class ForkedError(RuntimeError):
    """The child stopped without finishing (killed, out of memory) or raised: the message says which."""


class Forked:
    """``work(send)`` run in a forked child; :meth:`receive` gives what it sent, in order.

    The child calls ``send(value)`` for each result (a picklable value); when ``work``
    returns, the stream ends (:meth:`receive` gives ``END``). An exception in ``work`` is
    sent as a :class:`ForkedError` naming it, raised by :meth:`receive`. :meth:`close`
    (or leaving the ``with`` block) stops a child that is not done and reaps it.
    """

    END = object()

    def __init__(self, work: Callable[[Callable[[Any], None]], None]) -> None:
        rfd, wfd = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(wfd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)
        except (ImportError, OSError):
            pass
        gc.freeze()  # the child's collector leaves this process's objects alone: their pages stay shared
        try:
            self.pid = os.fork()
        finally:
            if self.pid != 0:
                gc.unfreeze()
        if self.pid == 0:  # the child: never returns
            code = 0
            try:
                os.close(rfd)
                code = _child(work, wfd)
            except BaseException:  # noqa: BLE001 - nothing may escape a forked child
                code = 1
            finally:
                os._exit(code)
        os.close(wfd)
        self._pipe = os.fdopen(rfd, "rb", buffering=1 << 20)
        self.done = False

    def receive(self) -> Any:
        """The next value the child sent, or :attr:`END` once it finished."""
        if self.done:
            return Forked.END
        head = self._pipe.read(_HEAD.size)
        data = self._pipe.read(_HEAD.unpack(head)[0]) if len(head) == _HEAD.size else b""
        if not data:
            self.close()
            raise ForkedError("the process working beside this one stopped unexpectedly "
                              "(a machine short of memory can stop it)")
        kind, value = pickle.loads(data)
        if kind == "end":
            self.close()
            return Forked.END
        if kind == "raised":
            self.close()
            raise ForkedError(value)
        return value

    def close(self) -> None:
        """Stop the child if it is not done, and reap it (idempotent)."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        self.done = True
        self._pipe.close()
        try:
            os.kill(pid, signal.SIGKILL)  # a finished child is a zombie until reaped: the kill does nothing
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)

    def __enter__(self) -> "Forked":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _child(work: Callable[[Callable[[Any], None]], None], wfd: int) -> int:
    out = os.fdopen(wfd, "wb", buffering=1 << 20)

    def send(value: Any, kind: str = "value") -> None:
        data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
        out.write(_HEAD.pack(len(data)))
        out.write(data)
        out.flush()  # each message as soon as it is made: the other process may be waiting for it

    try:
        try:
            work(send)
        except Exception as exc:  # noqa: BLE001 - sent back, raised where it is received
            send(f"{type(exc).__name__}: {exc}", "raised")
        else:
            send(None, "end")
        out.flush()
    except BrokenPipeError:  # the reader stopped reading (it failed, or was interrupted)
        return 1
    return 0
