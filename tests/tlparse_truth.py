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


def tlparse_all_ranks(directory) -> dict:
    """What ``tlparse DIR --all-ranks-html`` reports for a directory of rank logs:
    ``ranks`` (sorted ints), ``compile_id_divergence`` (its warning that compile ids
    diverge across ranks) and ``per_rank`` (``{rank: counts as tlparse_counts gives}``)."""
    with tempfile.TemporaryDirectory(prefix="tlparse-") as tmp:
        out = Path(tmp) / "out"
        run_tlparse(directory, out, "--all-ranks-html")
        page = (out / "index.html").read_text()
        ranks = sorted(int(p.name.split("_", 1)[1]) for p in out.glob("rank_*") if p.is_dir())
        return {
            "ranks": ranks,
            "compile_id_divergence": "Diverging Compilation IDs detected" in page,
            "per_rank": {r: read_tlparse_output(out / f"rank_{r}") for r in ranks},
        }


def assert_report_agrees(report, truth: dict) -> None:
    """A report's counts equal tlparse's, with the two differences by design:

    * compile ids: tlparse keys a restarted attempt on its own (``2/0_1``); a report
      folds attempts into the compile, whose ``attempt`` is the last one made;
    * failures: tlparse lists every compile whose metrics carry a ``fail_type``; a
      report calls a frame Dynamo gave up on and ran eagerly (after a graph break in
      a loop) ``skipped``, not failed: such compiles make up the difference.
    """
    assert {str(c.compile_id) for c in report.compiles} == truth["compile_ids"]
    attempts = {str(c.compile_id): c.attempt for c in report.compiles}
    for key in truth["compile_ids_with_attempts"]:
        cid, _, attempt = key.partition("_")
        assert attempts[cid] >= int(attempt or 0), key
    assert report.graph_break_count == truth["graph_breaks"]
    assert len(report.recompiles) == truth["recompiles"]
    skipped = {str(c.compile_id) for c in report.compiles if c.status == "skipped" and c.fail_type}
    failed = {str(f.compile_id) for f in report.failures}
    assert not skipped & failed
    assert sorted(failed | skipped) == sorted(cid for cid, _ in truth["failure_types"])
    assert len(report.failures) + len(skipped) == truth["failures"]
