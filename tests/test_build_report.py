"""The report built from real CPU compiles: every field, checked against what torch did."""

from __future__ import annotations

import json
import re

import pytest
import torch

from ipycompile import CompileId, CompileReport
from scenarios import BREAKERS, FILE, captured, line_of


def report(name: str) -> CompileReport:
    return captured(name).report


# -- graph breaks --------------------------------------------------------------
def test_data_dependent_if_break_has_code_hints_and_user_line():
    r = report("break:ddif")
    (gb,) = r.graph_breaks
    assert gb.reason == "Data-dependent branching"
    assert gb.gb_code == "GB0170"
    assert "data-dependent branching" in gb.explanation.lower()
    assert any("torch.cond" in h for h in gb.hints)
    assert (gb.frame.filename, gb.frame.lineno, gb.frame.function) == (FILE, line_of("ddif"), "data_dependent_if")
    assert "if y.sum() > 0" in gb.frame.source_line
    assert gb.compile_id == CompileId(0, 0)
    first = r.compile("0/0")
    assert first.status == "graph break" and first.function == "data_dependent_if"


def test_break_in_a_helper_one_frame_down_points_at_the_helper_line():
    r = report("break:helper")
    sites = {(b.frame.function, b.frame.lineno): b for b in r.graph_breaks}
    gb = sites[("helper_with_if", line_of("helper-if"))]
    assert gb.gb_code == "GB0170"
    # torch reports it twice: while inlining the helper into its caller, and in the helper's own frame
    assert gb.count == 2 and len(gb.compile_ids) == 2
    assert any(f.lineno == line_of("calls-helper") for f in gb.user_stack)


@pytest.mark.parametrize(
    "name, marker, words",
    [
        ("print", "print", "builtin"),
        ("item", "item", "item()"),
        ("tolist", "tolist", "data dependent"),
        ("numpy", "numpy", "dynamic shape"),
    ],
)
def test_common_breaks_are_located_and_explained(name, marker, words):
    r = report(f"break:{name}")
    assert len(r.graph_breaks) == 1, [b.reason for b in r.graph_breaks]
    (gb,) = r.graph_breaks
    assert words in gb.reason.lower()
    assert gb.gb_code.startswith("GB") and len(gb.gb_code) == 6
    assert (gb.frame.filename, gb.frame.lineno) == (FILE, line_of(marker))
    assert gb.explanation and gb.hints


def test_break_inside_a_loop_is_one_site_with_a_count():
    r = report("break:loop")
    assert len(r.graph_breaks) == 1
    (gb,) = r.graph_breaks
    assert gb.frame.lineno == line_of("loop-site") and gb.count > 1
    assert r.graph_break_count == gb.count


@pytest.mark.parametrize("name", sorted(BREAKERS))
def test_graph_breaks_agree_with_dynamo_explain(name):
    r = report(f"break:{name}")
    torch._dynamo.reset()
    explained = torch._dynamo.explain(BREAKERS[name])(torch.randn(8))
    assert sum(1 for g in r.graphs if g.stage == "dynamo") == explained.graph_count
    # every break explain names is a site in the report, at the same user line
    sites = {(b.frame.filename, b.frame.lineno) for b in r.graph_breaks}
    for reason in explained.break_reasons:
        user = [f for f in reason.user_stack if f.filename == FILE]
        assert (FILE, user[-1].lineno) in sites, (reason.reason, sites)
    # explain counts graphs - 1; the report counts the breaks torch logged. They
    # differ where a break sits in a function Dynamo inlined: "helper" makes 4
    # graphs from 2 logged breaks; in "loop" torch logs the break once in the
    # loop's frame (which it then skips) and once in the body's own frame.
    expected = {"helper": (3, 2), "loop": (1, 2)}.get(name)
    if expected:
        assert (explained.graph_break_count, r.graph_break_count) == expected
    else:
        assert r.graph_break_count == explained.graph_break_count


# -- recompiles ----------------------------------------------------------------
def test_recompiles_on_shape_dtype_and_int_change_with_reasons():
    r = report("recompiles")
    assert [str(c.compile_id) for c in r.compiles] == ["0/0", "0/1", "0/2", "0/3"]
    assert [str(rc.compile_id) for rc in r.recompiles] == ["0/1", "0/2", "0/3"]
    shape, dtype, integer = r.recompiles
    assert shape.function == "scaled" and shape.filename == FILE
    assert "tensor 'x' size mismatch at index 0. expected 8, actual 16" in shape.reasons
    assert shape.failed_compile_ids == [CompileId(0, 0)]
    assert any("dtype mismatch" in why and "Double" in why for why in dtype.reasons)
    assert any("n == 2" in why for why in integer.reasons)
    assert not any(rc.limit_hit for rc in r.recompiles)
    assert all(c.is_recompile for c in r.compiles[1:]) and not r.compiles[0].is_recompile


