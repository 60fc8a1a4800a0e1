"""The unrolled-loop detector, on real Dynamo graphs (backend "eager": the graph is Dynamo's).

Positive: the chunked cross-entropy loss and the RNN of benchmarks/scan_vs_loop.py (the
workloads of tutorial 04), a ``range`` loop, a loop with independent iterations, a loop
in a notebook-style cell, a loop over an ``nn.ModuleList`` of identical layers, and the
decoder/encoder layer loops of transformers' GPT-2, BERT, Llama and Qwen2 (tiny configs,
random weights; their recorded logs, ``tests/inputs``), each placed at the ``for`` over the layers
in the model's own file.
Negative: a CNN's stages of different shapes (in a loop) and a transformer's distinct
blocks of different sizes written out by hand. Each suggestion (``scan``, ``map``,
``nested_compile_region``) is applied as a user would and the detector then finds
nothing, with the same outputs.
"""

from __future__ import annotations

import functools
import re
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch import nn

import ipycompile
from ipycompile import CompileReport
from ipycompile.analysis.loops import MIN_REPEATS
from ipycompile.capture.parse.fx import graph_nodes
from tracefile import gpu_records

import recorded

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import scan_vs_loop  # noqa: E402

BENCH = scan_vs_loop.__file__


def line_of(text: str, path: str = BENCH) -> int:
    """The line of ``path`` that holds ``text`` (in this file: that ends with the marker ``text``)."""
    lines = Path(path).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if (line.rstrip().endswith(text) if path == __file__ else text in line)]
    (n,) = hits
    return n


def compiled(fn, *args, **kw) -> tuple[CompileReport, object]:
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        out = torch.compile(fn, backend="eager", **kw)(*args)
    return cap.report, out


def kind(loop) -> str:
    return loop.suggestion.title.split(":", 1)[0]


def dynamo_ops(r: CompileReport) -> int:
    return sum(g.op_count for g in r.graphs if g.stage == "dynamo")


# -- the chunked loss and the RNN (positive) ---------------------------------------------------
@functools.cache
def chunked(impl: str, chunks: int):
    fn, make_args = scan_vs_loop.chunked_ce(impl, "cpu", tokens=64, dim=8, vocab=32, dtype="float32")
    return compiled(fn, *make_args(chunks))


def test_chunked_loss_loop_is_found_at_its_for_line_and_grows_with_the_chunks():
    r4, _ = chunked("loop", 4)
    (loop,) = r4.unrolled_loops
    assert loop.filename == BENCH and loop.lineno == line_of("for xc, tc in zip(x.chunk(chunks)")
    assert loop.source_line.startswith("for xc, tc in zip(")
    assert loop.repeats == 4 and loop.ops_total == dynamo_ops(r4) and 0.8 * loop.ops_total < loop.ops_in_loop <= loop.ops_total
    assert kind(loop) == "scan" and "unrolled 4 times" in loop.suggestion.title and "--sweep" in loop.suggestion.explanation
    assert "scan(body, init, xs)" in loop.suggestion.code
    r8, _ = chunked("loop", 8)
    (loop8,) = r8.unrolled_loops
    assert loop8.repeats == 8 and loop8.ops_in_loop == 2 * loop.ops_in_loop  # a copy per chunk
    text = str(r8)
    assert (f"loop at scan_vs_loop.py:{loop.lineno} unrolled 8 times: {loop8.ops_in_loop} of {loop8.ops_total} ops in "
            "this graph; consider scan") in text


def test_chunked_loss_with_scan_has_no_unrolled_loop_and_the_same_outputs():
    (r_loop, out_loop), (r_scan, out_scan) = chunked("loop", 4), chunked("scan", 4)
    assert r_loop.unrolled_loops and not r_scan.unrolled_loops
    assert [n.op for n in r_scan.control_flow] == ["scan"]
    for a, b in zip(out_loop, out_scan):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@functools.cache
