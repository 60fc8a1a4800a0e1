"""Every tutorial runs end to end in a real Jupyter kernel (``tools/run_notebook.py``, the same
runner as ``make tutorials`` and ``make demo``): each notebook's own checks are its cells, and a
cell that raises fails its test with the cell and the error. The executed notebooks and their
HTML land in ``build/tutorials/``, and the log says where each notebook's time went
(``--cell-times``).

They are part of the suite so that ``make test`` spreads them over the machine's cores with
the other tests (``pytest -n``); ``conftest.py`` starts this module first, since it is the
longest.
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


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_tutorial_runs_end_to_end(notebook):
    env = dict(os.environ)
    # this checkout's package first, whatever is installed: the kernel inherits it
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_notebook.py"), str(notebook), "--out", str(OUT),
         "--timeout", "900", "--cell-times"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    sys.stdout.write(done.stdout)
    assert done.returncode == 0, f"{notebook.name} failed:\n{done.stderr[-6000:]}"
    assert (OUT / notebook.name).is_file() and (OUT / f"{notebook.stem}.html").is_file()
    # --cell-times: where the notebook's time went, one line per code cell
    code_cells = sum(c["cell_type"] == "code" for c in json.loads(notebook.read_text())["cells"])
    assert f"time of {notebook.name}: " in done.stdout and "HTML export" in done.stdout, done.stdout[-2000:]
    assert len(re.findall(r"^  cell +\d+ +[\d.]+s  ", done.stdout, re.M)) == code_cells, done.stdout[-4000:]
