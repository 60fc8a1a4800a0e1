"""``ipycompile.capture()``: the capture engine with the doctor applied to its report.

The capture layer cannot call the analysis layer (imports point down), so the run
layer composes them: the report a capture builds goes through
:func:`ipycompile.analysis.diagnose` (graph-break fixes, recompile explanations,
unrolled loops), which returns a new, diagnosed report; a gathered capture's ranks
go through :func:`ipycompile.analysis.ranks.rank_divergence` on rank 0.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ..analysis import diagnose
from ..capture.gather import GatheredCapture
from ..capture.listener import Capture
from ..capture.listener import capture as _capture

#: What ``ranks=`` takes.
RANKS_MODES = ("gather",)


class GatheredRanks(GatheredCapture):
    """:class:`~ipycompile.capture.gather.GatheredCapture` with the job's divergence on rank 0."""

    @property
    def divergence(self) -> Any:
        """How the ranks compiled differently (rank 0, once the block has ended; else ``None``)."""
        if self.ranks is None:
            return None
        from ..analysis.ranks import rank_divergence

        return rank_divergence(self.ranks)


def capture(trace_dir: "str | os.PathLike[str] | None" = None, *, ranks: Optional[str] = None,
            timeout: float = 120.0, name: Optional[str] = None) -> Capture:
    """Record what ``torch.compile`` does inside a ``with`` block; ``cap.report`` is
    the diagnosed report::

        with ipycompile.capture() as cap:
            compiled(x)
        cap.report

    With ``trace_dir``, the events are also written to a TORCH_TRACE log there when
    the block ends (``cap.trace_path``), for tlparse or :func:`ipycompile.load_trace`.

    ``ranks="gather"`` (every rank of a ``torch.distributed`` job opens the block): when
    the block ends each rank posts its summary to the job's store and goes on; rank 0
    waits up to ``timeout`` seconds for the others, then ``cap.ranks`` is the job's
    :class:`~ipycompile.RankReports` (as ``load_trace`` reads a TORCH_TRACE directory;
    ranks late or failed named in ``cap.ranks.missing``) and ``cap.divergence`` how the
    ranks differ. Both are ``None`` on the other ranks.

    The ranks' blocks are matched by the block's place in the code (the file and line of
    the ``with``) and how many times each rank opened a block there; ``name=`` names the
    block instead (for a ``with`` inside a helper that several blocks go through, or ranks
    that open one block from different lines). A block that not every rank opens (one under
    ``if rank == 0:``) is named in ``cap.ranks.missing`` and ``cap.mismatch`` with the
    blocks each rank posted instead; later blocks gather as usual, and rank 0 never waits
    past ``timeout``.
    """
    if name is not None and ranks is None:
        raise ValueError(f"name={name!r}: names a gathered block; give it with ranks='gather'")
    if ranks is None:
        return _capture(trace_dir, finish=diagnose)
    if ranks not in RANKS_MODES:
        raise ValueError(f"ranks={ranks!r}: give ranks='gather' (every rank's report reaches rank 0), or leave it out")
    return GatheredRanks(trace_dir, finish=diagnose, timeout=timeout, name=name)
