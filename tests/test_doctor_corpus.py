"""A slice of the doctor corpus (``tests/doctor_corpus``: user functions from PyTorch's own
Dynamo tests) through the coverage benchmark's harness: every break and recompile the
report holds is one torch itself logged (captured), shown at the case's own line
(located). The answers' coverage and the fixes' proofs are measured on the whole
corpus by ``benchmarks/doctor_coverage.py``.
"""

from __future__ import annotations

import pytest

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
