"""Capture: torch's structured trace -> records -> :class:`CompileReport`.

The names below are imported when first used (:pep:`562`): reading a log file
(:mod:`.tracefile`) loads neither the live listener nor the builder's parsers.
"""

from importlib import import_module

__all__ = [
    "capture",
    "Capture",
    "build_report",
    "TraceRecord",
    "HANDLERS",
    "load_trace",
    "read_trace",
    "write_trace",
    "RankReports",
    "TraceFileError",
]

#: name -> the module that defines it, imported on first use
_LAZY = {
    **dict.fromkeys(("HANDLERS", "build_report"), ".builder"),
    **dict.fromkeys(("Capture", "capture"), ".listener"),
    "TraceRecord": ".records",
    **dict.fromkeys(("RankReports", "load_trace"), ".tracedir"),
    **dict.fromkeys(("TraceFileError", "read_trace", "write_trace"), ".tracefile"),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
