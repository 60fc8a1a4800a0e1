"""The IPython layer: ``%load_ext ipycompile`` registers the magics, ``%unload_ext`` removes them.

One module per magic family: ``compile_magic`` (``%%compile``), ``history_magic``
(``%compile_history``, ``%compile_reset``), ``diff_magic`` (``%compile_diff``),
``trace_magic`` (``%compile_trace``). Each
parses its line, calls one library function and displays the result.
"""

from __future__ import annotations


def _magic_classes() -> list:
    from .compile_magic import CompileMagics
    from .diff_magic import DiffMagics
    from .history_magic import HistoryMagics
    from .trace_magic import TraceMagics

    return [CompileMagics, HistoryMagics, DiffMagics, TraceMagics]


def load_ipython_extension(ipython) -> None:
    for cls in _magic_classes():
        ipython.register_magics(cls)


def unload_ipython_extension(ipython) -> None:
    from ..run.session import SESSION

    manager = ipython.magics_manager
    for cls in _magic_classes():
        for kind, names in cls.magics.items():
            for name in names:
                manager.magics[kind].pop(name, None)
        manager.registry.pop(cls.__name__, None)
    SESSION.clear()
