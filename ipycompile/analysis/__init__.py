"""Pure functions over a finished :class:`~ipycompile.CompileReport`: the doctor.

:func:`diagnose` runs every pass of :data:`doctor.PASSES` in turn; each pass takes a
report and returns a new one (``dataclasses.replace`` with new lists), never editing
its input, so a diagnosed report and the raw one can be compared.
"""

from .compare import Comparison, compare
from .doctor import PASSES, diagnose

__all__ = ["diagnose", "PASSES", "compare", "Comparison"]
