"""The doctor's recompile explanations and fixes, proven.

Each suggestion kind (``ipycompile.analysis.recompiles.SUGGESTION_KINDS``) has a test that
reads the doctor's suggestion from the report of a recompiling function, applies it as a user
would (written out here) and shows zero recompiles afterwards (or, for the recompile limit, no
eager fallback) with the eager outputs. The changes that need no fix (dtype, rank, training flag,
grad mode, ...) are checked for their plain words and their named kind.

The reports read are the recorded logs of ``tests/inputs/`` (``recorded.report``: a recipe of
``tests/inputs/recipes.py`` recorded by ``ipycompile.capture(trace_dir=...)``, loaded by
``ipycompile.load_trace`` with the doctor applied; ``tests/test_recorded_truth.py`` checks that
today's torch still writes them). A fix is proven live: the recipe's own functions
(``recorded.definitions``) compiled again with the fix applied. backend "eager": guards and
recompiles are Dynamo's, the same with any backend.
"""

from __future__ import annotations

import re

import pytest
import torch

import ipycompile
from ipycompile import CompileReport
from ipycompile.analysis.recompiles import SUGGESTION_KINDS, explain_recompiles
from ipycompile.capture.parse.guards import guard_path, parse_guard_failure
from recorded import definitions, report
from tracefile import gpu_records


def captured(*calls) -> tuple[CompileReport, list]:
    """Reset Dynamo, run ``calls`` under ipycompile.capture(); (the diagnosed report, outputs)."""
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        outs = [call() for call in calls]
    return cap.report, outs


def only(report: CompileReport):
    assert len(report.recompiles) == 1, [rc.reasons for rc in report.recompiles]
    return report.recompiles[0]


def kind(suggestion) -> str:
    return suggestion.title.split(":", 1)[0]


def same(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)


# -- mark_dynamic ---------------------------------------------------------------------------
def test_size_change_is_explained_and_mark_dynamic_removes_the_recompile():
    rc = only(report("recompile-size"))
    (ch,) = rc.changes
    assert (ch.kind, ch.subject, ch.dim, ch.before, ch.after) == ("size", "x", 0, "8", "16")
    assert "size=[8, 3]" in ch.failed_guard and "size=[None, 3]" in ch.new_guard  # the guards, side by side
    assert rc.explanation.startswith("Size of dim 0 of `x` went 8 → 16") and "dynamic" in rc.explanation
    assert kind(rc.suggestion) == "mark_dynamic" and rc.suggestion.confidence == "high"
    assert rc.suggestion.code.splitlines()[0].startswith("torch._dynamo.mark_dynamic(x, 0)")

    # the fix, as the user writes it: mark dim 0 of the first input before the first call
    double = definitions("recompile-size").double
    xs = [torch.randn(n, 3) for n in (8, 16, 24)]
    first = xs[0].clone()
    torch._dynamo.mark_dynamic(first, 0)
    f = torch.compile(double, backend="eager")
    fixed, after = captured(lambda: f(first), *(lambda x=x: f(x) for x in xs[1:]))
    assert not fixed.recompiles and len(fixed.compiles) == 1
    same([double(x) for x in xs], after)

    # the alternative the suggestion names: dynamic=True
    f = torch.compile(double, backend="eager", dynamic=True)
    fixed, after = captured(*(lambda x=x: f(x) for x in xs))
    assert not fixed.recompiles
    same([double(x) for x in xs], after)


def test_static_compiles_say_each_new_size_compiles_again():
    rc = only(report("recompile-size-static"))
    assert "static again" in rc.explanation and kind(rc.suggestion) == "mark_dynamic"


# -- mark_unbacked ------------------------------------------------------------------------
def test_size_1_is_explained_and_mark_unbacked_removes_the_recompile():
    rc = only(report("recompile-size-1"))
    ch = rc.changes[0]
    assert ch.kind == "size_0_1" and ch.after == "1" and "0 or 1" in rc.explanation
    assert "2 <= L['x'].size()[0]" in ch.failed_guard and "size=[1, 3]" in ch.new_guard
    assert kind(rc.suggestion) == "mark_unbacked"
    assert "torch._dynamo.decorators.mark_unbacked(x, 0)" in rc.suggestion.code

    double = definitions("recompile-size-1").double
    first, one = torch.randn(8, 3), torch.randn(1, 3)
    unbacked = first.clone()
    torch._dynamo.decorators.mark_unbacked(unbacked, 0)  # the fix
    f = torch.compile(double, backend="eager")
    fixed, after = captured(lambda: f(unbacked), lambda: f(torch.randn(16, 3)), lambda: f(one))
    assert not fixed.recompiles
    torch.testing.assert_close(after[2], double(one))
    torch.testing.assert_close(after[0], double(first))


