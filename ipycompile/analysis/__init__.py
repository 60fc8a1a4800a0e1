"""Pure functions over a finished :class:`~ipycompile.CompileReport`: the doctor.

:func:`diagnose` runs every pass of :data:`doctor.PASSES` in turn; each pass takes a
report and returns a new one (``dataclasses.replace`` with new lists), never editing
its input, so a diagnosed report and the raw one can be compared.

The doctor (:mod:`.doctor` and its rules) is imported when first used (:pep:`562`):
``import ipycompile`` loads only :mod:`.compare`, to register its views.
"""

from importlib import import_module

from .compare import Comparison, compare  # bound now: ``analysis.compare`` is the function, not its module

__all__ = ["diagnose", "PASSES", "compare", "Comparison"]

#: name -> the module that defines it, imported on first use
_LAZY = dict.fromkeys(("PASSES", "diagnose"), ".doctor")


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
