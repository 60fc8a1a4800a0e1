"""Start-up (issue 38): what ``python -m ipycompile report LOG`` and ``import ipycompile`` load.

Each check runs in a fresh process, as a user's shell does, and reads ``sys.modules`` when
the command has finished: a count that does not depend on the machine's load, unlike a
wall-clock time (``benchmarks/trace_load.py --groups startup`` times it). The text summary
and ``--json`` need none of torch, matplotlib, pygments, pandas, IPython or ipywidgets; nor
does the page (``-o``), which draws its figure as SVG and highlights code by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trace_inputs import records, write_log

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "gpu-h100"
HEAVY = ("torch", "matplotlib", "pygments", "pandas", "IPython", "ipywidgets")
#: ipycompile's own modules that neither ``import ipycompile`` nor the text summary needs:
#: the cell run and its measurement pipeline, the live capture, the forked reader, the page's renderer
NOT_FOR_THE_SUMMARY = ("ipycompile.run.runner", "ipycompile.run.pipeline", "ipycompile.run.sweeps", "ipycompile.capture.listener",
                       "ipycompile.capture.forked", "ipycompile.views.html", "ipycompile.views.plots")

#: ``python -m ipycompile ARGS`` (runpy, as ``-m`` runs it), then the loaded modules as JSON
#: on the last line of stderr.
PROBE = """
import json, runpy, sys
sys.argv = ["ipycompile", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("ipycompile", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("TORCH_LOGS", None)
    env.pop("TORCH_TRACE", None)
    return env


def loaded_by(*args: str) -> tuple[set[str], str]:
    """The modules loaded by ``python -m ipycompile ARGS`` in a fresh process, and its stdout."""
    p = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True,
                       env=_env(), timeout=300)
    last = json.loads(p.stderr.rstrip().splitlines()[-1])
    assert last["code"] in (0, None), p.stderr
    return set(last["modules"]), p.stdout


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in HEAVY if m in modules)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """Three logs cut from the recorded training loop: its frames' starts only (a page with
    neither a figure nor code), with their compile metrics (a figure, no code), and whole."""
    work = tmp_path_factory.mktemp("startup")
    recs = records("quickstart")

    def kind(meta: dict) -> str:
        return next((k for k in meta if k not in ("frame_id", "frame_compile_id", "attempt", "rank")), "")

    return {
        "starts": write_log(work / "starts.log", [(m, p) for m, p in recs if kind(m) in ("str", "dynamo_start")]),
        "metrics": write_log(work / "metrics.log",
                             [(m, p) for m, p in recs if kind(m) in ("str", "dynamo_start", "compilation_metrics")]),
        "whole": DATA / "quickstart.log.gz",
        "ranks": _rank_dir(work / "ranks", recs[:200]),
    }


def _rank_dir(d: Path, recs) -> Path:
    d.mkdir()
    for r in range(3):
        write_log(d / f"dedicated_log_torch_trace_rank_{r}_x.log", [({**m, "rank": r} if "str" not in m else m, p) for m, p in recs])
    return d


def test_import_ipycompile_loads_no_heavy_module_and_none_of_the_runner():
    code = "import sys, json, ipycompile; print(json.dumps(sorted(sys.modules))); print(ipycompile.__version__)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 0, p.stderr
    loaded, version = p.stdout.splitlines()
    modules = set(json.loads(loaded))
    assert version  # the version, read without importing anything heavy
    assert not heavy(modules), heavy(modules)
    assert not modules & {*NOT_FOR_THE_SUMMARY, "ipycompile.analysis.doctor", "ipycompile.capture.builder"}, \
        sorted(modules & {*NOT_FOR_THE_SUMMARY, "ipycompile.analysis.doctor", "ipycompile.capture.builder"})


def test_the_names_load_on_first_use_and_are_the_same_objects():
    code = (
        "import ipycompile, ipycompile.capture.tracefile\n"
        "from ipycompile.run.observe import capture\n"
        "from ipycompile.run import runner, history_log, sweeps, traces\n"
        "from ipycompile.analysis import doctor, compare\n"
        "import sys; cmp = sys.modules['ipycompile.analysis.compare']\n"
        "assert ipycompile.capture is capture, ipycompile.capture\n"  # the function, not the subpackage
        "assert ipycompile.run_cell is runner.run_cell and ipycompile.sweep is sweeps.sweep\n"
        "assert ipycompile.history is history_log.history and ipycompile.load_trace is traces.load_trace\n"
        "assert ipycompile.compare is cmp.compare is compare\n"
        "from ipycompile.analysis import diagnose; assert diagnose is doctor.diagnose\n"
        "from ipycompile.capture import build_report, Capture, TraceFileError\n"
        "assert set(ipycompile.__all__) <= set(dir(ipycompile))\n"
        "ns = {}; exec('from ipycompile import *', ns); assert set(ipycompile.__all__) <= set(ns)\n"
        "try:\n    ipycompile.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no AttributeError')\n"
        "import ipycompile.run as run_layer\n"  # a submodule not imported yet is there as an attribute, as before
        "assert run_layer.cell.__name__ == 'ipycompile.run.cell' and ipycompile.capture.__name__ == 'capture'\n"
        "print('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


@pytest.mark.parametrize("extra", [[], ["--json", "-"], ["--full"]], ids=["text", "json", "full"])
def test_the_summary_and_json_load_no_heavy_module(logs, extra):
    modules, out = loaded_by("report", logs["whole"], *extra)
    assert "graph break" in out or out.startswith("{")  # it did run
    assert not heavy(modules), heavy(modules)
    # a full reading asks whether it could fork a reader (ipycompile.capture.forked); the summary never does
    unneeded = set(NOT_FOR_THE_SUMMARY) - ({"ipycompile.capture.forked"} if extra else set())
    assert not modules & unneeded, sorted(modules & unneeded)


@pytest.mark.parametrize("extra", [[], ["--json", "-"], ["--workers", "2"]], ids=["text", "json", "workers"])
def test_a_directorys_summary_loads_no_heavy_module(logs, extra):
    modules, out = loaded_by("report", logs["ranks"], *extra)
    assert "rank" in out
    assert not heavy(modules), heavy(modules)


def test_the_page_draws_its_figure_and_highlights_code_without_matplotlib_or_pygments(logs, tmp_path):
    seen = {}
    for name in ("starts", "metrics", "whole"):
        page = tmp_path / f"{name}.html"
        modules, _ = loaded_by("report", logs[name], "-o", page)
        text = page.read_text()
        seen[name] = ('<svg class="ipyc-chart"' in text, '<pre class="hl"><span class="k">' in text)  # figure; code
        assert not heavy(modules), (name, heavy(modules))
    # (figure drawn, code highlighted)
    assert seen == {"starts": (False, False), "metrics": (True, False), "whole": (True, True)}, seen


def test_a_directorys_page_loads_no_heavy_module(logs, tmp_path):
    page = tmp_path / "ranks.html"
    modules, _ = loaded_by("report", logs["ranks"], "-o", page)
    assert '<svg class="ipyc-chart"' in page.read_text()
    assert not heavy(modules), heavy(modules)
