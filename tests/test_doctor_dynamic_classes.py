"""Four classes of wrong recompile/dynamic-shape answer from issue 27 (part 2), each ruled out on code
other than the real-code corpus's own case, with what torch does shown by a real compile (CPU,
backend "eager"):

* **code the user does not own** (compiled modules): a library's own function that torch compiled as
  a frame of its own (transformers' ``ForCausalLMLoss``, entered after a break in the model's code)
  has parameters named by the library; no ``mark_dynamic`` is written on them;
* **sizes 0 and 1**: where a size of the compiled function went 1 <-> n, ``dynamic=True`` is not
  offered (it leaves the recompiles, shown here);
* **repeated modules / module int attributes**: ``allow_unspec_int_on_nn_module`` is offered only
  where the int feeds arithmetic; as a loop count or an index it is words (and the setting, with
  ``dynamic=True``, leaves the recompiles: shown here), with the recompile limit warned of;
* **interaction with torch's hints**: ``capture_dynamic_output_shape_ops`` is not offered where the
  code then branches on the data-dependent size (with it the compile raises: shown here).
"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import ipycompile
import recorded


def captured(*calls, **config):
    torch._dynamo.reset()
    with torch._dynamo.config.patch(**config) if config else _nothing(), ipycompile.capture() as cap:
        outs = [call() for call in calls]
    torch._dynamo.reset()
    return cap.report, outs


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def said(x) -> str:
    s = x.suggestion
    return "\n".join([getattr(x, "explanation", "") or "", s.title, s.explanation, s.code] if s else [])


# -- code the user does not own: a library function compiled on its own ------------------------------
@pytest.mark.slow
def test_a_library_function_compiled_on_its_own_gets_no_mark_on_the_librarys_parameter_names():
    """``torch.compile(model.generate)`` on a Llama (users compile ``generate`` itself: the pattern of
    https://github.com/pytorch/pytorch/issues/128071, whose corpus case is a GPT-2): after
    the breaks in ``generate()``, transformers' own helpers (``_update_model_kwargs_for_generation``,
    the stopping criteria's ``__call__``) are compiled as frames of their own, with no call of the
    user's; their ``model_kwargs`` and ``input_ids`` are the library's names, which no line of the
    user's holds. Read from the recorded log of the call (``tests/inputs``)."""
    r = recorded.report("recompile-library-generate")
    library = [rc for rc in r.recompiles if "site-packages" in rc.filename and not rc.call_site.filename
               and any(g.kind in ("size", "size_0_1") for g in rc.guards)]
    assert library, [(rc.function, rc.filename) for rc in r.recompiles]
    for rc in library:
        sized = [g for g in rc.guards if g.kind in ("size", "size_0_1")]
        assert all(g.origin == "library" and g.name == "" for g in sized), [(g.path, g.origin) for g in sized]
        assert rc.suggestion is not None and rc.suggestion.kind == "library_value", said(rc)
        assert "mark_dynamic" not in (rc.suggestion.code or "") and "the library's function" in rc.explanation


# -- sizes 0 and 1: dynamic=True leaves a 1 <-> n recompile -------------------------------------------
def test_a_size_that_goes_to_1_gets_no_dynamic_true_and_dynamic_true_keeps_the_recompiles():
    """Llama's forward compiled, then ``generate()`` (https://huggingface.co/docs/transformers/llm_optims):
    the prompt's length, then one token per step: transformers passes `input_ids` of length 5, then 1.
    Read from the recorded logs of the calls (``tests/inputs``); what torch does with ``dynamic=True`` on a size
    that goes from 1 (the answer rests on it) is run live by ``test_doctor_recompiles_real``'s
    ``test_a_size_that_goes_1_to_2_gets_mark_unbacked_and_only_that_removes_the_recompile``."""
    r = recorded.report("recompile-generate-sizes-0-1")
    assert any(g.kind == "size_0_1" for rc in r.recompiles for g in rc.guards)
    for rc in r.recompiles:
        assert "dynamic=True" not in (rc.suggestion.code if rc.suggestion else ""), said(rc)
    libs = [rc for rc in r.recompiles if rc.suggestion is not None and rc.suggestion.kind == "library_value"]
    assert libs and any("specialises sizes 0 and 1" in rc.suggestion.explanation for rc in libs)
    # what torch does: dynamic=True leaves recompiles (the size 1 is specialised)
    dyn = recorded.report("recompile-generate-sizes-0-1-dynamic")
    assert dyn.recompiles


# -- module int attributes: a loop count is specialised whatever the setting ------------------------
class Refine(nn.Module):
    """An iterative refinement whose number of steps is an attribute changed between calls (RAFT's update
    loop, https://github.com/princeton-vl/RAFT/blob/master/core/raft.py, with `iters` kept on the module)."""

    def __init__(self):
        super().__init__()
        self.update = nn.Linear(4, 4)
        self.iters = 2

    def forward(self, x):
        for _ in range(self.iters):
            x = x + torch.tanh(self.update(x))
        return x


def test_an_int_attribute_used_as_a_loop_count_gets_words_and_torchs_setting_keeps_the_recompiles():
    torch.manual_seed(0)
    m = Refine()
    cm = torch.compile(m, backend="eager")
    x = torch.randn(2, 4)

    def call(n):
        m.iters = n
        return cm(x)

    r, before = captured(*[lambda n=n: call(n) for n in (2, 3, 4)])
    assert r.recompiles
    for rc in r.recompiles:  # a loop count: compile the body (loop_body), never torch's setting
        s = rc.suggestion
        assert s is not None and s.kind in ("loop_body", "module_int_attribute"), said(rc)
        assert "allow_unspec_int_on_nn_module = True" not in (s.code or ""), said(rc)
    # what torch does: neither the setting nor dynamic=True removes them
    for opts in ({}, {"dynamic": True}):
        cm = torch.compile(m, backend="eager", **opts)
        kept, after = captured(*[lambda n=n: call(n) for n in (2, 3, 4)], allow_unspec_int_on_nn_module=True)
        assert len(kept.recompiles) == len(r.recompiles), opts
        for a, b in zip(before, after):
            torch.testing.assert_close(a, b)


def test_an_int_attribute_used_as_an_index_of_a_module_list_gets_words():
    """A mixture of experts routed by an attribute set per call (a round-robin expert, as in
    https://github.com/pytorch/pytorch/pull/186472's ModuleList indexed by an attribute)."""
    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.active = 0

        def forward(self, x):
            return torch.relu(self.experts[self.active](x))

    torch.manual_seed(0)
    m = Experts()
    cm = torch.compile(m, backend="eager")
    x = torch.randn(2, 4)

    def call(i):
        m.active = i
        return cm(x)

    r, _ = captured(*[lambda i=i: call(i) for i in (0, 1, 2)])
    assert r.recompiles
    for rc in r.recompiles:
        s = rc.suggestion
        assert s.kind == "module_int_attribute" and not s.code and "an index" in s.explanation, said(rc)
    kept, _ = captured(*[lambda i=i: call(i) for i in (0, 1, 2)], allow_unspec_int_on_nn_module=True)
    assert len(kept.recompiles) == len(r.recompiles)


# -- torch's hints: a data-dependent size the code then branches on ----------------------------------
def keep_above(boxes, scores, thresh: float = 0.5):
    """torchvision-style filtering before NMS (https://github.com/pytorch/vision/blob/main/torchvision/ops/boxes.py,
    ``batched_nms``'s empty check): keep the boxes above a score, return early when none is left."""
    keep = torch.nonzero(scores > thresh).squeeze(1)
    if keep.numel() == 0:
        return boxes.new_zeros((0, 4))
    return boxes[keep] * 2


def test_capture_dynamic_output_shape_ops_is_not_offered_where_the_code_branches_on_the_size():
    boxes, scores = torch.rand(8, 4), torch.tensor([0.1, 0.9, 0.2, 0.7, 0.6, 0.3, 0.8, 0.4])
    f = torch.compile(keep_above, backend="eager")
    r, _ = captured(lambda: f(boxes, scores))
    (b,) = [b for b in r.graph_breaks if b.suggestion and b.suggestion.kind == "capture_dynamic_output_shape_ops"]
    assert not b.suggestion.code and "keep.numel() == 0" in b.suggestion.explanation
    assert "moves to that branch" in b.suggestion.explanation
    # what torch does with its hint here: the break moves to the branch on the size (line 4 of keep_above)
    f = torch.compile(keep_above, backend="eager")
    moved, _ = captured(lambda: f(boxes, scores), capture_dynamic_output_shape_ops=True)
    lines, first = inspect.getsourcelines(keep_above)
    branch = first + next(i for i, ln in enumerate(lines) if "if keep.numel() == 0" in ln)
    assert [b.frame.lineno for b in moved.graph_breaks] == [branch], [(b.gb_code, b.frame.lineno) for b in moved.graph_breaks]


def keep_above_no_branch(boxes, scores, thresh: float = 0.5):
    keep = torch.nonzero(scores > thresh).squeeze(1)
    return boxes[keep] * 2


def test_capture_dynamic_output_shape_ops_is_still_offered_and_proven_without_a_branch():
    boxes, scores = torch.rand(8, 4), torch.tensor([0.1, 0.9, 0.2, 0.7, 0.6, 0.3, 0.8, 0.4])
    f = torch.compile(keep_above_no_branch, backend="eager")
    r, (before,) = captured(lambda: f(boxes, scores))
    (b,) = [b for b in r.graph_breaks if b.suggestion and b.suggestion.kind == "capture_dynamic_output_shape_ops"]
    assert b.suggestion.code == "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
    f = torch.compile(keep_above_no_branch, backend="eager")
    fixed, (after,) = captured(lambda: f(boxes, scores), capture_dynamic_output_shape_ops=True)
    assert not fixed.graph_breaks and not fixed.failures
    torch.testing.assert_close(before, after)


# -- a size the compiled code branches on, or needs as a number: a mark cannot remove the recompile -------
class Windowed(nn.Module):
    """Local attention's shape (sliding-window and chunked attention keep the last ``window`` positions of a
    longer sequence): the code compares the sequence length with a constant of the module."""

    def __init__(self, window: int = 8):
        super().__init__()
        self.window = window
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        if x.shape[1] > self.window:  # SIZE BRANCH
            x = x[:, -self.window:]
        return self.proj(x).sum(1)


def _line_of(obj, marker: str) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, ln in enumerate(lines) if marker in ln)


