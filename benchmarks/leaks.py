"""Does a long notebook session stay flat? RSS, live widgets, open files, logging handlers.

Two workloads, each measured where it runs (inside the kernel, inside the process),
after a warm-up (the first compile, the first report shown, imports), before and after:

* **kernel**: one ``%%compile`` cell (default Inductor, a tiny function; unchanged, so
  every run after the first reuses its compiled code and shows a fresh report) run
  ``--runs`` times (default 1,000) in a real Jupyter kernel driven by nbclient, as a
  user re-running a cell would: each run displays a report widget.
* **run_cell**: ``--calls`` (default 300) ``ipycompile.run_cell`` calls, each with a new
  namespace dict holding a 16 MB tensor (``backend="eager"``: every call compiles a new
  cell function; Inductor would only make it slower, the namespaces are what is measured).

Targets: RSS growth under 50 MiB for each; live widgets and logging handlers back to
their starting counts. RSS is read twice: as the process has it, and after glibc's
``malloc_trim(0)``: a freed 16 MB tensor raises glibc's mmap threshold, later ones come
from its heap, and freed heap memory stays in the RSS until trimmed (seen: 87 MiB per
100 calls raw, 10 MiB with ``MALLOC_MMAP_THRESHOLD_`` fixed, with 2 tensors alive in
both). The target is judged on the trimmed figure, what live objects hold; the raw one
is reported beside it. Prints a table and writes ``benchmarks/results/leaks-cpu.json``
(``--out``).

    python benchmarks/leaks.py [--runs 1000] [--calls 300] [--out PATH]

:func:`kernel_session` and :func:`run_cell_session` are also what ``tests/test_leaks.py``
runs, with 20 runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
KERNEL = "python3"
RSS_TARGET_MIB = 50.0

KERNEL_CELL = """%%compile --runs 3 --warmup 1
y = torch.sin(x) * 2 + 1
y.sum()"""

#: run in the kernel (and in this process): one JSON line of what is measured
MEASURE = r'''
def _ipyc_measure():
    import ctypes, gc, json, logging, os
    gc.collect()
    def rss_now():
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            import resource
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rss = rss_now()
    try:  # glibc keeps freed memory (the 16 MB tensors) in its heap: hand it back, then read again
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        trimmed = rss_now()
    except (OSError, AttributeError):
        trimmed = rss
    try:
        from ipywidgets.widgets.widget import _instances
        widgets = len(_instances)
    except ImportError:
        widgets = 0
    try:
        fds = len(os.listdir("/proc/self/fd"))
    except OSError:
        fds = -1
    loggers = [logging.getLogger()] + [l for l in logging.root.manager.loggerDict.values() if isinstance(l, logging.Logger)]
    handlers = sum(len(l.handlers) for l in loggers)
    trace = len(logging.getLogger("torch.__trace").handlers)
    return {"rss_bytes": rss, "rss_trimmed_bytes": trimmed, "widgets": widgets, "fds": fds, "handlers": handlers, "trace_handlers": trace}
'''


#: run in a shell: the bytes IPython's output history (``history_manager.outputs``, every displayed
#: bundle of every cell, kept for the session) holds, per MIME type, and how many outputs
HISTORY = r'''
def _ipyc_history():
    per_mime, n = {}, 0
    for outs in list(get_ipython().history_manager.outputs.values()):
        for o in outs:
            n += 1
            for mime, data in o.bundle.items():
                per_mime[mime] = per_mime.get(mime, 0) + len(data if isinstance(data, (str, bytes)) else repr(data))
    return {"outputs": n, "bytes_per_mime": per_mime}
'''


def measure() -> dict:
    scope: dict = {}
    exec(MEASURE, scope)
    return scope["_ipyc_measure"]()


def _result(name: str, n: int, before: dict, after: dict, seconds: float, note: str) -> dict:
    """The target is judged on the trimmed RSS (what live objects hold); the raw RSS
    growth, which also holds what glibc kept of freed memory, is reported beside it."""
    growth = (after["rss_bytes"] - before["rss_bytes"]) / 2**20
    trimmed = (after["rss_trimmed_bytes"] - before["rss_trimmed_bytes"]) / 2**20
    ok = (trimmed < RSS_TARGET_MIB and after["widgets"] <= before["widgets"]
          and after["handlers"] <= before["handlers"] and after["trace_handlers"] <= before["trace_handlers"])
    return {"workload": name, "n": n, "before": before, "after": after, "rss_growth_mib": round(growth, 1),
            "rss_trimmed_growth_mib": round(trimmed, 1), "rss_per_run_kib": round(growth * 1024 / max(n, 1), 1),
            "rss_trimmed_per_run_kib": round(trimmed * 1024 / max(n, 1), 1), "seconds": round(seconds, 1),
            "meets_targets": ok, "note": note}


def kernel_session(runs: int, *, warmup: int = 5, max_live: int | None = None, cell: str = KERNEL_CELL,
                   then: str | None = None, display_history: bool = True) -> dict:
    """``cell`` run ``runs`` times in a real kernel after ``warmup`` runs; measured in the kernel.
    ``then``: a cell run last, its printed output returned as ``then_output``. ``display_history``:
    the kernel keeps every displayed bundle in IPython's output history, as the terminal always
    does (ipykernel's ``ZMQDisplayPublisher.store_display_history``; off by default, and its
    ``execute_result`` s are kept either way)."""
    import nbclient
    import nbformat

    sys.path.insert(0, str(ROOT / "tools"))
    import run_notebook  # the venv's kernelspec, as `make demo` picks it

    run_notebook._prefer_this_prefix()
    run_notebook.check_kernel(KERNEL)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env_path] if env_path else [])])  # this checkout's ipycompile
    v4 = nbformat.v4
    setup = "%load_ext ipycompile\nimport torch\nx = torch.randn(64)\n" + (
        f"import ipycompile.views.live as _live; _live.MAX_LIVE = {max_live}\n" if max_live else "") + MEASURE + HISTORY
    cells = [v4.new_code_cell(setup), v4.new_code_cell(cell),
             v4.new_code_cell("import json; print(json.dumps({**_ipyc_measure(), 'history': _ipyc_history()}))")]
    nb = v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=600, allow_errors=False,
                                     resources={"metadata": {"path": str(ROOT)}},
                                     extra_arguments=["--ZMQDisplayPublisher.store_display_history=True"] if display_history else [])

    def read() -> dict:
        client.execute_cell(cells[2], 2)
        (out,) = [o for o in cells[2].outputs if o.output_type == "stream"]
        return json.loads(out.text.strip().splitlines()[-1])

    with client.setup_kernel():
        client.execute_cell(cells[0], 0)
        for _ in range(warmup):
            client.execute_cell(cells[1], 1)
        before = read()
        t0 = time.perf_counter()
        for _ in range(runs):
            client.execute_cell(cells[1], 1)
        seconds = time.perf_counter() - t0
        shown = [o for o in cells[1].outputs if o.output_type == "display_data"]
        after = read()
        printed = None
        if then is not None:
            last = v4.new_code_cell(then)
            cells.append(last)
            client.execute_cell(last, 3)
            printed = "".join(o.text for o in last.outputs if o.output_type == "stream")
    assert shown and "application/vnd.jupyter.widget-view+json" in shown[-1].data, "no report widget was shown"
    result = _result("kernel: %%compile cell re-run", runs, before, after, seconds,
                     "default Inductor, unchanged cell (compiled once, reused); a widget shown per run"
                     + ("; displayed outputs kept in IPython's output history" if display_history else ""))
    result["display_bytes"] = _bundle_bytes(o.data for o in cells[1].outputs if o.output_type == "display_data")
    result["history_bytes_per_run"] = _per_run(before["history"], after["history"], runs)
    if then is not None:
        result["then_output"] = printed
    return result


def _bundle_bytes(bundles) -> dict:
    """Bytes per MIME type of the bundles (the outputs one displayed run leaves)."""
    out: dict = {}
    for data in bundles:
        for mime, value in data.items():
            out[mime] = out.get(mime, 0) + len(value if isinstance(value, str) else json.dumps(value))
    return out


def _per_run(before: dict, after: dict, runs: int) -> dict:
    """What IPython's output history grew by per run, per MIME type (bytes)."""
    b, a = before["bytes_per_mime"], after["bytes_per_mime"]
    return {mime: round((a.get(mime, 0) - b.get(mime, 0)) / max(runs, 1)) for mime in sorted({*a, *b})}


