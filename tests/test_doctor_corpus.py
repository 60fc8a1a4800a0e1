"""A slice of the doctor corpus (``tests/doctor_corpus``: user functions from PyTorch's own
Dynamo tests) through the coverage benchmark's harness: every break and recompile the
report holds is one torch itself logged (captured), shown at the case's own line
(located). The answers' coverage and the fixes' proofs are measured on the whole
corpus by ``benchmarks/doctor_coverage.py``.
"""

from __future__ import annotations

import pytest
import torch
from torch.torch_version import TorchVersion

import doctor_corpus
from doctor_corpus import harness


SLICE = (
    "error_messages::data_dependent_operator2",
    "error_messages::sort_with_nonconstant_keys",
    "error_messages::dict_items_input",
    "error_messages::unsupported_builtin",
    "error_messages::skipfile_inline",
    "error_messages::nested_compile_user_frames",
    "error_messages::traceback_above_dynamo_f2",
    "error_messages::traceback_above_dynamo_f3",  # one break in a function three user lines call
    "reorder_logs::reorder_custom_log_fn",
    "misc::raise_guard_full_constraint",  # a failure whose user stack follows "User stack:"
    "misc::map_side_effects",  # a compile error raised into the call (a failure, not a break)
    "misc::cond_side_effect_in_one_branches",
    "recompiles::recompiles_true_false_flop",
    "recompiles::simple_module_recompile",
    "recompiles::verbose_tensor_check_dtype",
)


@pytest.fixture(scope="module")
def cases():
    return {c.id: c for c in doctor_corpus.load(sorted({s.split("::")[0] for s in SLICE}))}


@pytest.mark.parametrize("name", SLICE)
def test_captured_and_located(cases, name):
    r = harness.run_case(cases[name], fixes=False)
    assert not r.error, r.error
    assert r.breaks_or_recompiles, f"{name} no longer breaks or recompiles"
    assert r.captured, (r.torch_breaks, r.report_breaks, r.torch_recompiles, r.report_recompiles)
    assert r.located, r.located_detail


def test_torch_log_is_restored():
    """The harness turns torch's graph_breaks/recompiles logs on for a case and off again."""
    import logging

    import torch

    dyn = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(dynamo=logging.INFO)  # a setting of the user's, kept
    try:
        _check_restored(dyn)
    finally:
        torch._logging.set_logs()


def _check_restored(dyn):
    import logging

    import torch

    def state():
        return dyn.level, sorted(torch._logging._internal.log_state.artifact_names), sorted(
            (type(h).__name__, h.level) for h in dyn.handlers)

    before = state()
    with harness.TorchLog() as log:
        torch._dynamo.reset()
        torch.compile(lambda x: (print("x") or x + 1), backend="eager")(torch.ones(2))
    torch._dynamo.reset()
    assert log.breaks and log.breaks[0].startswith("Graph break in user code")
    assert state() == before
    assert dyn.level == logging.INFO
    assert not torch._logging._internal.log_state.is_artifact_enabled("graph_breaks")


def _judge(case_id: str, suggestion) -> harness.Item:
    """The harness's verdict on ``suggestion`` as the fix of the case's first break."""
    c = {x.id: x for x in doctor_corpus.load([case_id.split("::")[0]])}[case_id]
    eager_outs, eager_err = harness._eager(c)
    before = harness._compiled_run(c)
    b = before.report.graph_breaks[0]
    item = harness.Item("break", b.gb_code, suggestion.kind, True)
    harness._try_fix(c, item, suggestion, before, eager_outs, eager_err)
    return item


def test_the_harness_proves_a_fix_that_removes_the_break_with_the_same_outputs():
    from ipycompile.report.model import Fix, Setting, Suggestion

    s = Suggestion.of("reorder print", "", Fix(settings=[Setting("dynamo", "reorderable_logging_functions", "print", "add")]),
                      kind="reorderable_logging_functions")
    item = _judge("reorder_logs::dont_reorder_print", s)
    assert item.fix == "proven", item.fix_detail


def test_the_harness_calls_a_fix_wrong_when_the_fixed_code_raises():
    """``x.shape[torch.tensor([1, 1])]`` (two elements): capture_scalar_outputs makes the compile raise
    (torch 2.13), or moves the break (torch 2.14 traces the fake call's error as the user's exception
    and breaks there, GB0088 "Observed exception"): wrong either way."""
    from ipycompile.report.model import Fix, Setting, Suggestion

    s = Suggestion.of("capture", "", Fix(settings=[Setting("dynamo", "capture_scalar_outputs", "True")]),
                      kind="capture_scalar_outputs")
    item = _judge("misc::torch_size_tensor_index_non_scalar", s)
    why = "the break moved, not removed (GB0088)" if TorchVersion(torch.__version__) >= (2, 14) else "raises"
    assert item.fix == "wrong" and why in item.fix_detail, item.fix_detail


