"""The instrument the model tests trust: tests/tlparse_truth.py (torch's trace file, read by tlparse)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tlparse_truth import TlparseError, tlparse_counts, torch_trace

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent


def _lines_without_torch_version(path: Path) -> list[str]:
    """The log's records, each as its lines (payload included), torch_version artifacts left out
    (each trace handler logs one when it opens its file, and both handlers receive both)."""
    records: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("\t") and records:
            records[-1].append(line)
        else:
            records.append([line])
    return ["\n".join(r) for r in records if '"name": "torch_version"' not in r[0]]


def test_torch_trace_writes_what_TORCH_TRACE_writes(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    script = textwrap.dedent(
        f"""
        import sys, torch
        sys.path.insert(0, {str(TESTS)!r})
        from tlparse_truth import torch_trace

        def f(x):
            y = x.sin()
            torch._dynamo.graph_break()
            return y.cos()

        with torch_trace({str(ours)!r}) as trace:
            cf = torch.compile(f, backend="aot_eager")
            cf(torch.randn(4)); cf(torch.randn(4, 2))
        print(trace.path)
        """
    )
    env = dict(os.environ, TORCH_TRACE=str(theirs))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (their_log,) = theirs.glob("*.log")
    our_log = Path(proc.stdout.strip().splitlines()[-1])
    assert our_log.parent == ours and our_log.is_file()
    ours_, theirs_ = _lines_without_torch_version(our_log), _lines_without_torch_version(their_log)
    assert len(ours_) > 50 and any('"dynamo_start"' in r for r in ours_)
    assert ours_ == theirs_
    assert tlparse_counts(our_log) == tlparse_counts(their_log)


def test_torch_trace_restores_the_trace_logger(tmp_path):
    logger = logging.getLogger("torch.__trace")
    before = (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
    with pytest.raises(KeyboardInterrupt):
        with torch_trace(tmp_path) as trace:
            torch.compile(lambda x: x * 3, backend="eager")(torch.randn(3))
            raise KeyboardInterrupt
    assert (logger.level, list(logger.handlers), logger.propagate, logger.disabled) == before
    assert trace.path is not None and trace.path.parent == tmp_path
    with torch_trace(tmp_path / "empty") as nothing:
        pass
    # torch compiled nothing: the file holds only the string table written first (and torch's version)
    assert all(('"str": ' in r or '"torch_version"' in r) for r in nothing.path.read_text().splitlines() if r[:1] != "\t")
    assert tlparse_counts(nothing.path)["compile_ids"] == set()


def _split(cid: str) -> tuple[str, str, int]:
    m = re.fullmatch(r"(\d+)/(\d+)(?:_(\d+))?", cid)
    assert m, cid
    return m.group(1), m.group(2), int(m.group(3) or 0)


def test_tlparse_counts_read_what_the_program_does(tmp_path):
    def f(x):
        y = x.sin()
        torch._dynamo.graph_break()  # one break per compile of f; the rest runs in a resume function
        return y.cos()

    cf = torch.compile(f, backend="eager", dynamic=False)
    with torch_trace(tmp_path / "breaks") as trace:
        cf(torch.randn(4))
        cf(torch.randn(5))  # a new shape: f and its resume function compile again
    tl = tlparse_counts(trace.path)
    frames: dict[str, set[str]] = {}
    for cid in tl["compile_ids"]:
        frame, compile_, _ = _split(cid)
        frames.setdefault(frame, set()).add(compile_)
    assert sorted(frames.values()) == [{"0", "1"}, {"0", "1"}], tl  # two frames, compiled twice each
    assert tl["graph_breaks"] == 2 and tl["recompiles"] == 2, tl
    assert tl["failures"] == 0 and tl["failure_ids"] == [], tl
    # each restart of Dynamo's analysis is filed as a further attempt of its compile
    assert tl["restarts"] == sum(1 for cid in tl["compile_ids"] if _split(cid)[2] > 0), tl

    @torch.compile(backend="eager", fullgraph=True)
    def g(x):
        torch._dynamo.graph_break()  # under fullgraph: a compile failure
        return x + 1

    with torch_trace(tmp_path / "failure") as trace:
        with pytest.raises(Exception, match="graph_break"):
            g(torch.randn(3))
    tl = tlparse_counts(trace.path)
    (cid,) = tl["compile_ids"]
    assert tl["failures"] == 1 and tl["failure_ids"] == [cid], tl
    assert tl["recompiles"] == 0 and tl["restarts"] == 0, tl


def test_tlparse_counts_errors_are_specific(tmp_path):
    with pytest.raises(TlparseError, match="no trace log"):
        tlparse_counts(tmp_path / "missing.log")
    bad = tmp_path / "bad.log"
    bad.write_text("this is not a trace\n")
    with pytest.raises(TlparseError, match="tlparse exited with 1"):  # --strict: no silent zero counts
        tlparse_counts(bad)
