"""Reading and writing large trace reports (issue 32): the HTML page is written as it is
rendered (never held whole), with the same bytes as before; the faster paths of the
parser (the JSON depth check, the FX op count) give the same results as the slow ones."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest
import torch
import torch.fx

import ipycompile
from ipycompile.capture.parse.control_flow import count_ops
from ipycompile.cli import main as cli_main
from ipycompile.report.serialize import MAX_JSON_DEPTH, NestingError, loads
from ipycompile.widgets.html import render_html, write_html

DATA = Path(__file__).parent / "data" / "gpu-h100"


@pytest.fixture(scope="module")
def report():
    return ipycompile.load_trace(DATA / "quickstart.log.gz")


def test_the_streamed_page_is_the_rendered_page_in_many_small_pieces(report):
    pieces: list[str] = []
    write_html(report, pieces.append)
    page = render_html(report)
    assert "".join(pieces) == page
    # written as it is rendered: many pieces, none of them more than a small part of the page
    assert len(pieces) > 100
    assert max(map(len, pieces)) < len(page) / 10


def _peak_while(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_a_large_page_holds_far_less_than_the_page(report):
    written = [0]

    def sink(piece: str) -> None:  # a file that keeps nothing: what stays in memory is the renderer's
        written[0] += len(piece)

    streamed = _peak_while(lambda: write_html(report, sink))
    whole = _peak_while(lambda: render_html(report))
    assert written[0] == len(render_html(report))
    assert whole > written[0]  # rendering to a string holds the page (and its pieces) at once
    assert streamed < whole / 2, (streamed, whole, written[0])


def test_the_cli_page_and_save_html_are_the_rendered_page(report, tmp_path):
    out, saved = tmp_path / "page.html", tmp_path / "saved.html"
    assert cli_main(["report", str(DATA / "quickstart.log.gz"), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    body = render_html(report)
    assert text.startswith("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ipycompile: quickstart.log.gz")
    assert text.endswith(f"<body>\n{body}\n</body></html>\n")
    from ipycompile.widgets.html import save_html

    save_html(report, str(saved), title="t")
    assert saved.read_text(encoding="utf-8") == (
        f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>t</title></head><body>\n{body}\n</body></html>\n")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_directory_page_is_streamed_with_every_behaviour(tmp_path):
    from ipycompile.capture.tracefile import format_record, iter_records

    d = tmp_path / "ranks"
    d.mkdir()
    recs = list(iter_records(DATA / "quickstart.log.gz"))
    for r in range(2):
        with open(d / f"dedicated_log_torch_trace_rank_{r}_x.log", "w", encoding="utf-8") as f:
            for rec in recs:
                meta = {k: v for k, v in rec.metadata.items() if k != "has_payload"}
                if "str" not in meta:
                    meta["rank"] = r
                f.write(format_record(meta, rec.payload) + "\n")
    out = tmp_path / "dir.html"
    assert cli_main(["report", str(d), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    reports = ipycompile.load_trace(d)
    assert text.count('<div class="ipyc">') == 1  # both ranks behave alike: one report shown
    assert render_html(reports[0]) in text
    assert text.endswith("\n</body></html>\n")


# -- the JSON depth check ---------------------------------------------------------
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
