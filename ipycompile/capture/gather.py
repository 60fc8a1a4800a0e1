"""``ipycompile.capture(ranks="gather")``: every rank's report reaches rank 0 when the block ends.

Each rank of a ``torch.distributed`` job opens the same capture; when its block ends it
builds the slim summary of what it compiled (the one :func:`ipycompile.load_trace` reads
from a TORCH_TRACE log of the same events: :func:`.tracefile.summary_records`, then
:func:`.tracedir.slim`) and posts it, as JSON, to the job's own rendezvous store (the
``torch.distributed`` store every process group of the job is built on, under keys of
its own). No rank waits for another: a rank posts and goes on. Rank 0 then collects the
posts, up to ``timeout`` seconds after its own block ended, and holds a
:class:`~.tracedir.RankReports` like the one ``load_trace(dir)`` gives, with the ranks
that posted late or failed named in ``RankReports.missing``.

Blocks are matched across ranks by what every rank agrees on: the block's place in the code
(the file and line of the ``with``, or an explicit ``name=``) and how many times this rank
opened a block there, never by a count of all the blocks a rank opened: a block that only
some ranks open (one under ``if rank == 0:``, a rank that returns early) then mismatches that
block alone, not every later one. Each rank also posts the tally of the blocks it posted
(place -> count); rank 0, waiting for a rank's post, reads its tally: a rank that has posted
a block rank 0 has not opened (it skipped this one, or opens blocks in another order) is not
waited for, and is named with the blocks it posted instead (``RankReports.missing``,
``cap.mismatch``). Rank 0 never waits past ``timeout``.

The store, not a collective: a collective would make rank 0 wait, without a word of which
rank it waits for, for as long as the slowest rank (or a failed one) takes; and under NCCL
it would need a CPU side group. The store answers "has rank 7 posted?" at once.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Optional

from ..report import CompileReport, TraceOrigin
from .listener import Capture
from .tracedir import GATHERED, RankReports, slim

#: Keys under which ranks post their summaries (one per block: its place and its count there).
KEY_PREFIX = "ipycompile/gather"
#: How often rank 0 reads the tallies of the ranks it still waits for (seconds).
TALLY_EVERY_S = 0.2

_lock = threading.Lock()
_opened: "collections.Counter[str]" = collections.Counter()  # this process: blocks opened, per place
_posted: "collections.Counter[str]" = collections.Counter()  # this process: blocks posted, per place
_known_excess: dict[int, dict[str, int]] = {}  # rank 0: each rank's blocks rank 0 has not opened, as last seen
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the ipycompile package


def block_place(depth: int = 2) -> str:
    """``file.py:LINE`` of the first frame outside ipycompile (and contextlib) above the caller:
    the ``with`` that opened the block. The file's base name: the same script may live under
    another folder on another node."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (os.path.abspath(name).startswith(_HERE + os.sep) or os.path.basename(name) == "contextlib.py"):
            return f"{os.path.basename(name)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _count(tally: dict[str, int]) -> str:
    return ", ".join(f"{place} ({n} time{'s' if n != 1 else ''})" for place, n in sorted(tally.items()))


def _excess(tally: dict[str, int], opened: dict[str, int]) -> dict[str, int]:
    """The blocks of ``tally`` beyond what ``opened`` holds (place -> how many more)."""
    return {p: n - opened.get(p, 0) for p, n in tally.items() if n > opened.get(p, 0)}


def job_store() -> Any:
    """The store the job's default process group was built on."""
    import torch.distributed as dist

    from torch.distributed import distributed_c10d

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("ipycompile.capture(ranks='gather') needs torch.distributed initialised "
                           "(dist.init_process_group(...)) before the block opens")
    return distributed_c10d._get_default_store()


