"""The doctor on real users' code (the ``real-code`` part of ``tests/doctor_corpus``), and the
harness's checks for the classes of wrong answer issue 27 lists: each check is shown to reject a
hand-built wrong suggestion (and to pass a right one), on real compiles of the corpus's cases.

``test_real_code_case`` runs real-code cases with their fixes applied (in the suite a fixed slice,
:data:`SLICE`, that holds every module and every class of answer the benchmark records; every case
with ``IPYCOMPILE_FULL_CORPUS=1`` and in the benchmark) and asserts captured, located and no wrong
answer; the cases the doctor still answers wrongly are listed in
:data:`KNOWN_WRONG`, each a strict xfail (the figures are in
``benchmarks/results/doctor_coverage-cpu.json``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from torch.torch_version import TorchVersion

import doctor_corpus
from doctor_corpus import checks, harness
from ipycompile.report.model import Fix, GraphBreak, Mark, Recompile, Suggestion, UserFrame


def _case(case_id: str):
    return {c.id: c for c in doctor_corpus.load([case_id.split("::")[0]])}[case_id]


def _judged(case_id: str, replace) -> harness.Result:
    """Run the case, replace the doctor's answers with ``replace(answer)`` (a hand-built suggestion, and no
    report-level finding), judge."""
    c = _case(case_id)
    eager_outs, eager_err = harness._eager(c)
    run = harness._compiled_run(c)
    for a in harness._answered(run.report):
        a.suggestion = replace(a)
        if hasattr(a, "explanation"):  # a recompile's own words are the doctor's answer too
            a.explanation = ""
    run.report.eager_differences = []  # the report's own findings go with its answers
    res = harness.Result(c.id, c.source, c.module)
    res.same_as_eager = harness._same(run.outs, eager_outs) and bool(run.error) == bool(eager_err)
    res.items = harness._items(run.report, harness.case_file(c))
    harness.judge_answers(c, res, run, eager_outs, eager_err)
    return res


# -- the parts ------------------------------------------------------------------------------------
def test_the_corpus_has_two_parts_and_the_real_part_is_big_enough():
    real = doctor_corpus.load_part("real-code")
    ours = doctor_corpus.load_part("pytorch-tests")
    assert {c.part for c in real} == {"real-code"} and {c.part for c in ours} == {"pytorch-tests"}
    assert len(real) >= 120
    assert all(c.source.startswith(("http", "https")) for c in real), [c.id for c in real if not c.source.startswith("http")]
    with pytest.raises(ValueError, match="no corpus part"):
        doctor_corpus.load_part("nope")


def test_the_held_out_part_loads_is_well_formed_and_is_not_run_by_the_suite():
    """The held-out part (issue 40) is a measurement: its cases load and are well-formed, each names the
    page its code comes from and the libraries it needs; no other part holds them, so the suite's corpus
    tests (which run ``pytorch-tests`` and ``real-code`` cases only) never run them; a case whose library is
    missing is skipped with the reason, not failed."""
    import inspect

    held = doctor_corpus.load_part("held_out")
    assert len(held) >= 80 and {c.part for c in held} == {"held_out"}
    assert len({c.name for c in held}) == len(held)
    assert all(c.source.startswith("https://") for c in held), [c.id for c in held if not c.source.startswith("https://")]
    libraries = {"torch_geometric", "kornia", "torchmetrics", "einops", "torchdiffeq", "gpytorch", "e3nn"}
    assert all(set(c.requires) <= libraries for c in held), [c.requires for c in held if not set(c.requires) <= libraries]
    assert all(not inspect.signature(c.make).parameters for c in held)
    others = {c.id for part in ("pytorch-tests", "real-code") for c in doctor_corpus.load_part(part)}
    assert not others & {c.id for c in held}
    assert doctor_corpus.HELD_OUT_MODULES and not set(doctor_corpus.HELD_OUT_MODULES) & set(
        doctor_corpus.MODULES + doctor_corpus.REAL_MODULES)
    # the cases that need no library are built: a function (or module) and a list of calls
    for c in [c for c in held if not c.requires]:
        fn, calls = c.make()
        assert callable(fn) and isinstance(calls, list) and calls, c.id
    # a case whose library is not installed is skipped, with why, and not counted as a case that ran
    absent = doctor_corpus.Case("needs_absent", "https://example.org", held[0].make, module="held_out",
                                requires=("no_such_library_for_ipycompile",))
    r = harness.run_case(absent, fixes=False)
    assert r.skipped.startswith("needs no_such_library_for_ipycompile") and not r.error and not r.breaks_or_recompiles


# -- each class of wrong answer ------------------------------------------------------------------
def test_guard_sources_and_wrapper_names_are_wrong():
    user = "def step(batch):\n    return model(batch)\n"
    answer = Recompile(compile_id=None, reasons=["tensor 'args[0]' size mismatch at index 0. expected 1, actual 2"])
    for code in ("torch._dynamo.mark_dynamic(args[0], 0)", "torch._dynamo.mark_dynamic(L['x'], 0)",
                 "torch._dynamo.mark_dynamic(kwargs['cache'].layers[0].keys, 2)", "mark(___stack0)"):
        assert checks.guard_names(Suggestion("mark it", code=code), answer, user), code
    s = Suggestion("the function `wrapped_func` recompiles")
    assert "wrapped_func" in checks.guard_names(s, answer, user)
    assert not checks.guard_names(Suggestion("mark `batch`", code="torch._dynamo.mark_dynamic(batch, 0)"), answer, user)
    # torch's own words, quoted, are not the doctor's
    quoted = Suggestion("mark `batch`", explanation="torch said: tensor 'args[0]' size mismatch at index 0. expected 1, actual 2",
                        code="torch._dynamo.mark_dynamic(batch, 0)")
    assert not checks.guard_names(quoted, answer, user)


def test_advice_about_library_code_is_wrong():
    user_file, user = "/corpus/case.py", "out = model(input_ids)\n"
    b = GraphBreak("iterator", frame=UserFrame("/venv/site-packages/transformers/modeling_utils.py", 10, "f"))
    rewrite = Suggestion("pass a list", code="x = list(y)", filename=b.frame.filename, first_line=10, last_line=10)
    assert "does not own" in checks.library_code(rewrite, b, "iterator_input", user_file, user)
    words = Suggestion("pass a list instead of an iterator")
    assert "does not own" in checks.library_code(words, b, "iterator_input", user_file, user)
    mark = Suggestion("mark", code="torch._dynamo.mark_dynamic(past_key_values, 2)")
    assert "past_key_values" in checks.library_code(mark, b, "mark_dynamic", user_file, user)
    setting = Suggestion("capture", code="torch._dynamo.config.capture_scalar_outputs = True")
    assert not checks.library_code(setting, b, "capture_scalar_outputs", user_file, user)
    assert not checks.library_code(Suggestion("mark", code="torch._dynamo.mark_dynamic(input_ids, 1)"), b,
                                   "mark_dynamic", user_file, user)


def test_a_claim_that_eager_raises_is_checked_by_running_eager():
    """`item_scale` runs without torch.compile with no exception: saying it raises the same is wrong."""
    res = _judged("real_pytorch_issues::item_scale", lambda a: Suggestion(
        "The compiled code raises", explanation="the code raises the same without torch.compile: fix it there first."))
    (item,) = res.items
    assert item.fix == "wrong" and item.wrong_class == "eager_claim", item.fix_detail


def test_a_rewrite_that_removes_the_work_is_wrong():
    text = "def fn():\n    opt.step()\n    return None\n"
    assert "doing nothing" in checks.removes_work("def fn():\n    pass  # opt.step() moved\n", 2, "    opt.step()")
    assert not checks.removes_work("def fn():\n    pass\n", 2, "    print('x')")
    assert not checks.removes_work(text, 2, "    opt.step()")


def test_settings_that_work_alone_are_proven_together():
    """Two settings the harness proved one by one: together they make the compile raise (here
    capture_scalar_outputs on `x.shape[torch.tensor([1, 1])]`, torch 2.13), or break again where
    the case did not (torch 2.14 traces the fake call's error as the user's exception: GB0088,
    "Observed exception"), so both answers are wrong."""
    c = _case("misc::torch_size_tensor_index_non_scalar")
    eager_outs, eager_err = harness._eager(c)
    run = harness._compiled_run(c)
    res = harness.Result(c.id, c.source, c.module, same_as_eager=True)
    res.items = [harness.Item("break", "GB0", "capture_scalar_outputs", True, fix="proven",
                              settings={"capture_scalar_outputs": True}),
                 harness.Item("break", "GB1", "capture_dynamic_output_shape_ops", True, fix="proven",
                              settings={"capture_dynamic_output_shape_ops": True})]
    harness.judge_answers(c, res, run, eager_outs, eager_err)
    assert [it.wrong_class for it in res.items] == ["settings_together"] * 2, [it.fix_detail for it in res.items]
    why = "break again: GB0088" if TorchVersion(torch.__version__) >= (2, 14) else "raises"
    assert all(why in it.fix_detail for it in res.items), [it.fix_detail for it in res.items]


def test_dynamic_true_on_a_size_that_goes_one_to_two_is_rerun():
    """`input_` of batch 1, then 4 and 7: `dynamic=True` leaves the recompile (1 is specialised)."""
    res = _judged("real_pytorch_recompiles::masked_input_batch_one_then_more", lambda a: Suggestion(
        "mark_dynamic", kind="mark_dynamic",
        code="torch._dynamo.mark_dynamic(input_, 0)\n# or: torch.compile(..., dynamic=True)"))
    (item,) = res.items
    assert item.fix == "wrong" and item.wrong_class == "sizes_0_1", item.fix_detail


def test_compiled_results_that_differ_from_eager_must_be_said():
    """`functools.cache` around a function that bumps a global: torch traces through the cache, so the
    compiled results differ; an answer that does not say so leaves the case wrong."""
    res = _judged("real_pytorch_issues::functools_cache_global",
                  lambda a: Suggestion("specialized_number: each value of `z` is a compiled version", kind="specialized_number"))
    assert any(it.what == "semantics" and it.wrong_class == "silent_change" for it in res.items)
    said = _judged("real_pytorch_issues::functools_cache_global", lambda a: Suggestion(
        "The compiled results differ from eager: torch ignores the functools.cache", kind="specialized_number"))
    assert not any(it.what == "semantics" for it in said.items)


def test_a_seed_left_before_or_after_is_wrong():
    s = Suggestion("Move `torch.manual_seed(0)` out", explanation="call it before or after the compiled function")
    assert checks.seed_order(s, GraphBreak("x"))
    assert not checks.seed_order(Suggestion("Move `torch.manual_seed(0)` before the call"), GraphBreak("x"))


# -- a fix applied as the user applies it ------------------------------------------------------------
def test_a_mark_on_the_users_own_variable_is_written_before_their_call_and_proven():
    """`mark_dynamic(data, 0)` names a variable of the user's code that is no input of the compiled function
    (`m(data)` inside the user's own function): the harness writes the mark into the case's source before the
    line that made the call, indented as it, and judges the run of that source."""
    from pathlib import Path

    c = _case("real_library_code::mnist_example_last_batch")
    eager_outs, eager_err = harness._eager(c)
    run = harness._compiled_run(c)
    (rc,) = run.report.recompiles
    lines = Path(harness.case_file(c)).read_text().split("\n")
    call = lines[rc.call_site.lineno - 1]
    assert call.strip() == "return m(data)"
    placed = harness._placed_before_call(c, rc, ["torch._dynamo.mark_dynamic(data, 0)"])
    assert (placed.first_line, placed.last_line) == (rc.call_site.lineno,) * 2
    assert placed.code.split("\n") == ["torch._dynamo.mark_dynamic(data, 0)", "return m(data)"]
    item = harness._items(run.report, harness.case_file(c))[0]
    harness._try_fix(c, item, rc.suggestion, run, eager_outs, eager_err, True, rc)
    assert rc.suggestion.code.startswith("torch._dynamo.mark_dynamic(data, 0)")
    assert item.fix == "proven", item.fix_detail
    # a name the user's code does not have at that line is a wrong fix, not an inapplicable one
    bad = harness.Item("recompile", "size", "mark_dynamic", True)
    harness._try_fix(c, bad, Suggestion.of("mark", "", Fix(marks=[Mark("mark_dynamic", "batch_data", 0)])), run,
                     eager_outs, eager_err, True, rc)
    assert bad.fix == "wrong", bad.fix_detail


# -- the real-code part, case by case -------------------------------------------------------------
REAL = doctor_corpus.load_part("real-code")

#: The cases the doctor still answers wrongly (or torch's log and the report disagree on), with why, as
#: the benchmark measured them on the merged tree (benchmarks/results/doctor_coverage-cpu.json). Each is
#: a strict xfail: the test fails when one of them starts passing, so the list only shrinks, and any
#: other case answered wrongly fails as before.
KNOWN_WRONG = {
}


def _param(c):
    why = KNOWN_WRONG.get(c.id)
    marks = [pytest.mark.xfail(strict=True, reason=f"known wrong answer: {why}")] if why else []
    return pytest.param(c, marks=marks, id=c.id)


def test_the_known_wrong_cases_are_cases_of_the_corpus():
    assert set(KNOWN_WRONG) <= {c.id for c in REAL}


#: Every case runs in ``benchmarks/doctor_coverage.py`` (where the coverage targets live) and here
#: with ``IPYCOMPILE_FULL_CORPUS=1``. The suite runs a fixed slice, to stay within CI's time: the cheapest
#: cases that between them hold every module of the part and every class of answer the benchmark records
#: on it (the answer's kind, for a break, failure, recompile or silent change, and whether its fix was
#: proven by applying it), so each class is judged live, its fix applied, on real code; and every
#: known-wrong case (whose strict xfail must keep failing until the answer is right). The classes only
#: the costliest cases hold are in :data:`LEFT_TO_THE_BENCHMARK`, each with the test that covers it.
FULL_CORPUS = os.environ.get("IPYCOMPILE_FULL_CORPUS", "") not in ("", "0")

SLICE = {
    # real_pytorch_issues
    "real_pytorch_issues::class_defined_inside", "real_pytorch_issues::deepcopy_tensor",
    "real_pytorch_issues::depyf_toy_example", "real_pytorch_issues::disable_non_recursive",
    "real_pytorch_issues::full_with_parameter_fill_value", "real_pytorch_issues::functools_cache_global",
    "real_pytorch_issues::generator_returned", "real_pytorch_issues::item_without_capture",
    "real_pytorch_issues::layerdrop_python_random", "real_pytorch_issues::print_in_loop",
    "real_pytorch_issues::random_seeded_random",
    "real_pytorch_issues::reformer_attention_seed", "real_pytorch_issues::set_fullgraph_false_class",
    # real_pytorch_recompiles
    "real_pytorch_recompiles::int_argument_values", "real_pytorch_recompiles::int_from_closure",
    "real_pytorch_recompiles::int_of_tensor_recompile_limit",
    "real_pytorch_recompiles::masked_input_batch_one_then_more", "real_pytorch_recompiles::requires_grad_set_inside",
    # real_training
    "real_training::freeze_layer_between_steps", "real_training::gradient_accumulation_counter",
    "real_training::llama_gradient_checkpointing", "real_training::no_grad_then_grad",
    "real_training::whole_train_step",
    # real_library_code
    "real_library_code::box_iou_dtype", "real_library_code::focal_loss_reduction",
    "real_library_code::imagenet_accuracy_last_batch", "real_library_code::listcomp_disabled_forward",
    "real_library_code::masks_to_boxes", "real_library_code::modulelist_index_attribute",
    "real_library_code::nanogpt_crop_block_size", "real_library_code::nanogpt_targets_none",
    "real_library_code::rcnn_batch_images_list", "real_library_code::stochastic_depth_train_eval",
    "real_library_code::whisper_pad_or_trim", "real_library_code::yolov5_nms_candidates",
    # real_transformers
    "real_transformers::gpt2_output_attentions_flag",
    # real_heldout
    "real_heldout::diffusers_ddim_step", "real_heldout::moe_experts_for_loop_tolist",
    "real_heldout::roberta_batch_one_then_eight", "real_heldout::wav2vec2_ctc_train_step",
}

#: ``(what, kind, fix)``: the classes of answer no case of :data:`SLICE` holds (only cases that take 20 s
#: to a minute of CPU do, or one that breaks on one torch only), and where the suite judges them instead.
LEFT_TO_THE_BENCHMARK = {
    ("recompile", "per_layer", "none"): "test_doctor_recompiles_real: Llama's layers compiled one by one",
    ("recompile", "per_layer", "proven"): "test_doctor_recompiles_real: Llama's layers compiled one by one, "
                                          "the higher limit applied",
    ("recompile", "identity_change", "none"): "test_doctor_recompiles: recipe recompile-identity",
    ("break", "capture_scalar_outputs", "none"): "test_doctor_answer_classes: a setting advised without code",
    # its one case, real_pytorch_issues::random_random_fullgraph, fails on torch 2.13 only (2.14 traces random.random)
    ("failure", "skipped_function", "none"): "test_doctor_breaks: test_a_skipped_function_is_named_with_the_two_ways_on "
                                             "and test_under_fullgraph_the_failure_gets_the_same_fix",
}

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "doctor_coverage-cpu.json"


def _sliced(cases):
    for c in cases:
        if FULL_CORPUS or c.id in SLICE or c.id in KNOWN_WRONG:
            yield c


def _classes(case: dict) -> set:
    return {(it["what"], it["kind"], it["fix"]) for it in case["items"]}


def test_the_slice_covers_every_module_every_class_of_answer_and_every_known_wrong_case():
    """The slice against the benchmark's figures (``benchmarks/results/doctor_coverage-cpu.json``): a class of
    answer that the benchmark finds on the real-code part and no case of the slice holds fails here, naming
    the cases that hold it, until one of them is added to :data:`SLICE` (or, when all of them are costly, the
    class to :data:`LEFT_TO_THE_BENCHMARK` with the test that covers it)."""
    sliced = list(_sliced(REAL))
    assert SLICE <= {c.id for c in REAL}, SLICE - {c.id for c in REAL}
    assert {c.module for c in sliced} == {c.module for c in REAL}
    assert set(KNOWN_WRONG) <= {c.id for c in sliced}
    assert FULL_CORPUS or len(sliced) <= len(REAL) // 2
    measured = {r["case"]: r for r in json.loads(RESULTS.read_text())["cases"]}
    real = [measured[c.id] for c in REAL if c.id in measured]
    assert len(real) >= len(REAL) * 0.9, f"{RESULTS.name} measures {len(real)} of {len(REAL)} real-code cases"
    held = set().union(*(_classes(measured[i]) for i in SLICE if i in measured))
    missing = {cls: [r["case"] for r in real if cls in _classes(r)]
               for cls in set().union(*map(_classes, real)) - held - set(LEFT_TO_THE_BENCHMARK)}
    assert not missing, f"classes of answer no case of the slice holds, with the cases that do: {missing}"
    assert not set(LEFT_TO_THE_BENCHMARK) & held, set(LEFT_TO_THE_BENCHMARK) & held


@pytest.mark.slow
@pytest.mark.parametrize("c", [_param(c) for c in _sliced(REAL)])
def test_real_code_case(c):
    r = harness.run_case(c, fixes=True)
    assert not r.error, r.error
    assert r.breaks_or_recompiles, f"{c.id} no longer breaks or recompiles"
    assert r.captured, (r.torch_breaks, r.report_breaks, r.torch_recompiles, r.report_recompiles)
    assert r.located, r.located_detail
    wrong = [f"{it.what} {it.code} -> {it.kind} [{it.wrong_class}]: {it.fix_detail}" for it in r.items if it.fix == "wrong"]
    assert not wrong, wrong
