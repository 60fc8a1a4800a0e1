"""Saved reports: ``save`` never leaves a broken file, ``load`` refuses what is not a report
with the field and what was expected, and a sweep's reports save with their parameters."""

from __future__ import annotations

import json
import os

import pytest
import torch

import ipycompile
from ipycompile import CompileReport
from ipycompile.report import Compile, CompileId, Profile
from ipycompile.report.serialize import ReportFormatError
from ipycompile.run.sweeps import sweep_params


def scale(x, dtype):
    return (x.to(dtype) * 2).sum()


@pytest.fixture(scope="module")
def dtype_sweep():
    return ipycompile.sweep(lambda dtype, device: scale(torch.ones(8), dtype),
                            dtype=[torch.float32, torch.float64], device=[torch.device("cpu")],
                            backend="eager", runs=1, warmup=0, progress=False, record=False)


def test_a_sweep_over_dtypes_saves_and_loads_with_its_parameters(dtype_sweep, tmp_path):
    df = dtype_sweep
    assert list(df["status"]) == ["ok", "ok"], df[["status", "error"]]
    for i, dtype in enumerate((torch.float32, torch.float64)):
        report = df.report[i]
        path = tmp_path / f"point{i}.json"
        report.save(path)
        back = CompileReport.load(path)
        assert back.profile.params == {"dtype": str(dtype), "device": "torch.device('cpu')"}
        assert back == report
        assert sweep_params(back) == {"dtype": dtype, "device": torch.device("cpu")}  # the run layer's values
        assert f"'dtype': '{dtype}'" in str(back.profile.params) and str(back)


def test_a_parameter_json_cannot_hold_is_kept_as_its_repr_with_a_note():
    from ipycompile.run.sweeps import stored_params

    params, notes = stored_params({"n": 4, "shape": (2, 3), "names": ["a"], "fn": len, "dt": torch.int8})
    assert params == {"n": 4, "shape": [2, 3], "names": ["a"], "fn": repr(len), "dt": "torch.int8"}
    assert len(notes) == 1 and "'fn' is kept as its repr" in notes[0]


def test_save_failing_leaves_the_earlier_file_as_it_was(tmp_path):
    path = tmp_path / "report.json"
    CompileReport().save(path)
    before = path.read_bytes()
    bad = CompileReport(profile=Profile(params={"dtype": torch.float32}))
    with pytest.raises(ReportFormatError, match=r"report\.profile\.settings\.params\['dtype'\]: a torch\.dtype value"):
        bad.save(path)
    assert path.read_bytes() == before and CompileReport.load(path) == CompileReport()
    assert os.listdir(tmp_path) == ["report.json"]  # no temporary file left behind


def write(tmp_path, data) -> str:
    path = tmp_path / "r.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def good() -> dict:
    return CompileReport(compiles=[Compile(CompileId(0, 0), function="f", start_time=1.0)]).to_dict()


@pytest.mark.parametrize("data, message", [
    ({"hello": 1}, r"not an ipycompile report: it has no 'schema_version' \(its keys: 'hello'\)"),
    ([1, 2], r"a report is a JSON object, got a list"),
    ({**good(), "schema_version": "2"}, r"report\.schema_version: expected an integer, got a string \('2'\)"),
    ({**good(), "schema_version": 99}, r"schema_version 99 is newer"),
    ({**good(), "compiles": [{"function": "f"}]}, r"report\.compiles\[0\]: the field 'compile_id' .* is missing"),
    ({**good(), "compiles": [{**good()["compiles"][0], "start_time": "x"}]},
     r"report\.compiles\[0\]\.start_time: expected a number, got a string \('x'\)"),
    ({**good(), "compiles": [{**good()["compiles"][0], "filename": -1}]},
     r"report\.compiles\[0\]\.filename: expected a string, got an integer \(-1\)"),
    ({**good(), "compiles": {"0/0": {}}}, r"report\.compiles: expected a list, each an object \(Compile\), got an object"),
    ({**good(), "compiles": [{**good()["compiles"][0], "compile_id": "zero"}]},
     r"report\.compiles\[0\]\.compile_id: expected a compile id"),
    ({**good(), "stats": None}, r"report\.stats: expected an object \(Stats\), got null"),
    ({**good(), "profile": {"settings": {"params": []}}}, r"report\.profile\.settings\.params: expected an object, got a list"),
    ("{not json", r"not a report: the text is not JSON"),
    ("[" * 100_000, r"not a report: the text is not JSON \(nested too deeply"),
])
def test_load_refuses_what_is_not_a_report_naming_the_file_and_field(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(ValueError, match=message) as err:
        CompileReport.load(path)
    assert str(err.value).startswith(f"{path}: ")


def test_a_job_summary_of_the_cli_is_not_a_report(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from trace_jobs import dist_logs

    out = tmp_path / "job.json"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "ipycompile", "report", str(dist_logs(2)), "--json", str(out)],
                   check=True, env=env, capture_output=True, timeout=300)
    with pytest.raises(ValueError, match=r"this is a job summary written by `python -m ipycompile report --json DIR`, not a report"):
        CompileReport.load(out)
    summaries = json.loads(out.read_text())["summaries"]
    assert all(str(CompileReport.from_dict(s)) for s in summaries.values())  # each rank's summary is a report


def test_what_loads_renders(tmp_path):
    from ipycompile.widgets.html import render_html

    r = CompileReport.load(write(tmp_path, good()))
    assert str(r) and render_html(r)