class GatheredCapture(Capture):
    """A :class:`~.listener.Capture` on every rank; on rank 0, ``ranks`` (:class:`RankReports`)
    holds every rank's summary once the block has ended (``None`` on the other ranks)."""

    def __init__(self, trace_dir: "str | os.PathLike[str] | None" = None,
                 finish: Optional[Callable[[CompileReport], CompileReport]] = None, *,
                 timeout: float = 120.0, poll_s: float = 0.02, name: Optional[str] = None) -> None:
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise ValueError(f"name={name!r}: give the block a name every rank uses for it (a non-empty string), "
                             "or leave it out (the block is known by its place in the code)")
        if not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout >= 0):
            raise ValueError(f"timeout={timeout!r}: give the seconds rank 0 waits for the other ranks (a number >= 0)")
        super().__init__(trace_dir, finish)
        self.timeout = float(timeout)
        self.poll_s = poll_s
        self.rank: Optional[int] = None
        self.world: Optional[int] = None
        self.ranks: Optional[RankReports] = None
        self.gather_s: Optional[float] = None  # rank 0: how long it waited for the other ranks
        self.name = name
        self.place = ""  # the block's place: name= or file:line, with this rank's count there ("train.py:40#3")
        #: rank 0: ranks whose posts show blocks rank 0 has not opened (rank -> which), after the block
        self.mismatch: dict[int, str] = {}
        self._store: Any = None
        self._key = ""
        self._block_at = ""

    def __enter__(self) -> "GatheredCapture":
        import torch.distributed as dist

        self._store = job_store()
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self._block_at = self.name if self.name is not None else block_place()
        with _lock:
            _opened[self._block_at] += 1
            n = _opened[self._block_at]
        self.place = f"{self._block_at}#{n}"
        self._key = f"{KEY_PREFIX}/{self.place}"
        self.ranks = None
        self.mismatch = {}
        super().__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.detach()
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            return
        error = None if exc_type is None else f"{exc_type.__name__}: {exc}"
        try:
            self._post(error)
        except Exception as post_error:  # the store gone (rank 0's agent died): say so, never hide the block's own error
            import warnings

            warnings.warn(f"ipycompile.capture(ranks='gather'): rank {self.rank} could not post its report to the job's "
                          f"store ({type(post_error).__name__}: {post_error}); rank 0 will name it as missing", stacklevel=2)
        if self.rank == 0:
            self._collect()

    def summary(self) -> CompileReport:
        """This rank's slim summary, as a summary pass reads it from the same events in a log."""
        report = slim(self._build_raw(summary=True))
        report.origin = TraceOrigin(path=self.trace_path or "", rank=self.rank, pid=os.getpid(),
                                    records=len(self.records), summary=True)
        return report

    def _post(self, error: Optional[str]) -> None:
        body = {"rank": self.rank, "trace_path": self.trace_path or "", "error": error}
        try:
            body["summary"] = self.summary().to_dict()
        except Exception as exc:  # a report that cannot be built is named, never lost silently
            body["error"] = (error + "; " if error else "") + f"its report could not be built ({type(exc).__name__}: {exc})"
        with _lock:
            _posted[self._block_at] += 1
            body["posted"] = dict(_posted)
        self._store.set(f"{self._key}/{self.rank}", json.dumps(body))
        self._store.set(f"{KEY_PREFIX}/tally/{self.rank}", json.dumps(body["posted"]))  # what rank 0 reads while it waits
        self._store.append(f"{self._key}/posted", f"{self.rank},")  # the roll call rank 0 reads

    def _collect(self) -> None:
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        pending = set(range(self.world or 1))
        posts: dict[int, dict] = {}
        roll = f"{self._key}/posted"
        read = 0  # characters of the roll call read so far
        with _lock:
            opened = dict(_opened)
        elsewhere: dict[int, dict[str, int]] = {}
        tallies_at = t0
        while pending:
            if self._store.check([roll]):
                text = self._store.get(roll).decode()
                fresh, read = text[read:], len(text)
                for r in (int(x) for x in fresh.split(",") if x):
                    if r in pending:
                        key = f"{self._key}/{r}"
                        posts[r] = json.loads(self._store.get(key))
                        self._store.delete_key(key)
                        pending.discard(r)
            now = time.monotonic()
            if not pending or now >= deadline:
                break
            if now >= tallies_at:  # a rank that posted a block rank 0 has not opened is not coming to this one
                tallies_at = now + TALLY_EVERY_S
                for r in sorted(pending):
                    key = f"{KEY_PREFIX}/tally/{r}"
                    if not self._store.check([key]):
                        continue
                    extra = _excess(json.loads(self._store.get(key)), opened)
                    if any(n > _known_excess.get(r, {}).get(p, 0) for p, n in extra.items()):
                        elsewhere[r] = extra
                        _known_excess[r] = extra
                        pending.discard(r)
                if not pending:
                    break
            time.sleep(self.poll_s)
        if not pending:
            self._store.delete_key(roll)
        self.gather_s = time.monotonic() - t0
        summaries: dict[int, CompileReport] = {}
        files: dict[int, str] = {}
        missing: dict[int, str] = {}
        for r in sorted(posts):
            post = posts[r]
            extra = _excess(post.get("posted") or {}, opened)
            if extra:
                self.mismatch[r] = f"posted blocks rank 0 has not opened: {_count(extra)}"
            _known_excess[r] = extra
            if post.get("error"):
                missing[r] = f"failed in the block ({post['error']})" + ("; its report covers what it compiled until then"
                                                                          if post.get("summary") else "")
            if post.get("summary"):
                summaries[r] = CompileReport.from_dict(post["summary"])
                files[r] = post.get("trace_path") or ""
        for r, extra in sorted(elsewhere.items()):
            self.mismatch[r] = f"posted blocks rank 0 has not opened: {_count(extra)}"
            missing[r] = (f"did not post this block ({self.place}): it posted {_count(extra)}, which rank 0 has not "
                          "opened (a block not every rank opens, as one under `if rank == 0:`, or blocks opened in "
                          "another order)")
        for r in sorted(pending):
            missing[r] = f"did not end its block within {self.timeout:g} s of rank 0's (slower, hung or gone)"
        held = {self.rank: self._raw if self._raw is not None else self._build_raw()} if self.rank in files else {}
        self.ranks = RankReports(GATHERED, files, [], summaries, finish=self.finish, held=held, missing=missing)
