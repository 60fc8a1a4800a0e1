"""ipycompile: see what torch.compile did, and what it cost, next to your code.

``import ipycompile`` imports neither IPython, ipywidgets nor matplotlib (nor
torch): each is loaded when a feature that needs it is used.
"""

from .capture import Capture, build_report, capture
from .report import CompileId, CompileReport

__version__ = "0.1.0"
__all__ = ["capture", "Capture", "build_report", "CompileReport", "CompileId", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the magic tests
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython):  # pragma: no cover
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
