"""Test helper: the reports of the recorded logs in ``tests/inputs/``, and the recording itself.

Parsing, the doctor and the views are functions of a log: the tests of their answers read a
small TORCH_TRACE log per feature, recorded once by ``ipycompile.capture(trace_dir=...)`` from a
recipe of ``tests/inputs/recipes.py`` (the user's code, then its calls) and loaded with
``ipycompile.load_trace`` (the doctor applied, as ``python -m ipycompile report LOG`` does). Each log
is ``<recipe>-torch-<version>.log.gz``; a test reads the log of the running torch's version, else
the newest one recorded. ``python tests/inputs/record.py [--only NAME ...]`` records them again;
``tests/test_recorded_truth.py`` records them live and checks that torch still writes what they hold.

A recipe's code is the user's file: it runs from a file name of its own (``/ipycompile-recipes/NAME.py``)
whose lines are in ``linecache``, as a notebook cell's are, so that a log records the same file names
on every machine, and the report built from it (the guarded values named under the user's names,
the kept source) reads the same lines anywhere.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import linecache
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

INPUTS = Path(__file__).parent / "inputs"
RECORD_COMMAND = "python tests/inputs/record.py"
_LOG = re.compile(r"^(?P<name>.+)-torch-(?P<version>\d+(?:\.\d+)*)\.log\.gz$")


@functools.cache
def recipes() -> dict:
    """``{name: Recipe}`` of ``tests/inputs/recipes.py``."""
    spec = importlib.util.spec_from_file_location("ipycompile_test_recipes", INPUTS / "recipes.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return {r.name: r for r in module.RECIPES}


def recipe(name: str):
    return recipes()[name]


def torch_version() -> str:
    """The running torch's version without its build (``2.13.0`` of ``2.13.0+cpu``)."""
    import torch

    return torch.__version__.split("+")[0]


def _key(version: str) -> tuple:
    return tuple(int(x) for x in version.split("."))


def recorded_versions(name: str) -> list[str]:
    """The torch versions ``name`` was recorded with, oldest first."""
    found = [m["version"] for p in INPUTS.glob(f"{name}-torch-*.log.gz") if (m := _LOG.match(p.name)) and m["name"] == name]
    return sorted(found, key=_key)


def log_path(name: str, version: "str | None" = None) -> Path:
    """The log of ``name`` for ``version`` (the running torch's when recorded with it, else the newest)."""
    versions = recorded_versions(name)
    if not versions:
        raise FileNotFoundError(f"no recorded log of {name!r} in {INPUTS}: run `{RECORD_COMMAND} --only {name}`")
    version = version or torch_version()
    return INPUTS / f"{name}-torch-{version if version in versions else versions[-1]}.log.gz"


def filename(name: str) -> str:
    """The file name the recipe's code runs from (the same on every machine)."""
    return f"/ipycompile-recipes/{name}.py"


def register_source(name: str) -> str:
    """Put the recipe's lines in ``linecache`` under its file name (as IPython does for a cell); the name."""
    r, fn = recipe(name), filename(name)
    text = r.source
    linecache.cache[fn] = (len(text), None, text.splitlines(keepends=True), fn)
    return fn


def namespace(name: str) -> dict:
    """The recipe's code run without its calls (a cell's set-up: the notebook's namespace before the cell)."""
    r = recipe(name)
    fn = register_source(name) if r.through != "cell" else f"/ipycompile-recipes/{name}-setup.py"
    ns: dict = {"__name__": f"recipe_{name}"}
    exec(compile(r.code, fn, "exec"), ns)
    return ns


def definitions(name: str) -> SimpleNamespace:
    """The recipe's code run without its calls: its functions and classes, from its own file name
    (their lines are the recorded ones), for a test that applies a fix and compiles them again; for a
    cell, the namespace the cell ran in (a fresh model of the same weights)."""
    return SimpleNamespace(**{k: v for k, v in namespace(name).items() if not k.startswith("__")})


@functools.cache
def _loaded(path: Path):
    import ipycompile

    return ipycompile.load_trace(path)


def report(name: str, version: "str | None" = None):
    """The diagnosed report of the recorded log of ``name`` (``ipycompile.load_trace``), loaded once."""
    register_source(name)
    return _loaded(log_path(name, version))


