"""Sweeps: the grid, the Python API, plots, and ``%%compile --sweep`` in a real IPython shell.

Most sweeps here use ``aot_eager`` (Dynamo and AOTAutograd, no Inductor): what
a sweep does per point (reset, fresh caches, capture, timing, recording) is the
same, and the FX graphs show the loop-vs-scan shape without Inductor's cost.
One sweep runs the real Inductor compile.
"""

from __future__ import annotations

import logging

import re

import pytest
import torch
from IPython.utils.capture import capture_output
from torch._higher_order_ops.scan import scan

import ipycompile
from ipycompile.run.sweeps import Progress, SweepError, grid, parse_sweep
from ipycompile.report.progress import TIMING, Status
from ipycompile.views.progress import status_line

W = torch.randn(4, 8) * 0.1
H = torch.randn(8, 8) * 0.1


def step(h, x):
    h = torch.tanh(x @ W + h @ H)
    return h, h.clone()  # scan: a combine function must not return the same tensor twice


def rnn_loop(h, xs):
    outs = []
    for x in xs:
        h, o = step(h, x)
        outs.append(o)
    return h, torch.stack(outs)


def rnn_scan(h, xs):
    return scan(step, h, xs)


def rnn_args(steps):
    return torch.zeros(2, 8), torch.randn(steps, 2, 4)


def dynamo_ops(report) -> int:
    return sum(g.op_count for g in report.graphs if g.stage == "dynamo")


# -- the grid and its parsing ----------------------------------------------------------


def test_parse_sweep_reads_literals_and_bare_words():
    assert parse_sweep("chunks=2,4,8") == ("chunks", [2, 4, 8])
    assert parse_sweep("lr = 0.1, 1e-3") == ("lr", [0.1, 1e-3])
    assert parse_sweep("shape=(2, 3),(4, 5)") == ("shape", [(2, 3), (4, 5)])
    assert parse_sweep("kind=loop,'a,b',scan") == ("kind", ["loop", "a,b", "scan"])
    assert parse_sweep("n=16") == ("n", [16])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("chunks", "expected NAME=v1,v2"),
        ("=2,4", "expected NAME=v1,v2"),
        ("2x=1,2", "'2x' is not allowed (not a Python name)"),
        ("class=1,2", "'class' is not allowed (a Python keyword)"),
        ("n=", "expected NAME=v1,v2"),
        ("n=2,,4", "empty value"),
        ("n=2,[1", "not allowed"),
    ],
)
def test_parse_sweep_errors_name_the_option_and_value(text, expected):
    with pytest.raises(SweepError, match="--sweep") as info:
        parse_sweep(text)
    assert expected in str(info.value)


