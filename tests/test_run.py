"""The plain-Python API behind %%compile: run_cell, history, plots, settings errors."""

from __future__ import annotations

import pytest
import torch

import ipycompile
from ipycompile.run.session import SESSION
from ipycompile.run.settings import SettingsError, make_settings, parse_option


def test_run_cell_numbers_lines_from_one_and_returns_value_and_report():
    ns = {"torch": torch}
    run = ipycompile.run_cell("y = torch.ones(2)\nif y.sum() > 0:\n    y = y + 1\ny * 3", ns, backend="eager", runs=2, record=False)
    assert torch.equal(run.value, torch.full((2,), 6.0)) and torch.equal(ns["y"], torch.full((2,), 2.0))
    (gb,) = run.report.graph_breaks
    assert gb.frame.lineno == 2  # no %%compile header in plain Python
    assert run.report.profile.steady.runs == 2 and run.fn is not None


def test_run_cell_raises_the_users_exception_with_the_partial_report():
    with pytest.raises(ZeroDivisionError) as info:
        ipycompile.run_cell("a = torch.ones(2) * 2\nb = 1 / 0", {"torch": torch}, backend="eager", record=False)
    report = info.value.ipycompile_report
    assert report.compiles and "ZeroDivisionError" in report.profile.error


def test_settings_errors_name_the_argument_value_and_what_is_allowed():
    with pytest.raises(SettingsError, match=r"--mode: 'turbo' is not allowed; choose one of default, reduce-overhead"):
        make_settings(mode="turbo")
    with pytest.raises(SettingsError, match="--option.*not an Inductor option; did you mean coordinate_descent_tuning"):
        make_settings(options={"coordinate_descent_tunin": True})
    with pytest.raises(SettingsError, match="modes other than default need the inductor backend"):
        make_settings(mode="max-autotune", backend="eager")
    with pytest.raises(ValueError, match="--runs: 0 is not allowed"):
        ipycompile.run_cell("1", {}, backend="eager", runs=0, record=False)
    assert parse_option("max_autotune=True") == ("max_autotune", True)
    assert parse_option("cpp.simdlen=8") == ("cpp.simdlen", 8)
    # mode and options together: the mode's options, then the user's
    opts = make_settings(mode="max-autotune", options={"coordinate_descent_tuning": False}).compile_kwargs()["options"]
    assert opts["max_autotune"] is True and opts["coordinate_descent_tuning"] is False


def test_one_time_inductor_startup_is_paid_before_the_timed_compile():
    SESSION.warmed_backends.discard("inductor")
    run = ipycompile.run_cell("(x.sin() * 2).sum()", {"x": torch.randn(16)}, runs=1, record=False)
    p = run.report.profile
    assert p.first_call.one_time_s is not None and p.first_call.one_time_s > 0
    assert any("one-time start-up" in n for n in p.notes)
    again = ipycompile.run_cell("(x.cos() * 2).sum()", {"x": torch.randn(16)}, runs=1, record=False)
    assert again.report.profile.first_call.one_time_s is None


def test_history_rows_extra_columns_and_plot():
    ipycompile.clear_history()
    for n in (2, 4, 8):
        run = ipycompile.run_cell("(x * 2).sum()", {"x": torch.ones(n)}, backend="eager", runs=2, label="loop", record=False)
        ipycompile.run.history_log.record(run.report, n=n)
    df = ipycompile.history()
    assert list(df["n"]) == [2, 4, 8] and list(df["label"]) == ["loop"] * 3 and list(df["run"]) == [1, 2, 3]
    fig = ipycompile.plot_history(df, "run_median_s", x="n", by="label")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "n" and ax.get_ylabel() == "run_median_s (seconds)"
    with pytest.raises(ValueError, match="y: no column 'nope'"):
        ipycompile.plot_history(df, "nope")
    ipycompile.clear_history()
    assert ipycompile.history().empty


