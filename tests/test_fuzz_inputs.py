"""Fuzzing the inputs a user can hand to ipycompile: TORCH_TRACE lines and saved report JSON.

The rule for both (issue 19): a clear error (a ``ValueError`` whose message names the
file, the line or the field) or a counted skip, never another exception; and whatever
loads renders (the text summary, the static HTML) and saves.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ipycompile import CompileReport, TraceFileError, load_trace
from ipycompile.views.html import render_html

DATA = Path(__file__).parent / "data" / "gpu-h100"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# -- JSON values, including the awkward ones ---------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["0/0", "[0/1]", "!1/0/0", "0/0_1", "\x1b[2J", "/home/me/model.py", "", "x"]),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                           max_leaves=12)
deep = st.integers(min_value=1, max_value=3000).map(lambda n: json.loads("[" * min(n, 900) + "]" * min(n, 900))
                                                    if n < 900 else "DEEP:%d" % n)

KINDS = ["chromium_event", "compilation_metrics", "bwd_compilation_metrics", "dynamo_start", "str", "create_symbol",
         "dynamo_output_graph", "inductor_output_code", "dynamo_cpp_guards_str", "dynamo_guards", "dump_file", "brand_new_event"]
ARTIFACTS = ["dynamo_graph_break_reason", "recompile_reasons", "torch_version", "ipycompile_sources",
             "ipycompile_source_context", "fx_graph_cache_miss", "fx_graph_cache_hit", "aotautograd_cache_bypass",
             "triton_kernel_info", "inductor_provenance_tracking_kernel_stack_traces", "dynamo_error", "unknown_one"]
METRIC_FIELDS = ["compile_id", "co_name", "co_filename", "co_firstlineno", "start_time", "entire_frame_compile_time_s",
                 "backend_compile_time_s", "inductor_compile_time_s", "guard_count", "graph_op_count",
                 "restart_reasons", "fail_type", "fail_reason", "fail_user_frame_filename", "fail_user_frame_lineno",
                 "cudagraph_skip_reason"]
CONTEXT = ["frame_id", "frame_compile_id", "attempt", "rank", "compiled_autograd_id", "stack"]
PREFIX = "V1123 07:01:40.464000 420 torch/_dynamo/utils.py:2126]"


@st.composite
def bodies(draw, kind):
    if kind == "compilation_metrics" or kind == "bwd_compilation_metrics":
        fields = draw(st.lists(st.sampled_from(METRIC_FIELDS), max_size=8, unique=True))
        return {f: draw(json_values) for f in fields}
    if kind == "dynamo_start":
        frame = st.fixed_dictionaries({}, optional={"line": json_values, "name": json_values, "filename": json_values})
        return {"stack": draw(st.one_of(st.lists(frame, max_size=3), json_values))}
    if kind == "str":
        return draw(st.one_of(st.tuples(st.text(max_size=20), st.integers(0, 5)).map(list), json_values))
    return draw(json_values)


@st.composite
def payloads(draw, name):
    if name == "chromium_event":
        ev = st.fixed_dictionaries({}, optional={k: json_values for k in ("name", "ph", "ts", "dur", "pid", "args")})
        return json.dumps(draw(ev))
    return draw(st.one_of(st.text(max_size=80), json_values.map(json.dumps),
                          st.integers(60, 5000).map(lambda n: "[" * n + "]" * n)))


@st.composite
def events(draw) -> str:
    """One event as torch writes it (or a line broken in one of the ways files are)."""
    shape = draw(st.sampled_from(["event", "event", "event", "artifact", "garbage", "cut", "deep"]))
    if shape == "garbage":
        return draw(st.text(max_size=60)).replace("\n", " ")
    if shape == "deep":
        n = draw(st.integers(60, 50_000))
        return f'{PREFIX} {{"chromium_event": {{}}, "x": {"[" * n + "]" * n}}}'
    if shape == "artifact":
        name = draw(st.sampled_from(ARTIFACTS))
        meta = {"artifact": {"name": name, "encoding": draw(st.sampled_from(["json", "string"]))}}
    else:
        kind = draw(st.sampled_from(KINDS))
        meta = {kind: draw(bodies(kind))}
        name = kind
    for key in draw(st.lists(st.sampled_from(CONTEXT), max_size=4, unique=True)):
        meta[key] = draw(st.one_of(st.integers(0, 3), json_values))
    payload = draw(st.one_of(st.none(), payloads(name)))
    md5 = draw(st.sampled_from(["valid", "valid", "wrong", "missing"]))
    if payload is not None and md5 != "missing":
        meta["has_payload"] = hashlib.md5(payload.encode("utf-8", "surrogatepass")).hexdigest() if md5 == "valid" else "0" * 32
    elif payload is None and md5 == "wrong":
        meta["has_payload"] = "f" * 32  # an md5 with no payload after it
    line = f"{PREFIX} {json.dumps(meta)}"
    if payload is not None:
        line += "".join(f"\n\t{p}" for p in payload.split("\n"))
    if shape == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    return line


@FUZZ
@given(lines=st.lists(events(), min_size=0, max_size=12), gz=st.booleans(), strict=st.booleans(),
       summary=st.booleans())
def test_any_trace_log_reads_as_a_report_that_renders_or_is_refused_clearly(tmp_path_factory, lines, gz, strict, summary):
    path = tmp_path_factory.mktemp("fuzz") / ("trace.log.gz" if gz else "trace.log")
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"
    path.write_bytes(gzip.compress(data) if gz else data)
    try:
        report = load_trace(path, strict=strict, summary=summary)
    except TraceFileError as exc:  # a ValueError naming the file
        assert str(path) in str(exc)
        return
    assert str(report) and render_html(report)
    again = CompileReport.from_json(report.to_json())
    assert str(again) and render_html(again)


# -- saved report JSON ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def report_dict() -> dict:
    return load_trace(DATA / "quickstart.log.gz", summary=True).to_dict()


def _paths(value, at=()):
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, at + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, at + (i,))


@FUZZ
@given(data=st.data())
def test_any_report_json_loads_as_a_report_that_renders_or_is_refused_clearly(report_dict, data, tmp_path_factory):
    d = copy.deepcopy(report_dict)
    paths = list(_paths(d))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.sampled_from(paths))
        if not at:
            d = data.draw(json_values)
            break
        parent = d
        try:
            for step in at[:-1]:
                parent = parent[step]
            if data.draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(at[-1], None)
            else:
                parent[at[-1]] = data.draw(st.one_of(json_values, deep))
        except (KeyError, IndexError, TypeError):  # an earlier change removed the way there
            continue
    path = tmp_path_factory.mktemp("fuzz") / "report.json"
    path.write_text(json.dumps(d))
    try:
        report = CompileReport.load(path)
    except ValueError as exc:
        assert str(exc).startswith(f"{path}: ")
        return
    assert str(report) and render_html(report)
    report.save(path)


# -- issue 28: names that forge lines, bytes of any kind, compressed bombs ------------------------
import os  # noqa: E402
import unicodedata  # noqa: E402

from ipycompile.capture import tracefile  # noqa: E402
from ipycompile.capture.tracedir import RankReports  # noqa: E402
from ipycompile.report import TraceOrigin  # noqa: E402
from ipycompile.report.text import BIDI, one_line, printable  # noqa: E402

#: What no text output of ipycompile may hold raw: C0 but newline and tab, DEL, C1, bidi formatting.
UNSAFE = {chr(c) for c in [*range(0x20), 0x7f, *range(0x80, 0xa0)] if chr(c) not in "\n\t"} | set(BIDI)
hostile_text = st.text(alphabet=st.one_of(st.sampled_from(sorted(UNSAFE | {"\n", "\t", "\r", "\u2028"})),
                                          st.characters(codec="utf-8")), min_size=1, max_size=40)


@FUZZ
@given(name=hostile_text)
def test_no_name_reaches_the_output_raw_or_forges_a_line(name):
    assert not UNSAFE & set(printable(name)) and not (UNSAFE | {"\n", "\r", "\u2028", "\u2029"}) & set(one_line(name))
    plain = CompileReport(origin=TraceOrigin(path="trace.log"))
    evil = CompileReport(origin=TraceOrigin(path=name))
    for text, same in ((str(evil), str(plain)), (evil.summary(), plain.summary())):
        assert not UNSAFE & set(text)
        assert len(text.splitlines()) == len(same.splitlines())  # a name is one line, whatever it holds
    job = RankReports(name, {0: name + "/0", 1: "r1"}, [(name, "not a TORCH_TRACE log")], {0: plain, 1: plain})
    shown = str(job)
    assert not UNSAFE & set(shown) and len(shown.splitlines()) == 3 and not UNSAFE & set(repr(job))


@st.composite
def raw_logs(draw) -> bytes:
    """A log of arbitrary bytes around real event lines: a BOM, NULs, CRs, lines over the cap."""
    parts = []
    if draw(st.booleans()):
        parts.append(b"\xef\xbb\xbf")
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["event", "bytes", "long", "long_payload"]))
        if kind == "event":
            parts.append(draw(events()).encode("utf-8", "surrogatepass") + b"\n")
        elif kind == "bytes":
            parts.append(draw(st.binary(max_size=80)))
        else:
            n = draw(st.integers(LIMIT + 1, LIMIT * 4))
            parts.append((b"\t" if kind == "long_payload" else PREFIX.encode() + b" ") + b"{" * n + b"\n")
    return b"".join(parts)


LIMIT = 300  # the line cap, made small so that hypothesis can go past it cheaply


@FUZZ
@given(data=raw_logs(), gz=st.booleans(), summary=st.booleans())
def test_any_bytes_read_as_a_report_with_every_long_line_counted_or_are_refused(tmp_path_factory, data, gz, summary):
    path = tmp_path_factory.mktemp("bytes") / ("t.log.gz" if gz else "t.log")
    path.write_bytes(gzip.compress(data) if gz else data)
    saved = tracefile.MAX_LINE_BYTES
    tracefile.MAX_LINE_BYTES = LIMIT
    try:
        report = load_trace(path, summary=summary)
    except TraceFileError as exc:
        assert str(path) in str(exc)
        return
    finally:
        tracefile.MAX_LINE_BYTES = saved
    longest = max((len(line) for line in data.split(b"\n")), default=0)
    assert report.origin.lines <= data.count(b"\n") + 1
    if longest > LIMIT + 1 and data.lstrip(b"\xef\xbb\xbf").startswith(PREFIX.encode()):
        assert report.origin.problem_count >= 1 or report.origin.skipped_lines >= 1
    assert not UNSAFE & set(report.summary()) and render_html(report)
    back = CompileReport.from_json(report.to_json())
    assert back.to_json() == report.to_json()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(inflated=st.integers(2, 24), filler=st.sampled_from([b"0", b"\x00", b"{", b"\t"]), where=st.integers(1, 50))
def test_a_gzip_bomb_is_read_line_by_line_within_the_cap(tmp_path_factory, inflated, filler, where):
    """A line of ``inflated`` MiB after line ``where`` of a real log, gzipped to a few KB: the reading
    stays within the cap (never holds the line) and every other event is read (a tab-indented one is
    a payload line of the event before it: that event is lost, counted). A file whose first MiB holds
    no event is refused as not a log (test_tracefile)."""
    lines = gzip.decompress((DATA / "max_autotune.log.gz").read_bytes()).splitlines(keepends=True)
    at = min(where, len(lines))
    while at < len(lines) and lines[at].startswith(b"\t"):  # between events: the bomb is a line of its own
        at += 1
    lines.insert(at, filler * (inflated << 20) + b"\n")
    path = tmp_path_factory.mktemp("bomb") / "t.log.gz"
    path.write_bytes(gzip.compress(b"".join(lines), 1))
    saved = tracefile.MAX_LINE_BYTES
    tracefile.MAX_LINE_BYTES = 1 << 20
    try:
        report = load_trace(path)
    finally:
        tracefile.MAX_LINE_BYTES = saved
    clean = load_trace(DATA / "max_autotune.log.gz")
    assert report.origin.problem_count + report.origin.skipped_lines >= 1
    assert report.stats.records == clean.stats.records - (filler == b"\t")
    assert any("longer than the 1 MiB" in p for p in report.origin.problems)


@FUZZ
@given(a=hostile_text, b=hostile_text, reason=hostile_text)
def test_a_comparison_text_never_carries_raw_control_characters(a, b, reason):
    from ipycompile.analysis.compare import compare
    from ipycompile.report import GraphBreak, UserFrame

    frame = UserFrame(filename=f"/x/{reason}.py", lineno=3, function=reason, source_line=reason)
    ra = CompileReport(graph_breaks=[GraphBreak(reason=f"because {reason}", frame=frame)])
    text = str(compare(ra, CompileReport(), names=(a, b)))
    plain = str(compare(ra, CompileReport(), names=("A", "B")))
    assert not UNSAFE & set(text) and text.splitlines()[0].startswith("ipycompile comparison: A = ")
    assert len(text.splitlines()) == len(plain.splitlines())  # the names forge no line


# -- issue 28 §1: no spelling of an input's path is written over ------------------------------
import shutil  # noqa: E402

from ipycompile.report.files import OutputIsInputError  # noqa: E402

_SPELLINGS: dict = {}


def _spelling_job(tmp_path_factory):
    """A log, a report read from it, and the ways to reach the log: a symlink to it, a symlink to
    its folder, a hard link, a sibling folder to climb out of (built once)."""
    if not _SPELLINGS:
        root = tmp_path_factory.mktemp("spell")
        logs = root / "logs"
        (logs / "sub").mkdir(parents=True)
        log = logs / "t.log.gz"
        shutil.copy(DATA / "quickstart.log.gz", log)
        os.symlink(log, logs / "link.html")
        os.symlink(logs / "link.html", logs / "link2.json")  # a link to a link
        os.symlink(logs, root / "dirlink")
        os.link(log, logs / "hard.json")
        _SPELLINGS.update(root=root, log=log, bytes=log.read_bytes(), report=load_trace(log))
    return _SPELLINGS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(["logs/t.log.gz", "logs/link.html", "logs/link2.json", "dirlink/t.log.gz",
                             "logs/hard.json", "dirlink/hard.json"]),
       detours=st.lists(st.sampled_from(["./", "sub/../", "/", "../logs/", "../dirlink/"]), max_size=3),
       how=st.sampled_from(["save", "to_html"]))
def test_no_spelling_of_the_log_a_report_was_read_from_is_written_over(tmp_path_factory, base, detours, how):
    job = _spelling_job(tmp_path_factory)
    folder, name = base.split("/")
    spelling = str(job["root"]) + "/" + folder + "/" + "".join(detours) + name
    assert os.path.samefile(spelling, job["log"])  # it is the log, however it is spelled
    import warnings

    with warnings.catch_warnings(record=True) as said, pytest.raises(OutputIsInputError) as info:
        warnings.simplefilter("always")
        getattr(job["report"], how)(spelling)
    assert spelling in str(info.value) and len(str(info.value).splitlines()) == 1
    assert not said, [str(w.message) for w in said]  # no "share it as you would share the code" for a page not written
    assert job["log"].read_bytes() == job["bytes"]
    assert sorted(os.listdir(job["log"].parent)) == ["hard.json", "link.html", "link2.json", "sub", "t.log.gz"]


# -- issue 28 §4: every -o name is taken or refused in one line; every option value by its type --
names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
    st.sampled_from(["class", "None", "True", "lambda", "__builtins__", "__name__", "get_ipython", "In", "Out", "exit",
                     "quit", "_", "__", "___", "_i", "_ii", "_i7", "_7", "_oh", "_ih", "_dh", "a.b", "1bad", "é", "x y"]),
    hostile_text,
)


@FUZZ
@given(name=names)
def test_any_o_name_is_taken_or_refused_in_one_line(name):
    import keyword

    from IPython.core.error import UsageError

    import shells
    from ipycompile.magics.arguments import output_name

    shell = shells.ipython()
    try:
        taken = output_name(shell, name, "compile")
    except UsageError as exc:
        message = str(exc)
        assert message.startswith("%compile -o: ") and len(message.splitlines()) == 1, message
        assert not UNSAFE & set(message), message
        return
    assert taken == name and name.isidentifier() and not keyword.iskeyword(name)
    assert name not in shell.user_ns_hidden and not (name.startswith("__") and name.endswith("__"))


OPTION_KEYS = ["max_autotune", "cpp.threads", "max_autotune_gemm_backends", "coordinate_descent_tuning",
               "epilogue_fusion", "triton.cudagraphs", "cpp.simdlen", "compile_threads", "not_an_option"]
literals = st.one_of(st.booleans(), st.none(), st.integers(-5, 64), st.floats(allow_nan=False, width=32),
                     st.text(max_size=8), st.lists(st.integers(0, 3), max_size=2))


@FUZZ
@given(key=st.sampled_from(OPTION_KEYS), value=st.one_of(literals.map(repr), st.text(max_size=12)))
def test_any_option_value_is_taken_with_its_type_or_refused_naming_the_option(key, value):
    from ipycompile.run.settings import SettingsError, make_settings, parse_option

    text = f"{key}={value}"
    try:
        k, v = parse_option(text)
        settings_ = make_settings(options={k: v})
    except SettingsError as exc:
        message = str(exc)
        assert message.startswith("--option: ") and "\n" not in message.strip(), message
        return
    import torch

    from ipycompile.run.settings import _is_instance, _option_type

    assert dict(settings_.options) == {k: v} and k in torch._inductor.list_options()
    expected = _option_type(torch._inductor.config, k)
    assert expected is None or _is_instance(v, expected), (k, v, expected)


# -- issue 28 §2, §6: a field of any length leaves a small notebook output ---------------------
_QUICK: dict = {}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(["reason", "detail", "source_line", "both"]), size=st.sampled_from([3_000, 200_000, 1_000_000]),
       word=st.sampled_from(["why ", "x", "é ", "a\n"]))
@example(field="reason", size=3_000, word="a\n")  # a reason of many lines: the summary caps it (found by this test)
def test_a_huge_text_field_leaves_a_small_notebook_output(field, size, word):
    """A graph break whose reason (or the user's line) is a megabyte: the report's own display and
    the static copy %%compile shows beside its widget stay under the 300 KB target (text and HTML)."""
    import dataclasses

    from ipycompile.views.html import fallback_bundle
    from ipycompile.views.viewmodel import view_model

    if not _QUICK:
        _QUICK["r"] = load_trace(DATA / "quickstart.log.gz")
    r = _QUICK["r"]
    big = (word * (size // len(word) + 1))[:size]
    b = r.graph_breaks[0]
    if field == "source_line":
        b = dataclasses.replace(b, frame=dataclasses.replace(b.frame, source_line=big))
    else:
        b = dataclasses.replace(b, **({"reason": big, "detail": big} if field == "both" else {field: big}))
    r = dataclasses.replace(r, graph_breaks=[b] + r.graph_breaks[1:])
    for bundle in (r._repr_mimebundle_(), fallback_bundle(view_model(r), str(r))):
        sizes = {m: len(v.encode()) for m, v in bundle.items()}
        assert sum(sizes.values()) < 300_000, (field, size, sizes)
    if field in ("reason", "both"):
        text, shown = r.summary(), printable(big)
        if len(shown.splitlines()) > 1:  # many lines: the first of them, and a note of how many more and where
            assert shown.splitlines()[0] in text and "more lines" in text, text[-2000:]
        else:
            assert shown in text  # one line: the summary has it whole