# -- contiguous ---------------------------------------------------------------------------
def test_stride_change_is_explained_and_contiguous_removes_the_recompile():
    rc = only(report("recompile-stride"))
    assert rc.changes[0].kind == "stride" and "memory layout" in rc.explanation
    assert kind(rc.suggestion) == "contiguous" and rc.suggestion.code.startswith("x = x.contiguous()")

    double = definitions("recompile-stride").double
    a, b = torch.randn(8, 4), torch.randn(4, 8).t()

    def call(x):
        x = x.contiguous()  # the fix, before the call
        return f(x)

    f = torch.compile(double, backend="eager")
    fixed, after = captured(lambda: call(a), lambda: call(b))
    assert not fixed.recompiles
    same([double(a), double(b)], after)


# -- tensor_value -----------------------------------------------------------------------------
@pytest.mark.parametrize("values", [(2, 3, 4), (2.0, 3.5, 0.25)], ids=["int", "float"])
def test_python_number_change_is_explained_and_a_tensor_removes_the_recompile(values):
    name = "recompile-int" if isinstance(values[0], int) else "recompile-float"
    rc = only(report(name))
    (ch,) = rc.changes
    assert (ch.kind, ch.subject, ch.before, ch.after) == ("value", "k", str(values[0]), str(values[1]))
    what = "int" if isinstance(values[0], int) else "float"
    assert rc.explanation.startswith(f"The Python {what} `k` went {values[0]} → {values[1]}")
    assert "made `k` dynamic" in rc.explanation and f"L['k'] == {values[0]}" in ch.failed_guard
    assert kind(rc.suggestion) == "tensor_value" and rc.suggestion.code.startswith("k = torch.tensor(k)")

    scaled = definitions(name).scaled
    x = torch.randn(8)
    before = [scaled(x, k) for k in values]
    f = torch.compile(scaled, backend="eager")
    fixed, after = captured(*(lambda k=k: f(x, torch.tensor(k)) for k in values))  # the fix
    assert not fixed.recompiles
    same(before, after)

    f = torch.compile(scaled, backend="eager", dynamic=True)  # the alternative it names
    fixed, after = captured(*(lambda k=k: f(x, k) for k in values))
    assert not fixed.recompiles
    same(before, after)


def test_mutated_global_is_explained_and_a_tensor_global_removes_the_recompiles():
    r = report("recompile-global")
    assert len(r.recompiles) == 2  # globals never become dynamic: every value recompiles
    rc = r.recompiles[0]
    (ch,) = rc.changes
    assert (ch.kind, ch.subject, ch.before, ch.after) == ("global", "SCALE", "2", "3")
    assert rc.explanation.startswith("The global `SCALE` went 2 → 3") and "G['SCALE'] == 3" in ch.new_guard
    assert kind(rc.suggestion) == "tensor_value"
    assert rc.suggestion.code.startswith("SCALE = torch.tensor(SCALE)")

    global_scaled = definitions("recompile-global").global_scaled
    module_globals = global_scaled.__globals__  # the recipe's module, where `SCALE` lives
    x = torch.randn(8)

    def call_with(value, fn):
        module_globals["SCALE"] = value
        return fn(x)

    before = [call_with(v, global_scaled) for v in (2, 3, 4)]  # eager
    f = torch.compile(global_scaled, backend="eager")  # the fix: the global holds a tensor
    fixed, after = captured(*(lambda v=v: call_with(torch.tensor(v), f) for v in (2, 3, 4)))
    assert not fixed.recompiles
    same(before, after)


def test_module_int_attribute_is_explained_and_a_tensor_attribute_removes_the_recompiles():
    rc = report("recompile-module-attribute").recompiles[0]
    assert rc.changes[0].kind == "value" and rc.changes[0].subject.endswith(".scale")
    assert kind(rc.suggestion) == "tensor_value"
    subject = rc.changes[0].subject
    assert rc.suggestion.code.startswith(f"{subject} = torch.tensor({subject})")

    m = definitions("recompile-module-attribute").Scale()
    x = torch.randn(4)

    def call_with(value, fn):
        m.scale = value
        return fn(x)

    before = [call_with(v, m) for v in (2, 3, 4)]  # eager
    cm = torch.compile(m, backend="eager")
    fixed, after = captured(*(lambda v=v: call_with(torch.tensor(v), cm) for v in (2, 3, 4)))  # the fix
    assert not fixed.recompiles
    same(before, after)


