"""Saved reports: ``save`` never leaves a broken file, ``load`` refuses what is not a report
with the field and what was expected, and a sweep's reports save with their parameters."""

from __future__ import annotations

import json
import os

import pytest
import torch

import ipycompile
from ipycompile import CompileReport
from ipycompile.report import Compile, CompileId, Profile, RunSettings
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
        assert back.profile.settings.params == {"dtype": str(dtype), "device": "torch.device('cpu')"}
        assert back == report
        assert sweep_params(back) == {"dtype": dtype, "device": torch.device("cpu")}  # the run layer's values
        assert f"'dtype': '{dtype}'" in str(back.profile.settings.params) and str(back)


def test_a_parameter_json_cannot_hold_is_kept_as_its_repr_with_a_note():
    from ipycompile.run.sweeps import stored_params

    params, notes = stored_params({"n": 4, "shape": (2, 3), "names": ["a"], "fn": len, "dt": torch.int8})
    assert params == {"n": 4, "shape": [2, 3], "names": ["a"], "fn": repr(len), "dt": "torch.int8"}
    assert len(notes) == 1 and "'fn' is kept as its repr" in notes[0]


def test_save_failing_leaves_the_earlier_file_as_it_was(tmp_path):
    path = tmp_path / "report.json"
    CompileReport().save(path)
    before = path.read_bytes()
    bad = CompileReport(profile=Profile(settings=RunSettings(params={"dtype": torch.float32})))
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
    from ipycompile.views.html import render_html

    r = CompileReport.load(write(tmp_path, good()))
    assert str(r) and render_html(r)


# -- issue 28: never lose a file, bounded reading, standard JSON ---------------------------------
import functools  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "gpu-h100"


def _python(code: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, **kwargs)


def test_a_write_cut_by_a_file_size_limit_leaves_every_earlier_file_as_it_was(tmp_path):
    """``setrlimit(RLIMIT_FSIZE)``: every writer fails midway (EFBIG), as on a full disk."""
    p = _python(f"""
        import json, os, resource, warnings
        import ipycompile
        from ipycompile.capture.tracefile import iter_records, write_trace
        from ipycompile.views.html import save_html
        warnings.simplefilter("ignore")
        d = {str(tmp_path)!r}
        report = ipycompile.load_trace({str(DATA / "quickstart.log.gz")!r})
        records = [(r.metadata, r.payload) for r in iter_records({str(DATA / "quickstart.log.gz")!r})]
        names = ["r.json", "r.html", "page.html", "t.log", "t.log.gz"]
        for name in names:
            with open(os.path.join(d, name), "w") as f:
                f.write("the earlier file\\n")
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # a few KB: each output is larger
        out = {{}}
        for name, write in [("r.json", lambda p: report.save(p)), ("r.html", lambda p: report.to_html(p)),
                            ("page.html", lambda p: save_html(report, p)),
                            ("t.log", lambda p: write_trace(records, p)), ("t.log.gz", lambda p: write_trace(records * 20, p))]:
            path = os.path.join(d, name)
            try:
                write(path)
                out[name] = "written"
            except OSError as exc:
                out[name] = [exc.errno, exc.filename]
        print(json.dumps(out))
    """)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    import errno

    for name in ("r.json", "r.html", "page.html", "t.log", "t.log.gz"):
        assert result[name] == [errno.EFBIG, str(tmp_path / name)], (name, result)
        assert (tmp_path / name).read_text() == "the earlier file\n", name
    assert sorted(os.listdir(tmp_path)) == sorted(result)  # no temporary file left behind


def test_save_into_a_missing_folder_names_the_path_given(tmp_path):
    os.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        CompileReport().save("missing/r.json")
    assert err.value.filename == "missing/r.json" and "missing/r.json" in str(err.value)
    assert ".tmp" not in str(err.value) and os.listdir(tmp_path) == []


