"""Whose code is this file: the user's, torch's, ipycompile's own, another library's, or
generated code. The one place that decides it.

A report records, when it is captured, where code lived on that machine
(:class:`CodeLayout`: ipycompile's package directory, torch's, the interpreter's
prefixes and its standard-library and site-packages directories), so a report loaded
on another machine answers the same (pyinstrument's ``Frame.is_application_code``, with
the ``sys_prefixes`` saved in its session, is the model). The capture layer fills the
layout for the running process (``ipycompile.capture.layout.current_layout``); this
module only reads it, and imports nothing.

A report without a recorded layout (one read from a TORCH_TRACE log, written by a
process we know nothing of, or a report saved before layouts were recorded) is judged
by the shape of its paths alone, the **fallback rule**:

- ``<frozen ...>`` and ``<built-in>``: library; ``<eval_with_key>...`` (FX),
  ``<string>`` (exec'd code: dataclass and guard code) and ``<ipycompile-fp64-...>``
  (the float64 copy of a cell the run layer checks against): generated; other ``<...>``
  names (``<ipycompile-cell-3>``, ``<ipython-input-3-...>``, ``<stdin>``): the user's;
- a path holding ``torchinductor_*/`` or ``inductor_cache/`` (Inductor's output code):
  generated;
- ``.../site-packages/torch/`` or ``.../dist-packages/torch/``, or torch's own source
  folders (``torch/_dynamo/``, ``torch/_inductor/``, ``torch/nn/``...: a source build):
  torch's;
- ``.../site-packages/ipycompile/``, or ``ipycompile/<one of its layers>/`` and
  ``ipycompile/__init__.py`` (an editable install): ipycompile's own. A user's folder
  merely *named* ``ipycompile`` is the user's code (``ipycompile/benchmarks/x.py``);
- any other ``site-packages`` / ``dist-packages`` path, or one under ``lib/pythonX.Y/``
  (the standard library): another library;
- anything else: the user's code.

With a layout, the directories decide instead of the shapes: a file under the package
directory is ipycompile's, under torch's directory torch's, under a standard-library
or site-packages directory (or a prefix's ``lib``/``lib64``/``Lib`` folder) another
library's; only the ``<...>`` names, Inductor's output folders and folders named
``site-packages``/``dist-packages`` elsewhere (``pip install --target``, another
environment put on ``sys.path``: installed packages too) are judged by shape.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["Owner", "CodeLayout", "owner", "is_user_code", "is_notebook_cell", "display_path", "in_torch_package",
           "installed_package"]


class Owner(str, enum.Enum):
    """Whose code a file is."""

    USER = "user"  # the user's code: notebook cells, scripts, their own modules
    TORCH = "torch"
    IPYCOMPILE = "ipycompile"  # this package's own code (the runner that calls a cell)
    LIBRARY = "library"  # another installed package, the standard library, frozen and built-in modules
    GENERATED = "generated"  # code written at run time: Inductor's output, FX's <eval_with_key>, <string>
    UNKNOWN = "unknown"  # no file name


@dataclass
class CodeLayout:
    """Where code lived on the machine a report was captured on (directories end in ``/``;
    ``\\`` is written ``/``). An empty layout means: judge by path shape (the fallback rule)."""

    package_dir: list[str] = field(default_factory=list)  # ipycompile's package directory (as imported, and resolved)
    torch_dir: list[str] = field(default_factory=list)  # torch's package directory
    prefixes: list[str] = field(default_factory=list)  # sys.prefix, base_prefix, exec_prefix, base_exec_prefix
    library_dirs: list[str] = field(default_factory=list)  # stdlib, site-packages, user site-packages (sysconfig, site)
    generated_dirs: list[str] = field(default_factory=list)  # Inductor's cache directory

    @property
    def recorded(self) -> bool:
        return bool(self.package_dir or self.torch_dir or self.prefixes or self.library_dirs)

    def owner(self, filename: str) -> Owner:
        return owner(filename, self)


# -- the shapes: <...> names, Inductor's output, and the fallback rule -----------------

_LIBRARY_NAMES = ("<frozen", "<built-in")
_GENERATED_NAMES = ("<eval_with_key>", "<string>", "<ipycompile-fp64")
_GENERATED = re.compile(r"(?:^|/)(?:torchinductor_[^/]*|inductor_cache)/")
_TORCH_SHAPE = re.compile(
    r"/(?:site|dist)-packages/torch/"
    r"|(?:^|/)torch/(?:_dynamo|_inductor|_functorch|_higher_order_ops|_subclasses|_prims|_refs|_decomp|_library|"
    r"_logging|nn|fx|utils|autograd|distributed|export|_ops\.py|_tensor\.py|overrides\.py|functional\.py|__init__\.py)"
)
_LAYERS = r"(?:capture|report|analysis|run|views|magics|cli)"
_OWN_SHAPE = re.compile(r"/(?:site|dist)-packages/ipycompile/|(?:^|/)ipycompile/(?:" + _LAYERS + r"/(?:[^/]+/)*[^/]+\.py$|__(?:init|main)__\.py$)")
_INSTALLED_SHAPE = re.compile(r"/(?:site|dist)-packages/")
_LIBRARY_SHAPE = re.compile(r"/(?:site|dist)-packages/|/lib(?:64)?/python\d+(?:\.\d+)?t?/")
#: the part of an installed path before the package (for display): up to site-packages or lib/pythonX.Y/
_INSTALLED_HEAD = re.compile(r"^.*/(?:site|dist)-packages/|^.*/lib(?:64)?/python\d+(?:\.\d+)?t?/")


def _norm(filename: str) -> str:
    return filename.replace("\\", "/")


def _under(path: str, dirs: list[str]) -> Optional[str]:
    """The longest of ``dirs`` that holds ``path``."""
    best = None
    for d in dirs:
        if d and path.startswith(d) and (best is None or len(d) > len(best)):
            best = d
    return best


def owner(filename: str, layout: Optional[CodeLayout] = None) -> Owner:
    """Whose code ``filename`` is, by ``layout`` (recorded at capture) when it has one,
    else by the fallback rule (see the module docstring). Never raises."""
    if not isinstance(filename, str) or not filename:
        return Owner.UNKNOWN
    if filename.startswith("<"):
        if filename.startswith(_LIBRARY_NAMES):
            return Owner.LIBRARY
        return Owner.GENERATED if filename.startswith(_GENERATED_NAMES) else Owner.USER
    path = _norm(filename)
    if layout is not None and layout.recorded:
        if _under(path, layout.generated_dirs) or _GENERATED.search(path):
            return Owner.GENERATED
        own, torch = _under(path, layout.package_dir), _under(path, layout.torch_dir)
        if own or torch:  # the deeper directory wins (a package installed inside the other's folder)
            return Owner.IPYCOMPILE if len(own or "") >= len(torch or "") else Owner.TORCH
        if _under(path, layout.library_dirs) or _INSTALLED_SHAPE.search(path):
            return Owner.LIBRARY
        prefix = _under(path, layout.prefixes)
        if prefix and path[len(prefix):].startswith(("lib/", "lib64/", "Lib/")):
            return Owner.LIBRARY
        return Owner.USER
    if _GENERATED.search(path):
        return Owner.GENERATED
    if _TORCH_SHAPE.search(path):
        return Owner.TORCH
    if _OWN_SHAPE.search(path):
        return Owner.IPYCOMPILE
    if _LIBRARY_SHAPE.search(path):
        return Owner.LIBRARY
    return Owner.USER


def is_user_code(filename: str, layout: Optional[CodeLayout] = None) -> bool:
    """Whether ``filename`` is the user's own code (see :func:`owner`)."""
    return owner(filename, layout) is Owner.USER


