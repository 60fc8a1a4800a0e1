"""Compiled results that differ from eager's, said first (issue 27, "silent result changes").

Real compiles of cells written after public code, none of them the corpus's cases: a
causal mask built by an ``lru_cache`` function that counts its builds (the memoised-mask
pattern of attention implementations), a ``functools.cache`` config lookup that records
what it was asked (a module-level registry), a batch generator returned from a compiled
function (a generator expression, as data loaders write them). Each shows torch's
behaviour (eager and compiled differ), the record capture made of torch's warning, and
the report saying so first, in the text, the static HTML and the widget.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import ipycompile
from ipycompile.analysis.semantics import KINDS
from ipycompile.views import html as html_view
from ipycompile.views.viewmodel import view_model


@pytest.fixture(autouse=True)
def _clean_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compiled(fn, calls):
    """Each call compiled (eager backend) under capture: (outputs, report)."""
    c = torch.compile(fn, backend="eager")
    with ipycompile.capture() as cap:
        outs = [c(*args) for args in calls]
    return outs, cap.report


MASK_CELL = '''
import functools
import torch

built = {"masks": 0}

@functools.lru_cache(maxsize=None)
def causal_mask(n):
    built["masks"] += 1
    return torch.ones(n, n).tril()

def attend(x):
    mask = causal_mask(x.shape[0])
    return (x @ x.T) * mask + built["masks"]
'''


def _module(source: str, tmp_path, name: str) -> dict:
    """The cell as a file of its own (torch names the user's file and line in its warning)."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    ns: dict = {"__name__": name}
    exec(compile(source, str(path), "exec"), ns)  # noqa: S102 - the test's own cell
    return ns


def test_an_ignored_cache_that_changes_state_is_said_first(tmp_path):
    ns = _module(MASK_CELL, tmp_path, "mask_cell")
    xs = [(torch.randn(3, 2),), (torch.randn(4, 2),), (torch.randn(3, 2),)]
    eager = [ns["attend"](*a) for a in xs]
    ns["causal_mask"].cache_clear()
    ns["built"]["masks"] = 0
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        compiled, report = _compiled(ns["attend"], xs)
    # torch's behaviour: the cache is traced through, its counter moves at each trace
    assert not all(torch.equal(a, b) for a, b in zip(eager, compiled))
    # what the user saw is unchanged: torch's warning was shown
    assert any("lru_cache" in str(w.message) for w in shown)
    # capture's record of it, at the user's line
    (w,) = [w for w in report.torch_warnings if w.kind == "lru_cache_traced"]
    line = MASK_CELL.splitlines().index("    mask = causal_mask(x.shape[0])") + 1
    assert (w.frame.filename, w.frame.lineno, w.frame.function) == (str(tmp_path / "mask_cell.py"), line, "attend")
    # the doctor: first, naming the cached function, the user's function and line, and what changes
    d = report.eager_differences[0]
    assert d.kind == "ignored_cache" and d.kind in KINDS
    assert "differ from eager" in d.title and "`causal_mask`" in d.title and "`attend`" in d.title
    assert f"mask_cell.py:{line}" in d.title and "built" in d.title
    vm = view_model(report)
    assert vm.problems[0].kind == "semantics" and vm.problems[0].title == d.title
    assert vm.problems[0].lineno == line
    # the first screen of every rendering opens with it
    text = str(report)
    assert text.splitlines()[1].startswith("1. Compiled results differ from eager")
    page = html_view.render_html(report)
    first, _, _ = page.partition('<div class="tabs">')
    assert html_view._e(d.title) in first
    assert first.index(html_view._e(d.title)) < min(first.index(html_view._e(p.title)) for p in vm.problems[1:]) \
        if vm.problems[1:] else True
    from ipycompile.views.widget import ReportWidget

    w = ReportWidget(report)
    try:
        assert html_view._e(d.title) in w.first.value  # the widget's first screen: the same first problem
    finally:
        w.close()


def test_the_users_own_warnings_are_still_shown_while_torch_is_heard(tmp_path):
    src = MASK_CELL.replace("def attend(x):\n", "def attend(x):\n    warnings.warn('attend: check the mask')\n")
    ns = _module("import warnings\n" + src, tmp_path, "mask_cell_warns")
    before = warnings.showwarning
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        _compiled(ns["attend"], [(torch.randn(3, 2),)])
    assert any(str(w.message) == "attend: check the mask" for w in shown)
    assert warnings.showwarning is before  # put back when the capture closed


REGISTRY_CELL = '''
import functools
import torch

asked = []

@functools.cache
def scale_for(name):
    asked.append(name)
    return {"small": 0.5, "large": 2.0}[name]

def step(x):
    return x * scale_for("small") + len(asked)
'''


def test_an_ignored_functools_cache_that_records_calls(tmp_path):
    ns = _module(REGISTRY_CELL, tmp_path, "registry_cell")
    xs = [(torch.ones(2),), (torch.ones(3),), (torch.ones(4),)]
    eager = [ns["step"](*a) for a in xs]
    ns["scale_for"].cache_clear()
    ns["asked"].clear()
    compiled, report = _compiled(ns["step"], xs)
    assert not all(torch.equal(a, b) for a, b in zip(eager, compiled))
    d = report.eager_differences[0]
    assert d.kind == "ignored_cache" and "`scale_for`" in d.title and "`step`" in d.title


def batches(x):
    return (x[i] * 2 for i in range(x.shape[0]))


def test_a_generator_returned_from_compiled_code_is_said_first():
    eager = batches(torch.ones(3, 2))
    compiled, report = _compiled(batches, [(torch.ones(3, 2),)])
    # torch's behaviour: the caller gets an iterator over the values, not the generator
    assert type(eager).__name__ == "generator" and type(compiled[0]).__name__ != "generator"
    (d,) = report.eager_differences
    assert d.kind == "generator_escapes" and "`batches`" in d.title and "differ from eager" in d.title
    assert d.frame.function == "batches" and d.frame.source_line.startswith("return (x[i] * 2")
    assert view_model(report).problems[0].kind == "semantics"


def consumed(x):
    return sum(x[i] * 2 for i in range(x.shape[0]))


def test_a_generator_consumed_inside_compiled_code_is_no_difference():
    compiled, report = _compiled(consumed, [(torch.ones(3, 2),)])
    assert torch.equal(compiled[0], consumed(torch.ones(3, 2)))
    assert report.eager_differences == []


def test_a_saved_report_keeps_the_record_and_the_finding(tmp_path):
    _, report = _compiled(batches, [(torch.ones(2, 2),)])
    again = ipycompile.CompileReport.from_json(report.to_json())
    assert again.eager_differences == report.eager_differences and again.torch_warnings == report.torch_warnings


# code that asks whether it is being compiled (transformers' `is_torchdynamo_compiling()` guards its checks this
# way): compiled and eager differ by design; past the recompile limit the same program switches branches
COMPILING_CELL = '''
import torch

def _maybe_clamp(y):
    if not torch.compiler.is_compiling():
        y = y.clamp(-1, 1)
    return y

def step(x, scale):
    return _maybe_clamp(x * scale)
'''


def test_a_compiling_branch_in_a_function_past_the_recompile_limit_is_said_first(tmp_path):
    ns = _module(COMPILING_CELL, tmp_path, "compiling_cell")
    calls = [(torch.ones(3), s) for s in (2, 3, 4, 5)]
    torch._dynamo.reset()
    c = torch.compile(ns["step"], backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=2), ipycompile.capture() as cap:
        outs = [c(*a) for a in calls]
    report = cap.report
    assert outs[0].max() == 2 and outs[-1].max() == 1  # compiled, then eager past the limit: the branch switched
    assert any(rc.limit_hit for rc in report.recompiles)
    d = report.eager_differences[0]
    assert d.kind == "compiling_branch" and "`step`" in d.title and "recompile limit" in d.title
    assert d.frame.function == "_maybe_clamp" and "is_compiling()" in d.frame.source_line
    assert view_model(report).problems[0].kind == "semantics"


def test_a_compiling_branch_that_stays_compiled_is_by_design_and_not_said(tmp_path):
    ns = _module(COMPILING_CELL, tmp_path, "compiling_cell_ok")
    _, report = _compiled(ns["step"], [(torch.ones(3), 2)])
    assert report.eager_differences == []
