"""Exact values: integers past 64 bits read as ``json`` reads them (issue 37, section 4).

orjson, the fast parser, makes an integer of 2**64 and above (or below -2**63) a float; the one
JSON reader (``report.serialize.loads``) must give ``json``'s exact values instead, both for a
trace's lines (capture) and for a saved report (``CompileReport.load``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipycompile import CompileReport, load_trace
from ipycompile.report.model import Compile, CompileId
from ipycompile.capture import builder
from ipycompile.capture.records import TraceRecord
from ipycompile.report.serialize import loads

DATA = Path(__file__).parent / "data" / "gpu-h100"
BIG = 2**64

big_ints = st.one_of(st.integers(min_value=2**63 - 2, max_value=2**200), st.integers(min_value=-(2**200), max_value=-(2**63) + 2),
                     st.integers())
json_values = st.recursive(st.one_of(big_ints, st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
                                     st.booleans(), st.none()),
                           lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                   st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                           max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_reads_as_json_reads_it(value):
    text = json.dumps(value)
    for given_text in (text, text.encode("utf-8")):
        got = loads(given_text)
        assert got == json.loads(text)
        assert json.dumps(got) == text  # same types too: an int stays an int


@settings(max_examples=100, deadline=None)
@given(big_ints)
def test_a_saved_reports_big_integers_reload_unchanged(n):
    report = CompileReport(compiles=[Compile(compile_id=CompileId(0, 0), guard_count=n)])
    again = CompileReport.from_json(report.to_json())
    assert again == report and type(again.compiles[0].guard_count) is int


def test_a_big_metric_reloads_as_the_integer(tmp_path):
    report = CompileReport(compiles=[Compile(compile_id=CompileId(0, 0), guard_count=BIG, metrics={"counter": BIG + 1})])
    report.save(tmp_path / "r.json")
    again = CompileReport.load(tmp_path / "r.json")
    assert again.compiles[0].metrics["counter"] == BIG + 1 and type(again.compiles[0].metrics["counter"]) is int
    assert again.compiles[0].guard_count == BIG


def test_a_traces_huge_frame_id_is_printed_whole(tmp_path):
    text = gzip.decompress((DATA / "quickstart.log.gz").read_bytes())
    text = text.replace(b'"frame_id": 0,', f'"frame_id": {BIG},'.encode())
    log = tmp_path / "big.log"
    log.write_bytes(text)
    report = load_trace(log)
    assert any(c.compile_id.frame_id == BIG for c in report.compiles)
    shown = str(report)
    assert str(BIG) in shown and "e+19" not in shown
    assert "e+19" not in report.to_json() and str(BIG) in report.to_json()


# -- a file name that is not UTF-8 -------------------------------------------------------
def test_a_log_whose_name_is_not_utf8_is_written_everywhere_with_the_name_escaped(tmp_path, monkeypatch):
    import os
    import warnings

    from ipycompile.cli import main

    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"\xff.log")  # a lone surrogate, '\udcff.log'
    with open(os.fsencode(name), "wb") as f:
        f.write(gzip.decompress((DATA / "quickstart.log.gz").read_bytes()))
    report = load_trace(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        report.to_html("page.html")
    page = (tmp_path / "page.html").read_text(encoding="utf-8")  # valid UTF-8
    assert "\\udcff.log" in page
    bundle = report._repr_mimebundle_()
    for text in bundle.values():
        text.encode("utf-8")  # what a kernel sends: valid UTF-8
    str(report).encode("utf-8")
    report.save("r.json")
    assert CompileReport.load("r.json").origin.path == name  # the JSON keeps the name exactly (as an escape)
    for out in (["-o", "cli.html"], ["--json", "cli.json"]):
        assert main(["report", name, *out]) == 0
    assert "\\udcff.log" in (tmp_path / "cli.html").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "cli.json").read_text(encoding="utf-8"))["origin"]["path"] == name


# -- chromium events: read by orjson alone where what is kept of them is plain ----------------------
@pytest.mark.parametrize("ts", [BIG, BIG + 1, -(2**63) - 1, 2**63 + 5, 1795417300463967.2, 12])
def test_a_chromium_events_kept_times_are_json_exact(ts):
    payload = json.dumps({"name": "dynamo", "ph": "B", "ts": ts, "pid": 0, "tid": 0, "args": {"compile_id": "0/0"}})
    kind, ev = builder._chromium_entry(TraceRecord.from_raw({"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0},
                                                            payload))
    assert kind == "slim" and ev["ts"] == json.loads(payload)["ts"] and type(ev["ts"]) is type(json.loads(payload)["ts"])
    assert ev == {"name": "dynamo", "ph": "B", "ts": ts, "pid": 0, "tid": 0, "args": {"compile_id": "0/0"}}
