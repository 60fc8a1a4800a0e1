#!/usr/bin/env python3
"""Execute notebooks headless in a real Jupyter kernel and export them to HTML.

    python tools/run_notebook.py tutorials/01_quickstart.ipynb --out build
    python tools/run_notebook.py tutorials/*.ipynb --out build/tutorials

``--cell-times`` prints where each notebook's time went (each code cell, the kernel start,
the HTML export). ``--jobs N`` executes N notebooks at once, each in its own kernel (the
suite runs the tutorials two at a time: see tests/test_tutorials.py); each notebook's lines
are then printed together when it ends.

For each notebook NAME.ipynb this writes OUT/NAME.ipynb (executed, with
outputs) and OUT/NAME.html (nbconvert HTML). Each notebook runs with its own
directory as the working directory. If any cell raises, the failing cell's
source and error are printed, the partly executed notebook is still written
(for inspection), the remaining notebooks still run, and the exit status is 1.

The kernel is the kernelspec named by --kernel (default: python3). It must run
*this* interpreter (the project venv's python): ``make venv`` registers one
with ``python -m ipykernel install --sys-prefix --name python3``; the runner
checks the spec and refuses a kernel that would run a different python.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _prefer_this_prefix() -> None:
    """Put this interpreter's share/jupyter first on the Jupyter search path,
    so the kernelspec installed with ``--sys-prefix`` wins over user-level ones."""
    here = os.path.join(sys.prefix, "share", "jupyter")
    current = os.environ.get("JUPYTER_PATH", "")
    parts = [p for p in current.split(os.pathsep) if p]
    if here not in parts:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([here, *parts])


def _same_python(a: str, b: str) -> bool:
    # Compare paths without resolving symlinks: a venv's python is a symlink
    # to the base interpreter, but it is the venv (its site-packages) we want.
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def check_kernel(kernel_name: str) -> str:
    """Return the python the kernelspec runs; exit if it is not this one."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel:
        sys.exit(
            f"run_notebook: no Jupyter kernel named {kernel_name!r}; register one with\n"
            f"  {sys.executable} -m ipykernel install --sys-prefix --name {kernel_name}"
        )
    exe = spec.argv[0] if spec.argv else ""
    major, minor = sys.version_info[:2]
    if exe in {"python", f"python{major}", f"python{major}.{minor}"}:
        # jupyter_client substitutes the launching interpreter for a bare "python".
        exe = sys.executable
    if not _same_python(exe, sys.executable):
        sys.exit(
            f"run_notebook: kernel {kernel_name!r} runs {exe}, not this interpreter "
            f"({sys.executable}).\nRe-register it from this environment:\n"
            f"  {sys.executable} -m ipykernel install --sys-prefix --name {kernel_name}"
        )
    return exe


def _failing_cell(nb) -> "tuple[int, object] | None":
    for i, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return i, cell
    return None


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def cell_times(nb) -> "list[tuple[int, float, str]]":
    """(index, seconds, first line) of each executed code cell, from the timestamps nbclient
    records (``record_timing``): from the kernel's ``execute_input`` to its ``execute_reply``."""
    rows = []
    for i, cell in enumerate(nb.cells):
        stamps = cell.get("metadata", {}).get("execution", {})
        start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
        if cell.get("cell_type") != "code" or not (start and end):
            continue
        first = next((ln for ln in cell.source.splitlines() if ln.strip()), "")
        rows.append((i, _seconds(end) - _seconds(start), first))
    return rows


def _print_cell_times(path: Path, nb, total: float, export: float, out) -> None:
    rows = cell_times(nb)
    in_cells = sum(s for _, s, _ in rows)
    print(f"run_notebook: time of {path.name}: {total:.1f}s executing (kernel start and "
          f"between cells {max(total - in_cells, 0.0):.1f}s), HTML export {export:.1f}s; by cell:", file=out)
    for i, seconds, first in rows:
        print(f"  cell {i:3d} {seconds:7.1f}s  {first[:90]}", file=out)


