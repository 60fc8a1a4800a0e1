"""%%compile in a real IPython shell (in-process InteractiveShell)."""

from __future__ import annotations

import logging
import re

import pytest
import torch
from IPython.utils.capture import capture_output

import ipycompile
from ipycompile.report.report import _renderers
from ipycompile.views.viewmodel import view_model

import shells

TRACE = logging.getLogger("torch.__trace")


def run(ip, cell: str):
    """Run a cell as the user would; return (ExecutionResult, captured output)."""
    with capture_output() as out:
        res = ip.run_cell(cell, store_history=True)
    return res, out


def last_report() -> ipycompile.CompileReport:
    return ipycompile.history()["report"].iloc[-1]


def test_load_unload_reload_leave_nothing_behind():
    shell = shells.ipython()
    handlers = list(TRACE.handlers)
    shell.run_line_magic("load_ext", "ipycompile")
    try:
        assert "compile" in shell.magics_manager.magics["cell"] and "compile" in shell.magics_manager.magics["line"]
        assert {"compile_history", "compile_reset"} <= set(shell.magics_manager.magics["line"])
        shell.run_line_magic("reload_ext", "ipycompile")
        assert "compile" in shell.magics_manager.magics["cell"]
    finally:
        shell.run_line_magic("unload_ext", "ipycompile")
    assert "compile" not in shell.magics_manager.magics["cell"]
    assert "compile_history" not in shell.magics_manager.magics["line"]
    # the HTML display of reports is not the extension's: it stays (reports render without %load_ext)
    assert len(_renderers) == 1 and list(TRACE.handlers) == handlers


def test_cell_namespace_result_and_display(ip):
    ip.user_ns["a"] = torch.ones(3)
    res, out = run(ip, "%%compile --backend eager --runs 3\nb = a * 2\nc, d = b + 1, b - 1\nfor i in range(2):\n    pass\nb.sum()")
    assert res.error_in_exec is None, res.error_in_exec
    assert torch.equal(ip.user_ns["b"], torch.full((3,), 2.0)) and ip.user_ns["i"] == 1
    assert torch.equal(ip.user_ns["d"], torch.ones(3))
    assert res.result == 6.0
    (shown,) = out.outputs
    # the test shell is IPython's terminal shell: it shows text only (its text/html formatter is
    # off), so no page is made, to stay in its output history for the session
    assert "text/html" not in shown.data and "ipycompile" in shown.data["text/plain"]
    p = last_report().profile
    assert p.steady.runs == 3 and p.settings.backend == "eager" and p.first_call.compile_s > 0 and p.steady.run_median_s > 0


def test_the_report_is_html_where_the_shell_shows_html_and_text_where_not(ip):
    ip.user_ns["a"] = torch.ones(3)
    cell = "%%compile --backend eager --runs 1 --warmup 0\nb = a * 2\nb.sum()"
    types = list(ip.display_formatter.active_types)
    try:
        ip.display_formatter.active_types = [*types, "text/html"]  # a frontend that shows HTML
        res, out = run(ip, cell)
        assert res.success and "ipyc" in out.outputs[0].data["text/html"]
        ip.display_formatter.active_types = ["text/plain"]  # the terminal's
        res = ip.run_cell(cell, store_history=True)  # not captured: IPython's own publisher keeps what it shows
        assert res.success
        # what IPython keeps of the run in its output history: the report's text, no page
        kept = ip.history_manager.outputs[res.execution_count]
        shown = [o for o in kept if o.output_type == "display_data"]
        assert shown and "ipycompile" in shown[0].bundle["text/plain"], kept
        displayed = [o for o in kept if "stream" not in o.bundle]
        assert displayed and all(set(o.bundle) == {"text/plain"} for o in displayed), [set(o.bundle) for o in kept]
        # besides them, at most the progress line's one line of what the run took
        assert all(len(str(o.bundle)) < 500 for o in kept if "stream" in o.bundle), kept
    finally:
        ip.display_formatter.active_types = types