def rnn(impl: str, steps: int):
    fn, make_args = scan_vs_loop.rnn(impl, "cpu", batch=2, inputs=4, hidden=8)
    return compiled(fn, *make_args(steps))


def test_rnn_loop_is_found_and_scan_removes_it():
    r, out_loop = rnn("loop", 8)
    (loop,) = r.unrolled_loops
    assert loop.lineno == line_of("for x in xs:") and loop.repeats == 8 and kind(loop) == "scan"
    r_scan, out_scan = rnn("scan", 8)
    assert not r_scan.unrolled_loops
    for a, b in zip(out_loop, out_scan):
        torch.testing.assert_close(a, b)


# -- other loops -----------------------------------------------------------------------------
def smooth(v, steps: int):
    for _ in range(steps):
        v = 0.5 * (v + v.roll(1, dims=-1))  # <- smooth body
    return v


def sines(xs):
    return torch.stack([torch.sin(x) * 2 + 1 for x in xs])  # <- sines


def sines_map(xs):
    from torch._higher_order_ops.map import map as map_fn  # the suggestion's import

    def body(x):
        return torch.sin(x) * 2 + 1

    return map_fn(body, xs)


def test_range_loop_is_found_at_its_body_line_and_copies_match_the_count():
    r, _ = compiled(smooth, torch.randn(4, 8), 6)
    (loop,) = r.unrolled_loops
    assert loop.lineno == line_of("# <- smooth body", __file__) and loop.repeats == 6
    assert loop.ops_in_loop == loop.ops_total == 18 and kind(loop) == "scan"


def test_independent_iterations_suggest_map_and_map_removes_the_loop():
    xs = torch.randn(6, 3)
    r, before = compiled(sines, xs)
    (loop,) = r.unrolled_loops
    assert kind(loop) == "map" and loop.repeats == 6 and loop.lineno == line_of("# <- sines", __file__)
    assert "map_fn(body, xs)" in loop.suggestion.code
    fixed, after = compiled(sines_map, xs, fullgraph=True)
    assert not fixed.unrolled_loops and [n.op for n in fixed.control_flow] == ["map"]
    torch.testing.assert_close(before, after)


def test_a_loop_in_a_cell_is_placed_at_the_cell_line():
    ns = {"torch": torch, "v": torch.randn(4, 8)}
    source = "h = v\nfor _ in range(5):\n    h = torch.tanh(h * 2) + v\nh.sum()"
    run = ipycompile.run_cell(source, ns, backend="eager", runs=1, record=False, filename="<cell-4>",
                              sources={"<cell-4>": "In [4]"})
    (loop,) = run.report.unrolled_loops
    assert run.report.where(loop.filename, loop.lineno) == "In [4], line 3" and loop.repeats == 5
    assert loop.suggestion.title == "scan: loop unrolled 5 times" and loop.source_line == "h = torch.tanh(h * 2) + v"
    assert "loop at In [4], line 3 unrolled 5 times: 15 of 16 ops in this graph; consider scan" in str(run.report)  # + h.sum()


def test_fewer_copies_than_the_minimum_are_not_reported():
    r, _ = compiled(smooth, torch.randn(4, 8), MIN_REPEATS - 1)
    assert not r.unrolled_loops


# -- layers -----------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))

    def forward(self, x):
        return x + self.ff(self.ln(x))  # <- block


class RegionBlock(Block):
    @torch.compiler.nested_compile_region  # the suggestion, on the repeated layer's forward
    def forward(self, x):
        return x + self.ff(self.ln(x))


class Tower(nn.Module):
    def __init__(self, block=Block, n: int = 6):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(block(16, 32) for _ in range(n))

    def forward(self, x):
        for b in self.blocks:  # <- for blocks
            x = b(x)
        return x


