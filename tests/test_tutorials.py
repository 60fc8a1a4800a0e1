"""Every tutorial runs end to end in a real Jupyter kernel (``tools/run_notebook.py``, the same
runner as ``make tutorials`` and ``make demo``): each notebook's own checks are its cells, and a
cell that raises fails its test with the cell and the error. The executed notebooks and their
HTML land in ``build/tutorials/``, and the log says where each notebook's time went
(``--cell-times``).

One runner process runs them all, as ``make tutorials`` does (each notebook in a fresh kernel of
its own; a failing notebook does not stop the others), two at a time (``--jobs 2``: each
notebook's lines come together when it ends), and each notebook's test reads its part of the
runner's output. They are part of the suite so that ``make test`` spreads them over the
machine's cores with the other tests (``pytest -n``); ``conftest.py`` starts this module first,
since it is the longest. Two at a time, the tutorials also use the core that the other worker
leaves idle while it waits on a browser, a server or a sleeping cell (one at a time, the suite
left about 60 core-seconds idle on two cores).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "tutorials").glob("*.ipynb"))
OUT = ROOT / "build" / "tutorials"
KERNELSPEC = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
#: the longest tutorials (a fresh-cache run on two cores, two at a time: 65, 34, 33, 28 and 27 s), handed
#: to the runner first: the two at a time then end with short ones, not with one long one alone
LONGEST_FIRST = ("04_scan_vs_loop", "07_max_autotune", "06_control_flow", "05_associative_scan", "01_quickstart")

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_there_are_tutorials():
    assert len(NOTEBOOKS) >= 7, [p.name for p in NOTEBOOKS]
    assert {p.stem for p in NOTEBOOKS} >= set(LONGEST_FIRST), LONGEST_FIRST  # each one named there exists


def _env() -> dict[str, str]:
    """The runner's environment: this checkout's package first, whatever is installed (the kernels inherit it)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))


def _longest_first(path: pathlib.Path) -> int:
    return LONGEST_FIRST.index(path.stem) if path.stem in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.fixture(scope="module")
def runner_output() -> tuple[dict[str, str], int]:
    """The runner's output (stdout and stderr in the order written), split by notebook (from the
    line that starts executing it to the line before the next one starts), and its exit status."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_notebook.py"), *map(str, sorted(NOTEBOOKS, key=_longest_first)),
         "--out", str(OUT),
         "--timeout", "900", "--cell-times", "--jobs", "2"],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3000)
    sys.stdout.write(done.stdout)
    parts = re.split(r"^(?=run_notebook: executing )", done.stdout, flags=re.M)
    by_name = {}
    for part in parts[1:]:
        path = re.match(r"run_notebook: executing (.+?) \(kernel ", part).group(1)
        by_name[pathlib.Path(path).name] = part
    return by_name, done.returncode


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_tutorial_runs_end_to_end(notebook, runner_output):
    by_name, status = runner_output
    out = by_name.get(notebook.name)
    assert out is not None, f"{notebook.name} was not run (runner exit status {status})"
    assert f"run_notebook: ok {notebook} in " in out, f"{notebook.name} failed:\n{out[-6000:]}"
    assert (OUT / notebook.name).is_file() and (OUT / f"{notebook.stem}.html").is_file()
    # --cell-times: where the notebook's time went, one line per code cell
    code_cells = sum(c["cell_type"] == "code" for c in json.loads(notebook.read_text())["cells"])
    assert f"time of {notebook.name}: " in out and "HTML export" in out, out[-2000:]
    assert len(re.findall(r"^  cell +\d+ +[\d.]+s  ", out, re.M)) == code_cells, out[-4000:]


def test_the_runner_runs_notebooks_at_once_and_keeps_each_ones_lines_together(tmp_path):
    """``--jobs 2``: two notebooks execute at the same time, each in its own kernel (their cells' run
    times, as nbclient recorded them, overlap); a notebook whose cell raises still fails the run (exit 1)
    with its cell and error on standard error, the other's lines stay whole on standard output, and both
    executed notebooks are written."""
    v4 = nbformat.v4
    sources = {"sleeps": ["import time", "time.sleep(2)\nprint('slept')"],
               "raises": ["import time", "time.sleep(2)\n1 / 0"]}
    for name, cells in sources.items():
        nbformat.write(v4.new_notebook(cells=[v4.new_code_cell(c) for c in cells], metadata=KERNELSPEC),
                       tmp_path / f"{name}.ipynb")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_notebook.py"), *(str(tmp_path / f"{n}.ipynb") for n in sources),
         "--out", str(tmp_path / "out"), "--jobs", "2"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, (done.stdout, done.stderr)
    ok = re.search(r"^run_notebook: executing \S+sleeps\.ipynb .*?^run_notebook: ok \S+sleeps\.ipynb ", done.stdout,
                   re.M | re.S)
    assert ok and "raises" not in ok.group(0), done.stdout
    assert re.search(r"^run_notebook: executing \S+raises\.ipynb .*?FAILED \S+raises\.ipynb: cell 1 .*?"
                     r"ZeroDivisionError", done.stderr, re.M | re.S), done.stderr
    assert "1 of 2 notebook(s) failed" in done.stderr
    spans = {}
    for name in sources:
        nb = nbformat.read(tmp_path / "out" / f"{name}.ipynb", as_version=4)
        stamps = [c.metadata["execution"] for c in nb.cells]
        spans[name] = (stamps[0]["iopub.execute_input"], stamps[-1].get("shell.execute_reply")
                       or stamps[-1]["iopub.status.idle"])
    (a0, a1), (b0, b1) = spans.values()
    assert a0 < b1 and b0 < a1, spans  # at the same time