def test_recompile_limit_is_flagged():
    r = report("recompile_limit")
    limited = [rc for rc in r.recompiles if rc.limit_hit]
    assert len(limited) == 1
    assert "recompile_limit" in limited[0].limit_message or "recompile limit" in limited[0].limit_message.lower()
    assert any(c.status == "recompile limit" for c in r.compiles)
    assert "recompile limit hit" in str(r)
    # torch logs no frame for the refused compile: it is named after its frame's other compiles
    assert limited[0].function == "scaled"
    (refused,) = [c for c in r.compiles if c.status == "recompile limit"]
    assert refused.function == "scaled" and refused.filename.endswith("scenarios.py")
    (failure,) = r.failures
    assert failure.frame.function == "scaled" and failure.frame.lineno == refused.first_line
    text = str(r)
    tab = text[text.index("\nRecompiles (") + 1:]
    section = re.split(r"\n\n[A-Z][^\n]*\n-{3,}\n", tab)[0].splitlines()  # up to the next tab's title
    heads = [line for line in section if re.match(r"    \[\d+/\d+\] ", line) and "first compile" not in line]
    assert len(heads) == len(r.recompiles), text  # one headline per recompile
    after = section[section.index(heads[0]) + 1]
    assert after.startswith("        ") and after.strip(), text  # the doctor's words under it


# -- control flow --------------------------------------------------------------
def _walk(nodes, depth=0):
    for n in nodes:
        yield n, depth
        yield from _walk(n.children, depth + 1)


def test_control_flow_tree_with_nested_subgraphs():
    r = report("control_flow")
    top = {n.op: n for n in r.control_flow}
    assert {"cond", "while_loop", "scan", "map", "associative_scan"} <= set(top)
    text = str(r)
    tree = text[text.index("\nControl flow ("):]
    scan_at = tree.index("\nscan (compile 0/0")
    assert "\n    cond (compile 0/0, node cond)" in tree[scan_at:]  # the text names nested ops too, under their parent
    cond = top["cond"]
    assert [s.role for s in cond.subgraphs] == ["true_fn", "false_fn"]
    assert "sin" in cond.subgraphs[0].code and "cos" in cond.subgraphs[1].code
    assert all(s.op_count > 0 for s in cond.subgraphs)
    # a cond inside the while_loop body and inside the scan combine function
    assert [c.op for c in top["while_loop"].children] == ["cond"]
    assert [c.op for c in top["scan"].children] == ["cond"]
    assert {s.role for s in top["while_loop"].subgraphs} == {"cond_fn", "body_fn"}
    assert all(n.compile_id == CompileId(0, 0) for n, _ in _walk(r.control_flow))
    assert max(d for _, d in _walk(r.control_flow)) == 1


# -- Inductor on CPU -----------------------------------------------------------
def test_cpu_inductor_kernels_with_fused_aten_ops_and_extern_calls():
    r = report("inductor")
    cpp = [k for k in r.kernels if k.backend == "cpp"]
    extern = [k for k in r.kernels if k.backend == "extern"]
    assert cpp and extern
    assert any("aten.gelu" in k.aten_ops for k in cpp), [(k.name, k.aten_ops) for k in cpp]
    assert any(k.kind == "reduction" and "aten.sum" in k.aten_ops for k in cpp), [(k.name, k.kind, k.aten_ops) for k in cpp]
    assert any("mm" in k.name for k in extern)
    assert all(k.compile_id == CompileId(0, 0) and k.source for k in r.kernels)
    assert all('extern "C"' in k.source for k in cpp)
    (c,) = r.compiles
    assert c.status == "ok" and c.guard_count and c.graph_op_count


def test_cache_status_says_which_caches_were_hit():
    cap = captured("inductor")
    (cold,) = cap.report.compiles
    (warm,) = cap.warm.report.compiles
    assert (cold.cache.fx_graph, cold.cache.aot_autograd) == ("miss", "miss")
    assert (warm.cache.fx_graph, warm.cache.aot_autograd) == ("hit", "hit")
    assert warm.entire_frame_compile_s < cold.entire_frame_compile_s