def test_grid_is_the_product_first_parameter_slowest():
    assert grid({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]
    with pytest.raises(SweepError, match="'label' clashes with a history column"):
        grid({"label": [1]})
    with pytest.raises(SweepError, match="n has no values"):
        grid({"n": []})
    with pytest.raises(SweepError, match="give a list of values"):
        grid({"n": 4})
    with pytest.raises(SweepError, match="at least one parameter"):
        grid({})


def test_progress_estimates_what_remains_from_the_points_done_per_label():
    bar = Progress(4, enabled=False)
    assert bar.remaining_s(["loop", "scan"]) is None  # nothing done yet: no estimate
    bar.done("loop", 4.0, True)
    bar.done("scan", 1.0, False)
    assert bar.remaining_s(["loop", "scan", "other"]) == pytest.approx(4.0 + 1.0 + 2.5)
    point = bar.start(2, "loop", {"n": 8}, ["loop", "scan"])
    assert (point.index, point.total, point.label, point.params) == (2, 4, "loop", (("n", "8"),))
    assert point.remaining_s == pytest.approx(5.0) and point.failed == 1
    text = status_line(Status(phase=TIMING, run_phase=TIMING, elapsed_s=3.0, point=point))
    assert text.startswith("sweep 3/4: loop: n=8 · timing") and "about 5.0 s left" in text and "1 failed" in text


# -- the Python API --------------------------------------------------------------------


@pytest.fixture(scope="module")
def rnn_sweep():
    ipycompile.clear_history()
    with capture_output() as out:
        df = ipycompile.sweep(
            {"loop": rnn_loop, "scan": rnn_scan},
            steps=[2, 4, 8],
            make_args=rnn_args,
            backend="aot_eager",
            fullgraph=True,
            runs=3,
        )
    return df, out.stderr


def test_sweep_runs_every_point_and_label_with_the_parameter_in_a_column(rnn_sweep):
    df, _ = rnn_sweep
    assert list(df.columns[:4]) == ["steps", "sweep", "label", "status"]
    assert list(zip(df["steps"], df["label"])) == [(s, lb) for s in (2, 4, 8) for lb in ("loop", "scan")]
    assert (df["status"] == "ok").all(), df[["steps", "label", "error"]]
    assert (df["compile_s"] > 0).all() and (df["run_median_s"] > 0).all() and (df["runs"] == 3).all()
    assert df["peak_host_bytes"].notna().all()
    for report, steps, label in zip(df["report"], df["steps"], df["label"]):
        p = report.profile
        assert p.settings.params == {"steps": steps} and p.settings.label == label and p.settings.fresh
        assert p.caches["dynamo"] == "fresh (reset)"


def test_each_point_is_compiled_from_scratch_and_the_loop_graph_grows_while_scan_stays(rnn_sweep):
    df, _ = rnn_sweep
    ops = {(lb, s): dynamo_ops(r) for r, s, lb in zip(df["report"], df["steps"], df["label"])}
    # every point compiled (no reuse across points): one Dynamo graph each
    assert all(len([g for g in r.graphs if g.stage == "dynamo"]) == 1 for r in df["report"])
    assert ops[("loop", 8)] > 2 * ops[("loop", 2)]  # unrolled: the graph grows with the trip count
    assert ops[("scan", 2)] == ops[("scan", 4)] == ops[("scan", 8)]  # scan: one body, whatever the count
    assert all(any(n.op == "scan" for n in r.control_flow) for r in df[df["label"] == "scan"]["report"])


def test_sweep_is_recorded_in_the_history_and_pays_start_up_first(rnn_sweep):
    df, stderr = rnn_sweep
    hist = ipycompile.history()
    mine = hist[hist["sweep"] == df.attrs["sweep"]]
    assert list(mine["steps"]) == list(df["steps"]) and list(mine["label"]) == list(df["label"])
    assert set(df.attrs["warm_up_s"]) == {"loop", "scan"} and all(v > 0 for v in df.attrs["warm_up_s"].values())
    assert df.attrs["params"] == ["steps"]
    firsts = df[df["steps"] == 2]["report"]
    assert all(any("one-time start-up was paid before this first point" in n for n in r.profile.notes) for r in firsts)
    assert not any("one-time start-up" in n for r in df[df["steps"] > 2]["report"] for n in r.profile.notes)
    # progress: one line per point outside a notebook, and a summary
    assert "paying one-time start-up before the first point (loop)" in stderr
    assert "sweep 6/6: scan: steps=8" in stderr and "left" in stderr
    assert "sweep done: 6/6 points" in stderr and "one-time start-up paid first" in stderr


def test_a_failing_point_is_recorded_and_the_sweep_goes_on():
    def f(n):
        if n == 3:
            raise RuntimeError(f"no good at n={n}")
        return torch.ones(2) * n

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    inductor_log = logging.getLogger("torch._inductor.utils")
    inductor_log.addHandler(handler)
    try:
        df = ipycompile.sweep(f, n=[1, 3, 5], backend="eager", runs=1, progress=False, record=False)
    finally:
        inductor_log.removeHandler(handler)
    assert not [m for m in seen if "cache dir kept" in m], seen  # the point's temporary cache was deleted
    assert list(df["status"]) == ["ok", "error", "ok"]
    assert df["error"].iloc[1] == "RuntimeError: no good at n=3" and df["error"].iloc[0] == ""
    assert df["label"].iloc[0] == "f"


def test_a_compile_failure_at_one_point_is_recorded_with_its_reason():
    def f(x):
        if x.sum() > 0:  # a graph break: an error under fullgraph
            return x * 2
        return x

    df = ipycompile.sweep(f, make_args=lambda n: torch.ones(n), n=[2, 4], backend="eager", fullgraph=True,
                          runs=1, progress=False, record=False, warm_start=False)
    assert (df["status"] == "failed").all()  # a compile failure, not an exception of the function's own
    assert df["error"].str.contains("Unsupported|data-dependent|Data-dependent").all(), df["error"].tolist()


def test_make_args_forms_and_a_failing_make_args():
    def f(a, b=0):
        return torch.tensor(float(a + b))

    kw = dict(backend="eager", runs=1, progress=False, record=False, warm_start=False)
    assert ipycompile.sweep(f, a=[1], **kw)["status"].tolist() == ["ok"]  # f(**point)
    assert ipycompile.sweep(f, make_args=lambda a: (a, 1), a=[1], **kw)["status"].tolist() == ["ok"]
    assert ipycompile.sweep(f, make_args=lambda a: {"a": a, "b": 2}, a=[1], **kw)["status"].tolist() == ["ok"]
    assert ipycompile.sweep(f, make_args=lambda a: a, a=[1], **kw)["status"].tolist() == ["ok"]
    df = ipycompile.sweep(f, make_args=lambda a: 1 / 0, a=[1, 2], **kw)
    assert (df["status"] == "error").all() and df["error"].str.contains("in make_args").all()


def test_parameters_clashing_with_arguments_go_in_params():
    df = ipycompile.sweep(lambda warmup: torch.tensor(warmup), params={"warmup": [1, 2]},
                          backend="eager", runs=1, progress=False, record=False, warm_start=False)
    assert df["warmup"].tolist() == [1, 2]  # the parameter, not sweep()'s own warmup argument
    assert all(r.profile.steady.warmup == 1 for r in df["report"])
    with pytest.raises(SweepError, match="given twice"):
        ipycompile.sweep(lambda n: n, params={"n": [1]}, n=[2])
    with pytest.raises(ValueError, match="--runs"):
        ipycompile.sweep(lambda n: n, n=[1], runs=0)
    with pytest.raises(ValueError, match="--mode"):
        ipycompile.sweep(lambda n: n, n=[1], mode="fastest")


def test_ctrl_c_stops_the_sweep_and_keeps_the_points_done():
    def f(n):
        if n == 2:
            raise KeyboardInterrupt
        return torch.ones(1) * n

    with pytest.raises(KeyboardInterrupt) as info:
        ipycompile.sweep(f, n=[1, 2, 3], backend="eager", runs=1, progress=False, record=False, warm_start=False)
    partial = info.value.ipycompile_sweep
    assert partial["n"].tolist() == [1, 2] and partial["status"].tolist() == ["ok", "error"]


def test_real_inductor_sweep_compiles_cpp_kernels_at_each_point_and_profiles_them():
    """The one Inductor sweep (both labels, compared with eager, ``profile_kernels``): C++ kernels compiled
    afresh at each point, each point's kernels profiled as ``%%compile --profile-kernels`` profiles them.
    Without the warm start (a compile of each label's first point more): the warm start is checked on the
    ``aot_eager`` sweep above, and with Inductor in tutorial 04's sweeps."""
    df = ipycompile.sweep({"loop": rnn_loop, "scan": rnn_scan}, steps=[2], make_args=rnn_args, fullgraph=True, runs=2,
                          compare_eager=True, profile_kernels=True, progress=False, record=False, warm_start=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    for report in df["report"]:
        assert report.kernels and {k.backend for k in report.kernels} & {"cpp", "extern"}
        caches = report.profile.caches
        assert "hit" not in caches.get("fx_graph", "") and "hit" not in caches.get("aot_autograd", "")  # fresh
        assert report.profile.eager.check.match, report.profile.eager.check.message
        # the kernels profiled at each point
        assert report.profile.settings.options.get("cpp.enable_kernel_profile") is True
        assert report.profile.kernels.times and sum(t.share for t in report.profile.kernels.times) <= 1.0 + 1e-6
        assert any("record-function" in n for n in report.profile.notes)  # the same note as %%compile gives
    assert df["speedup"].notna().all() and (df["eager_run_median_s"] > 0).all()
    # break-even is a count where compiled is faster, and "never" (None) where it is not
    assert all((be is None or be != be) == (sp <= 1) for be, sp in zip(df["break_even_calls"], df["speedup"]))


# -- plots -----------------------------------------------------------------------------


def test_plot_sweep_draws_one_line_per_label_with_units_and_a_log2_axis(rnn_sweep):
    df, _ = rnn_sweep
    fig = ipycompile.plot_sweep(df, "compile_s")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "steps" and ax.get_ylabel() == "compile_s (seconds)"
    assert ax.get_xscale() == "log"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["loop", "scan"]
    assert [list(line.get_xdata()) for line in ax.get_lines()] == [[2, 4, 8], [2, 4, 8]]
    fig = ipycompile.plot_sweep(df, "peak_host_bytes", x="steps", by="label")
    assert fig.axes[0].get_ylabel() == "peak_host_bytes (MiB)"


def test_plot_sweep_errors_and_failed_points():
    import pandas as pd

    df = ipycompile.sweep(lambda n: torch.ones(1) / (n - 3) if n != 3 else 1 / 0, n=[1, 2, 3],
                          backend="eager", runs=1, progress=False, record=False, warm_start=False)
    fig = ipycompile.plot_sweep(df, "run_median_s")
    assert fig.axes[0].get_title() == "1 failed point not shown"
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [1, 2]
    with pytest.raises(ValueError, match="y: column 'peak_device_bytes' has no values"):
        ipycompile.plot_sweep(df.assign(peak_device_bytes=None), "peak_device_bytes")  # as on a machine without CUDA
    with pytest.raises(ValueError, match="y: no column 'nope'"):
        ipycompile.plot_sweep(df, "nope")
    with pytest.raises(ValueError, match="x: give the parameter"):
        ipycompile.plot_sweep(pd.DataFrame({"a": [1], "compile_s": [1.0]}), "compile_s")


# -- %%compile --sweep in a real IPython shell ------------------------------------------


LOOP_CELL = """y = torch.ones(3)
for _ in range(n):
    y = torch.sin(y) * 2
y.sum()"""


def test_magic_sweep_binds_the_name_records_each_point_and_returns_the_table(ip):
    ip.user_ns.pop("n", None)
    ipycompile.clear_history()
    with capture_output() as out:
        res = ip.run_cell(f"%%compile --sweep n=1,2,4 --backend aot_eager --runs 2 --label loop\n{LOOP_CELL}")
    assert res.error_in_exec is None, res.error_in_exec
    df = res.result
    assert df["n"].tolist() == [1, 2, 4] and (df["label"] == "loop").all() and (df["status"] == "ok").all()
    ops = [dynamo_ops(r) for r in df["report"]]
    assert ops[0] < ops[1] < ops[2]  # each point compiled afresh, with its own n
    assert "n" not in ip.user_ns  # the name did not exist before: it is removed again
    assert float(ip.user_ns["y"].sum()) != 0  # the cell's own names land as usual
    hist = ipycompile.history()
    assert hist["n"].tolist() == [1, 2, 4] and hist["execution_count"].nunique() == 1
    assert "sweep done: 3/3 points" in out.stderr and not out.outputs  # no report per point: the table is Out


def test_magic_sweep_grid_restores_existing_names_and_plots_by_label(ip):
    ip.user_ns["n"] = "mine"
    ip.user_ns.pop("k", None)
    with capture_output():
        res = ip.run_cell(f"%%compile --sweep n=1,2 --sweep k=1,2 --backend aot_eager --runs 1 --label grid -o sw\n"
                          f"{LOOP_CELL} * k")
    assert res.error_in_exec is None, res.error_in_exec
    df = ip.user_ns["sw"]
    assert list(zip(df["n"], df["k"])) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert ip.user_ns["n"] == "mine" and "k" not in ip.user_ns
    with capture_output():
        res = ip.run_cell("%compile_history --plot compile_s --x n --by label")
    assert res.error_in_exec is None and res.result.axes[0].get_xlabel() == "n"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("--sweep n", "--sweep: 'n' is not allowed; expected NAME=v1,v2"),
        ("--sweep n=1 --sweep n=2", "each NAME may be swept once"),
        ("--sweep n=1,2 --observe", "cannot be combined with --observe"),
        ("--sweep label=1,2", "clashes with a history column"),
        ("--sweep n=1,2 --mode fastest", "argument --mode: invalid choice"),
    ],
)
def test_magic_sweep_bad_input_is_a_usage_error_and_nothing_runs(ip, line, expected):
    ip.user_ns.pop("ran", None)
    with capture_output() as out:
        res = ip.run_cell(f"%%compile {line}\nran = True")
    assert "ran" not in ip.user_ns
    assert res.error_in_exec is not None or res.error_before_exec is not None
    assert expected in out.stderr + out.stdout + str(res.error_in_exec), out.stderr