# -- loop_body ----------------------------------------------------------------------------------
def test_loop_count_is_explained_and_compiling_the_body_removes_the_recompiles():
    r = report("recompile-loop-count")
    assert len(r.recompiles) == 2
    rc = r.recompiles[0]
    assert rc.changes[0].kind == "value" and "loop count" in rc.explanation
    assert kind(rc.suggestion) == "loop_body" and "for _ in range(steps):" in rc.suggestion.code

    code = definitions("recompile-loop-count")
    v = torch.randn(4, 8)
    step = torch.compile(code.smooth_body, backend="eager")  # the fix: compile one step, loop in Python

    def fixed_smooth(v, steps):
        for _ in range(steps):
            v = step(v)
        return v

    fixed, after = captured(*(lambda s=s: fixed_smooth(v, s) for s in (1, 2, 3)))
    assert not fixed.recompiles and len(fixed.compiles) == 1
    same([code.smooth(v, s) for s in (1, 2, 3)], after)


def test_a_loop_count_is_recognised_when_a_comment_closes_the_loops_header():
    r = report("recompile-loop-count-commented")
    assert r.recompiles and all("a loop count" in rc.explanation for rc in r.recompiles), \
        [rc.explanation for rc in r.recompiles]
    assert all("for _ in range(steps):" in rc.suggestion.code for rc in r.recompiles)


# -- recompile_limit ---------------------------------------------------------------------------
def test_recompile_limit_is_said_prominently_and_both_fixes_work():
    r = report("recompile-limit")  # recorded under torch._dynamo.config.recompile_limit = 2
    (rc,) = [x for x in r.recompiles if x.limit_hit]
    assert rc.explanation.startswith("Recompile limit hit: torch stopped compiling `smooth` after 2 version(s)")
    assert kind(rc.suggestion) == "recompile_limit" and "smooth" in rc.suggestion.title
    assert "** Recompile limit hit: smooth (recompile-limit.py:" in r.summary()
    first = [ln for ln in str(r).splitlines()[1:] if not ln.startswith("read from ")][0]  # after the log's origin
    assert "recompile limit" in first.lower()  # the first screen leads with it too
    from ipycompile.views.viewmodel import view_model

    chip = view_model(r).chip("recompile_limit")
    assert chip is not None and chip.warn and "smooth" in chip.text
    limit = int(re.search(r"recompile_limit = (\d+)", rc.suggestion.code).group(1))
    assert "for _ in range(steps):" in rc.suggestion.code  # the cause's fix comes first

    code = definitions("recompile-loop-count")  # `smooth`, and its body as a function of its own
    v = torch.randn(4, 8)
    before = [code.smooth(v, s) for s in (1, 2, 3, 4)]
    with torch._dynamo.config.patch(recompile_limit=2):
        # fix 1, the cause: compile the body (as above): no recompile at all, whatever the limit
        step = torch.compile(code.smooth_body, backend="eager")

        def fixed_smooth(v, steps):
            for _ in range(steps):
                v = step(v)
            return v

        fixed, after = captured(*(lambda s=s: fixed_smooth(v, s) for s in (1, 2, 3, 4)))
        assert not fixed.recompiles
        same(before, after)

    # fix 2, only when every version is needed: the limit it names; nothing falls back to eager
    with torch._dynamo.config.patch(recompile_limit=limit):
        f = torch.compile(code.smooth, backend="eager")
        raised, after = captured(*(lambda s=s: f(v, s) for s in (1, 2, 3, 4)))
        assert raised.recompiles and not any(x.limit_hit for x in raised.recompiles) and not raised.failures
        same(before, after)


DTYPES = (torch.float32, torch.float64, torch.float16)


