"""The test process's one real IPython shell, as the tests' modules reach it (one builder for all).

``IPython.testing.globalipapp.start_ipython`` starts the shell once per process (a later call
returns None): :func:`ipython` starts it if need be and returns it. :func:`loaded` holds
``%load_ext ipycompile`` for a block, as a notebook user loads it, and unloads it after. The
``ip`` fixture of ``tests/conftest.py`` is :func:`loaded` for a module, with ``torch`` imported.
"""

from __future__ import annotations

import contextlib
from typing import Iterator


def ipython():
    """The process's one real IPython shell (a terminal-style test shell: HTML off), started on first use."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    return get_ipython()


@contextlib.contextmanager
def loaded(*, html: bool = False) -> Iterator:
    """The shell with ``%load_ext ipycompile`` for the block (unloaded after it); ``html=True``: its
    ``text/html`` formatter on for the block, as a notebook frontend has it."""
    ip = ipython()
    types = list(ip.display_formatter.active_types)
    ip.run_line_magic("load_ext", "ipycompile")
    try:
        if html:
            ip.display_formatter.active_types = [*types, "text/html"]
        yield ip
    finally:
        ip.display_formatter.active_types = types
        ip.run_line_magic("unload_ext", "ipycompile")