def test_graph_break_is_reported_at_the_editor_line_of_the_cell(ip):
    res, _ = run(ip, "%%compile --backend eager --runs 1\ny = torch.randn(4)\nif y.sum() > 0:\n    y = y * 2\nz = y + 1")
    assert res.error_in_exec is None
    r = last_report()
    (gb,) = r.graph_breaks
    assert gb.frame.lineno == 3  # the %%compile line is line 1
    assert r.where(gb.frame.filename, gb.frame.lineno) == f"In [{res.execution_count}], line 3"
    assert f"In [{res.execution_count}], line 3" in str(r)


def test_functions_from_other_cells_are_shown_as_that_cell(ip):
    defined, _ = run(ip, "def helper(x):\n    if x.mean() > 0:\n        return x.cos()\n    return x.sin()")
    res, _ = run(ip, "%%compile --backend eager --runs 1\nhelper(torch.randn(5))")
    assert res.error_in_exec is None
    sites = [last_report().where(b.frame.filename, b.frame.lineno) for b in last_report().graph_breaks]
    assert f"In [{defined.execution_count}], line 2" in sites


def test_unchanged_cell_reuses_compiled_code_and_a_changed_cell_compiles(ip):
    cell = "%%compile --backend eager --runs 1\nw = torch.ones(4) * 3\nw.sum()"
    run(ip, cell)
    assert last_report().compiles
    res, out = run(ip, cell)
    r = last_report()
    assert r.compiled_nothing and r.profile.reused_compiled_code and res.result == 12.0
    assert "reused compiled code" in out.outputs[0].data["text/plain"]
    run(ip, cell.replace("* 3", "* 4"))
    assert last_report().compiles and not last_report().profile.reused_compiled_code


@pytest.mark.parametrize(
    "body, line, word",
    [("x = 1\nreturn x", 4, "return"), ("yield 1", 3, "yield"), ("x = 1\n\nawait foo()", 5, "await"), ("nonlocal q", 3, "nonlocal")],
)
def test_constructs_that_cannot_be_a_function_body(ip, body, line, word):
    ip.user_ns.pop("ran", None)
    res, out = run(ip, f"%%compile --backend eager\nran = True\n{body}")
    text = out.stdout + out.stderr
    assert "UsageError" in text and word in text and f"line {line}" in text, text
    assert "ran" not in ip.user_ns


def test_imports_defs_classes_loops_and_with_work(ip):
    cell = """%%compile --backend eager --runs 1
import math
from contextlib import nullcontext
def twice(t):
    return t * 2
class Box:
    k = 3
total = torch.zeros(2)
with nullcontext():
    for j in range(3):
        total = total + twice(torch.ones(2)) * Box.k
math.floor(total.sum().item())"""
    res, _ = run(ip, cell)
    assert res.error_in_exec is None, res.error_in_exec
    assert res.result == 36 and ip.user_ns["Box"].k == 3 and ip.user_ns["math"].pi > 3


def test_help_lists_every_option_with_defaults(ip):
    doc = ip.find_cell_magic("compile").__doc__
    for opt in ("--mode", "--backend", "--dynamic", "--no-dynamic", "--fullgraph", "--option", "--runs", "--warmup",
                "--fresh", "--compare-eager", "--observe", "--label", "-o", "--quiet"):
        assert opt in doc, opt
    assert "default: default" in doc and "default: inductor" in doc


@pytest.mark.parametrize(
    "line, expected",
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--mode fast", "invalid choice: 'fast'"),
        ("--backend inductr", "--backend: 'inductr' is not allowed"),
        ("--option max_autotune", "expected KEY=VALUE"),
        ("--option max_autotun=True", "did you mean max_autotune"),
        ("--option max_autotune=3", "max_autotune takes True or False"),
        ("--runs 0", "--runs: 0 is not allowed"),
        ("--runs -2", "--runs"),
        ("--warmup -1", "--warmup"),
        ("-o 1abc", "-o: '1abc' is not allowed"),
        ("-o class", "-o: 'class' is not allowed"),
        ("-o a.b", "-o: 'a.b' is not allowed"),
        ("--sweep class=1,2", "--sweep: 'class' is not allowed"),
        ("--sweep 2n=1,2", "--sweep: '2n' is not allowed"),
        ("--option cpp.threads=abc", "cpp.threads takes a whole number (now -1), not str"),
        ("--option max_autotune_gemm_backends=42", "max_autotune_gemm_backends takes a string"),
        ("-o __builtins__", "IPython itself uses that name"),
        ("-o get_ipython", "IPython itself uses that name"),
        ("-o Out", "IPython itself uses that name"),
        ("-o _i2", "IPython itself uses that name"),
        ("--label \"unclosed", "No closing quotation"),
    ],
)
def test_bad_input_is_a_usage_error_and_the_cell_does_not_run(ip, line, expected):
    ip.user_ns.pop("ran", None)
    res, out = run(ip, f"%%compile {line}\nran = True")
    text = out.stdout + out.stderr
    assert "UsageError" in text and expected in text, text
    assert "ran" not in ip.user_ns


