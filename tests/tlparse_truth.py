"""An independent account of a torch.compile run: torch's own trace file, read by ``tlparse``.

Two pieces, usable from any test:

``torch_trace(directory)``
    A context manager that, while its block runs, writes torch's structured
    trace to a file in ``directory`` exactly as ``TORCH_TRACE=directory`` does:
    torch's own ``LazyTraceHandler`` with torch's ``TorchLogsFormatter(trace=True)``
    on the ``torch.__trace`` logger, the logger left DEBUG as torch's
    ``_init_logs`` leaves it. It yields a :class:`TraceFile` whose ``path`` is
    the log written (set when the block ends; ``None`` if nothing was written:
    torch logged nothing and had interned no string yet).
    Strings torch interned before the block (file names of stack frames) are
    written first, as ``str`` records, so that the file stands alone as a
    ``TORCH_TRACE`` file from process start would. On exit the handler is
    closed and the logger's level, handlers, propagation and disabled flag are
    put back. It coexists with ``ipycompile.capture()`` (and ``run_cell``) on
    the same run: open it *outside* them, because a capture restores the
    handler list it found when it closes.

``tlparse_counts(log_path) -> dict``
    Runs the ``tlparse`` executable (PyPI package ``tlparse``, 0.4.x) on the
    log, into a temporary output folder, with ``--no-browser`` and ``--strict``
    (a line tlparse cannot read, a bad glog prefix, bad JSON or a payload whose
    md5 differs from its header, makes it fail instead of being skipped), and
    reads its outputs into::

        {"compile_ids": {"0/0", "1/0", "1/0_1", ...},
         "graph_breaks": int, "recompiles": int, "failures": int, "restarts": int,
         "failure_ids": ["4/0", ...]}

    How each figure is derived from tlparse's output (tlparse files every
    record under the compile id of its envelope, ``[frame/compile]``, with
    ``_attempt`` appended when the attempt is not 0):

    * ``compile_ids``: the keys of ``compile_directory.json`` that name a
      compile, brackets removed, as tlparse writes them: ``"0/0"``,
      ``"1/0_1"`` (attempt 1 of compile ``1/0``, after Dynamo restarted its
      analysis), ``"!0/1/0"`` for a compiled-autograd id. The key of records
      with no compile id (``[-/-]`` in 0.4.x) is left out.
    * ``graph_breaks``: the number of ``dynamo_graph_break_reason_N.txt``
      artifacts in ``compile_directory.json``, over all compile ids: torch
      logs one ``dynamo_graph_break_reason`` record each time Dynamo breaks
      the graph (repeats at one site count each time).
    * ``recompiles``: the number of ``recompile_reasons_N.json`` artifacts in
      ``compile_directory.json``: torch logs one, under the new compile id,
      each time it compiles a frame again because the guards of its earlier
      compiles failed (including the compile refused at the recompile limit).
    * ``failures``: the rows of ``failures_and_restarts.html`` that are
      failures, not restarts: tlparse writes one such row per
      ``compilation_metrics`` record with a ``fail_type`` (its Failure Type
      column holds the ``fail_type``). ``failure_ids`` lists the compile id of
      each such row, as tlparse writes it, in tlparse's order.
    * ``restarts``: the rows of ``failures_and_restarts.html`` whose Failure
      Type is ``RestartAnalysis``: one per entry of a ``compilation_metrics``
      record's ``restart_reasons``.

    Also in the dict: ``compile_ids_folded`` (attempts folded into their compile,
    ``"1/0"``, as ipycompile's ``CompileId`` keys a compile) and ``failure_types``
    (sorted ``(compile id, fail_type)`` pairs).

    tlparse exiting non-zero, or an output missing, raises ``TlparseError``
    with tlparse's stderr.

``run_tlparse(log, out_dir, *flags)`` / ``read_tlparse_output(out_dir)``
    The two halves of ``tlparse_counts``, for tests that keep tlparse's output.
``tlparse_all_ranks(directory)``
    ``tlparse DIR --all-ranks-html`` on a directory of rank logs: the ranks, its
    warning that compile ids diverge across ranks, and each rank's counts.
``assert_report_agrees(report, truth)``
    A report's counts equal tlparse's, with the two differences by design.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

TRACE_LOGGER = "torch.__trace"

__all__ = ["TraceFile", "torch_trace", "tlparse_counts", "tlparse_executable", "TlparseError"]


class TlparseError(RuntimeError):
    """tlparse could not be run, failed, or did not write what it always writes."""


@dataclass
class TraceFile:
    """The log written by :func:`torch_trace`; ``path`` is set when its block ends."""

    directory: Path
    path: Optional[Path] = None


@contextlib.contextmanager
def torch_trace(directory: "str | os.PathLike[str]") -> Iterator[TraceFile]:
    """Write torch's structured trace to a new file in ``directory`` while the block runs."""
    import torch  # noqa: F401  (torch's logging set-up owns the trace logger)
    from torch._logging import _internal, structured

    directory = Path(directory)
    logger = logging.getLogger(TRACE_LOGGER)
    saved = (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
    # As torch's _init_logs does for TORCH_TRACE. Not registered with torch's
    # _track_handler: torch._logging.set_logs() inside the block would remove it.
    handler = _internal.LazyTraceHandler(str(directory))
    handler.setFormatter(_internal.TorchLogsFormatter(trace=True))
    trace = TraceFile(directory)
    # First in line: torch's default trace handler (no TORCH_TRACE) removes itself from the
    # logger while handling its first record, and logging would then skip the handler after it.
    logger.handlers.insert(0, handler)
    logger.setLevel(logging.DEBUG)
    logger.disabled = False
    try:
        for text, index in list(structured.INTERN_TABLE.items()):
            # what intern_string logged when the string was first seen: trace_structured("str", ...)
            record = logger.makeRecord(
                logger.name, logging.DEBUG, __file__, 0, "", (), None,
                extra={"metadata": {"str": (text, index)}, "payload": None},
            )
            handler.handle(record)
        yield trace
    finally:
        path = handler._stream_path  # where LazyTraceHandler opened its file (None: nothing logged)
        handler.close()
        level, handlers, propagate, disabled = saved
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = disabled
        trace.path = Path(path) if path else None


def tlparse_executable() -> str:
    """The ``tlparse`` program: on PATH, or beside this Python (a venv that is not activated)."""
    found = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))
    if not found:
        raise TlparseError(
            "tlparse is not installed: it comes with the test extra (pip install 'tlparse>=0.4,<0.5', "
            "or pip install -e '.[test]')"
        )
    return found