def test_graphs_at_every_stage_and_guards():
    r = report("inductor")
    stages = {g.stage for g in r.graphs}
    assert {"dynamo", "aot_inference", "pre_grad", "post_grad"} <= stages
    dyn = r.graphs_for("0/0", "dynamo")[0]
    assert dyn.op_count == r.compile("0/0").graph_op_count
    (guards,) = r.guards
    assert guards.count > 0 and "TENSOR_MATCH" in guards.tree


def test_training_step_has_forward_and_backward_graphs_and_kernels():
    r = report("inductor_training")
    stages = {g.stage for g in r.graphs}
    assert {"aot_forward", "aot_backward", "aot_joint"} <= stages
    assert {k.graph_stage for k in r.kernels} >= {"forward", "backward"}


def test_compile_time_by_phase_adds_up():
    r = report("inductor")
    ct = r.compile_time
    names = {p.name for p in ct.phases}
    assert {"Dynamo tracing", "AOTAutograd", "Inductor lowering", "Inductor codegen"} <= names
    assert ct.total_s > 0
    assert abs(sum(p.seconds for p in ct.phases) - ct.total_s) < 1e-3
    c = r.compiles[0]
    # the chromium timeline and compilation_metrics measure the same compile
    assert ct.total_s == pytest.approx(c.entire_frame_compile_s, rel=0.2)
    assert ct.by_compile["0/0"] >= c.entire_frame_compile_s * 0.9


# -- failures ------------------------------------------------------------------
def test_fullgraph_failure_is_reported_with_its_location():
    cap = captured("fullgraph_failure")
    assert isinstance(cap.error, torch._dynamo.exc.Unsupported)
    r = cap.report
    (f,) = r.failures
    assert f.type == "Unsupported" and "Data-dependent branching" in f.message
    assert (f.frame.filename, f.frame.lineno) == (FILE, line_of("fullgraph"))
    assert "Traceback" in f.traceback
    assert r.compile("0/0").status == "failed"
    assert "1 failure\n" in str(r) and f"scenarios.py:{line_of('fullgraph')}" in str(r)


# -- the whole report ----------------------------------------------------------
@pytest.mark.parametrize("name", ["inductor", "control_flow", "recompiles", "break:helper", "fullgraph_failure"])
def test_json_round_trip_is_lossless(name):
    r = report(name)
    text = json.dumps(r.to_dict())
    back = CompileReport.from_dict(json.loads(text))
    assert back == r
    assert json.dumps(back.to_dict()) == text


def test_summary_lists_counts_then_problems_with_locations():
    text = report("break:helper").summary()
    assert text.startswith("ipycompile: what to fix") and "| 2 graph breaks |" in text
    assert f"scenarios.py:{line_of('helper-if')} in helper_with_if: Data-dependent branching [GB0170] (x2)" in text


def test_nothing_is_unknown_or_unparsed_in_real_cpu_reports():
    for name in ("inductor", "inductor_training", "control_flow", "recompiles", "break:helper", "fullgraph_failure"):
        stats = report(name).stats
        assert not stats.parse_errors, (name, stats.errors)
        assert not stats.unknown, (name, stats.unknown)
        assert stats.records == sum(stats.by_kind.values())


def _aliasing_combine(carry, x):
    carry = carry + x
    return carry, carry  # scan refuses outputs that alias each other


def _scan_with_aliasing(xs):
    from torch._higher_order_ops.scan import scan

    return scan(_aliasing_combine, torch.zeros(3), xs)


def test_failure_inside_a_higher_order_op_is_located_at_the_users_call():
    import ipycompile

    torch._dynamo.reset()
    fn = torch.compile(_scan_with_aliasing, backend="eager", fullgraph=True)
    with ipycompile.capture() as cap:
        with pytest.raises(Exception):
            fn(torch.ones(4, 3))
    (failure,) = cap.report.failures
    assert failure.frame.filename == __file__ and failure.frame.function == "_scan_with_aliasing"
    assert failure.frame.source_line == "return scan(_aliasing_combine, torch.zeros(3), xs)"
    assert "scan.py" not in str(cap.report)


def test_torch_file_references_to_notebook_cells_read_as_cells():
    r = CompileReport()
    r.sources = {"/tmp/ipykernel_16279/3535581503.py": "In [7]", "/work/model.py": ""}
    reason = "n == 2  # for _ in range(n):  # mp/ipykernel_16279/3535581503.py:12 in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)"
    assert r.readable(reason) == (
        "n == 2  # for _ in range(n):  # In [7], line 12 in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)"
    )
    assert r.readable("x.py:3") == "x.py:3"  # too short a fragment to be sure which file it is
