"""``ipycompile.capture()``: the capture engine with the doctor applied to its report.

The capture layer cannot call the analysis layer (imports point down), so the run
layer composes them: the report a capture builds goes through
:func:`ipycompile.analysis.diagnose` (graph-break fixes, recompile explanations,
unrolled loops), which returns a new, diagnosed report.
"""

from __future__ import annotations

import os

from ..analysis import diagnose
from ..capture.listener import Capture
from ..capture.listener import capture as _capture


def capture(trace_dir: "str | os.PathLike[str] | None" = None) -> Capture:
    """Record what ``torch.compile`` does inside a ``with`` block; ``cap.report`` is
    the diagnosed report::

        with ipycompile.capture() as cap:
            compiled(x)
        cap.report

    With ``trace_dir``, the events are also written to a TORCH_TRACE log there when
    the block ends (``cap.trace_path``), for tlparse or :func:`ipycompile.load_trace`.
    """
    return _capture(trace_dir, finish=diagnose)