# tlparse's compile-id keys: "[0/0]", "[1/0_1]", "[!0/1/0]"; "[-/-]" (0.4.x) or "unknown" for no id
_KEY = re.compile(r"^\[(?P<cid>(?:!\d+/)?\d+/\d+(?:_\d+)?)\]$")
_ROW = re.compile(r"<tr>\s*<td>(?P<cid>.*?)</td>\s*<td>(?P<type>.*?)</td>", re.S)
_TAG = re.compile(r"<[^>]+>")


def run_tlparse(log_path: "str | os.PathLike[str]", out_dir: "str | os.PathLike[str]", *flags: str,
                timeout: float = 300) -> subprocess.CompletedProcess:
    """``tlparse LOG -o OUT --overwrite --no-browser FLAGS``; raises ``TlparseError`` when it fails."""
    log_path = Path(log_path)
    if not log_path.exists():
        raise TlparseError(f"no trace log at {log_path}")
    proc = subprocess.run(
        [tlparse_executable(), str(log_path), "-o", str(out_dir), "--overwrite", "--no-browser", *flags],
        capture_output=True, text=True, timeout=timeout,
    )
    if proc.returncode != 0:
        raise TlparseError(f"tlparse exited with {proc.returncode} on {log_path}:\n{proc.stderr[-4000:]}")
    return proc


def read_tlparse_output(out_dir: "str | os.PathLike[str]") -> dict:
    """The counts from a tlparse output folder (see the module docstring for each figure)."""
    out = Path(out_dir)
    for name in ("compile_directory.json", "failures_and_restarts.html"):
        if not (out / name).is_file():
            raise TlparseError(f"tlparse wrote no {name} in {out}")
    return _counts(json.loads((out / "compile_directory.json").read_text(encoding="utf-8")),
                   (out / "failures_and_restarts.html").read_text(encoding="utf-8"))


