"""The compiled cells kept for re-running an unchanged cell, and when they are let go.

An unchanged cell run again in the same namespace reuses its compiled function
(``%%compile`` re-run, or ``run_cell`` with the same dict). The cache is keyed by
``(source, header, id(namespace), settings)`` and holds the cell function, whose
``__globals__`` IS the namespace. Torch holds the namespace too, as long as the cell
function's code object keeps Dynamo's cache: the guards and the ``CleanupHook``s of the
names Dynamo installs in the namespace (``__compiled_fn_*``, ``__resume_at_*``) refer to
it, and ``torch._dynamo.reset()`` is the only thing in torch that lets go of them.

A dict cannot be referenced weakly, and a namespace may be alive only through a running
frame, which the garbage collector does not see; so the cache is bounded instead: it
keeps the cells of the :data:`MAX_NAMESPACES` most recently used namespaces (the
notebook's own namespace is the one ``%%compile`` always uses) and at most
:data:`MAX_CELLS` cells in all, least recently used first out. A cell let go is let go
by torch as well (``torch._dynamo.reset_code`` on the cell function's code object, which
only ipycompile ever compiled), so a namespace that nothing else holds is freed at once
(``run_cell(code, {...})`` with a new dict per call no longer keeps every dict and its
tensors). Running that cell again in that namespace compiles it again, and says so.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator

#: cells of this many namespaces are kept (most recently used)
MAX_NAMESPACES = 2
#: and this many cells in all
MAX_CELLS = 64


class CompiledCells:
    """``key -> (CellFunction, compiled)``; a key's third item is ``id(namespace)``."""

    def __init__(self, on_release: Callable[[Hashable], None] = lambda key: None) -> None:
        self._cells: "OrderedDict[Hashable, tuple]" = OrderedDict()
        self._on_release = on_release  # forget what else was kept under the key (run.reuse)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._cells

    def __getitem__(self, key: Hashable) -> tuple:
        self._cells.move_to_end(key)
        return self._cells[key]

    def __setitem__(self, key: Hashable, value: tuple) -> None:
        if key in self._cells:
            self._release(key, self._cells.pop(key))
        self._cells[key] = value
        self._evict(_namespace_of(key))

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._cells))

    def values(self) -> list:
        return list(self._cells.values())

    def namespaces(self) -> int:
        """How many namespaces have cells kept."""
        return len({_namespace_of(k) for k in self._cells})

    def clear(self) -> None:
        while self._cells:
            key, value = self._cells.popitem(last=False)
            self._release(key, value)

    def _evict(self, current: Any) -> None:
        recent: list = []  # namespaces, most recently used first
        for key in reversed(self._cells):
            ns = _namespace_of(key)
            if ns not in recent:
                recent.append(ns)
        keep = {current, *recent[:MAX_NAMESPACES]}
        for key in [k for k in self._cells if _namespace_of(k) not in keep]:
            self._release(key, self._cells.pop(key))
        while len(self._cells) > MAX_CELLS:
            key, value = self._cells.popitem(last=False)
            self._release(key, value)

    def _release(self, key: Hashable, value: tuple) -> None:
        cf = value[0]
        self._on_release(key)
        _drop_torch_cache(getattr(getattr(cf, "fn", None), "__code__", None))


def _namespace_of(key: Hashable) -> Any:
    return key[2] if isinstance(key, tuple) and len(key) > 2 else None


def _drop_torch_cache(code: Any) -> None:
    """Dynamo's compiled code for ``code`` (a cell function's, compiled by ipycompile only)."""
    if code is None:
        return
    try:
        import torch._dynamo

        torch._dynamo.reset_code(code)
    except Exception:  # a torch without reset_code: its cache lets go at torch._dynamo.reset()
        pass
