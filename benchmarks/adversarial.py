"""Peak memory and time on adversarial inputs (issue 28): each input read in a fresh process.

The inputs, built in a temporary folder (sparse files: no disk used for the zeros):

* ``gz_line_256mib``: a real log (``max_autotune``) with one line of 256 MiB of zeros
  after its first event, gzipped to a few hundred KB: ``load_trace`` on it.
* ``rank_dir_beside_512mib``: a directory of two rank logs beside a 512 MiB file of
  zeros (a core dump, say): ``load_trace`` on the directory.
* ``report_load_1gib_zeros``: ``CompileReport.load`` on a 1 GiB file of zeros.
* ``report_load_64mib_zeros``: the same on 64 MiB (below the size limit: refused by
  its first bytes).
* ``report_load_fifo``: ``CompileReport.load`` on a FIFO nobody writes to (killed
  after ``--timeout`` seconds if it waits).
* ``baseline_import``: ``import ipycompile`` and the full read of the small log
  (``max_autotune``): what every process above costs before its input.
* ``notebook_output_1mb_reason``: the notebook output (text/plain and text/html) of a
  report whose graph-break reason is 1 MB, in bytes.
* ``displayed_static_copy_1mb_reason``: for that report, the static copy ``%%compile``
  displays beside the report widget (kept in the notebook and, where IPython keeps
  displayed outputs, in its output history), in bytes.

Each runs as ``python -c ...`` under a small parent process that waits for it and
reads ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the peak RSS of that one
child). Prints a table; writes ``benchmarks/results/adversarial-<host>.json``.
``--tree DIR`` runs another checkout's ipycompile (e.g. the code before the fix).

    python benchmarks/adversarial.py [--tree DIR] [--out PATH] [--timeout 60]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "gpu-h100"

#: Runs one case's code in a child and prints {"rc", "peak_mib", "wall_s", "out"} (the child's last line).
_PARENT = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    code, timeout = sys.argv[1], float(sys.argv[2])
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, (p.stdout.strip().splitlines() or [""])[-1] or p.stderr.strip()[-300:]
    except subprocess.TimeoutExpired:
        rc, out = "timeout", f"still waiting after {timeout:g} s (killed)"
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"rc": rc, "peak_mib": round(peak, 1), "wall_s": round(wall, 2), "out": out}))
""")


def host_name() -> str:
    """``cpu-amd-epyc``: the CPU's first words (as ``trace_load.py`` names its results)."""
    sys.path.insert(0, str(HERE))
    from trace_load import host_name as name

    return name()


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def build_inputs(work: Path) -> dict[str, Path]:
    lines = gzip.decompress((DATA / "max_autotune.log.gz").read_bytes()).splitlines(keepends=True)
    at = next(i for i in range(1, len(lines)) if not lines[i].startswith(b"\t"))  # after the first event
    bomb = work / "bomb.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.writelines(lines[:at])
        chunk = b"0" * (1 << 20)
        for _ in range(256):
            f.write(chunk)
        f.write(b"\n")
        f.writelines(lines[at:])
    job = work / "job"
    job.mkdir()
    for rank in (0, 1):
        (job / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(b"".join(lines))
    _sparse(job / "core.dump", 512 << 20)
    fifo = work / "report.json"
    os.mkfifo(fifo)
    return {"bomb": bomb, "job": job, "zeros_1g": _sparse(work / "zeros1g.json", 1 << 30),
            "zeros_64m": _sparse(work / "zeros64m.json", 64 << 20), "fifo": fifo}


def cases(inputs: dict[str, Path]) -> dict[str, str]:
    def load(path: Path) -> str:
        return (f"from ipycompile import CompileReport\n"
                f"try:\n    CompileReport.load({str(path)!r}); print('loaded')\n"
                f"except Exception as e:\n    print(type(e).__name__ + ': ' + str(e)[:160])")

    def trace(path: Path) -> str:
        return (f"import ipycompile\n"
                f"try:\n    r = ipycompile.load_trace({str(path)!r})\n"
                f"    o = getattr(r, 'origin', None)\n"
                f"    print(repr(r)[:120] + (' problems: ' + '; '.join(o.problems)[:200] if o and o.problems else ''))\n"
                f"except Exception as e:\n    print(type(e).__name__ + ': ' + str(e)[:160])")

    big_reason = textwrap.dedent(f"""
        import dataclasses, ipycompile
        r = ipycompile.load_trace({str(DATA / 'quickstart.log.gz')!r})
        b = r.graph_breaks[0]
        big = "why " * 250_000
        r = dataclasses.replace(r, graph_breaks=[dataclasses.replace(b, reason=big, detail=big)] + r.graph_breaks[1:])
        bundle = r._repr_mimebundle_()
        print(" ".join(f"{{k}}={{len(v.encode()):,}}B" for k, v in bundle.items()))
    """)
    # what %%compile displays beside the report widget for that report (views.live.show's static copy)
    big_reason_shown = big_reason.replace("bundle = r._repr_mimebundle_()", (
        "from ipycompile.views.html import fallback_bundle\n"
        "from ipycompile.views.viewmodel import view_model\n"
        "bundle = fallback_bundle(view_model(r), str(r))"))
    return {
        "baseline_import": trace(DATA / "max_autotune.log.gz"),
        "gz_line_256mib": trace(inputs["bomb"]),
        "rank_dir_beside_512mib": trace(inputs["job"]),
        "report_load_1gib_zeros": load(inputs["zeros_1g"]),
        "report_load_64mib_zeros": load(inputs["zeros_64m"]),
        "report_load_fifo": load(inputs["fifo"]),
        "notebook_output_1mb_reason": big_reason,
        "displayed_static_copy_1mb_reason": big_reason_shown,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose ipycompile is measured")
    ap.add_argument("--out", default=None, help="where to write the JSON (default: benchmarks/results/adversarial-<host>.json)")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(Path(args.tree).resolve()) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="ipycompile-adversarial-") as tmp:
        inputs = build_inputs(Path(tmp))
        sizes = {k: os.path.getsize(p) for k, p in inputs.items() if p.is_file()}
        for name, code in cases(inputs).items():
            p = subprocess.run([sys.executable, "-c", _PARENT, code, str(args.timeout)], capture_output=True, text=True,
                               env=env, timeout=args.timeout + 60, cwd=tmp)  # not the checkout: -c imports from cwd
            row = {"input": name, **json.loads(p.stdout)}
            rows.append(row)
            print(f"{name:28} {row['peak_mib']:8.1f} MiB {row['wall_s']:7.2f} s  rc={row['rc']}  {row['out'][:150]}", flush=True)
    host = host_name()
    out = Path(args.out) if args.out else HERE / "results" / f"adversarial-{host}.json"
    out.write_text(json.dumps({"benchmark": "adversarial", "tree": str(Path(args.tree).resolve()), "python": sys.version.split()[0], "host": host,
                               "input_bytes": {"bomb_gz": sizes.get("bomb")}, "results": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
