"""The doctor's rules are registered objects: one module per break rule, one list, the
table of kinds derived from it; kinds and confidences are enums saved as strings."""

from __future__ import annotations

import json
from pathlib import Path

import ipycompile.analysis.breaks.rules as rules_pkg
from ipycompile import CompileReport
from ipycompile.analysis.breaks import KINDS, RULES
from ipycompile.analysis.eager_run import SUGGESTION_KINDS as EAGER_RUN_KINDS
from ipycompile.analysis.recompiles import FRAME_KINDS, RULES as RECOMPILE_RULES, SUGGESTION_KINDS
from ipycompile.report.model import Confidence, GraphBreak, Kind, Recompile, Suggestion, CompileId


def test_kinds_are_derived_from_the_one_list_of_rules():
    assert list(KINDS) == [str(r.kind) for r in RULES] + ["library_code", "library_switch", "no_lever", "unknown"]
    assert all(r.doc and callable(r.applies) and callable(r.fix) for r in RULES)
    assert len({r.kind for r in RULES}) == len(RULES)  # one rule per kind


def test_every_rule_module_is_registered_and_every_kind_has_a_rule():
    folder = Path(rules_pkg.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    registered = {r.fix.__module__.rsplit(".", 1)[-1] for r in RULES}
    assert modules == registered, modules ^ registered
    covered = set(KINDS) | {str(k) for k in SUGGESTION_KINDS} | set(EAGER_RUN_KINDS)
    assert {str(k) for k in Kind} == covered, {str(k) for k in Kind} ^ covered
    assert [r.kind for r in RECOMPILE_RULES] + list(FRAME_KINDS) == list(SUGGESTION_KINDS)


def test_every_recompile_rule_module_is_registered_once():
    """The recompile doctor has the same shape: one module per rule under ``recompiles/rules``, each
    module's ``RULE`` in :data:`RECOMPILE_RULES` exactly once."""
    import importlib

    import ipycompile.analysis.recompiles.rules as recompile_rules_pkg

    folder = Path(recompile_rules_pkg.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    rules = [importlib.import_module(f"{recompile_rules_pkg.__name__}.{m}").RULE for m in modules]
    assert [sum(r is x for x in RECOMPILE_RULES) for r in rules] == [1] * len(modules), modules
    assert len(RECOMPILE_RULES) == len(modules)


def test_kind_and_confidence_save_as_strings_and_load_as_enums():
    s = Suggestion("t", "e", "c", Confidence.HIGH, Kind.TORCH_WHERE)
    r = CompileReport(graph_breaks=[GraphBreak("r", suggestion=s)])
    data = json.loads(r.to_json())
    saved = data["graph_breaks"][0]["suggestion"]
    assert saved["kind"] == "torch.where" and saved["confidence"] == "high"
    back = CompileReport.from_json(r.to_json()).graph_breaks[0].suggestion
    assert back.kind is Kind.TORCH_WHERE and back.confidence is Confidence.HIGH and back == s


def test_an_old_report_loads_with_its_strings():
    """Before recompile suggestions had a kind they saved "", and another version may save a
    kind this one does not know: both load as saved."""
    r = CompileReport(recompiles=[Recompile(CompileId(0, 1), suggestion=Suggestion("mark_dynamic: x", kind=""))],
                      graph_breaks=[GraphBreak("r", suggestion=Suggestion("t", kind="a_future_kind", confidence="low"))])
    back = CompileReport.from_json(r.to_json())
    assert back.recompiles[0].suggestion.kind == ""
    s = back.graph_breaks[0].suggestion
    assert s.kind == "a_future_kind" and s.confidence is Confidence.LOW