def test_a_limit_given_to_torch_compile_is_never_answered_with_the_global_setting():
    """``torch.compile(recompile_limit=2)`` overrides the global setting for the function: raising
    ``torch._dynamo.config.recompile_limit`` changes nothing there, so it is not offered as code;
    the words say to raise it in the torch.compile call, and that works."""
    r = report("recompile-limit-of-the-function")
    (rc,) = [x for x in r.recompiles if x.limit_hit]
    assert (rc.limit_type, rc.limit) == ("recompile_limit", 2)
    assert r.recompile_limits["recompile_limit"] == torch._dynamo.config.recompile_limit != 2
    s = rc.suggestion
    assert kind(s) == "recompile_limit" and "torch._dynamo.config" not in s.code, s.code
    m = re.search(r"`recompile_limit=(\d+)`", s.explanation)
    assert m and "torch.compile(..., recompile_limit=2)" in s.explanation, s.explanation

    add = definitions("recompile-limit-of-the-function").add
    calls = [(torch.randn(3, dtype=d), torch.randn(3, dtype=d)) for d in DTYPES]
    # the global line would not have helped: the function's own limit still wins
    with torch._dynamo.config.patch(recompile_limit=16):
        f = torch.compile(add, backend="eager", recompile_limit=2)
        still, _ = captured(*(lambda a=a: f(*a) for a in calls))
        assert any(x.limit_hit for x in still.recompiles)
    # what the words say does: the limit raised where it was given
    f = torch.compile(add, backend="eager", recompile_limit=int(m.group(1)))
    raised, after = captured(*(lambda a=a: f(*a) for a in calls))
    assert raised.recompiles and not any(x.limit_hit for x in raised.recompiles) and not raised.failures
    same([add(*a) for a in calls], after)


def test_a_limit_whose_setting_is_unknown_is_answered_in_words_naming_both_ways():
    """A log torch wrote alone does not say the global setting: no code for the limit, both ways in words."""
    import dataclasses

    r = report("recompile-limit-of-the-function")
    unknown = explain_recompiles(dataclasses.replace(r, recompile_limits={}))
    (rc,) = [x for x in unknown.recompiles if x.limit_hit]
    s = rc.suggestion
    assert kind(s) == "recompile_limit" and s.code == ""
    assert "in the torch.compile(...) call if one was passed there" in s.explanation
    assert "torch._dynamo.config.recompile_limit = " in s.explanation


def test_a_limit_on_a_value_torch_carries_across_a_break_gets_no_limit_code():
    """test_recompile_ux.py's loop_torture under recompile_limit=1: what changes is ``___stack0.stop``
    (torch's value, in the code after the break); with the limit raised, the next version is one torch
    gives up on (a frame runs without compiling), so the global line is not offered."""
    r = report("recompile-limit-carried")  # recorded under recompile_limit = 1
    (rc,) = [x for x in r.recompiles if x.limit_hit]
    assert r.recompile_limits["recompile_limit"] == rc.limit == 1
    s = rc.suggestion
    assert kind(s) == "recompile_limit" and "recompile_limit =" not in s.code, s.code
    assert "a value torch carries across the graph break" in s.explanation and "fix the graph break first" in s.explanation
    assert "___stack0" not in s.explanation + rc.explanation  # torch's internal name is not the user's
    if torch.__version__ >= "2.13":  # what torch 2.13 does with the limit raised: it gives up on the frame
        loop_torture = definitions("recompile-limit-carried").loop_torture
        with torch._dynamo.config.patch(recompile_limit=5):
            f = torch.compile(loop_torture, backend="eager")
            raised, _ = captured(*(lambda i=i: f(torch.randn(3), torch.tensor(i)) for i in (5, 9, 17)))
        assert raised.ran_without_compiling


def test_every_suggestion_kind_has_a_test_here():
    import inspect
    import sys

    from pathlib import Path

    source = inspect.getsource(sys.modules[__name__])
    source += (Path(__file__).parent / "test_doctor_recompiles_real.py").read_text()  # code as users write it
    for k in SUGGESTION_KINDS:
        assert f'kind(rc.suggestion) == "{k}"' in source, k


# -- changes that need no fix: plain words, no suggestion ---------------------------------------
def test_dtype_rank_requires_grad_and_type_changes_are_explained_without_a_fix():
    for name, k, words in (
        ("recompile-dtype", "dtype", "dtype of `x` went float32 → float16"),
        ("recompile-rank", "rank", "`x` went from 1 to 2 dimensions"),
        ("recompile-requires-grad", "requires_grad", "`x` requires grad now"),
        ("recompile-type", "type", "`x` was a Tensor when compiled, now an int"),
    ):
        rc = only(report(name))
        assert rc.changes[0].kind == k and words.lower() in rc.explanation.lower(), rc.explanation
        # a named kind that says what to do, and no invented code (was: no suggestion at all)
        assert rc.suggestion.kind == f"{k}_change" and rc.suggestion.code == "", rc.suggestion