def test_observe_with_fresh_recompiles_what_the_cell_calls():
    f = torch.compile(lambda t: t.sin() + 1, backend="eager")
    ns = {"f": f, "torch": torch}
    first = ipycompile.run_cell("f(torch.ones(4))", ns, observe=True, record=False).report
    assert first.compiles  # the first call compiles
    again = ipycompile.run_cell("f(torch.ones(4))", ns, observe=True, record=False).report
    assert not again.compiles and again.profile.caches["dynamo"] == "nothing compiled"
    fresh = ipycompile.run_cell("f(torch.ones(4))", ns, observe=True, fresh=True, record=False).report
    assert fresh.compiles and fresh.profile.settings.fresh and fresh.profile.caches["dynamo"] == "fresh (reset)"


def test_observe_runs_the_cell_as_plain_code_through_measure():
    """``--observe`` has no cell path of its own: ``execute`` gives ``measure`` the cell as ordinary
    code (``cell.plain_cell``: module-level statements, the last expression's value), run once
    under the capture; that run is the steady state's only run, and nothing is measured as ours."""
    from ipycompile.report import FirstCall
    from ipycompile.run import runner
    from ipycompile.run.cell import CellError

    ns = {"f": torch.compile(lambda t: t + 1, backend="eager"), "torch": torch}
    source = "class K:\n    n = 1\ny = f(torch.ones(2))\ny.sum() + K.n"
    run = runner.execute(source, ns, observe=True, record=False, sources={"<observed>": "In [4]"})
    p = run.report.profile
    assert run.error is None and run.fn is None and float(run.value) == 5.0 and float(ns["y"].sum()) == 4.0
    assert ns["K"].__qualname__ == "K" and len(run.report.compiles) == 1  # the user's torch.compile, captured
    assert p.settings.observe and p.first_call == FirstCall() and p.eager is None and not p.kernels.times
    assert p.steady.runs == 1 and p.steady.run_times_s == [p.steady.run_median_s] and p.steady.run_median_s > 0
    assert run.report.sources["<observed>"] == "In [4]" and run.records

    failed = runner.execute("z = 1\n1 / 0", ns, observe=True, record=False)
    assert isinstance(failed.error, ZeroDivisionError) and ns["z"] == 1
    assert failed.report.profile.error.startswith("ZeroDivisionError") and failed.report.profile.steady.runs == 0
    with pytest.raises(CellError, match="line 3: "):
        runner.execute("x = (", ns, observe=True, record=False, header="%%compile --observe\n# a comment")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need CUDA")
def test_max_autotune_cuda_graph_outputs_are_copied_before_replays():
    lin = torch.nn.Linear(64, 64).cuda()
    with torch.no_grad():  # max-autotune's CUDA graphs, without its (slow) GEMM autotuning
        run = ipycompile.run_cell("lin(x) * 2", {"lin": lin, "x": torch.randn(8, 64, device="cuda")},
                                  mode="max-autotune", options={"max_autotune_gemm": False},
                                  compare_eager=True, runs=3, record=False)
    assert make_settings(mode="max-autotune").uses_cudagraphs()
    assert run.report.profile.eager.check.match, run.report.profile.eager.check.message


def test_changed_torch_config_is_recorded_in_the_settings():
    with torch._inductor.config.patch(freezing=True), torch._dynamo.config.patch(recompile_limit=3):
        report = ipycompile.run_cell("torch.ones(2) + 1", {"torch": torch}, backend="eager", runs=1, record=False).report
    assert report.profile.settings.config == {"dynamo.recompile_limit": "3", "inductor.freezing": "True"}
    assert "config: dynamo.recompile_limit=3 inductor.freezing=True" in str(report)
    clean = ipycompile.run_cell("torch.ones(2) + 1", {"torch": torch}, backend="eager", runs=1, record=False).report
    assert clean.profile.settings.config == {} and "config:" not in str(clean)
    assert ipycompile.CompileReport.from_json(report.to_json()).profile.settings.config == report.profile.settings.config