@pytest.mark.parametrize("line", ["-o 1abc", "-o class", "-o a.b", "--sweep class=1,2"])
def test_a_name_the_user_cannot_use_is_one_line_naming_what_is_allowed(ip, line):
    res, out = run(ip, f"%%compile --backend eager {line}\nran = True")
    text = (out.stdout + out.stderr).strip()
    (message,) = [t for t in text.splitlines() if "UsageError" in t]
    assert "Python name" in message and "keyword" in message, message
    assert "Traceback" not in text and len(text.splitlines()) == 1, text


def test_compile_history_plot_of_a_text_column_is_a_usage_error_listing_numeric_ones(ip):
    ipycompile.clear_history()
    run(ip, "%%compile --backend eager --runs 1 --label a --quiet\nu = torch.ones(2) + 1")
    res, out = run(ip, "%compile_history --plot label")
    text = (out.stdout + out.stderr).strip()
    assert isinstance(res.error_in_exec, Exception) and type(res.error_in_exec).__name__ == "UsageError"
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert "--plot: 'label' is not a numeric column" in text and "run_median_s" in text and "compile_s" in text
    numeric = text.split("numeric columns are ", 1)[1]
    assert "label" not in numeric.split(", ") and "report" not in numeric.split(", ")
    for bad in ("--plot compile_s --x report", "--plot compile_s --by nosuch"):
        res, out = run(ip, f"%compile_history {bad}")
        assert type(res.error_in_exec).__name__ == "UsageError", bad
    ip.run_line_magic("compile_reset", "--history")


def test_custom_backend_and_compare_eager_warns_when_outputs_differ(ip):
    from torch._dynamo import register_backend

    @register_backend
    def off_by_one(gm, example_inputs):
        def run_(*args):
            out = gm(*args)
            return [o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out]

        return run_

    with pytest.warns(RuntimeWarning, match="outputs differ.*RMSE vs float64 compiled 1, eager 0; ABOVE"):
        res, _ = run(ip, "%%compile --backend off_by_one --runs 2 --compare-eager\nv = torch.ones(3) * 2\nv")
    assert res.error_in_exec is None
    e = last_report().profile.eager
    assert e.check.match is False and e.check.max_abs_diff == pytest.approx(1.0)
    assert e.check.method == "fp64 reference" and e.check.compiled_error == pytest.approx(1.0) and e.check.eager_error == 0
    assert any("outputs differ" in n for n in last_report().profile.notes)


def test_compare_eager_reports_speedup_memory_and_break_even(ip):
    ip.user_ns["q"] = torch.randn(64, 64)
    res, _ = run(ip, "%%compile --backend eager --runs 3 --compare-eager\n(q @ q).relu().sum()")
    assert res.error_in_exec is None
    e = last_report().profile.eager
    assert e.check.match is True and e.speedup > 0 and e.run_median_s > 0
    assert e.memory_ratio is not None
    assert e.break_even_calls is None or e.break_even_calls >= 1


def test_observe_captures_a_model_compiled_in_an_earlier_cell(ip):
    run(ip, "lin = torch.nn.Linear(4, 4)\ncm = torch.compile(lin, backend='eager')")
    res, _ = run(ip, "%%compile --observe\nout = cm(torch.randn(2, 4))\nout.shape")
    assert res.error_in_exec is None and tuple(res.result) == (2, 4)
    r = last_report()
    assert r.profile.settings.observe and r.compiles and not r.profile.reused_compiled_code
    assert any("linear" in g.code for g in r.graphs if g.stage == "dynamo")