def _windowed_calls(cm, sizes, mark=None):
    def call(n):
        batch = torch.randn(2, n, 4, generator=torch.Generator().manual_seed(n))
        if mark is not None and n == sizes[0]:
            mark(batch, 1)  # before the first call, as the user writes it
        return cm(batch)

    return [lambda n=n: call(n) for n in sizes]


def test_a_size_compared_with_a_constant_gets_no_mark_and_a_mark_leaves_one_bounded_recompile():
    torch.manual_seed(0)
    m = Windowed()
    sizes = (5, 12, 20)
    eager = [call() for call in _windowed_calls(m, sizes)]
    r, outs = captured(*_windowed_calls(torch.compile(m, backend="eager"), sizes))
    (rc,) = r.recompiles
    s = rc.suggestion
    assert s.kind == "size_condition" and not s.code, said(rc)
    line = _line_of(Windowed.forward, "SIZE BRANCH")
    assert f"test_doctor_dynamic_classes.py:{line}" in s.title and "`batch.shape[1] > 8`" in s.title, s.title
    assert "your code" in s.explanation and "bounded" in s.explanation and "(batch.shape[1] = 5)" in s.explanation
    assert "mark_dynamic" not in (s.code or "")
    # the record the answer reads: the guard torch added in the new version, at the user's line
    (g,) = [g for g in r.shape_guards if g.compile_id == rc.compile_id]
    assert g.place.lineno == line and g.holds({g.symbols[0].symbol: 5}) is False and g.holds({g.symbols[0].symbol: 12})
    # what torch does: the mark before the first call leaves the recompile, once for any number of sizes
    more = (5, 12, 20, 7, 30, 3)
    marked, after = captured(*_windowed_calls(torch.compile(m, backend="eager"), more, torch._dynamo.mark_dynamic))
    assert len(marked.recompiles) == 1, [x.reasons for x in marked.recompiles]
    (rc2,) = marked.recompiles
    assert rc2.guards[0].kind == "symbolic" and rc2.suggestion.kind == "size_condition", said(rc2)
    assert "already dynamic" in rc2.suggestion.explanation and "`batch.shape[1] <= 8`" in rc2.suggestion.title
    for a, b in zip(eager + [m(torch.randn(2, n, 4, generator=torch.Generator().manual_seed(n))) for n in more[3:]],
                    outs + after[3:]):
        torch.testing.assert_close(a, b)


