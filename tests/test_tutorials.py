"""Every tutorial runs end to end in a real Jupyter kernel (``tools/run_notebook.py``, the same
runner as ``make tutorials`` and ``make demo``): each notebook's own checks are its cells, and a
cell that raises fails its test with the cell and the error. The executed notebooks and their
HTML land in ``build/tutorials/``, and the log says where each notebook's time went
(``--cell-times``).

One runner process runs them all, as ``make tutorials`` does (each notebook in a fresh kernel of
its own; a failing notebook does not stop the others), and each notebook's test reads its part of
the runner's output. They are part of the suite so that ``make test`` spreads them over the
machine's cores with the other tests (``pytest -n``); ``conftest.py`` starts this module first,
since it is the longest.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "tutorials").glob("*.ipynb"))
OUT = ROOT / "build" / "tutorials"

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_there_are_tutorials():
    assert len(NOTEBOOKS) >= 7, [p.name for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def runner_output() -> tuple[dict[str, str], int]:
    """The runner's output (stdout and stderr in the order written), split by notebook (from the
    line that starts executing it to the line before the next one starts), and its exit status."""
    env = dict(os.environ)
    # this checkout's package first, whatever is installed: the kernels inherit it
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_notebook.py"), *map(str, NOTEBOOKS), "--out", str(OUT),
         "--timeout", "900", "--cell-times"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3000)
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
