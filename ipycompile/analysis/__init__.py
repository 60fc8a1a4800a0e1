"""Pure functions over a finished :class:`~ipycompile.CompileReport`: the doctor.

:func:`diagnose` runs every pass of :data:`doctor.PASSES` in turn; each pass takes a
report and returns a new one (``dataclasses.replace`` with new lists), never editing
its input, so a diagnosed report and the raw one can be compared.

The doctor (:mod:`.doctor` and its rules) is imported when first used (:pep:`562`):
``import ipycompile`` loads only :mod:`.compare`, to register its views.
"""

from ..report.lazy import lazy_names
from .compare import Comparison, compare  # bound now: ``analysis.compare`` is the function, not its module

__all__ = ["diagnose", "PASSES", "compare", "Comparison"]

#: name -> the module that defines it, imported on first use
_LAZY = dict.fromkeys(("PASSES", "diagnose"), ".doctor")

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
