"""A log that is still being written, or cut short or rewritten after it was read (issue 37, section 3).

A report of a plain log keeps its bulky payloads in the file, by place, and reads one when a view
asks for it. A live job appends to its log: what was read must still read (the bytes and their md5
are unchanged) and the report says the log grew. A log cut short or rewritten: the command line
says so in one line (exit 1); a notebook's display still shows the report, the payloads that are
gone marked.

The log is a real one: the recorded H100 quickstart log, as torch wrote it.
"""

from __future__ import annotations

import gzip
import io
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import ipycompile
from ipycompile import load_trace
from ipycompile.report.model import UNREADABLE_MARK

DATA = Path(__file__).parent / "data" / "gpu-h100"


@pytest.fixture(autouse=True)
def notebook_shows_html(monkeypatch):
    """As a notebook's kernel: the report's bundle has its HTML (an IPython terminal shell another
    test started turns IPython's text/html formatter off, and the bundle leaves the HTML out)."""
    import ipycompile.views

    monkeypatch.setattr(ipycompile.views, "_shell_shows_html", lambda: True)


@pytest.fixture
def log(tmp_path) -> Path:
    path = tmp_path / "dedicated_log_torch_trace_live.log"
    path.write_bytes(gzip.decompress((DATA / "quickstart.log.gz").read_bytes()))
    return path


def _events(path: Path, n: int) -> bytes:
    """The first ``n`` events of the log (whole lines): what a job appends next."""
    lines = path.read_bytes().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if not line.startswith(b"\t")]
    return b"".join(lines[: starts[n]])


def _append(path: Path) -> int:
    more = _events(path, 3)
    with open(path, "ab") as f:
        f.write(more)
    return len(more)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _rewrite(path: Path) -> None:
    """Same size, other bytes: every payload's letters changed (a log replaced by another run's)."""
    data = path.read_bytes()
    path.write_bytes(b"\n".join(line.replace(b"a", b"b") if line.startswith(b"\t") else line
                                for line in data.split(b"\n")))


def _page(report, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "the page holds your model's code"
        report.to_html(str(path))
    return path.read_text(encoding="utf-8")


def _cli(argv, change=None):
    """``python -m ipycompile report ...`` in this process; ``change(log)`` runs between the read and the writing."""
    import ipycompile.run.traces as traces

    real = traces.open_trace

    def open_then_change(path, **kw):
        out = real(path, **kw)
        if change is not None:
            change(Path(path))
        return out

    out, err = io.StringIO(), io.StringIO()
    traces.open_trace = open_then_change
    try:
        with redirect_stdout(out), redirect_stderr(err):
            from ipycompile.cli import main

            rc = main(argv)
    finally:
        traces.open_trace = real
    return rc, out.getvalue(), err.getvalue()


def test_a_log_appended_to_after_it_was_read_still_renders_and_says_it_grew(log, tmp_path):
    report = load_trace(log)
    read = log.stat().st_size
    assert report.origin.size_bytes == read
    grew = _append(log)
    page = _page(report, tmp_path / "r.html")
    assert UNREADABLE_MARK not in page
    assert report.graphs and report.graphs[-1].code  # the lazy payloads read back
    assert f"the log grew by {grew:,} bytes since" in page
    assert f"the log grew by {grew:,} bytes since" in report.summary()
    bundle = report._repr_mimebundle_()
    assert f"the log grew by {grew:,} bytes since" in bundle["text/html"]
    assert report.to_json()  # saving reads every payload


def test_the_cli_reads_a_log_that_grows_while_it_runs(log, tmp_path):
    grew = []
    rc, out, err = _cli(["report", str(log), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")],
                        change=lambda p: grew.append(_append(p)))
    assert rc == 0, err
    assert f"the log grew by {grew[0]:,} bytes since" in out
    assert f"the log grew by {grew[0]:,} bytes since" in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("change", [_truncate, _rewrite], ids=["truncated", "rewritten"])
def test_a_log_cut_short_or_rewritten_is_one_line_from_the_cli(log, tmp_path, change):
    whole = log.read_bytes()
    rc, out, err = _cli(["report", str(log), "-o", str(tmp_path / "r.html")], change=change)
    assert rc == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ipycompile report: error: ") and "Traceback" not in err
    word = "cut short" if change is _truncate else "rewritten"
    assert f"the log was {word} since it was read" in lines[0]
    assert not (tmp_path / "r.html").exists()
    log.write_bytes(whole)
    rc, out, err = _cli(["report", str(log), "--json", str(tmp_path / "r.json")], change=change)
    assert rc == 1 and len(err.strip().splitlines()) == 1 and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("change", [_truncate, _rewrite], ids=["truncated", "rewritten"])
def test_a_notebook_still_displays_a_report_whose_log_was_cut_short_or_rewritten(log, tmp_path, change):
    report = load_trace(log)
    change(log)
    bundle = report._repr_mimebundle_()  # no exception
    assert bundle["text/html"] and bundle["text/plain"]
    page = _page(report, tmp_path / "r.html")
    assert UNREADABLE_MARK in page
    if change is _truncate:
        assert "shorter than when it was read" in page
    with pytest.raises(ipycompile.TraceFileError, match="since it was read"):  # saving it is refused, not made up
        report.to_json()