def test_label_output_quiet_and_history(ip):
    ipycompile.clear_history()
    res, out = run(ip, "%%compile --backend eager --runs 2 --label first -o rep --quiet\nu = torch.ones(2) + 1")
    assert res.error_in_exec is None and not out.outputs
    assert isinstance(ip.user_ns["rep"], ipycompile.CompileReport)
    run(ip, "%%compile --backend eager --runs 2 --label second\nu = torch.ones(2) + 2")
    df = ip.run_line_magic("compile_history", "")
    assert list(df["label"]) == ["first", "second"] and list(df["runs"]) == [2, 2]
    for col in ("compile_s", "run_median_s", "peak_host_bytes_compile", "peak_host_bytes_run", "graphs", "graph_breaks",
                "recompiles", "kernels", "speedup", "break_even_calls", "execution_count", "report"):
        assert col in df.columns
    assert df["report"].iloc[0] is ip.user_ns["rep"]
    res, out = run(ip, "%compile_history --plot run_median_s --by label")
    fig = res.result
    assert fig.axes[0].get_ylabel() == "run_median_s (seconds)" and len(fig.axes[0].lines) == 2
    assert res.result._repr_png_()[:4] == b"\x89PNG"  # what Out[n] shows in a notebook
    ip.run_line_magic("compile_reset", "--history")
    assert ipycompile.history().empty


def test_user_exception_shows_partial_report_and_traceback_at_the_cell_line(ip):
    res, out = run(ip, "%%compile --backend eager\nt = torch.ones(2)\nif t.sum() > 0:\n    t = t + 1\nraise ValueError('boom')")
    assert isinstance(res.error_in_exec, ValueError)
    assert re.search(rf"Cell In\[{res.execution_count}\], line 5", out.stdout), out.stdout
    r = last_report()
    assert r.graph_breaks and "ValueError: boom" in r.profile.error
    assert out.outputs and "graph break" in out.outputs[0].data["text/plain"]
    assert ipycompile.history()["status"].iloc[-1] == "error"


def test_fullgraph_failure_shows_location_and_hint(ip):
    res, out = run(ip, "%%compile --backend eager --fullgraph\ns = torch.ones(2)\nif s.sum() > 0:\n    s = s * 2")
    assert isinstance(res.error_in_exec, torch._dynamo.exc.Unsupported)
    r = last_report()
    (f,) = r.failures
    assert r.where(f.frame.filename, f.frame.lineno) == f"In [{res.execution_count}], line 3"
    assert "torch.cond" in f.message
    row = ipycompile.history().iloc[-1]
    assert row["status"] == "failed" and "Unsupported" in row["error"]  # a compile failure, with its reason


def test_keyboard_interrupt_leaves_no_listener_and_no_config_change(ip):
    handlers = list(TRACE.handlers)
    configs = (torch._dynamo.config.get_config_copy(), torch._inductor.config.get_config_copy())
    res, _ = run(ip, "%%compile --backend eager --fresh\nk = torch.ones(2)\nraise KeyboardInterrupt")
    assert isinstance(res.error_in_exec, KeyboardInterrupt)
    assert list(TRACE.handlers) == handlers
    assert (torch._dynamo.config.get_config_copy(), torch._inductor.config.get_config_copy()) == configs


def test_the_magic_adds_no_names_of_its_own(ip):
    before = set(ip.user_ns)
    run(ip, "%%compile --backend eager --runs 1\nnew_name = torch.zeros(1)")
    added = set(ip.user_ns) - before
    ipython_own = {n for n in added if re.fullmatch(r"_i*\d*|__+", n)}
    # Dynamo keeps its own helpers in a compiled function's globals, as for any notebook function
    dynamo_own = {n for n in added if re.match(r"__(compiled_fn|builtins_dict|resume_at|import)_", n)}
    assert added - ipython_own - dynamo_own == {"new_name"}