def test_module_list_of_identical_layers_suggests_a_nested_compile_region_which_removes_it():
    x = torch.randn(2, 16)
    r, before = compiled(Tower(), x)
    (loop,) = r.unrolled_loops
    assert kind(loop) == "nested_compile_region" and loop.repeats == 6
    assert "identical layers of `self.blocks`" in loop.suggestion.title
    # the loop's own line: the layer's code is the same in every copy, the ``for`` differs only by ``b``
    assert loop.filename == __file__ and loop.lineno == line_of("# <- for blocks", __file__)
    assert loop.source_line == "for b in self.blocks:  # <- for blocks"
    assert "@torch.compiler.nested_compile_region" in loop.suggestion.code and "layer.compile()" in loop.suggestion.code
    fixed, after = compiled(Tower(RegionBlock), x)
    assert not fixed.unrolled_loops and {n.op for n in fixed.control_flow} == {"invoke_subgraph"}
    torch.testing.assert_close(before, after)


def test_the_source_of_a_loop_over_layers_is_parsed_only_when_the_graph_has_enough_layers_and_once_per_file():
    from ipycompile.capture.kept_source import _layer_loops

    _layer_loops.cache_clear()
    x = torch.randn(2, 16)
    r2, _ = compiled(Tower(n=MIN_REPEATS - 1), x)  # too few copies to be a loop the doctor reports
    assert not r2.unrolled_loops and dynamo_ops(r2) >= 2 * (MIN_REPEATS - 1)
    assert _layer_loops.cache_info().currsize == 0  # no file was parsed for a loop over layers
    r6, _ = compiled(Tower(), x)
    assert r6.unrolled_loops[0].lineno == line_of("# <- for blocks", __file__)
    parsed = _layer_loops.cache_info()
    assert parsed.misses >= 1 and parsed.currsize == parsed.misses  # each file once
    again, _ = compiled(Tower(), x)  # the next cell: the same files, not parsed again
    assert again.unrolled_loops == r6.unrolled_loops
    assert _layer_loops.cache_info().misses == parsed.misses and _layer_loops.cache_info().hits > parsed.hits


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 8, 16, 32, 64]
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)) for a, b in zip(chans, chans[1:])
        )

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