def test_training_flag_grad_mode_identity_length_and_bool_changes_are_explained_without_a_fix():
    rc = only(report("recompile-train-eval"))
    (ch,) = rc.changes
    assert ch.kind == "training" and (ch.before, ch.after) == ("True", "False")
    assert "switched to eval()" in rc.explanation and rc.suggestion.kind == "train_eval"

    rc = only(report("recompile-grad-mode"))
    assert rc.changes[0].kind == "global_state" and "grad mode" in rc.explanation

    rc = only(report("recompile-identity"))
    assert rc.changes[0].kind == "identity" and rc.suggestion.kind == "identity_change"

    ch = only(report("recompile-list-length")).changes[0]
    assert (ch.kind, ch.before, ch.after) == ("length", "2", "3")

    rc = only(report("recompile-bool"))
    assert "bool `k` went True → False" in rc.explanation and rc.suggestion.kind == "flag_value"


def test_unknown_reasons_keep_torch_words_and_get_no_fix():
    g = parse_guard_failure("something torch 3.0 says about L['x'] # nothing we know")
    assert g.kind == "other" and g.reason.startswith("something torch 3.0 says")
    assert guard_path("L['self']._modules['body']._modules['0']._parameters['weight']") == "self.body[0].weight"
    # torch 2.11's name for the globals of a function made by eval/exec in a dict of the user's (seen in the
    # door matrix on the GPU machine: a compiled closure's global `x`)
    assert guard_path("G['___unnamed_scope_139910186543104_c200']['x']") == "x"
    assert guard_path("___unnamed_scope_139910186543104_c200['x'].shape") == "x.shape"
    # a guard torch could not check because the call lacks a keyword it reads: the keywords changed; a missing key
    # of another dict is no keyword
    g = parse_guard_failure("KeyError on kwargs['input_ids']")
    assert (g.kind, g.path, g.before) == ("keywords", "kwargs", "input_ids=")
    assert parse_guard_failure("KeyError on L['kwargs']['labels']").kind == "keywords"
    assert parse_guard_failure("KeyError on d['a']").kind == "other"


def test_a_type_guard_is_read_as_torch_2_13_and_2_14_word_it():
    g = parse_guard_failure("expected type of 'b' to be a tensor type, ' but found <class 'torch.Tensor'>")  # 2.13
    assert (g.kind, g.path, g.before, g.after) == ("type", "b", "Tensor", "torch.Tensor")
    # 2.14 names the type the compiled version took
    g = parse_guard_failure("expected type of 'b' to be <class 'torch.nn.parameter.Parameter'>, but found <class 'torch.Tensor'>")
    assert (g.kind, g.path, g.before, g.after) == ("type", "b", "torch.nn.parameter.Parameter", "torch.Tensor")
    g = parse_guard_failure("expected type of 'x' to be <class 'torch.Tensor'>, but found <class 'int'>")
    assert (g.kind, g.path, g.before, g.after) == ("type", "x", "torch.Tensor", "int")


def test_the_diagnosis_survives_the_json_round_trip():
    r = report("recompile-size")
    back = CompileReport.from_json(r.to_json())
    assert back == r and back.recompiles[0].changes[0].kind == "size" and back.recompiles[0].suggestion is not None


def test_torch_2_11_recorded_recompiles_are_explained():
    """The H100 trace of torch 2.11: the same guard wording, the same explanation and fix."""
    r = explain_recompiles(ipycompile.build_report(gpu_records("quickstart")))
    by_subject = {rc.guards[0].path: rc for rc in r.recompiles if rc.changes}
    for name in ("x", "h"):
        rc = by_subject[name]
        ch = rc.changes[0]
        assert (ch.kind, ch.dim, ch.before, ch.after) == ("size", 0, "32", "64")
        assert "size=[32, " in ch.failed_guard and "size=[None, " in ch.new_guard
        assert rc.explanation.startswith(f"Size of dim 0 of `{name}`") and "went 32 → 64" in rc.explanation
    # `x` is what the user's `cm(x)` passes: mark it; `h` is made inside the compiled code and carried across
    # the graph break into the function torch resumes: no line of the user's can mark it
    assert kind(by_subject["x"].suggestion) == "mark_dynamic"
    assert by_subject["h"].changes and kind(by_subject["h"].suggestion) == "automatic_dynamic"
    assert "mark_dynamic(h" not in by_subject["h"].suggestion.code