def in_torch_package(filename: str, package: str) -> bool:
    """Whether ``filename`` is in torch's subpackage ``package`` (``"distributed"``: ``.../torch/distributed/...``,
    ``"optim"``), by the shape of its path. Never raises."""
    return isinstance(filename, str) and f"/torch/{package}/" in _norm(filename)


_PACKAGES_DIR = re.compile(r"/(?:site|dist)-packages/")


def installed_package(filename: str) -> str:
    """The installed package a file is in, the first folder under ``site-packages`` /
    ``dist-packages`` (``transformers`` for ``.../site-packages/transformers/models/x.py``); ""
    for a file in no such folder. Never raises."""
    path = _norm(filename) if isinstance(filename, str) else ""
    if "-packages/" not in path:
        return ""
    return _PACKAGES_DIR.split(path)[-1].split("/", 1)[0]


#: The files IPython compiles a cell under, named after a hash of the cell's content (ipykernel's
#: ``/tmp/ipykernel_<pid>/<hash>.py``, the terminal's ``<ipython-input-N-<hash>>``): the name is the content.
_CELL_FILE = re.compile(r"(?:^|/)ipykernel_\d+/[^/]+\.py$|^<ipython-input-\d+-[0-9a-f]+>$")


def is_notebook_cell(filename: str, cells: Optional[dict] = None) -> bool:
    """Whether ``filename`` is a notebook cell: one a report names (``cells``, its
    ``sources``: ``{filename: "In [7]"}``), or a file named the way IPython names a cell
    after its content. A cell is the user's code (:func:`owner`) whose file name changes
    with each execution. Never raises."""
    if not isinstance(filename, str) or not filename:
        return False
    return bool(cells and filename in cells) or bool(_CELL_FILE.search(_norm(filename)))


def display_path(filename: str, layout: Optional[CodeLayout] = None) -> str:
    """``filename`` as a user recognises it: package-relative for torch, installed
    packages and the standard library (``transformers/modeling_utils.py``), the base name
    for other files, ``<...>`` names as they are."""
    if not filename or filename.startswith("<"):
        return filename
    path = _norm(filename)
    if layout is not None and layout.recorded:
        head = _under(path, layout.library_dirs)
        if head:
            return path[len(head):]
    rel = _INSTALLED_HEAD.sub("", path)
    if rel != path:
        return rel
    return path.rsplit("/", 1)[-1]
