"""build_report on odd input: unknown kinds kept and counted, bad payloads never fatal."""

from __future__ import annotations

import pytest

from ipycompile import CompileId, build_report
from ipycompile.capture import TraceRecord


def test_record_kind_and_compile_id():
    rec = TraceRecord.from_raw({"artifact": {"name": "recompile_reasons", "encoding": "json"}, "frame_id": 2, "frame_compile_id": 1, "attempt": 1}, "x")
    assert (rec.kind, rec.name, rec.key) == ("artifact", "recompile_reasons", "artifact:recompile_reasons")
    assert rec.compile_id == CompileId(2, 1) and rec.attempt == 1
    assert TraceRecord.from_raw({"dynamo_start": {}, "compiled_autograd_id": 3, "frame_id": 0, "frame_compile_id": 0}).compile_id == CompileId(0, 0, 3)
    assert str(CompileId(0, 0, 3)) == "!3/0/0" and CompileId.parse("!3/0/0") == CompileId(0, 0, 3)
    assert CompileId.parse("[1/2_1]") == CompileId(1, 2)


def test_string_table_resolves_stack_filenames():
    r = build_report(
        [
            ({"str": ["/home/me/model.py", 7]}, None),
            ({"dynamo_start": {"stack": [{"line": 3, "name": "<module>", "filename": 7}, {"line": 12, "name": "forward", "filename": 7}]}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}, None),
        ]
    )
    (c,) = r.compiles
    assert (c.function, c.filename, c.first_line) == ("forward", "/home/me/model.py", 12)
    assert [f.filename for f in c.stack] == ["/home/me/model.py"] * 2


def test_unknown_kinds_are_kept_and_counted():
    r = build_report(
        [
            ({"brand_new_event": {"x": 1}, "frame_id": 0, "frame_compile_id": 0}, "payload"),
            ({"artifact": {"name": "brand_new_artifact", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0}, "text"),
            ({"artifact": {"name": "brand_new_artifact", "encoding": "string"}}, "more"),
            ({"describe_tensor": {"id": 0}}, None),
        ]
    )
    assert r.stats.unknown == {"brand_new_event": 1, "artifact:brand_new_artifact": 2}
    assert r.stats.by_kind["describe_tensor"] == 1 and r.stats.records == 4
    assert [a.kind for a in r.artifacts] == ["brand_new_event", "artifact:brand_new_artifact", "artifact:brand_new_artifact"]
    assert r.artifacts[0].payload == "payload" and r.artifacts[0].compile_id == CompileId(0, 0)
    assert "unknown kinds" in str(r) or r.compiled_nothing


def test_bad_payloads_and_malformed_records_never_crash():
    r = build_report(
        [
            "not a record",
            ({"chromium_event": {}}, "{not json"),
            ({"compilation_metrics": "oops", "frame_id": 0, "frame_compile_id": 0}, None),
            ({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0}, "\x00garbage"),
            ({"artifact": {"name": "recompile_reasons", "encoding": "json"}, "frame_id": 0, "frame_compile_id": 1}, "[1, 2"),
            ({"inductor_output_code": {}, "frame_id": 0, "frame_compile_id": 0}, "def nonsense(:"),
            ({"dynamo_output_graph": {}, "frame_id": 0, "frame_compile_id": 0}, "class ???"),
        ]
    )
    assert r.stats.parse_errors.get("<malformed>") == 1
    assert r.stats.records == 6
    assert r.graph_breaks and r.graph_breaks[0].reason  # kept, with whatever could be read
    assert str(r)  # the summary renders


def test_metrics_without_chromium_events_still_give_phases():
    r = build_report(
        [
            (
                {
                    "compilation_metrics": {
                        "compile_id": "0/0",
                        "co_name": "f",
                        "entire_frame_compile_time_s": 3.0,
                        "backend_compile_time_s": 2.0,
                        "inductor_compile_time_s": 1.5,
                    },
                    "frame_id": 0,
                    "frame_compile_id": 0,
                },
                None,
            )
        ]
    )
    ct = r.compile_time
    assert ct.total_s == 3.0
    assert {p.name: p.seconds for p in ct.phases} == {"Dynamo tracing": 1.0, "AOTAutograd": 0.5, "Inductor codegen": 1.5}


def _metrics(**fields):
    body = {"compile_id": "0/0", "co_name": "f", "co_filename": "/home/me/model.py", "co_firstlineno": 3,
            "entire_frame_compile_time_s": 0.5, "start_time": 10.0, **fields}
    return ({"compilation_metrics": body, "frame_id": 0, "frame_compile_id": 0}, None)


def _renders(r) -> None:
    from ipycompile.report.report import CompileReport
    from ipycompile.views.html import render_html

    assert str(r) and render_html(r)
    assert CompileReport.from_json(r.to_json()) == r


@pytest.mark.parametrize("field, value, attr", [
    ("start_time", "x", "start_time"),
    ("entire_frame_compile_time_s", "x", "entire_frame_compile_s"),
    ("co_filename", -1, "filename"),
    ("co_name", ["f"], "function"),
    ("co_firstlineno", "12", "first_line"),
    ("guard_count", True, "guard_count"),
    ("restart_reasons", 5, "restart_reasons"),
])
def test_a_wrong_typed_metrics_field_is_a_counted_problem_of_its_event(field, value, attr):
    good = _metrics()
    other = ({**good[0], "frame_compile_id": 1, "compilation_metrics": {**good[0]["compilation_metrics"], "compile_id": "0/1"}}, None)
    r = build_report([other, _metrics(**{field: value})])
    assert len(r.compiles) == 2
    c = r.compile("0/0")
    assert getattr(c, attr) != value  # the wrong value never reaches the report
    assert r.stats.parse_errors == {"compilation_metrics": 1}
    assert field in r.stats.errors[0] and "expected" in r.stats.errors[0], r.stats.errors
    assert c.guard_count is None and c.graph_op_count is None
    if field != "entire_frame_compile_time_s":  # the rest of the event is kept
        assert c.entire_frame_compile_s == 0.5
    _renders(r)


def test_wrong_typed_stack_lines_and_chromium_times_are_counted_problems():
    r = build_report([
        ({"str": ["/home/me/model.py", 7]}, None),
        ({"dynamo_start": {"stack": [{"line": "twelve", "name": "forward", "filename": 7}]}, "frame_id": 0,
          "frame_compile_id": 0}, None),
        ({"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0},
         '{"name": "dynamo", "ph": "B", "ts": "soon", "pid": 0, "args": {"compile_id": "0/0"}}'),
        ({"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0},
         '{"name": "dynamo", "ph": "E", "ts": 100, "dur": [1], "pid": 0, "args": {"compile_id": "0/0"}}'),
        _metrics(),
    ])
    (c,) = r.compiles
    assert c.stack[0].lineno is None and c.first_line == 3
    assert r.stats.parse_errors == {"dynamo_start": 1, "chromium_event": 2}, r.stats.errors
    _renders(r)