def test_a_report_never_overwrites_the_log_it_was_read_from(tmp_path):
    import shutil
    import warnings

    from ipycompile.report.files import OutputIsInputError

    log = tmp_path / "trace.log.gz"
    shutil.copy(DATA / "max_autotune.log.gz", log)
    before = log.read_bytes()
    report = ipycompile.load_trace(log)
    os.symlink(log, tmp_path / "link.log")
    os.link(log, tmp_path / "hard.log")
    for path in (log, tmp_path / "link.log", tmp_path / "hard.log", str(tmp_path / ".." / tmp_path.name / "trace.log.gz")):
        with pytest.raises(OutputIsInputError, match="writing it would destroy the input"):
            report.save(path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # refused before the "share it as you would share the code" warning
            with pytest.raises(OutputIsInputError, match="writing it would destroy the input"):
                report.to_html(path)
    assert log.read_bytes() == before
    report.save(tmp_path / "r.json")
    assert CompileReport.load(tmp_path / "r.json").to_json() == report.to_json()


def test_save_writes_through_a_symlink_and_keeps_the_file_mode(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    os.chmod(target, 0o600)
    os.symlink(target, tmp_path / "link.json")
    CompileReport().save(tmp_path / "link.json")
    assert os.path.islink(tmp_path / "link.json") and CompileReport.load(target) == CompileReport()
    assert (os.stat(target).st_mode & 0o777) == 0o600


def test_load_refuses_a_fifo_at_once_and_a_huge_file_by_its_first_bytes(tmp_path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    p = _python(f"""
        from ipycompile import CompileReport
        for path in ({str(fifo)!r}, {str(tmp_path / "zeros.json")!r}):
            try:
                CompileReport.load(path)
            except ValueError as exc:
                print(exc)
        # VmHWM: this process's own peak (getrusage's ru_maxrss keeps the forking parent's peak
        # across exec on Linux, so under a big pytest process it reads the parent's size)
        print(next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:")) // 1024)
    """, stdin=subprocess.DEVNULL) if _sparse(tmp_path / "zeros.json", 1 << 30) else None
    lines = p.stdout.splitlines()
    assert p.returncode == 0, p.stderr
    assert lines[0] == f"{fifo}: not a regular file (a pipe, a socket or a device): a saved report is a JSON file"
    assert lines[1].startswith(f"{tmp_path / 'zeros.json'}: 1,073,741,824 bytes, larger than a saved report may be")
    assert int(lines[2]) < 400  # MiB: the gigabyte was never read
    with open(tmp_path / "zeros.json", "r+b") as f:
        f.truncate(1 << 20)  # a small file of zeros: refused by its first bytes, before the rest is read
    with pytest.raises(ReportFormatError, match=r"not a report: the text is not JSON \(it starts with b'\\x00"):
        CompileReport.load(tmp_path / "zeros.json")


def _sparse(path: Path, size: int) -> bool:
    with open(path, "wb") as f:
        f.truncate(size)
    return True


def _strict_json(text: str):
    """``json.loads`` as jq and JSON.parse read: no NaN, Infinity or -Infinity tokens."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_floats_save_as_standard_json_and_read_back(tmp_path):
    c = Compile(CompileId(0, 0), function="f", start_time=math.inf,
                metrics={"dynamo_time_before_restart_s": math.nan, "x": -math.inf, "label": "NaN?"})
    report = CompileReport(compiles=[c])
    text = report.to_json()
    data = _strict_json(text)
    assert data["compiles"][0]["start_time"] == "Infinity" and data["compiles"][0]["metrics"]["x"] == "-Infinity"
    back = CompileReport.from_json(text)
    assert back.compiles[0].start_time == math.inf and math.isnan(back.compiles[0].metrics["dynamo_time_before_restart_s"])
    assert back.compiles[0].metrics["x"] == -math.inf and back.compiles[0].metrics["label"] == "NaN?"
    assert back.to_json() == text  # lossless
    # a report saved by an earlier version, with Python's tokens, still loads
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report.to_dict() | {"compiles": [{**report.to_dict()["compiles"][0], "start_time": math.inf}]}))
    assert "Infinity" in old.read_text() and CompileReport.load(old).compiles[0].start_time == math.inf


@functools.cache
def _quickstart_json() -> str:
    return ipycompile.load_trace(DATA / "quickstart.log.gz", summary=True).to_json()


finite_or_not = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=finite_or_not, metrics=st.dictionaries(st.text(max_size=8), st.one_of(finite_or_not, st.text(max_size=8),
                                                                                     st.lists(finite_or_not, max_size=3)),
                                                    max_size=4))
def test_any_float_saves_as_standard_json_that_round_trips(start, metrics):
    report = CompileReport(compiles=[Compile(CompileId(0, 0), function="f", start_time=start, metrics=metrics)])
    text = report.to_json()
    _strict_json(text)  # standard JSON
    back = CompileReport.from_json(text)
    assert back.to_json() == text or any(v in ("NaN", "Infinity", "-Infinity") for v in metrics.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1))
def test_truncated_report_json_is_refused_naming_the_file(tmp_path, cut):
    text = _quickstart_json()
    path = tmp_path / "cut.json"
    n = int(len(text) * cut)
    path.write_text(text[:n])
    if n == len(text):
        assert CompileReport.load(path).to_json() == text
        return
    with pytest.raises(ValueError) as err:
        CompileReport.load(path)
    assert str(err.value).startswith(f"{path}: ")