def run_one(path: Path, out_dir: Path, kernel_name: str, timeout: int,
            show_times: bool = False, out=None, err=None) -> bool:
    """Execute one notebook and write its outputs; say what happened on ``out`` and ``err`` (default:
    standard output and standard error). Returns whether every cell ran."""
    out, err = out or sys.stdout, err or sys.stderr
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        allow_errors=False,
        record_timing=True,
        # No saved widget state: nbconvert would then show the (offline-empty)
        # widget view instead of the report's static text/html fallback.
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    print(f"run_notebook: executing {path} (kernel {kernel_name}, cwd {path.parent}, "
          f"timeout {timeout}s per cell)", file=out, flush=True)
    start = time.monotonic()
    ok = True
    try:
        client.execute()
    except CellExecutionError as exc:
        ok = False
        found = _failing_cell(nb)
        where = f"cell {found[0]} (0-based, counting markdown)" if found else "a cell"
        print(f"\nrun_notebook: FAILED {path}: {where} raised:", file=err)
        # The message holds the cell's source and the traceback; drop IPython's colours.
        print(_ANSI.sub("", str(exc)), file=err, flush=True)
    except (CellTimeoutError, DeadKernelError, TimeoutError, RuntimeError) as exc:
        ok = False
        print(f"\nrun_notebook: FAILED {path}: {type(exc).__name__}: {exc}", file=err)
    elapsed = time.monotonic() - start

    out_dir.mkdir(parents=True, exist_ok=True)
    out_nb = out_dir / path.name
    out_html = out_dir / (path.stem + ".html")
    nbformat.write(nb, out_nb)
    exported = time.monotonic()
    try:
        body, _ = HTMLExporter().from_notebook_node(nb)
        out_html.write_text(body, encoding="utf-8")
        wrote = f"{out_nb} and {out_html}"
    except Exception as exc:  # the HTML is a convenience; the executed notebook is the result
        ok = False
        print(f"run_notebook: HTML export of {path} failed: {type(exc).__name__}: {exc}", file=err)
        wrote = str(out_nb)
    if show_times:
        _print_cell_times(path, nb, elapsed, time.monotonic() - exported, out)
    status = "ok" if ok else "FAILED"
    print(f"run_notebook: {status} {path} in {elapsed:.1f}s; wrote {wrote}", file=out, flush=True)
    return ok


def _run_all(paths: "list[Path]", out_dir: Path, kernel_name: str, timeout: int, show_times: bool,
             jobs: int) -> "list[Path]":
    """Run every notebook, ``jobs`` at a time; return those that failed, in the order given. One at a
    time, each says what it does as it goes; several at a time, each notebook's lines are kept and
    printed together when it ends (on standard error where it failed), so that they never interleave."""
    if jobs == 1:
        return [p for p in paths if not run_one(p, out_dir, kernel_name, timeout, show_times)]
    import io
    from concurrent.futures import ThreadPoolExecutor, as_completed

    def one(path: Path) -> "tuple[bool, str]":
        said = io.StringIO()
        return run_one(path, out_dir, kernel_name, timeout, show_times, out=said, err=said), said.getvalue()

    ok = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        running = {pool.submit(one, p): p for p in paths}
        for done in as_completed(running):
            path = running[done]
            ok[path], said = done.result()
            stream = sys.stdout if ok[path] else sys.stderr
            stream.write(said)
            stream.flush()
    return [p for p in paths if not ok[p]]


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebook(s) to execute")
    parser.add_argument("--out", type=Path, default=Path("build"),
                        help="output folder for executed .ipynb and .html (default: build)")
    parser.add_argument("--timeout", type=int, default=1200,
                        help="seconds one cell may run (default: 1200)")
    parser.add_argument("--kernel", default="python3",
                        help="kernelspec name (default: python3)")
    parser.add_argument("--cell-times", action="store_true",
                        help="print where each notebook's time went: each code cell's seconds, "
                             "the kernel start and the HTML export")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="notebooks executed at once, each in its own kernel (default: 1); each "
                             "notebook's lines are printed together when it ends")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")

    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    names = [p.name for p in args.notebooks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        parser.error(f"notebooks with the same file name would overwrite each other in "
                     f"{args.out}: {', '.join(dupes)}")

    _prefer_this_prefix()
    exe = check_kernel(args.kernel)
    print(f"run_notebook: kernel {args.kernel!r} runs {exe}", flush=True)

    failed = _run_all(args.notebooks, args.out, args.kernel, args.timeout, args.cell_times, args.jobs)
    total = len(args.notebooks)
    if failed:
        print(f"run_notebook: {len(failed)} of {total} notebook(s) failed: "
              f"{', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    print(f"run_notebook: all {total} notebook(s) ran; outputs in {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