def test_history_has_a_noisy_column_and_the_speedup_interval():
    from ipycompile.report import CompileReport, EagerComparison, Profile, SteadyState
    from ipycompile.run.history_log import COLUMNS, row_of

    quiet = Profile(steady=SteadyState(run_median_s=1e-3), eager=EagerComparison(speedup=2.0, speedup_ci95=[1.9, 2.1], pairs=20))
    noisy = Profile(steady=SteadyState(run_median_s=1e-3), noise=["run time: the blocks disagree (IQR 40% ...)",
                                                                  "speedup vs eager: the pairs disagree (...)"])
    assert "noisy" in COLUMNS
    row = row_of(CompileReport(profile=quiet))
    assert row["noisy"] == "" and (row["speedup_low"], row["speedup_high"]) == (1.9, 2.1)
    assert row_of(CompileReport(profile=noisy))["noisy"] == "run time; speedup vs eager"


def test_modes_mean_one_thing_in_one_place():
    """What a mode turns on is read from torch's own mode options (settings.inductor_options):
    CUDA graphs, and so the warm-up calls before timing."""
    assert make_settings(mode="reduce-overhead").warmup_calls == 3
    assert make_settings(mode="max-autotune").warmup_calls == 3
    assert make_settings(mode="max-autotune-no-cudagraphs").warmup_calls == 1
    assert make_settings().warmup_calls == 1
    assert make_settings(options={"triton.cudagraphs": True}).warmup_calls == 3
    assert make_settings(backend="eager").uses_cudagraphs() is False


def test_session_state_has_one_public_clear():
    ns = {"x": torch.ones(3)}
    ipycompile.run_cell("x * 2", ns, backend="eager", runs=1, record=False)
    assert SESSION.compiled
    SESSION.clear()
    assert not SESSION.compiled
    again = ipycompile.run_cell("x * 2", ns, backend="eager", runs=1, record=False)
    assert not again.report.profile.reused_compiled_code


def _as_saved(now, saved):
    """``now`` restricted to the keys ``saved`` has (recursively): what a field added later leaves out."""
    if isinstance(now, dict) and isinstance(saved, dict):
        return {k: _as_saved(now[k], v) for k, v in saved.items() if k in now}
    if isinstance(now, list) and isinstance(saved, list) and len(now) == len(saved):
        return [_as_saved(a, b) for a, b in zip(now, saved)]
    return now