def test_magic_sweep_failing_point_goes_on(ip):
    with capture_output():
        res = ip.run_cell("%%compile --sweep n=1,0,2 --backend eager --runs 1 --label div\ny = torch.ones(2) / n\n"
                          "assert n != 0, 'n must not be 0'\ny")
    assert res.error_in_exec is None
    df = res.result
    assert df["status"].tolist() == ["ok", "error", "ok"]
    assert df["error"].iloc[1] == "AssertionError: n must not be 0"


def test_sweep_result_shows_a_formatted_table_and_keeps_the_dataframe_in_df(rnn_sweep):
    """The result reads as a table (units, the IQR as a share of the median, noisy points
    marked, columns with one value said once below), not a raw 35-column DataFrame; the
    DataFrame is ``.df`` and indexing still reaches it."""
    import copy

    import pandas as pd

    from ipycompile.run.sweeps import SweepResult

    result, _ = rnn_sweep
    assert isinstance(result, SweepResult) and isinstance(result.df, pd.DataFrame)
    assert result["steps"].tolist() == result.df["steps"].tolist() and len(result) == 6
    text, page = repr(result), result._repr_html_()
    head = text.splitlines()[0].split()
    assert head[:2] == ["steps", "label"] and "compile" in head and "run" in head
    # sizes with a unit (which unit depends on what the process held before: not fixed here), times too
    assert not re.search(r"\b\d{6,}\b", text), text
    assert re.search(r"\d (B|KiB|MiB|GiB)\b", text) and re.search(r"\d (us|ms|s)\b", text), text
    assert "None" not in text and "device peak" not in text  # nothing ran on a device: no column of Nones
    assert "the same at every point: " in text and "status ok" in text
    assert "is .df" in text and "<table" in page
    # host memory: a column, or said once below where every point added the same (the allocator's
    # rounding can give each point the same figure)
    assert "<th>host added</th>" in page or re.search(r"the same at every point: .*host added \d", page), page
    # a point the run layer judged noisy is marked, and the IQR shows as a share of the median
    df = copy.copy(result.df)
    df["noisy"] = ["", "run time", "", "", "", ""]
    marked = repr(SweepResult(df)).splitlines()
    assert "NOISY" in marked[3] and not any("NOISY" in ln for i, ln in enumerate(marked) if i != 3)
    assert "%)" in marked[2]
