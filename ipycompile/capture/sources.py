"""Names of notebook cells: which filename is ``In [7]``.

IPython compiles each cell under a generated filename (``/tmp/ipykernel_1/123.py``
or ``<ipython-input-7-...>``) and remembers its execution count. Read only
when IPython is already running: this never imports it.
"""

from __future__ import annotations

import sys


def notebook_sources() -> dict[str, str]:
    """``{filename: "In [n]"}`` for the cells of the running IPython shell, else ``{}``."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return {}
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return {filename: f"In [{count}]" for filename, count in names.items() if isinstance(count, int)}