def test_the_harness_calls_a_fix_wrong_when_it_names_what_the_users_code_lacks():
    from ipycompile.report.model import Fix, Mark, Suggestion

    s = Suggestion.of("mark", "", Fix(marks=[Mark("mark_dynamic", "___stack0", 0, "before the first call")]),
                      kind="mark_dynamic")
    item = _judge("error_messages::data_dependent_branching_gb", s)
    assert item.fix == "wrong" and "___stack0" in item.fix_detail, item.fix_detail


def _judge_doctor(case_id: str, line: int) -> harness.Item:
    """The harness's verdict on the doctor's own answer to the case's break at ``line``."""
    c = {x.id: x for x in doctor_corpus.load([case_id.split("::")[0]])}[case_id]
    eager_outs, eager_err = harness._eager(c)
    before = harness._compiled_run(c)
    (b,) = [b for b in before.report.graph_breaks if b.frame.lineno == line]
    item = harness.Item("break", b.gb_code, b.suggestion.kind, True, line)
    harness._try_fix(c, item, b.suggestion, before, eager_outs, eager_err)
    return item


def test_a_rewritten_case_sees_the_module_data_the_unfixed_run_saw():
    """Re-executing the fixed module would draw `global_var = torch.randn(3)` again: the fix is
    judged against the same global values, and proven."""
    c = {x.id: x for x in doctor_corpus.load(["higher_order_ops"])}["higher_order_ops::fallback_on_graph_break_complicated"]
    line = harness.expected_lines(c)[0]
    item = _judge_doctor(c.id, line)
    assert item.kind == "remove_graph_break" and item.fix == "proven", item.fix_detail


def test_each_of_several_graph_break_lines_is_judged_at_its_own_site():
    """Removing the `graph_break()` in the try block removes that break; the code after it, which torch
    ran uncompiled, now compiles and reaches the next `graph_break()` line (answered on its own)."""
    c = {x.id: x for x in doctor_corpus.load(["misc"])}["misc::nested_sequential_try_with_graph_break"]
    line = harness.expected_lines(c)[1]
    item = _judge_doctor(c.id, line)
    assert item.fix == "proven" and f"the break at line {line} is gone" in item.fix_detail, item.fix_detail


def test_a_statement_moved_out_keeps_the_names_it_used():
    """`warnings.warn("test")` moved before the call still sees `warnings` (imported in the case)."""
    c = {x.id: x for x in doctor_corpus.load(["error_messages"])}["error_messages::warnings_warn"]
    item = _judge_doctor(c.id, harness.expected_lines(c)[0])
    assert item.kind == "move_out" and item.fix == "proven", item.fix_detail


def test_a_break_in_a_shared_function_is_shown_reached_from_each_user_line():
    """Three `Foo().attr = x` lines reach `__setattr__`'s `graph_break()`: the text summary and the
    graph-breaks table list the three lines, not only the shared one."""
    from ipycompile.views.tabs import graph_breaks_tab

    c = {x.id: x for x in doctor_corpus.load(["error_messages"])}["error_messages::traceback_above_dynamo_f3"]
    report = harness._compiled_run(c).report
    lines = harness.expected_lines(c)
    (b,) = report.graph_breaks
    assert [f.lineno for f in report.shared_callers(b)] == lines
    wheres = ", ".join(report.where(b.frame.filename, n) for n in lines)
    assert f"reached from {wheres}" in str(report)
    table = graph_breaks_tab(report)[1]
    assert table.rows[0][3] == wheres


def test_the_benchmark_lists_what_another_torch_changed():
    """``doctor_coverage.py --diff``: two result files (here of torch 2.13 and 2.14 as they differ on
    an iterator passed in) compared case by case: the renamed GB code, the answers, cases in one only."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "doctor_coverage.py"
    spec = importlib.util.spec_from_file_location("doctor_coverage", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def case(name, code, kind, fix="none"):
        return {"case": name, "module": "m", "torch_breaks": 1, "captured": True, "located": True,
                "items": [{"what": "break", "code": code, "kind": kind, "specific": kind != "unknown", "line": 4,
                           "fix": fix, "wrong_class": ""}]}

    a = {"torch": "2.13.0+cpu", "summary": {"cases": 2}, "cases": [case("m::iter", "GB0811", "iterator_input", "proven"),
                                                                 case("m::same", "GB0170", "torch_cond"),
                                                                 case("m::gone", "GB0170", "torch_cond")]}
    b = {"torch": "2.14.1+cu130", "summary": {"cases": 2}, "cases": [case("m::iter", "GB9493", "iterator_input", "proven"),
                                                                   case("m::same", "GB0170", "torch_cond")]}
    d = bench.diff_results(a, b)
    assert (d["cases_compared"], d["cases_changed"], d["only_in_a"], d["only_in_b"]) == (2, 1, ["m::gone"], [])
    (c,) = d["changed"]
    assert c["case"] == "m::iter" and "break codes: GB0811 -> GB9493" in c["differences"]
    assert c["only_a"] == ["break GB0811 at 4: iterator_input [proven]"]
    assert c["only_b"] == ["break GB9493 at 4: iterator_input [proven]"]
    assert (d["a"]["torch"], d["b"]["torch"]) == ("2.13.0+cpu", "2.14.1+cu130")
    assert bench.torch_release("2.14.1+cu130") == "2.14.1"
