"""The IPython layer: ``%load_ext ipycompile`` registers the magics, ``%unload_ext`` removes them."""

from __future__ import annotations


def load_ipython_extension(ipython) -> None:
    from .compile_magic import CompileMagics

    ipython.register_magics(CompileMagics)


def unload_ipython_extension(ipython) -> None:
    from .compile_magic import CompileMagics
    from ..run import runner as run

    manager = ipython.magics_manager
    for kind, names in CompileMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CompileMagics.__name__, None)
    run._compiled.clear()