def test_explanations_and_fixes_show_in_the_html_and_the_widget():
    import html

    from ipycompile.views.html import render_html

    r = report("recompile-size")
    page = html.unescape(re.sub(r"<[^>]+>", "", render_html(r)))  # the text, highlighting spans dropped
    assert "Size of dim 0 of `x` went 8 → 16" in page and "torch._dynamo.mark_dynamic(x, 0)" in page
    assert "The failed guard beside the new one" in page and "size=[None, 3]" in page
    W = pytest.importorskip("ipywidgets")
    from ipycompile.views.widget import ReportWidget

    w = ReportWidget(r)
    w.tabs.selected_index = [t.key for t in w.view_model.tabs].index("recompiles")

    def texts(widget):
        yield getattr(widget, "value", "") if isinstance(widget, W.HTML) else ""
        for child in getattr(widget, "children", ()) or ():
            yield from texts(child)

    shown = html.unescape("\n".join(texts(w)))
    assert "Size of dim 0 of `x` went 8 → 16" in shown and "mark_dynamic" in shown


# -- never wrong: a fix only where its preconditions hold (issue 20, item 2) --------------------
def test_a_parameter_gets_torchs_setting_not_a_mark_dynamic_torch_ignores():
    r = report("recompile-parameter")
    assert len(r.recompiles) == 3
    rc = r.recompiles[0]
    assert rc.changes[0].after == "10" and "10." not in rc.explanation  # torch's "actual 10." read as 10
    assert kind(rc.suggestion) == "force_parameter_static_shapes" and rc.suggestion.kind == "force_parameter_static_shapes"
    assert rc.suggestion.code.startswith("torch._dynamo.config.force_parameter_static_shapes = False")
    assert "torch._dynamo.mark_dynamic(x, 0)" in rc.suggestion.code

    param_matmul = definitions("recompile-parameter").param_matmul
    xs = [torch.nn.Parameter(torch.randn(n, 3)) for n in (2, 10, 11, 15)]
    before = [param_matmul(x) for x in xs]
    # the class of mistake: mark_dynamic alone is ignored on a parameter (all recompiles stay)
    first = torch.nn.Parameter(xs[0].detach().clone())
    torch._dynamo.mark_dynamic(first, 0)
    f = torch.compile(param_matmul, backend="eager")
    ignored, _ = captured(lambda: f(first), *(lambda x=x: f(x) for x in xs[1:]))
    assert len(ignored.recompiles) == 3

    # the fix as written: the setting, and mark_dynamic before the first call
    with torch._dynamo.config.patch(force_parameter_static_shapes=False):
        first = torch.nn.Parameter(xs[0].detach().clone())
        torch._dynamo.mark_dynamic(first, 0)
        f = torch.compile(param_matmul, backend="eager")
        fixed, after = captured(lambda: f(first), *(lambda x=x: f(x) for x in xs[1:]))
        assert not fixed.recompiles
        same(before, after)
        f = torch.compile(param_matmul, backend="eager")  # the setting alone: one recompile, then dynamic
        alone, after = captured(*(lambda x=x: f(x) for x in xs))
        assert len(alone.recompiles) == 1
        same(before, after)


def closing_fixed(k):
    k = torch.tensor(k)  # the fix, where `k` is set, before `g` is defined

    def g(y):
        return y + k

    return g


def test_a_closed_over_int_is_named_as_in_the_users_code_not_by_torchs_guard_source():
    rc = report("recompile-closure-int").recompiles[0]
    ch = rc.changes[0]
    assert ch.subject == "k" and "`k` (a variable `g` closes over)" in rc.explanation
    s = rc.suggestion
    assert kind(s) == "tensor_value" and "__closure__" not in s.code + s.title + rc.explanation
    # the line belongs where `g` is made, which the call does not show: words that say where, no code placed
    # before the call (there it would not reach the closure's cell); what the words say is proven here
    assert s.code == "" and "(`k = torch.tensor(k)`)" in s.explanation and "before `g` is defined" in s.explanation
    code = definitions("recompile-closure-int")
    x = torch.randn(5)
    f = torch.compile(code.apply_g, backend="eager")
    fixed, after = captured(*(lambda i=i: f(x, closing_fixed(i)) for i in range(3)))
    assert not fixed.recompiles
    same([code.apply_g(x, code.closing(i)) for i in range(3)], after)


