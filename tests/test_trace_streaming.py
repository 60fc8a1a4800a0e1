"""Reading large trace reports (issue 32): the faster paths of the parser (the JSON depth
check, the FX op count) give the same results as the slow ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.fx

from ipycompile.capture.parse.control_flow import count_ops
from ipycompile.report.serialize import MAX_JSON_DEPTH, NestingError, loads

DATA = Path(__file__).parent / "data" / "gpu-h100"


def test_json_nested_past_the_limit_is_still_refused():
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(NestingError):
        loads(deep)
    with pytest.raises(NestingError):
        loads(deep.encode())
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads(ok) is not None
    # many brackets, most inside strings or side by side: shallow, read (the walk decides)
    wide = json.dumps({"s": "[" * 500, "xs": [[1]] * 500})
    assert loads(wide)["s"] == "[" * 500
    # a deep value whose text also has many brackets in strings is still refused
    with pytest.raises(NestingError):
        loads(json.dumps({"s": "{" * 10, "v": json.loads("[" * 70 + "]" * 70)}))


# -- the FX op count --------------------------------------------------------------
class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, y):
        z = self.lin(x).relu() + torch.cat([x, y], dim=-1)[..., :4]
        w = z.reshape((2, -1)).sum(dim=(0,)) * 2  # a tuple in brackets over lines once printed long
        return torch.where(w > 0, w, torch.zeros_like(w)).to(torch.float32), z.transpose(0, 1).contiguous()


@pytest.mark.parametrize("extra_strings", [False, True])
def test_count_ops_counts_the_call_nodes_of_a_real_graph(extra_strings):
    gm = torch.fx.symbolic_trace(_Net())
    if extra_strings:  # string arguments with brackets, quotes and '#' inside
        g = gm.graph
        out = next(n for n in g.nodes if n.op == "output")
        with g.inserting_before(out):
            g.call_function(torch.ops.aten.view.dtype, (next(iter(g.nodes)), torch.float32))
            g.call_method("rename", (next(iter(g.nodes)), "a(b[c{#", 'q"\'u)'))
        gm.recompile()
    code = gm.print_readable(print_output=False)
    calls = sum(n.op in ("call_function", "call_method", "call_module") for n in gm.graph.nodes)
    assert count_ops(code) == calls
    assert count_ops(gm.code) == calls


# -- payload lines read in runs ------------------------------------------------------
from ipycompile.capture import tracefile  # noqa: E402
from ipycompile.capture.tracefile import iter_records, read_trace  # noqa: E402


def _damaged_log(tmp_path: Path) -> Path:
    """A real log with what a bad copy or a killed job leaves: payload lines with no event
    before them, a corrupted envelope followed by its payload, a payload line longer than
    the line limit set below, CRLF line ends in one event, a file cut inside a payload."""
    import gzip

    lines = gzip.decompress((DATA / "max_autotune.log.gz").read_bytes()).splitlines(keepends=True)
    out = [b"\tan orphan payload line\n", b"\tand another\n"] + lines[:400]
    envelope = next(i for i, line in enumerate(lines[400:], 400) if not line.startswith(b"\t")
                    and lines[i + 1].startswith(b"\t"))
    out.append(lines[envelope][:40] + b"\n")  # the envelope cut: its payload lines follow
    out += lines[envelope + 1:envelope + 30]
    long_at = next(i for i in range(envelope + 30, len(lines)) if lines[i].startswith(b"\t")
                   and lines[i + 1].startswith(b"\t") and not lines[i - 1].startswith(b"\t"))
    out += lines[envelope + 30:long_at + 1] + [b"\t" + b"x" * 5000 + b"\n"] + lines[long_at + 1:long_at + 200]
    out += [line.replace(b"\n", b"\r\n") for line in lines[long_at + 200:long_at + 260]]
    cut = next(i for i in range(len(lines) - 2, 0, -1) if lines[i].startswith(b"\t") and lines[i - 1].startswith(b"\t"))
    out += lines[long_at + 260:cut] + [lines[cut][: len(lines[cut]) // 2]]
    path = tmp_path / "damaged.log"
    path.write_bytes(b"".join(out))
    return path


@pytest.mark.parametrize("block", [64, 777, 4096, 1 << 20])
def test_payload_runs_read_the_same_at_any_block_size(tmp_path, monkeypatch, block):
    """The reader takes a block of the file at a time and reads each run of payload lines in
    it at once: wherever the blocks end (inside a line, inside a run, inside an over-long
    line), the events, their payloads and every counted problem with its line number are
    those of reading line by line (a block of 64 bytes cuts nearly every line)."""
    monkeypatch.setattr(tracefile, "MAX_LINE_BYTES", 4096)
    path = _damaged_log(tmp_path)
    monkeypatch.setattr(tracefile, "_BLOCK_BYTES", 64)
    by_line = read_trace(path)
    assert by_line.origin.problem_count >= 4, by_line.origin.problems
    assert "line 1: a payload line (tab-indented) with no event before it" in by_line.origin.problems
    assert any("longer than the 4,096 bytes" in p for p in by_line.origin.problems)
    monkeypatch.setattr(tracefile, "_BLOCK_BYTES", block)
    r = read_trace(path)
    assert r.to_json() == by_line.to_json()
    assert r.origin.lines == path.read_bytes().count(b"\n") + 1  # the last line has no newline
    assert [(x.key, x.payload) for x in iter_records(path)] == [(x.key, x.payload) for x in _line_by_line(path)]


def _line_by_line(path: Path):
    """The events of a log read from a stream that offers no block reads (``read1``): the
    reader then cuts its blocks from plain ``read``, with the same results."""
    import io

    class Plain(io.RawIOBase):
        def __init__(self, data: bytes):
            self.data, self.pos = data, 0

        def readable(self):
            return True

        def readinto(self, b):
            n = min(len(b), 3, len(self.data) - self.pos)  # three bytes at a time
            b[:n] = self.data[self.pos:self.pos + n]
            self.pos += n
            return n

    stream = Plain(path.read_bytes())
    reader = tracefile._Reader(str(path), False, False)
    reader.origin.size_bytes = len(stream.data)
    return list(tracefile._records(stream, stream, reader, None))


# -- bulky payloads kept by place ------------------------------------------------------
import gzip  # noqa: E402
import pickle  # noqa: E402
import sys  # noqa: E402

from ipycompile import load_trace  # noqa: E402
from ipycompile.capture.tracefile import TraceFileError  # noqa: E402
from ipycompile.report import CompileReport  # noqa: E402
from ipycompile.report.model import is_lazy  # noqa: E402

_OPENED: list[str] = []


def _audit(event, args):
    if event == "open" and _OPENED and isinstance(args[0], str) and args[0] == _OPENED[0]:
        _OPENED.append(args[0])


sys.addaudithook(_audit)  # counts the opens of one path, named in _OPENED[0] (audit hooks stay for the process)


def _plain(workload: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{workload}.log"
    path.write_bytes(gzip.decompress((DATA / f"{workload}.log.gz").read_bytes()))
    return path


@pytest.mark.parametrize("workload", ["quickstart", "max_autotune", "reduce_overhead"])
def test_a_lazily_read_report_saves_the_same_json_as_an_eager_one(workload, tmp_path):
    path = _plain(workload, tmp_path)
    lazy, eager = read_trace(path), read_trace(path, lazy=False)
    kept = [(g, "code") for g in lazy.graphs] + [(g, "tree") for g in lazy.guards] + [(a, "payload") for a in lazy.artifacts]
    assert kept and all(is_lazy(obj, name) for obj, name in kept)
    assert not any(is_lazy(g, "code") for g in eager.graphs)
    assert lazy.to_json() == eager.to_json()  # byte for byte: saving reads every payload in
    assert CompileReport.from_json(lazy.to_json()) == eager
    assert pickle.loads(pickle.dumps(lazy)).to_json() == eager.to_json()  # as a worker process hands it back
    # the gzip copy of the same log keeps its text (no place to read it from later) and says the same
    from_gz = read_trace(DATA / f"{workload}.log.gz")
    assert not any(is_lazy(g, "code") for g in from_gz.graphs)
    assert [g.code for g in from_gz.graphs] == [g.code for g in lazy.graphs]


def test_a_payload_is_read_from_the_log_only_when_asked_for_and_not_kept(tmp_path):
    path = _plain("quickstart", tmp_path)
    report = load_trace(path)  # the doctor and the report's own queries run too
    graph = next(g for g in report.graphs if g.stage == "post_grad")
    _OPENED[:] = [str(path)]
    try:
        assert report.compiles and report.kernels and str(report.graphs[0].compile_id)
        assert len(_OPENED) == 1  # nothing read from the log yet
        code = graph.code
        assert len(_OPENED) == 2 and "def forward" in code
        assert is_lazy(graph, "code")  # read, not kept: asked again, read again
        assert graph.code == code and len(_OPENED) == 3
    finally:
        _OPENED.clear()
    assert code == next(g for g in read_trace(path, lazy=False).graphs if g.compile_id == graph.compile_id
                        and g.stage == "post_grad").code


def test_a_log_changed_after_reading_is_refused_clearly_when_a_payload_is_asked_for(tmp_path):
    path = _plain("max_autotune", tmp_path)
    report = read_trace(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"def forward", b"def fOrward"))
    with pytest.raises(TraceFileError, match=r"max_autotune\.log: cannot read the payload at byte \d+ "
                                             r"\(the log was rewritten since it was read\); read the log again"):
        report.to_json()
    path.unlink()
    with pytest.raises(TraceFileError, match=r"\(no such file or directory\)"):
        report.graphs[0].code


def test_the_cli_page_is_written_in_pieces_with_the_bytes_of_the_whole_page(tmp_path, monkeypatch):
    """``report LOG -o page.html`` writes the page as head, body in slices, tail (no copy of a
    page of tens of MB is put together): the file is the page :func:`_page` makes whole."""
    import re

    from ipycompile.cli import main
    from ipycompile.cli import report_command as cli_report
    from ipycompile.views.html import render_html

    monkeypatch.setattr(cli_report, "_PIECE", 1000)  # many slices, some cutting a multi-byte character
    path = _plain("max_autotune", tmp_path)
    out = tmp_path / "page.html"
    assert main(["report", str(path), "-o", str(out), "--no-progress"]) == 0
    whole = cli_report._page(f"ipycompile: {path.name}", render_html(load_trace(path)))
    anchors = re.compile(r"ipyc\d+-\d+|cols\d+")  # each rendering numbers its page's anchors and column toggles
    written = out.read_text(encoding="utf-8")
    assert len(written) > 20 * 1000 and anchors.sub("A", written) == anchors.sub("A", whole)


def test_save_html_writes_the_page_tab_by_tab_with_the_bytes_of_the_whole_page(tmp_path):
    import re

    from ipycompile.views.html import render_html, render_view_model, save_html
    from ipycompile.views.viewmodel import view_model

    report = load_trace(_plain("reduce_overhead", tmp_path))
    pieces: list[str] = []
    assert render_view_model(view_model(report), write=pieces.append) == ""
    assert len(pieces) == len(view_model(report).tabs) + 1  # one per tab, then the page's end
    save_html(report, str(tmp_path / "page.html"))
    anchors = re.compile(r"ipyc\d+-\d+|cols\d+")
    written = (tmp_path / "page.html").read_text(encoding="utf-8")
    body = render_html(report)
    assert anchors.sub("A", "".join(pieces)) == anchors.sub("A", body)
    assert anchors.sub("A", written) == anchors.sub("A", (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"ipycompile\">"
        "<title>ipycompile report</title>"
        "<meta name=\"color-scheme\" content=\"light dark\"></head>"
        f"<body class=\"ipyc standalone\" style=\"margin:0;padding:8px\">\n{body}\n</body></html>\n"))