def test_line_magic(ip):
    ip.user_ns["m"] = torch.ones(3)
    res, _ = run(ip, "%compile --backend eager --runs 2 (m * 5).sum()")
    assert res.error_in_exec is None and res.result == 15.0
    assert last_report().profile.steady.runs == 2


def test_inductor_default_fresh_and_dynamic_options(ip):
    res, _ = run(ip, "%%compile --fresh --no-dynamic --runs 2 --option max_autotune=False\ng = torch.randn(8, 8)\n(g.sin() * 2).sum()")
    assert res.error_in_exec is None, res.error_in_exec
    p = last_report().profile
    assert p.settings.backend == "inductor" and p.settings.fresh and p.settings.dynamic is False and p.settings.options == {"max_autotune": False}
    assert p.caches["dynamo"].startswith("fresh") and "miss" in p.caches["fx_graph"]
    assert any(k.backend == "cpp" for k in last_report().kernels)


@pytest.mark.parametrize("magic", ["%compile_diff -1 -1 -o {}", "%compile_trace /nonexistent.log -o {}"])
@pytest.mark.parametrize("name", ["__builtins__", "get_ipython", "exit", "_", "1bad", "class"])
def test_every_o_takes_only_a_name_the_shell_does_not_rely_on(ip, magic, name):
    res, out = run(ip, magic.format(name))
    text = (out.stdout + out.stderr).strip()
    assert "UsageError" in text and "-o" in text and len(text.splitlines()) == 1, text
    assert callable(ip.user_ns["get_ipython"]) and "__builtins__" in ip.user_ns
    assert run(ip, "1 + 1")[0].result == 2  # the shell still works