def test_suggested_code_names_only_what_the_users_code_has():
    """A guard source that is no name in the user's code (torch's ``__closure__``,
    ``__defaults__``) is never written into code."""
    from ipycompile.analysis.recompiles import suggest
    from ipycompile.analysis.recompiles.reading import reason_of
    from ipycompile.report.model import FailedGuard

    for subject in ("g.__closure__[0].cell_contents", "f.__defaults__[0]", "___odict_getitem(self, 'k')"):
        for kind_ in ("value", "size"):
            for name in (subject, ""):  # a name capture could not map, and none
                g = FailedGuard(kind_, source=subject, path=subject, name=name, before="2", after="3",
                                dim=0 if kind_ == "size" else None, code=f"return x * {subject}")
                s = suggest(reason_of(g), True)
                assert s is None or (s.code == "" and subject not in s.code), (subject, s)


@pytest.mark.parametrize("config", [{}, {"automatic_dynamic_shapes": False}], ids=["automatic", "static"])
def test_mark_dynamic_marks_every_size_that_changes_together(config):
    name = "recompile-sizes-together-static" if config else "recompile-sizes-together"
    rc = report(name).recompiles[0]
    assert kind(rc.suggestion) == "mark_dynamic"
    lines = [ln for ln in rc.suggestion.code.splitlines() if ln.startswith("torch._dynamo.mark_dynamic")]
    assert [ln.split("  #")[0] for ln in lines] == ["torch._dynamo.mark_dynamic(x, 0)", "torch._dynamo.mark_dynamic(y, 0)"]
    pair = definitions(name).pair
    calls = [(torch.randn(n), torch.randn(n)) for n in (2, 3, 4, 5)]
    with torch._dynamo.config.patch(**config):
        if config:  # marking `x` alone is the mistake: torch finds the sizes equal and refuses the mark
            a, b = calls[0][0].clone(), calls[0][1].clone()
            torch._dynamo.mark_dynamic(a, 0)
            f = torch.compile(pair, backend="eager")
            with pytest.raises(Exception, match="Constraints violated"):
                f(a, b)
        a, b = calls[0][0].clone(), calls[0][1].clone()
        torch._dynamo.mark_dynamic(a, 0)  # the fix as written: both
        torch._dynamo.mark_dynamic(b, 0)
        f = torch.compile(pair, backend="eager")
        fixed, after = captured(lambda: f(a, b), *(lambda a=a, b=b: f(a, b) for a, b in calls[1:]))
        assert not fixed.recompiles
        same([pair(a, b) for a, b in calls], after)


def test_a_tensor_in_a_global_dict_gets_mark_dynamic_on_it():
    rc = report("recompile-global-dict").recompiles[0]
    assert kind(rc.suggestion) == "mark_dynamic"
    assert rc.suggestion.code.startswith("torch._dynamo.mark_dynamic(HOLDER['tensor'], 0)")

    from_global_dict = definitions("recompile-global-dict").from_global_dict
    holder = from_global_dict.__globals__["HOLDER"]  # the recipe's global dict
    x = torch.randn(2)
    tensors = [torch.randn(n, 2) for n in (4, 5, 6)]

    def call(t, fn):
        holder["tensor"] = t
        return fn(x)

    before = [call(t, from_global_dict) for t in tensors]  # eager
    f = torch.compile(from_global_dict, backend="eager")
    first = tensors[0].clone()
    torch._dynamo.mark_dynamic(first, 0)  # the fix, on the dict's tensor before the first call
    fixed, after = captured(lambda: call(first, f), *(lambda t=t: call(t, f) for t in tensors[1:]))
    assert not fixed.recompiles
    same(before, after)


def test_an_int_under_dynamic_false_is_held_in_a_tensor():
    rc = report("recompile-int-static").recompiles[0]
    assert "specialised on 3 again" in rc.explanation and kind(rc.suggestion) == "tensor_value"
    scaled = definitions("recompile-int-static").scaled
    x = torch.randn(3)
    f = torch.compile(scaled, backend="eager", dynamic=False)
    fixed, after = captured(*(lambda k=k: f(x, torch.tensor(k)) for k in (2, 3, 4)))
    assert not fixed.recompiles
    same([scaled(x, k) for k in (2, 3, 4)], after)


