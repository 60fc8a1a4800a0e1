"""Re-running an unchanged cell: the report shows the diagnosis of the compiled code that
ran (from the run that compiled it, marked as such) with this run's profile."""

from __future__ import annotations

import torch
from IPython.utils.capture import capture_output

import ipycompile
from ipycompile import CompileReport
from ipycompile.views.viewmodel import view_model

CELL = "y = x * 2\nif y.sum() > 0:\n    y = y + 1\ny.sum()"


def test_run_cell_again_shows_the_compiling_runs_diagnosis_with_its_own_profile():
    ipycompile.clear_history()
    ns = {"torch": torch, "x": torch.arange(8.0)}
    first = ipycompile.run_cell(CELL, ns, backend="eager", runs=2, execution_count=7)
    again = ipycompile.run_cell(CELL, ns, backend="eager", runs=2, execution_count=8)
    a, b = first.report, again.report
    assert not a.reused_from and a.graph_breaks
    assert b.profile.reused_compiled_code and b.compiled_nothing
    assert b.reused_from == "run 1, In [7]"
    assert b.graph_breaks == a.graph_breaks and b.graphs == a.graphs and b.compiles == a.compiles
    assert b.profile is not a.profile and b.profile.steady.run_times_s != a.profile.steady.run_times_s
    text = str(b)
    assert text == b.summary() and "reused compiled code (diagnosis from run 1, In [7])" in text.split("\n\n")[0]
    assert "Reused compiled code: nothing was compiled in this run." in text  # the Summary tab says it whole
    assert "from run 1, In [7], which compiled it" in text and "\nGraph breaks (" in text and "if y.sum() > 0:" in text
    chip = view_model(b).chip("status")
    assert chip.text == "reused compiled code (diagnosis from run 1, In [7])"
    # the first screen says the first call reused compiled code, and gives no compile time
    first_a, first_b = (" ".join(str(r).split("(the whole report follows")[0].split()) for r in (a, b))
    assert "first call (compile)" in first_a and "reused" not in first_a
    assert "first call (compile)" not in first_b and "(reused, no compile)" in first_b, first_b
    timing = view_model(b).chip("compile_time")
    assert timing.value is None and timing.text.startswith("first call ") and "reused" in timing.text
    summary = view_model(b).tab("summary").blocks()[0]
    assert summary.kind == "note" and "from run 1, In [7]" in summary.text
    # the history counts what each run compiled: the second compiled nothing
    hist = ipycompile.history()
    assert hist["graph_breaks"].tolist() == [1, 0] and hist["graphs"].tolist()[1] == 0
    assert hist["report"].iloc[1] is b
    assert CompileReport.from_json(b.to_json()) == b  # reused_from round-trips


def test_a_guard_failure_makes_the_recompile_the_new_origin():
    ns = {"torch": torch, "x": torch.arange(8.0)}
    src = "z = x.cos() * 3\nz.sum()"
    ipycompile.run_cell(src, ns, backend="eager", runs=1, record=False)
    ns["x"] = torch.arange(16.0)  # the unchanged cell meets a new shape: a recompile
    recompiled = ipycompile.run_cell(src, ns, backend="eager", runs=1, record=False).report
    assert recompiled.recompiles and not recompiled.reused_from
    # the failed guard is of the first run's compile: shown beside the new one all the same
    (ch,) = recompiled.recompiles[0].changes
    assert ch.kind == "size" and "size=[8]" in ch.failed_guard and "size=[None]" in ch.new_guard
    assert {g.compile_id for g in recompiled.guards} == {c.compile_id for c in recompiled.compiles}
    ns["x"] = torch.arange(24.0)  # the dynamic version fits: reused
    reused = ipycompile.run_cell(src, ns, backend="eager", runs=1, record=False).report
    assert reused.reused_from == "an earlier run" and reused.recompiles == recompiled.recompiles


def test_compile_magic_rerun_shows_the_diagnosis_in_the_shell(ip):
    ip.run_cell("x = torch.arange(8.0)")
    cell = "%%compile --backend eager --runs 2\n" + CELL
    with capture_output():
        first = ip.run_cell(cell, store_history=True)
    with capture_output() as out:
        again = ip.run_cell(cell, store_history=True)
    assert first.success and again.success
    text = out.outputs[0].data["text/plain"]
    assert "Reused compiled code: nothing was compiled in this run" in text  # the Summary tab, as text
    assert f"In [{first.execution_count}], which compiled it" in text
    assert f"In [{first.execution_count}], line 3" in text  # the break, at the compiling cell's line