def tlparse_counts(log_path: "str | os.PathLike[str]", *, timeout: float = 120) -> dict:
    """Run tlparse (``--strict``) on a trace log and read its counts."""
    log_path = Path(log_path)
    if not log_path.is_file():
        raise TlparseError(f"no trace log at {log_path}")
    with tempfile.TemporaryDirectory(prefix="tlparse-") as tmp:
        out = Path(tmp) / "out"
        run_tlparse(log_path, out, "--strict", timeout=timeout)
        return read_tlparse_output(out)


def tlparse_all_ranks(directory: "str | os.PathLike[str]") -> dict:
    """What ``tlparse DIR --all-ranks-html`` reports for a directory of rank logs:
    ``ranks`` (sorted ints), ``compile_id_divergence`` (its warning that compile ids
    diverge across ranks) and ``per_rank`` (``{rank: counts as tlparse_counts gives}``)."""
    with tempfile.TemporaryDirectory(prefix="tlparse-") as tmp:
        out = Path(tmp) / "out"
        run_tlparse(directory, out, "--all-ranks-html")
        page = (out / "index.html").read_text(encoding="utf-8")
        ranks = sorted(int(p.name.split("_", 1)[1]) for p in out.glob("rank_*") if p.is_dir())
        return {
            "ranks": ranks,
            "compile_id_divergence": "Diverging Compilation IDs detected" in page,
            "per_rank": {r: read_tlparse_output(out / f"rank_{r}") for r in ranks},
        }


def _counts(directory: dict, failures_html: str) -> dict:
    compile_ids: set[str] = set()
    artifact_names: list[str] = []
    for key, entry in directory.items():
        m = _KEY.match(key)
        if m:
            compile_ids.add(m.group("cid"))
        artifact_names.extend(str(a.get("name", "")) for a in (entry or {}).get("artifacts", []))
    kinds = [re.sub(r"_\d+\.\w+$", "", name) for name in artifact_names]  # "recompile_reasons_28.json" -> "recompile_reasons"
    restarts = 0
    failures: list[tuple[str, str]] = []
    for row in _ROW.finditer(failures_html):
        kind = html.unescape(_TAG.sub("", row.group("type"))).strip()
        if kind == "RestartAnalysis":
            restarts += 1
        else:
            cid = html.unescape(_TAG.sub("", row.group("cid"))).strip()
            m = _KEY.match(cid)
            failures.append((m.group("cid") if m else cid, kind))
    return {
        "compile_ids": compile_ids,
        "compile_ids_folded": {cid.partition("_")[0] for cid in compile_ids},
        "graph_breaks": kinds.count("dynamo_graph_break_reason"),
        "recompiles": kinds.count("recompile_reasons"),
        "failures": len(failures),
        "restarts": restarts,
        "failure_ids": [cid for cid, _ in failures],
        "failure_types": sorted(failures),
    }


def assert_report_agrees(report, truth: dict) -> None:
    """A report's counts equal tlparse's, with the two differences by design:

    * compile ids: tlparse keys a restarted attempt on its own (``2/0_1``); a report
      folds attempts into the compile, whose ``attempt`` is the last one made;
    * failures: tlparse lists every compile whose metrics carry a ``fail_type``; a
      report calls a frame Dynamo gave up on and ran eagerly (after a graph break in
      a loop) ``skipped``, not failed: such compiles make up the difference.
    """
    assert {str(c.compile_id) for c in report.compiles} == truth["compile_ids_folded"]
    attempts = {str(c.compile_id): c.attempt for c in report.compiles}
    for key in truth["compile_ids"]:
        cid, _, attempt = key.partition("_")
        assert attempts[cid] >= int(attempt or 0), key
    assert report.graph_break_count == truth["graph_breaks"]
    assert len(report.recompiles) == truth["recompiles"]
    skipped = {str(c.compile_id) for c in report.compiles if c.status == "skipped" and c.fail_type}
    failed = {str(f.compile_id) for f in report.failures}
    assert not skipped & failed
    assert sorted(failed | skipped) == sorted(truth["failure_ids"])
    assert len(report.failures) + len(skipped) == truth["failures"]