def test_quoted_option_values_are_read_as_a_shell_reads_them(ip, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace_dir = tmp_path / "dir with space" / "t"
    res, out = run(ip, f"%%compile --backend eager --runs 1 --quiet --label \"my run\" --trace-dir '{trace_dir}'\n"
                       "q = torch.ones(2) * 2")
    assert res.error_in_exec is None, res.error_in_exec
    assert last_report().profile.settings.label == "my run"
    assert trace_dir.is_dir() and list(trace_dir.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir with space"]  # no folder named ' or "


BAD_STR = "class BadStr(Exception):\n    def __str__(self):\n        raise RuntimeError('str() of this exception fails')\n"


@pytest.mark.parametrize("raise_line", ["raise SystemExit(3)", "raise BadStr()"])
def test_a_cell_ending_in_systemexit_or_an_unprintable_exception_is_recorded_and_reraised(ip, raise_line):
    run(ip, BAD_STR)
    expected = SystemExit if "SystemExit" in raise_line else ip.user_ns["BadStr"]
    before = len(ipycompile.history())
    with capture_output(), pytest.raises(BaseException) as info:
        ip.run_cell_magic("compile", "--backend eager --runs 1 --quiet", f"w = torch.ones(2) * 3\n{raise_line}")
    assert type(info.value) is expected, info.value  # the user's own exception, not ipycompile's
    assert len(ipycompile.history()) == before + 1  # the run is in the history, with its partial report
    r = last_report()
    assert r.profile.error.startswith(expected.__name__) and r.profile.first_call.compile_s is None
    assert torch.equal(ip.user_ns["w"], torch.full((2,), 3.0))
    assert run(ip, "1 + 1")[0].result == 2


def test_a_run_started_inside_a_compile_cell_is_refused_with_a_clear_message(ip):
    run(ip, "def inner_run():\n    return ipycompile.run_cell('1 + 1', {}, backend='eager', runs=1).value\n"
            "def inner_magic():\n    get_ipython().run_cell_magic('compile', '--backend eager --runs 1 --quiet', 'q = 1')\n"
            "import ipycompile")
    for call, kind in (("inner_run()", "NestedRunError"), ("inner_magic()", "UsageError")):
        before = len(ipycompile.history())
        with capture_output(), pytest.raises(Exception) as info:
            ip.run_cell_magic("compile", "--backend eager --runs 1 --quiet", f"r = {call}")
        assert type(info.value).__name__ == kind and "runs do not nest" in str(info.value)
        assert len(ipycompile.history()) == before + 1  # the outer run only, its own cell in its report
        assert "runs do not nest" in last_report().profile.error
    assert run(ip, "%%compile --backend eager --runs 1 --quiet\nok_after = 1")[0].error_in_exec is None  # not stuck


def test_the_magics_flags_are_the_run_options_declared_once(ip):
    from ipycompile.run.options import OPTION_NAMES

    dests = {a.dest for a in ip.magics_manager.magics["cell"]["compile"].__self__.compile.parser._actions}
    # every RunOptions/CompileSettings field but record (a magic run is always recorded); --option is
    # `options` as KEY=VALUE texts; plus the magic's own --sweep, -o and --quiet
    assert dests - {"help"} == (set(OPTION_NAMES) - {"record", "options", "verify_later"}) | {"option", "sweep", "output", "quiet"}


def test_run_options_are_named_once_as_fields_and_the_calls_take_them_as_keywords():
    """The options are the fields of RunOptions and CompileSettings (OPTION_NAMES); no public call
    spells one in its own signature (they reach RunOptions.build through ``**options``), and each
    call that takes them says so with one rule: built, or keywords, not both."""
    import dataclasses
    import inspect

    from ipycompile.run import execute, run_cell, sweep
    from ipycompile.run.options import OPTION_NAMES, RunOptions
    from ipycompile.run.request import run_request
    from ipycompile.run.settings import CompileSettings
    from ipycompile.run.sweeps import sweep_cell

    fields = [f.name for f in dataclasses.fields(CompileSettings)] + \
        [f.name for f in dataclasses.fields(RunOptions) if f.name != "settings"]
    assert list(OPTION_NAMES) == fields
    for fn in (execute, run_cell, sweep, sweep_cell, run_request):
        params = inspect.signature(fn).parameters.values()
        named = {p.name for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD}
        assert not named & set(OPTION_NAMES), (fn.__name__, sorted(named & set(OPTION_NAMES)))
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), fn.__name__
    built = RunOptions.build(backend="eager", runs=2)
    assert RunOptions.given(built, {}, where="execute") is built
    assert RunOptions.given(None, {"backend": "eager", "runs": 2}, where="execute") == built
    with pytest.raises(TypeError, match="sweep_cell: give the options as run_options or as keywords, not both"):
        RunOptions.given(built, {"runs": 3}, where="sweep_cell")
    with pytest.raises(TypeError, match="unknown option 'rns'; the options are mode, backend"):
        RunOptions.build(rns=3)
    # a sweep's untimed warm start is one variant of the options, the same for functions and cells
    warm = RunOptions.build(backend="eager", runs=5, compare_eager=True, profile_kernels=True).warm_start()
    assert (warm.runs, warm.warmup, warm.compare_eager, warm.profile_kernels, warm.memory_timeline, warm.record) == \
        (1, 0, False, False, False, False)


def test_torchs_lines_kept_out_of_the_output_are_the_reports_raw_log(ip):
    # torch's own warning, for real: the recompile limit (lowered to 1) of a cell reading an int that each call changes
    run(ip, "_old_limit = torch._dynamo.config.recompile_limit\ntorch._dynamo.config.recompile_limit = 1\ncalls = [0]")
    try:
        res, _ = run(ip, "%%compile --backend eager --runs 3\ncalls[0] += 1\ny = torch.ones(2) * calls[0]")
    finally:
        run(ip, "torch._dynamo.config.recompile_limit = _old_limit")
    assert res.error_in_exec is None
    r = last_report()
    assert any(rc.limit_hit for rc in r.recompiles)
    assert any("recompile_limit" in line for line in r.torch_log), r.torch_log
    assert len(r.torch_log) == len(set(r.torch_log))  # each record once, whatever handlers it reached
    # one click away: the Summary tab's collapsed node holds torch's words, in every view
    node = next(b for b in view_model(r).tab("summary").blocks() if getattr(b, "label", "").startswith("torch's log"))
    assert not node.open and r.torch_log[0] in node.blocks[0].code
    assert ipycompile.CompileReport.from_json(r.to_json()).torch_log == r.torch_log
