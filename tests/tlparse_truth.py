"""What tlparse itself says about a TORCH_TRACE log: the ground truth the reader is checked against.

:func:`tlparse_counts` runs the real ``tlparse`` binary (the PyPI wheel) on a
log and reads its own outputs back, the way a user reads its pages:

* ``compile_directory.json``: one key per compile id it saw (``[0/1]``,
  ``[2/0_1]`` for a restarted attempt), each with the artifacts it wrote for
  that compile; graph breaks are its ``dynamo_graph_break_reason`` artifacts,
  recompiles its ``recompile_reasons`` artifacts;
* ``failures_and_restarts.html``: one row per restart (``RestartAnalysis``)
  and per failure (the ``fail_type`` of a compile's metrics).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_CID_KEY = re.compile(r"^\[(?P<cid>(?:!\d+/)?\d+/\d+)(?:_(?P<attempt>\d+))?\]$")
_ROW = re.compile(r"<tr>\s*<td>\s*<a [^>]*>\[(?P<cid>[^\]]+)\]</a>\s*</td>\s*<td>(?P<type>.*?)</td>", re.S)


def tlparse_exe() -> str:
    exe = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    if not Path(exe).exists():
        raise FileNotFoundError("tlparse is not installed (pip install tlparse)")
    return exe


def run_tlparse(log_path, out_dir, *flags: str) -> subprocess.CompletedProcess:
    """``tlparse LOG -o OUT --overwrite --no-browser FLAGS``; raises when tlparse fails."""
    proc = subprocess.run(
        [tlparse_exe(), str(log_path), "-o", str(out_dir), "--overwrite", "--no-browser", *flags],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"tlparse failed on {log_path} ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def read_tlparse_output(out_dir) -> dict:
    """The counts from a tlparse output directory (see :func:`tlparse_counts`)."""
    out_dir = Path(out_dir)
    directory = json.loads((out_dir / "compile_directory.json").read_text())
    compile_ids, with_attempts = set(), set()
    graph_breaks = recompiles = 0
    for key, entry in directory.items():
        m = _CID_KEY.match(key)
        if m:
            compile_ids.add(m.group("cid"))
            with_attempts.add(key.strip("[]"))
        for art in entry.get("artifacts", []):
            name = art.get("name", "")
            graph_breaks += name.startswith("dynamo_graph_break_reason")
            recompiles += name.startswith("recompile_reasons")
    page = (out_dir / "failures_and_restarts.html").read_text()
    rows = [(m.group("cid"), html.unescape(re.sub(r"<[^>]+>", "", m.group("type"))).strip()) for m in _ROW.finditer(page)]
    failures = [(cid, kind) for cid, kind in rows if kind != "RestartAnalysis"]
    return {
        "compile_ids": compile_ids,
        "compile_ids_with_attempts": with_attempts,
        "graph_breaks": graph_breaks,
        "recompiles": recompiles,
        "failures": len(failures),
        "failure_types": sorted(failures),
        "restarts": len(rows) - len(failures),
    }


def tlparse_counts(log_path) -> dict:
    """What tlparse reports for one log:

    ``compile_ids`` (set of ``"frame/compile"`` strings, attempts folded, as
    ipycompile's ``CompileId`` does), ``compile_ids_with_attempts`` (tlparse's
    own keys, ``"2/0_1"``), ``graph_breaks``, ``recompiles``, ``failures``
    (ints), ``failure_types`` (sorted ``(compile id, type)``), ``restarts``.
    """
    with tempfile.TemporaryDirectory(prefix="tlparse-") as tmp:
        run_tlparse(log_path, Path(tmp) / "out", "--plain-text")
        return read_tlparse_output(Path(tmp) / "out")
