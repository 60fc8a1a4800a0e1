"""Files of generated code torch writes whole into its trace (``dump_file``), from a real compile.

Dynamo writes a ``dump_file`` event (``torch._logging.structured.dump_file``) the first time in
a process it traces code from a file that exists only in memory: an FX GraphModule's generated
``forward``, named ``<eval_with_key>.N`` (``torch.fx.symbolic_trace``; e3nn's generated modules
are the same). The report keeps each as a record (``CompileReport.dumped_files``: not an unknown
kind), saves it losslessly, reads it back from torch's own log, and shows it in the Graphs tab as
tlparse shows it on its ``dump_file/`` page: the file name and its lines.
"""

from __future__ import annotations

import html
import json
import re

import pytest
import torch
import torch.fx

import ipycompile
from ipycompile import CompileReport, load_trace
from ipycompile.report import DumpedFile
from ipycompile.views.tabs import graphs_tab
from ipycompile.views.blocks import Choice, Code, Table
from tlparse_truth import run_tlparse, torch_trace


class _Affine(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2 + 1


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A fresh GraphModule (a new ``<eval_with_key>.N``: torch dumps each file once per process)
    compiled under torch's own trace file and a capture; tlparse's reading of the file."""
    torch._dynamo.reset()
    gm = torch.fx.symbolic_trace(_Affine())
    d = tmp_path_factory.mktemp("dump_file")
    with torch_trace(d) as tf:
        with ipycompile.capture() as cap:
            torch.compile(gm, backend="eager")(torch.randn(4))
    out = d / "tlparse"
    run_tlparse(tf.path, out, "--strict")
    return cap.report, tf.path, out


def _tlparse_files(out) -> dict[str, list[str]]:
    """tlparse's ``dump_file/*.html`` pages: each page's lines, as it shows them (``<span id="L4">...``)."""
    pages = {}
    for page in sorted((out / "dump_file").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        pages[page.stem] = [html.unescape(x) for x in re.findall(r'<span id="L\d+">(.*?)</span>', text, re.S)]
    return pages


def test_a_dumped_file_is_a_record_with_its_name_and_code(run):
    r, _, _ = run
    assert "dump_file" not in r.stats.unknown and not r.stats.parse_errors, (r.stats.unknown, r.stats.errors)
    assert r.stats.by_kind.get("dump_file") == 1
    assert not [a for a in r.artifacts if a.kind == "dump_file"]
    (f,) = r.dumped_files
    assert f.name.startswith("<eval_with_key>.") and "in forward" in f.name
    assert "def forward(self, x):" in f.code and "torch.relu(x)" in f.code
    assert f.compile_id == r.compiles[0].compile_id


def test_the_file_is_what_tlparse_shows(run):
    r, _, out = run
    (f,) = r.dumped_files
    pages = _tlparse_files(out)
    assert len(pages) == 1, sorted(pages)
    (lines,) = pages.values()
    assert f.code.split("\n") == lines


def test_read_back_from_torchs_log_and_saved_losslessly(run):
    r, log, _ = run
    back = load_trace(log)
    assert [(f.name, f.code) for f in back.dumped_files] == [(f.name, f.code) for f in r.dumped_files]
    text = json.dumps(back.to_dict())
    again = CompileReport.from_dict(json.loads(text))
    assert again.dumped_files == back.dumped_files and isinstance(again.dumped_files[0], DumpedFile)
    assert json.dumps(again.to_dict()) == text


def test_the_graphs_tab_shows_the_file_and_its_code(run, tmp_path):
    r, _, _ = run
    (f,) = r.dumped_files
    blocks = graphs_tab(r)
    (table,) = [b for b in blocks if isinstance(b, Table) and b.title == "Dumped files"]
    assert table.rows == [[f.name, str(f.compile_id), f.code.count("\n") + 1]]
    (choice,) = [b for b in blocks if isinstance(b, Choice) and b.label == "dumped file"]
    (code,) = [b for b in choice.options[f.name] if isinstance(b, Code)]
    assert code.code == f.code
    text = str(r)  # the text rendering shows every tab
    assert f.name in text and "relu = torch.relu(x)" in text
    with pytest.warns(UserWarning, match="contains your model's code"):
        page = open(r.to_html(str(tmp_path / "report.html")), encoding="utf-8").read()
    assert html.escape(f.name) in page and "relu = torch.relu(x)" in page


def test_a_dump_file_without_a_name_is_counted_never_fatal():
    r = ipycompile.build_report([({"dump_file": {}, "frame_id": 0, "frame_compile_id": 0}, "code"),
                                 ({"dump_file": {"name": "<eval_with_key>.9"}}, "def forward(self):\n    pass")])
    assert r.stats.parse_errors == {"dump_file": 1} and [a.kind for a in r.artifacts] == ["dump_file"]
    assert [(f.name, f.compile_id) for f in r.dumped_files] == [("<eval_with_key>.9", None)]
    (choice,) = [b for b in graphs_tab(r) if isinstance(b, Choice)]  # no graphs: the tab shows the file alone
    assert list(choice.options) == ["<eval_with_key>.9"]