def test_without_a_branch_on_the_size_the_mark_is_still_offered_and_removes_the_recompile():
    torch.manual_seed(0)
    m = Windowed(window=64)  # no size here reaches the window: the branch is never taken either way
    sizes = (5, 12, 20)
    r, before = captured(*_windowed_calls(torch.compile(m, backend="eager"), sizes))
    (rc,) = r.recompiles
    assert rc.suggestion.kind == "mark_dynamic", said(rc)
    assert rc.suggestion.code.startswith("torch._dynamo.mark_dynamic(batch, 1)")
    fixed, after = captured(*_windowed_calls(torch.compile(m, backend="eager"), sizes, torch._dynamo.mark_dynamic))
    assert not fixed.recompiles
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b)


def weighted_rows(x):
    """A loop over a tensor's rows (a hand-written scan): ``range`` needs the size as a Python int."""
    out = x[0]
    for i in range(1, x.shape[0]):  # SIZE AS INT
        out = out + x[i] * i
    return out


def test_a_size_the_code_needs_as_a_number_gets_no_mark_and_the_mark_raises():
    calls = lambda f: [lambda n=n: f(torch.randn(n, 2, generator=torch.Generator().manual_seed(n))) for n in (3, 4, 5)]  # noqa: E731
    r, _ = captured(*calls(torch.compile(weighted_rows, backend="eager")))
    assert len(r.recompiles) == 2
    line = _line_of(weighted_rows, "SIZE AS INT")
    for rc in r.recompiles:
        s = rc.suggestion
        assert s.kind == "size_condition" and not s.code, said(rc)
        assert "as a number" in s.title and f"test_doctor_dynamic_classes.py:{line}" in s.explanation
        assert "ConstraintViolationError" in s.explanation and "Each new size compiles a version of its own" in s.explanation
    # what torch does: mark_dynamic raises, dynamic=True keeps a version per size
    x = torch.randn(3, 2)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception, match="ConstraintViolation|specialized"):
        captured(lambda: torch.compile(weighted_rows, backend="eager")(x))
    dyn, _ = captured(*calls(torch.compile(weighted_rows, backend="eager", dynamic=True)))
    assert len(dyn.recompiles) == 2


