"""The IPython layer: ``%load_ext ipycompile`` registers the magics, ``%unload_ext`` removes them."""

from __future__ import annotations


def load_ipython_extension(ipython) -> None:
    from .compile_magic import CompileMagics
    from ..widgets.html import register

    ipython.register_magics(CompileMagics)
    register()


def unload_ipython_extension(ipython) -> None:
    from .compile_magic import CompileMagics
    from ..widgets.html import unregister
    from ..run import runner as run

    manager = ipython.magics_manager
    for kind, names in CompileMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CompileMagics.__name__, None)
    unregister()
    run._compiled.clear()
