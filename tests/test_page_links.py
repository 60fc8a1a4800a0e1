"""Every in-page link has its target (issue 37, section 4).

Varied reports (graph breaks whose source is not on this machine, recompiles, kernels, CUDA graphs,
autotuning, from the recorded logs in tests/data; an unrolled loop and breaks captured here, one
in a file deleted before the report is shown) are rendered as the static page (``to_html``) and as
the notebook's HTML output; each ``href="#X"`` (and each tab's and label's id reference) must have
an ``id="X"`` in the same HTML. Every page and report any test writes is checked the same way by
``tests/conftest.py`` (``tests/written_checks.py``); the last tests here check that check.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

import ipycompile
from ipycompile import load_trace
from written_checks import dangling, links, problems

DATA = Path(__file__).parent / "data"
LOGS = ["gpu-h100/quickstart.log.gz", "gpu-h100/max_autotune.log.gz", "gpu-h100/reduce_overhead.log.gz",
        "gpu-h100/cudagraphs_mlp.log.gz", "cpu_autotune_cached.log.gz"]


@pytest.fixture(autouse=True)
def notebook_shows_html(monkeypatch):
    """As a notebook's kernel: the report's bundle has its HTML (an IPython terminal shell another
    test started turns IPython's text/html formatter off, and the bundle leaves the HTML out)."""
    import ipycompile.views

    monkeypatch.setattr(ipycompile.views, "_shell_shows_html", lambda: True)



def pages(report, tmp_path: Path) -> dict[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        report.to_html(str(tmp_path / "page.html"))
    return {"to_html": (tmp_path / "page.html").read_text(encoding="utf-8"),
            "notebook": report._repr_mimebundle_()["text/html"]}


def check(report, tmp_path: Path) -> int:
    """The number of in-page links checked."""
    n = 0
    for where, page in pages(report, tmp_path).items():
        assert dangling(page) == [], f"{where}: links without a target"
        n += links(page)
    return n


CHECKED: list[int] = []

@pytest.mark.parametrize("log", LOGS)
def test_every_link_of_a_recorded_logs_report_has_its_target(log, tmp_path):
    CHECKED.append(check(load_trace(DATA / log), tmp_path))


def _captured_in_a_deleted_file(tmp_path: Path):
    """Graph breaks in a module whose file is gone when the report is shown (and not kept by linecache).
    The module is in a folder of its own, as a user's (pytest's tmp_path reads as a test folder)."""
    import importlib
    import linecache
    import shutil
    import tempfile

    import torch

    tmp_path = Path(tempfile.mkdtemp(prefix="ipyc-gone-"))
    src = tmp_path / "gone_module.py"
    src.write_text("import torch\n\n\ndef f(x):\n    x = x + 1\n    print('hi')\n    return x * 2\n\n\n"
                   "def g(x):\n    for _ in range(3):\n        x = f(x)\n    return x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("gone_module")
        torch._dynamo.reset()
        with ipycompile.capture() as cap:
            torch.compile(mod.g, backend="eager")(torch.randn(4))
            torch.compile(mod.g, backend="eager")(torch.randn(8, 2))  # a recompile
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("gone_module", None)
    report = ipycompile.CompileReport.from_json(cap.report.to_json())
    report.source_context = []  # as a log torch wrote alone: no source kept
    for b in report.graph_breaks:  # and torch recorded no source line (a frame it could not read)
        for f in [b.stop, b.frame, *b.user_stack]:
            f.source_line = ""
    shutil.rmtree(tmp_path)  # the source and the folder (and its __pycache__, where Python wrote one)
    linecache.clearcache()
    return report


def test_every_link_of_a_report_whose_break_source_is_gone_has_its_target(tmp_path):
    report = _captured_in_a_deleted_file(tmp_path)
    assert report.graph_breaks
    assert check(report, tmp_path) > 0


def test_every_link_of_an_unrolled_loops_report_has_its_target(tmp_path):
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import scan_vs_loop

    fn, make_args = scan_vs_loop.chunked_ce("loop", "cpu", tokens=64, dim=8, vocab=32, dtype="float32")
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(fn, backend="eager")(*make_args(4))
    assert cap.report.unrolled_loops
    assert check(cap.report, tmp_path) > 0


def test_the_check_of_every_write_finds_a_dangling_reference_and_a_report_that_saves_differently(tmp_path):
    """The checks ``tests/conftest.py`` runs on every page and report a test writes can fail."""
    from ipycompile import CompileReport
    from ipycompile.report.files import write_atomic

    assert dangling('<a href="#x">x</a><button aria-controls="p q"></button><label for="c"></label><p id="q">') == ["c", "p", "x"]
    page = tmp_path / "p.html"
    write_atomic(page, '<a href="#here">ok</a><h2 id="here"></h2>')
    assert problems(str(page)) == []
    page.write_text('<a href="#gone">a link without its target</a>')
    assert "links to ids it does not have: ['gone']" in problems(str(page))[0]
    saved = tmp_path / "r.json"
    CompileReport().save(saved)
    assert problems(str(saved)) == []
    data = json.loads(saved.read_text())
    data = {k: v for k, v in data.items() if k != "compiles"} | {"compiles": []}  # a field out of its order
    saved.write_text(json.dumps(data))
    assert "the report loaded back saves differently" in problems(str(saved))[0]
