"""Names a package imports on first use (:pep:`562`), for the packages' ``__init__``: so that
``import ipycompile`` and ``python -m ipycompile report LOG`` load only the modules they use.
Here, in the lowest layer, because every layer's package uses it; it imports nothing of ours.

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"run_cell": ".runner", ...})
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import Any, Callable

__all__ = ["lazy_names"]


def lazy_names(package: str, namespace: dict[str, Any],
               names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps each name to the
    module (relative to ``package``) that defines it, imported when the name is first read;
    a submodule not imported yet is imported when read as an attribute (as it was when the
    package imported it eagerly). A value read is stored in ``namespace``, the package's
    globals: later reads are plain attribute reads."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is not None:
            value = getattr(import_module(module, package), name)
        elif not name.startswith("__") and find_spec(f"{package}.{name}") is not None:
            value = import_module(f".{name}", package)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