TERMINAL_SESSION = """%load_ext ipycompile
import json, torch
x = torch.randn(64)
exec(open({helper!r}).read())
{warm}print("IPYC-BEFORE", json.dumps({{**_ipyc_measure(), "history": _ipyc_history()}}))
{runs}print("IPYC-AFTER", json.dumps({{**_ipyc_measure(), "history": _ipyc_history()}}))
exit
"""


def terminal_session(runs: int, *, warmup: int = 3, cell: str = KERNEL_CELL) -> dict:
    """``cell`` run ``runs`` times in the IPython terminal app (``python -m IPython``, fed on
    stdin, its own profile with the history database on, as a user has it) after ``warmup``
    runs; measured in that process. Every displayed bundle stays in IPython's output history."""
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        helper = Path(tmp) / "measure.py"
        helper.write_text(MEASURE + HISTORY)
        one = cell + "\n\n\n"  # the simple prompt ends a cell magic at two blank lines
        session = TERMINAL_SESSION.format(helper=str(helper), warm=one * warmup, runs=one * runs)
        env = dict(os.environ, IPYTHONDIR=str(Path(tmp) / "ipython"))
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor"], input=session,
                              capture_output=True, text=True, cwd=tmp, env=env, timeout=3600)
        seconds = time.perf_counter() - t0
    found = {k: re.search(rf"IPYC-{k} (\{{.*\}})", proc.stdout) for k in ("BEFORE", "AFTER")}
    if proc.returncode != 0 or not all(found.values()):
        raise RuntimeError(f"the terminal session failed (exit {proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    before, after = (json.loads(found[k].group(1)) for k in ("BEFORE", "AFTER"))
    result = _result("terminal: %%compile cell re-run", runs, before, after, seconds,
                     "IPython's terminal app, history on (its database and output history, as a user has it); "
                     "default Inductor, unchanged cell (compiled once, reused); the report shown per run")
    result["history_bytes_per_run"] = _per_run(before["history"], after["history"], runs)
    return result


def run_cell_session(calls: int, *, warmup: int = 30, megabytes: int = 16) -> dict:
    """``calls`` run_cell calls, each with a fresh namespace holding a ``megabytes`` tensor."""
    import weakref

    sys.path.insert(0, str(ROOT))
    import torch

    import ipycompile

    cell = "y = t[:4] + 1\ny.sum()"
    tensors: list = []

    def once() -> None:
        ns = {"t": torch.ones(megabytes * 2**20 // 4)}
        tensors.append(weakref.ref(ns["t"]))
        ipycompile.run_cell(cell, ns, backend="eager", runs=1, warmup=0, record=False)

    for _ in range(warmup):
        once()
    before = measure()
    before["namespaces_alive"] = sum(r() is not None for r in tensors)
    t0 = time.perf_counter()
    for _ in range(calls):
        once()
    seconds = time.perf_counter() - t0
    after = measure()
    after["namespaces_alive"] = sum(r() is not None for r in tensors)
    return _result("run_cell: fresh namespaces", calls, before, after, seconds,
                   f"backend eager, a {megabytes} MB tensor per namespace, record=False (no history rows); "
                   f"{warmup} calls of warm-up; namespaces_alive: of all {warmup + calls} namespaces passed")


def _budget() -> int:
    sys.path.insert(0, str(ROOT))
    from ipycompile.views.live import DISPLAY_BUDGET_BYTES

    return DISPLAY_BUDGET_BYTES


def table(results: list[dict]) -> str:
    head = (f"{'workload':30} {'n':>5} {'RSS MiB before':>14} {'after':>6} {'growth':>7} {'trimmed growth':>14} "
            f"{'widgets':>11} {'fds':>9} {'handlers':>9} {'ok':>4}")
    lines = [head, "-" * len(head)]
    for r in results:
        b, a = r["before"], r["after"]
        lines.append(f"{r['workload']:30} {r['n']:>5} {b['rss_bytes'] / 2**20:>14.0f} {a['rss_bytes'] / 2**20:>6.0f} "
                     f"{r['rss_growth_mib']:>7.1f} {r['rss_trimmed_growth_mib']:>14.1f} "
                     f"{b['widgets']:>5}->{a['widgets']:<5} {b['fds']:>4}->{a['fds']:<4} "
                     f"{b['handlers']:>4}->{a['handlers']:<4} {'yes' if r['meets_targets'] else 'NO':>4}")
        lines.append(f"{'':30} per run: RSS {r['rss_per_run_kib']:.1f} KiB ({r['rss_trimmed_per_run_kib']:.1f} trimmed)")
        if "namespaces_alive" in a:
            lines.append(f"{'':30} namespaces alive: {b['namespaces_alive']} before, {a['namespaces_alive']} after")
        if "history_bytes_per_run" in r:
            kept = ", ".join(f"{m} {v:,} B" for m, v in r["history_bytes_per_run"].items()) or "nothing"
            lines.append(f"{'':30} IPython's output history per run: {kept}")
        if "display_bytes" in r:
            shown = ", ".join(f"{m} {v:,} B" for m, v in r["display_bytes"].items())
            lines.append(f"{'':30} one displayed run's outputs: {shown} (budget {_budget():,} B in all)")
    lines.append("growth: RSS after - before; trimmed: the same after glibc's malloc_trim(0) (freed memory handed "
                 "back), on which the 50 MiB target is judged")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="displayed runs of the kernel cell (default: 1000)")
    ap.add_argument("--calls", type=int, default=300, help="run_cell calls with fresh namespaces (default: 300)")
    ap.add_argument("--terminal-runs", type=int, default=200,
                    help="runs of the cell in the IPython terminal app, history on (default: 200)")
    ap.add_argument("--out", default=str(HERE / "results" / "leaks-cpu.json"))
    args = ap.parse_args()
    results = [run_cell_session(args.calls), terminal_session(args.terminal_runs), kernel_session(args.runs)]
    print(table(results))
    import torch

    payload = {"benchmark": "leaks", "host": platform.node(), "machine": platform.machine(), "python": sys.version.split()[0],
               "torch": torch.__version__, "cpus": os.cpu_count(), "rss_target_mib": RSS_TARGET_MIB,
               "display_budget_bytes": _budget(),
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