def test_shape_guards_are_records_that_survive_a_saved_report():
    from ipycompile.capture.parse.shape_guards import parse_shape_expr
    from ipycompile.report import CompileReport

    torch.manual_seed(0)
    r, _ = captured(*_windowed_calls(torch.compile(Windowed(), backend="eager"), (5, 12)))
    back = CompileReport.from_json(r.to_json())
    assert back.shape_guards == r.shape_guards and r.shape_guards
    assert [c.size_symbols for c in back.compiles] == [c.size_symbols for c in r.compiles]
    # torch's printed forms, read once in capture; evaluated and shown by the record
    from ipycompile.report import ShapeGuard

    g = ShapeGuard(r.compiles[0].compile_id, "Ne(((s1//8))*((s2//8)), 16)", parse_shape_expr("Ne(((s1//8))*((s2//8)), 16)"))
    assert g.holds({"s1": 32, "s2": 32}) is False and g.holds({"s1": 48, "s2": 32}) is True and g.holds({"s1": 48}) is None
    assert g.render({"s1": "img.shape[2]", "s2": "img.shape[3]"}) == "(img.shape[2] // 8) * (img.shape[3] // 8) != 16"
    turned = ShapeGuard(g.compile_id, "-s1 > -7", parse_shape_expr("-s1 > -7"))
    assert turned.render({"s1": "x.shape[1]"}) == "x.shape[1] < 7" and turned.pinned is None
    assert ShapeGuard(g.compile_id, "Eq(s1, 4)", parse_shape_expr("Eq(s1, 4)")).pinned == ("s1", 4)
    assert parse_shape_expr("frobnicate(s1)") is None and ShapeGuard(g.compile_id, "frobnicate(s1)").holds({"s1": 1}) is None