def _saved_keys(new, old):
    """``new`` without the keys ``old`` lacks whose value is None (fields added since ``old`` was saved)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _saved_keys(v, old.get(k)) for k, v in new.items() if k in old or v not in (None, {}, [], False)}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_saved_keys(a, b) for a, b in zip(new, old)]
    return new


def test_saved_schema_1_and_2_reports_load_into_profile_records():
    """Reports committed under benchmarks/results/gpu/ were saved with schema 1 (a flat Profile;
    tutorial 07's, from the run before the records) and schema 2 (the output check's fields beside
    the eager timings): they load into the records, every flat value where it now lives, the
    output check one record (``EagerComparison.check``)."""
    import gzip
    import json
    from pathlib import Path

    from ipycompile.report import OUTPUT_CHECK_FIELDS_V2, PROFILE_FIELDS_V1, SCHEMA_VERSION, CompileReport
    from ipycompile.report.serialize import to_jsonable

    def eager_now(saved):  # where each of the saved comparison's fields lives now
        return {**{k: v for k, v in saved.items() if k not in OUTPUT_CHECK_FIELDS_V2},
                "check": {OUTPUT_CHECK_FIELDS_V2[k]: v for k, v in saved.items() if k in OUTPUT_CHECK_FIELDS_V2}}

    files = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "gpu").glob("*.json.gz"))
    versions = {path.name: json.loads(gzip.decompress(path.read_bytes())).get("schema_version", 1) for path in files}
    assert {1, 2} <= set(versions.values()), versions  # old reports stay, to keep these conversions tested
    for path in files:
        data = json.loads(gzip.decompress(path.read_bytes()))
        report = CompileReport.from_dict(data)
        p = report.profile
        assert report.schema_version == SCHEMA_VERSION == 3
        if versions[path.name] == 2:
            saved = dict(data["profile"])
            if saved.get("eager") is not None:
                assert saved["eager"]["outputs_match"] is not None and p.eager.check is not None
                saved["eager"] = eager_now(saved["eager"])
            # unchanged otherwise, but for fields added since the file was saved, at their default None
            assert _saved_keys(to_jsonable(p), saved) == saved, path.name
            continue
        assert versions[path.name] == 1
        for name, value in data["profile"].items():
            if name in PROFILE_FIELDS_V1:
                record, attr = PROFILE_FIELDS_V1[name]
                # fields added to the records' items since (e.g. KernelTime.launches) keep their defaults
                assert _as_saved(to_jsonable(getattr(getattr(p, record), attr)), value) == value, (path.name, name)
            elif isinstance(value, dict) and name == "eager":  # fields added since keep their defaults
                assert _as_saved(to_jsonable(p.eager), eager_now(value)) == eager_now(value), (path.name, name)
            else:
                assert to_jsonable(getattr(p, name)) == value, (path.name, name)
        assert CompileReport.from_json(report.to_json()).to_dict() == report.to_dict()
        assert "run time" in report.summary()


def test_a_profile_has_its_records_only_and_schema_1_names_live_in_from_v1():
    """Schema 1's flat names (``run_median_s``, ``peak_device_bytes_compile``, ...) are neither
    attributes nor keywords of a Profile: only :meth:`Profile.from_v1` knows them, to read a saved
    schema-1 profile into the records. The output check is one record in the eager comparison."""
    import dataclasses

    from ipycompile.report import PROFILE_FIELDS_V1, Profile, RunSettings, SteadyState

    records = {f.name for f in dataclasses.fields(Profile)}
    flat = [name for name in PROFILE_FIELDS_V1 if name not in records]
    assert flat and not [name for name in flat if hasattr(Profile(), name)]
    with pytest.raises(TypeError):
        Profile(run_median_s=1e-3)
    p = Profile(settings=RunSettings(label="a"), steady=SteadyState(run_median_s=1e-3))
    assert (p.settings.label, p.steady.run_median_s) == ("a", 1e-3)
    from ipycompile.report import OUTPUT_CHECK_FIELDS_V2, EagerComparison, OutputCheck

    # the eager comparison holds the output check as one record, not its fields copied one by one
    eager_fields = {f.name for f in dataclasses.fields(EagerComparison)}
    assert not eager_fields & ({f.name for f in dataclasses.fields(OutputCheck)} | set(OUTPUT_CHECK_FIELDS_V2))
    v1 = Profile.from_v1({"label": "a", "run_median_s": 1e-3, "peak_device_bytes_compile": 10, "notes": ["n"]})
    assert v1 == {"settings": {"label": "a"}, "steady": {"run_median_s": 1e-3},
                  "first_call": {"peak_device_bytes": 10}, "notes": ["n"]}


@pytest.mark.parametrize("kwargs, argument", [
    ({"source": 123}, "source"),
    ({"namespace": [1, 2]}, "namespace"),
    ({"trace_dir": 123}, "trace_dir"),
    ({"label": 5}, "label"),
    ({"label": ["a"]}, "label"),
])
def test_run_cell_checks_its_arguments_up_front_naming_the_argument(kwargs, argument, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = {"source": "ran = True", "namespace": {}, **kwargs}
    before = len(ipycompile.history())
    with pytest.raises(TypeError, match=rf"^{argument}: ") as info:
        ipycompile.run_cell(args.pop("source"), args.pop("namespace"), backend="eager", runs=1, **args)
    assert len(str(info.value).splitlines()) == 1
    assert len(ipycompile.history()) == before and list(tmp_path.iterdir()) == []  # nothing ran, nothing written


def test_label_none_is_no_label():
    run = ipycompile.run_cell("1 + 1", {}, backend="eager", runs=1, label=None, record=False)
    assert run.value == 2 and run.report.profile.settings.label == ""


def test_timing_stops_re_planning_at_its_budget_and_says_what_it_bought():
    import time

    from ipycompile.run.timing import time_blocks

    def slow():
        time.sleep(0.02)

    bounded = time_blocks(slow, budget_s=0.05)  # the plan (about 1 s, at least 5 blocks) outlasts the budget
    assert bounded.over_budget and bounded.budget_s == 0.05
    assert 1 <= bounded.blocks < 5 and bounded.runs == bounded.blocks * bounded.block_calls
    assert bounded.spent_s >= 0.05  # it stopped at the budget, not before
    ticks = iter(range(10**6))
    unbounded = time_blocks(slow, runs=6, budget_s=None, clock=lambda: float(next(ticks)))
    assert not unbounded.over_budget and unbounded.runs == 6  # no budget: the plan is done


def test_a_spent_budget_stops_re_planning():
    """Calls that get much faster after the probes make the timing re-plan its blocks after five
    of them; a budget spent by then stops it there (the clock is the test's: it counts its own
    readings, two a block). The target (1 s) plans ten blocks or more from the probes even where a
    loaded machine makes each 5 ms sleep last 100 ms: with 0.1 s, a sleep of 20 ms or more planned
    five blocks, which end the timing before the budget is read again (seen under three pytest workers)."""
    import time

    from ipycompile.run.timing import PROBES, time_blocks

    def settling():  # slow while probed, fast after: the blocks planned from the probes are far too short
        calls[0] += 1
        if calls[0] <= PROBES:
            time.sleep(0.005)

    def ticking():
        readings[0] += 1
        return float(readings[0])

    results = {}
    for budget in (2 * PROBES - 1, None):  # spent as the fifth block ends (readings 0, then 1, 2, ... 9)
        calls, readings = [0], [-1]
        results[budget] = time_blocks(settling, target_s=1.0, budget_s=budget, clock=ticking)
    bounded, unbounded = results[2 * PROBES - 1], results[None]
    assert not unbounded.over_budget and unbounded.probe_calls > PROBES  # re-planned: the timed blocks were probes
    assert unbounded.block_calls > bounded.block_calls  # sized again for the faster calls
    assert bounded.over_budget and bounded.probe_calls <= PROBES  # not re-planned: only the first probes
    assert bounded.blocks == PROBES and bounded.spent_s >= bounded.budget_s  # what the budget bought, and stopped


def test_a_cell_over_its_timing_budget_is_marked_noisy_with_the_reason():
    run = ipycompile.run_cell("import time\ntime.sleep(0.01)", {}, backend="eager", budget_s=0.02, record=False)
    steady = run.report.profile.steady
    assert any("timing budget of 0.02 s was spent" in why for why in run.report.profile.noise)
    assert "budget 0.02 s, spent" in steady.timing_method and steady.runs >= 1
    text = str(run.report)  # the report says so: the reason, the budget and what it bought
    assert "timing budget of 0.02 s was spent" in text and "budget 0.02 s, spent" in text
    assert f"on {steady.run_block_calls and len(steady.run_times_s)} blocks ({steady.runs} calls)" in text
    with pytest.raises(ValueError, match="--budget: 0 is not allowed"):
        ipycompile.run_cell("1", {}, backend="eager", budget_s=0)


def test_the_comparison_with_eager_stops_at_its_budget_too():
    run = ipycompile.run_cell("import time\ntime.sleep(0.01)", {}, backend="eager", budget_s=0.03,
                              compare_eager=True, record=False)
    assert any("speedup vs eager: the timing budget of 0.06 s was spent" in why for why in run.report.profile.noise)
    assert 1 <= run.report.profile.eager.pairs < 6  # fewer than the plan's 6 pairs
