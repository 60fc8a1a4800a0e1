"""``ipycompile.capture()``: the capture engine with the doctor applied to its report.

The capture layer cannot call the analysis layer (imports point down), so the run
layer composes them: the report a capture builds goes through
:func:`ipycompile.analysis.diagnose` (graph-break fixes, recompile explanations,
unrolled loops), which returns a new, diagnosed report.
"""

from __future__ import annotations

from typing import Any

from ..analysis import diagnose
from ..capture.listener import Capture
from ..capture.listener import capture as _capture


def capture(**kwargs: Any) -> Capture:
    """Record what ``torch.compile`` does inside a ``with`` block; ``cap.report`` is
    the diagnosed report::

        with ipycompile.capture() as cap:
            compiled(x)
        cap.report
    """
    return _capture(finish=diagnose, **kwargs)
