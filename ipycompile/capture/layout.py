"""Where code lives in this process, recorded into every report it captures
(:class:`ipycompile.report.owners.CodeLayout`; the rule that reads it lives there)."""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import site
import sys
import sysconfig

from ..report.owners import CodeLayout

__all__ = ["current_layout", "torch_package_dir"]


def _dirs(*paths) -> list[str]:
    """Each path as given and resolved, ``/``-separated, ending in ``/``; no repeats."""
    out: list[str] = []
    for p in paths:
        if not p or not isinstance(p, str):
            continue
        for form in (os.path.abspath(p), os.path.realpath(p)):
            d = form.replace("\\", "/").rstrip("/") + "/"
            if d != "/" and d not in out:
                out.append(d)
    return out


@functools.lru_cache(maxsize=1)
def torch_package_dir() -> str:
    """torch's package directory, found without importing torch ("" without torch)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ""
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else ""


def _inductor_cache_dir() -> str:
    """Inductor's output folder, when torch's Inductor is already loaded (never imported here)."""
    utils = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    try:
        return utils.cache_dir() if utils is not None else os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    except Exception:  # noqa: BLE001 - a nicety: the fallback shape still finds torchinductor_* folders
        return ""


#: ipycompile's own folder (this file is ``ipycompile/capture/layout.py``)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=1)
def _layout() -> CodeLayout:
    paths = sysconfig.get_paths()
    try:
        site_dirs = list(site.getsitepackages())
    except AttributeError:  # old virtualenv's site module
        site_dirs = []
    try:
        user_site = site.getusersitepackages()
    except AttributeError:
        user_site = ""
    return CodeLayout(
        package_dir=_dirs(_PACKAGE_DIR),
        torch_dir=_dirs(torch_package_dir()),
        prefixes=_dirs(sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", "")),
        library_dirs=_dirs(*(paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")), *site_dirs, user_site),
    )


def current_layout() -> CodeLayout:
    """This process's :class:`CodeLayout` (a fresh copy: a report owns its own)."""
    layout = copy.deepcopy(_layout())
    layout.generated_dirs = _dirs(_inductor_cache_dir())
    return layout