def test_an_int_used_as_a_size_gets_no_tensor_and_says_what_to_do():
    rc = only(report("recompile-int-as-size"))
    assert kind(rc.suggestion) == "specialized_number" and rc.suggestion.code == ""
    assert "dynamic=None" in rc.suggestion.explanation


# -- named no-fix kinds: what changed, and what to do ---------------------------------------------
def test_each_change_that_needs_no_code_change_gets_a_named_kind_saying_what_to_do():
    rc = only(report("recompile-parameter-to-tensor"))
    assert "`b` was a Parameter when compiled, now a Tensor" in rc.explanation  # was: "a Tensor ... now torch.Tensor"
    assert kind(rc.suggestion) == "type_change" and ".detach()" in rc.suggestion.explanation
    assert "went 3 → a tensor" in only(report("recompile-number-to-tensor")).explanation  # was: "→ another value"

    rc = only(report("recompile-flag-to-none"))
    assert "`flag` went True → None" in rc.explanation  # was: "→ another value"
    assert kind(rc.suggestion) == "flag_value"

    rc = only(report("recompile-device"))
    assert kind(rc.suggestion) == "device_change" and ".to(device)" in rc.suggestion.explanation

    rc = only(report("recompile-aliasing"))
    assert rc.changes[0].kind == "aliasing" and "`a` and `c` are now the same tensor" in rc.explanation
    assert kind(rc.suggestion) == "aliasing" and ".clone()" in rc.suggestion.explanation

    rc = only(report("recompile-dtype"))
    assert kind(rc.suggestion) == "dtype_change" and ".to(torch.float32)" in rc.suggestion.explanation
    rc = only(report("recompile-rank"))
    assert kind(rc.suggestion) == "rank_change" and "reshape" in rc.suggestion.explanation
    rc = only(report("recompile-requires-grad"))
    assert kind(rc.suggestion) == "requires_grad_change" and "torch.no_grad()" in rc.suggestion.explanation


def test_grad_mode_length_train_eval_and_identity_say_what_to_do():
    rc = only(report("recompile-grad-mode"))
    assert kind(rc.suggestion) == "global_state_change" and "torch.no_grad()" in rc.suggestion.explanation
    rc = only(report("recompile-list-length"))
    assert kind(rc.suggestion) == "list_length" and "torch.stack(ts)" in rc.suggestion.explanation
    rc = only(report("recompile-train-eval"))
    assert kind(rc.suggestion) == "train_eval" and "Nothing to fix" in rc.suggestion.explanation
    rc = only(report("recompile-identity"))
    assert kind(rc.suggestion) == "identity_change" and "`fn`" in rc.suggestion.explanation


def test_a_size_change_beside_a_type_change_gets_no_mark_dynamic():
    """``y`` is a tensor, then an int: marking ``x`` dynamic would not help (and torch refuses
    it while ``x * y`` ties the sizes); the type change is said."""
    rc = only(report("recompile-size-beside-type"))
    assert kind(rc.suggestion) == "type_change" and "one type every call" in rc.suggestion.explanation
    assert "mark_dynamic" not in rc.suggestion.code


def test_a_size_torch_made_dynamic_on_a_value_no_code_can_mark_says_nothing_to_fix():
    """A closed-over tensor's size: torch's guard source (``g.__closure__[0].cell_contents``) is
    no name to mark; torch made the size dynamic after one recompile, and says so."""
    rc = only(report("recompile-closure-tensor"))
    assert kind(rc.suggestion) == "automatic_dynamic" and rc.suggestion.code == ""
    assert "__closure__" not in rc.suggestion.code and "Nothing to fix" in rc.suggestion.explanation


def test_an_attribute_that_appears_says_what_changed_and_what_to_do():
    rc = only(report("recompile-attribute-appears"))
    ch = rc.changes[0]
    assert (ch.kind, ch.subject, ch.before, ch.after) == ("attribute", "cfg.just_add_7", "absent", "present")
    assert "`cfg.just_add_7` was absent when compiled, present now" in rc.explanation
    assert kind(rc.suggestion) == "attribute_presence" and "__init__" in rc.suggestion.explanation


# -- a condition on a dynamic size: no mark removes the recompile (tests/test_doctor_dynamic_classes.py has the class) --
def test_a_branch_on_a_size_is_said_and_no_mark_is_written():
    rc = only(report("recompile-size-condition"))
    assert kind(rc.suggestion) == "size_condition" and not rc.suggestion.code, rc.suggestion
    assert "> 6" in rc.suggestion.title and "bounded" in rc.suggestion.explanation
