"""Run a notebook's code cells in an in-process IPython shell, top to bottom.

For machines that have IPython but no Jupyter kernel machinery (the GPU machine
has torch but not ipykernel or nbclient): magics, ``{...}`` expansion and the
display of results work as in a notebook, minus the frontend. Stops at the
first cell that raises, with exit status 1; prints each cell's wall time and
its text output.

    python tools/run_cells.py NOTEBOOK [NOTEBOOK ...]

Use ``tools/run_notebook.py`` (a real kernel, through nbclient) wherever it can run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def run(path: Path, after_cell=None) -> bool:
    """Run the notebook's code cells; ``after_cell(index)`` (optional) is called after each cell."""
    from IPython.core.interactiveshell import InteractiveShell

    os.environ.setdefault("MPLBACKEND", "Agg")
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    shell = InteractiveShell.instance()
    shell.user_ns.clear()
    shell.init_user_ns()
    cwd = os.getcwd()
    os.chdir(path.parent)  # as Jupyter does: the notebook's folder is the working directory
    started = time.perf_counter()
    try:
        for i, cell in enumerate(cells, 1):
            source = "".join(cell["source"])
            t0 = time.perf_counter()
            result = shell.run_cell(source, store_history=True)
            first = source.strip().splitlines()[0][:70] if source.strip() else ""
            print(f"[{path.name} cell {i}/{len(cells)} {time.perf_counter() - t0:6.1f} s] {first}", flush=True)
            if after_cell is not None:
                after_cell(i)
            if not result.success:
                err = result.error_in_exec or result.error_before_exec
                print(f"run_cells: {path} cell {i} raised {type(err).__name__}: {err}", file=sys.stderr)
                return False
    finally:
        os.chdir(cwd)
    print(f"run_cells: ok {path} in {time.perf_counter() - started:.1f} s", flush=True)
    return True


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for name in argv:
        ok = run(Path(name)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