def record(name: str, out_dir: "str | os.PathLike[str]"):
    """Run the recipe now, from a clean Dynamo, under ``ipycompile.capture(trace_dir=...)`` (a cell: through
    ``ipycompile.run_cell(..., trace_dir=...)``; the DDP job: rank 0's TORCH_TRACE log, read by ``load_trace``):
    ``(the live report, the path of its log, gzipped, in out_dir)``."""
    import torch

    import ipycompile

    r = recipe(name)
    ipycompile.reset()
    try:
        with tempfile.TemporaryDirectory(prefix="ipycompile-record-") as tmp:
            if r.through == "ddp":  # the gloo DDP job of trace_jobs.py, traced by torch itself (TORCH_TRACE): rank 0's log
                from trace_jobs import ddp_logs

                (trace,) = ddp_logs().glob("*rank_0*")
                live = ipycompile.load_trace(trace)
            elif r.through == "cell":
                ns = namespace(name)
                run = ipycompile.run_cell(r.calls, ns, backend="eager", runs=1, record=False, trace_dir=tmp,
                                          filename=register_source(name))
                live, (trace,) = run.report, list(Path(tmp).glob("*.log"))
            else:
                ns = {"__name__": f"recipe_{name}"}
                code = compile(r.source, register_source(name), "exec")
                with torch._dynamo.config.patch(**r.config):
                    with ipycompile.capture(trace_dir=tmp) as cap:
                        exec(code, ns)
                live, trace = cap.report, cap.trace_path
            out = Path(out_dir) / f"{name}-torch-{torch_version()}.log.gz"
            with open(trace, "rb") as src, open(out, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            return live, out
    finally:
        ipycompile.reset()


def answers(report) -> dict:
    """What the tests of the recorded logs read of a report, as plain data: the compiles' count,
    each recompile's reasons, guards, changes, words and fix, each graph break's and failure's kind,
    place and fix. Equal for a log recorded now and the committed one while torch writes the same."""
    import dataclasses

    def fix(s) -> "tuple | None":
        return None if s is None else (s.kind, s.title, s.code, s.explanation)

    def place(f) -> tuple:
        return (f.filename, f.lineno, f.function)

    out = {
        "compiles": [(c.function, str(c.compile_id)) for c in report.compiles],
        "recompiles": [
            {"function": rc.function, "reasons": rc.reasons, "limit": (rc.limit_hit, rc.limit_type, rc.limit),
             "guards": [dataclasses.asdict(g) for g in rc.guards], "changes": [dataclasses.asdict(c) for c in rc.changes],
             "explanation": rc.explanation, "fix": fix(rc.suggestion), "call_site": place(rc.call_site)}
            for rc in report.recompiles
        ],
        "graph_breaks": [(b.reason, b.gb_type, place(b.frame), fix(b.suggestion)) for b in report.graph_breaks],
        "failures": [(f.type, f.gb_type, f.limit_hit, place(f.frame), fix(f.suggestion)) for f in report.failures],
    }
    return _without_ids(out)


_OBJECT_ID = re.compile(r"(___check_(?:obj|type)_id\((?:[^(),]|\([^()]*\))+, )\d+")
#: the machine's thread count, quoted in torch's global-state guard (``"num_threads":2``): the recording
#: machine's (or the xdist worker's OMP_NUM_THREADS), not what the recipe did
_NUM_THREADS = re.compile(r'("num_threads":)\d+')
#: where the recording machine installed torch and the libraries (the stack trace in a recompile's reason names
#: their files by absolute path: ``/work/main/.venv/lib/python3.11/site-packages/torch/...``)
_INSTALLED = re.compile(r'[^\s"\'(]*/(?:site|dist)-packages/')


def _without_ids(value):
    """``value`` with the object ids torch's identity guards quote (``___check_obj_id(L['fn'], 1402...)``) as ``ID``:
    an address of the recording process, never the same twice; the thread count of the global-state guard as ``N``;
    the folder packages are installed in as ``site-packages/``."""
    if isinstance(value, str):
        return _INSTALLED.sub("site-packages/", _NUM_THREADS.sub(r"\1N", _OBJECT_ID.sub(r"\1ID", value)))
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_without_ids(v) for v in value)
    return value