class HandWritten(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1, self.b2, self.b3, self.b4 = Block(16, 32), Block(16, 64), Block(16, 48), Block(16, 24)

    def forward(self, x):
        x = self.b1(x)
        x = self.b2(x)
        x = self.b3(x)
        return self.b4(x)


@pytest.mark.parametrize("model,x", [(CNN, (1, 3, 32, 32)), (HandWritten, (2, 16))], ids=["cnn-stages", "distinct-blocks"])
def test_genuinely_different_layers_are_not_loops(model, x):
    r, _ = compiled(model(), torch.randn(*x))
    assert dynamo_ops(r) >= 12 and not r.unrolled_loops


# -- views, JSON, torch 2.11 ------------------------------------------------------------------
def test_loops_show_in_summary_graphs_tab_and_header_and_survive_json():
    from ipycompile.views.viewmodel import view_model

    r, _ = rnn("loop", 8)
    vm = view_model(r)
    assert vm.chip("unrolled_loops").value == 1
    summary = vm.tab("summary").blocks()
    assert any(getattr(b, "columns", None) and "copies" in b.columns for b in summary)
    graphs = vm.tab("graphs").blocks()
    choice = next(b for b in graphs if hasattr(b, "options"))
    warn = [b.text for b in choice.options[choice.default] if getattr(b, "kind", "") == "warn"]
    assert warn and warn[0].startswith("loop at scan_vs_loop.py:") and "consider scan" in warn[0]
    back = CompileReport.from_json(r.to_json())
    assert back.unrolled_loops == r.unrolled_loops
    import html

    from ipycompile.views.html import render_html

    page = html.unescape(re.sub(r"<[^>]+>", "", render_html(r)))  # the text, highlighting spans dropped
    assert f"loop at scan_vs_loop.py:{line_of('for x in xs:')} unrolled 8 times" in page and "scan(body, init, xs)" in page
    W = pytest.importorskip("ipywidgets")
    from ipycompile.views.widget import ReportWidget

    w = ReportWidget(r)  # the Summary tab is built with the widget
    chips = html.unescape(w.children[0].value if isinstance(w.children[0], W.HTML) else str(w.children[0]))
    assert "1 unrolled loop" in chips or "1 unrolled loop" in str(w.view_model.header)


def test_torch_2_11_graphs_parse_with_their_source_places_and_hold_no_loop():
    records = gpu_records("quickstart")
    r = ipycompile.analysis.diagnose(ipycompile.build_report(records))
    graphs = [g for g in r.graphs if g.stage == "dynamo"]
    nodes, places = graph_nodes(graphs[0].code)
    assert nodes and all(0 <= n.place < len(places) for n in nodes) and places[nodes[0].place].filename.endswith("gpu_traces.py")
    assert all(places[n.place].lineno is not None for n in nodes)
    assert len(nodes) == graphs[0].op_count
    assert (graphs[0].nodes, graphs[0].places) == (nodes, places)  # capture read them into the report
    assert not r.unrolled_loops and not [e for e in r.stats.errors if e.startswith("doctor:")]


# -- transformers' layer stacks ---------------------------------------------------------------
#: the model class whose ``forward`` loops over the layers, and its file in the transformers package
OWNERS = {"gpt2": ("models/gpt2/modeling_gpt2.py", "GPT2Model"), "bert": ("models/bert/modeling_bert.py", "BertEncoder"),
          "llama": ("models/llama/modeling_llama.py", "LlamaModel"), "qwen2": ("models/qwen2/modeling_qwen2.py", "Qwen2Model")}


def _for_over_layers(name: str) -> tuple[str, int, str]:
    """The ``for`` over the layer container in the owner's ``forward``, found in the installed transformers' source
    (not from a report): (its file from the package's folder on, its line, its text)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("transformers")  # the package's folder; transformers itself is not imported
    if spec is None:
        pytest.skip("transformers is not installed")
    relative, owner = OWNERS[name]
    path = Path(spec.submodule_search_locations[0]) / relative
    text = path.read_text()
    (cls,) = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == owner]
    (forward,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"]
    lines = text.splitlines()[forward.lineno - 1:forward.end_lineno]
    hits = [(forward.lineno + i, ln.strip()) for i, ln in enumerate(lines)
            if re.match(r"\s*for\b.*\bin\b.*\bself\.(layers|layer|h)\b", ln)]
    (line, source), = hits
    return f"transformers/{relative}", line, source


@pytest.mark.parametrize("name", sorted(OWNERS))
def test_transformer_layer_loop_is_placed_at_the_models_for_over_its_layers(name):
    """The whole model compiled (3 layers, tiny config, random weights): read from its recorded log
    (``tests/inputs``, recipe ``loop-layers-<name>``); the live detector on real Dynamo graphs is this module's
    other tests."""
    filename, line, text = _for_over_layers(name)

    def placed(r):
        loops = [u for u in r.unrolled_loops if u.repeats == 3]
        assert loops, r.summary()
        loop = max(loops, key=lambda u: u.ops_in_loop)
        return loop, (loop.filename.rsplit("site-packages/", 1)[-1], loop.lineno, loop.source_line)

    loop, where = placed(recorded.report(f"loop-layers-{name}"))
    if where != (filename, line, text):
        # recorded with another transformers (its lines moved): compile the model here, live, and judge that;
        # `{recorded.RECORD_COMMAND} --only loop-layers-<name>` records the installed version's log
        with tempfile.TemporaryDirectory() as tmp:
            loop, where = placed(recorded.record(f"loop-layers-{name}", tmp)[0])
    assert where == (filename, line, text), where
    assert kind(loop) == "nested_compile_region" and "scan" not in loop.suggestion.title
    assert "@torch.compiler.nested_compile_region" in loop.suggestion.code
    assert loop.ops_in_loop > loop.ops_total / 2
