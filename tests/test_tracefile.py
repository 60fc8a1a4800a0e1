"""Reading TORCH_TRACE logs: plain and gzip, bad lines, strict mode, the first-pass summary, rank directories.

The logs are real (the recorded H100 logs in ``tests/data/gpu-h100/``); the
damaged ones are those logs cut or corrupted the way a killed job or a bad
copy leaves them.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

import ipycompile
from ipycompile import CompileReport, TraceFileError, load_trace
from ipycompile.capture.tracedir import RankReports, find_rank_logs, read_summaries
from ipycompile.capture.tracefile import SUMMARY_PAYLOADS, iter_records, read_trace, write_trace

DATA = Path(__file__).parent / "data" / "gpu-h100"
WORKLOADS = ("quickstart", "max_autotune", "reduce_overhead")


def plain_copy(workload: str, dest: Path) -> Path:
    path = dest / f"{workload}.log"
    path.write_bytes(gzip.decompress((DATA / f"{workload}.log.gz").read_bytes()))
    return path


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def comparable(report: CompileReport) -> dict:
    d = json.loads(report.to_json())
    d.pop("origin")
    return d


# -- one file ----------------------------------------------------------------------
@pytest.mark.parametrize("workload", WORKLOADS)
def test_gzip_and_plain_give_the_same_report_with_its_origin(workload, tmp_path):
    plain = plain_copy(workload, tmp_path)
    a, b = load_trace(DATA / f"{workload}.log.gz"), load_trace(plain)
    assert comparable(a) == comparable(b)
    o = b.origin
    assert o.path == str(plain) and o.size_bytes == plain.stat().st_size
    assert o.lines == len(lines_of(plain)) and o.records == a.stats.records > 0
    assert o.problem_count == o.skipped_lines == 0 and not o.problems and not o.summary
    assert o.pid is not None and o.rank is None  # a single-process job
    assert a.compiles and a.origin.records == b.origin.records
    assert CompileReport.from_json(a.to_json()) == a  # the origin round-trips with the report


def test_a_report_captured_here_has_no_origin():
    assert CompileReport().origin is None


def test_iter_records_streams_one_event_at_a_time():
    it = iter_records(DATA / "quickstart.log.gz")
    first = next(it)
    assert first.kind == "chromium_event" and first.compile_id == ipycompile.CompileId(0, 0)
    assert sum(1 for _ in it) + 1 == load_trace(DATA / "quickstart.log.gz").stats.records


def test_a_log_cut_inside_a_payload_keeps_every_complete_event(tmp_path):
    full = plain_copy("quickstart", tmp_path)
    data = full.read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(data[: len(data) * 2 // 3])  # a killed job: the file ends mid-line
    whole, part = load_trace(full), load_trace(cut)
    o = part.origin
    assert o.problem_count == 1 and len(o.problems) == 1
    last_event = max(i for i, line in enumerate(lines_of(cut), 1) if not line.startswith(b"\t"))
    assert o.problems[0].startswith(f"line {last_event}: ")
    assert "truncated" in o.problems[0] or "cut off" in o.problems[0]
    assert o.records == part.stats.records  # every event read reached the report
    assert 0 < part.stats.records < whole.stats.records
    assert {str(c.compile_id) for c in part.compiles} <= {str(c.compile_id) for c in whole.compiles}
    assert "1 unreadable trace event skipped" in part.summary()


def test_corrupted_lines_are_reported_with_their_line_number_and_skipped(tmp_path):
    lines = lines_of(plain_copy("reduce_overhead", tmp_path))
    envelopes = [i for i, line in enumerate(lines) if not line.startswith(b"\t")]
    bad_json, bad_prefix, bad_payload = envelopes[10], envelopes[20], envelopes[30]
    lines[bad_json] = lines[bad_json][:-20] + b"\n"  # the JSON envelope cut short
    lines[bad_prefix] = b"garbage that is no trace line\n"
    payload_line = bad_payload + 1
    assert lines[payload_line].startswith(b"\t")
    lines[payload_line] = b"\t" + b"X" + lines[payload_line][2:]  # one payload byte flipped: md5 fails
    lines.insert(envelopes[40], b"\n")  # a blank line, as some log collectors add: not a problem
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"".join(lines))

    report = load_trace(bad)
    o = report.origin
    assert o.problem_count == 3
    assert o.problems[0].startswith(f"line {bad_json + 1}: the JSON envelope is corrupted")
    assert o.problems[1].startswith(f"line {bad_prefix + 1}: no glog prefix")
    assert o.problems[2].startswith(f"line {bad_payload + 1}: the payload of this")
    assert "md5" in o.problems[2]
    clean = load_trace(DATA / "reduce_overhead.log.gz")
    assert report.stats.records == clean.stats.records - 3
    assert o.skipped_lines > 3  # the skipped events' payload lines too

    with pytest.raises(TraceFileError, match=rf"bad\.log, line {bad_json + 1}: the JSON envelope is corrupted"):
        load_trace(bad, strict=True)


def test_a_log_whose_line_ends_became_crlf_reads_the_same(tmp_path):
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(plain_copy("max_autotune", tmp_path).read_bytes().replace(b"\n", b"\r\n"))
    r = load_trace(crlf)
    assert not r.origin.problems and comparable(r) == comparable(load_trace(DATA / "max_autotune.log.gz"))


def test_an_event_of_another_rank_is_skipped_as_tlparse_does(tmp_path):
    records = [(r.metadata, r.payload) for r in iter_records(DATA / "max_autotune.log.gz")]
    ranked = [({**m, "rank": 0} if "str" not in m else m, p) for m, p in records]
    stray = len(ranked) // 2
    ranked[stray] = ({**ranked[stray][0], "rank": 5}, ranked[stray][1])
    path = tmp_path / "dedicated_log_torch_trace_rank_0_x.log"
    write_trace(ranked, path)
    r = load_trace(path)
    assert r.origin.rank == 0 and r.origin.problem_count == 1
    assert "an event of rank 5 in a log of rank 0" in r.origin.problems[0]


@pytest.mark.parametrize(
    "content, why",
    [
        (b"just some text\n" * 300, "is not a TORCH_TRACE log"),
        (b"\x00\x01binary\xff" * 1000, "is not a TORCH_TRACE log"),
    ],
)
def test_a_file_that_is_no_trace_log_is_refused_with_the_reason(tmp_path, content, why):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(TraceFileError, match=why):
        load_trace(path)


def test_missing_paths_and_broken_gzip_say_what_is_wrong(tmp_path):
    with pytest.raises(TraceFileError, match="no such file or directory"):
        load_trace(tmp_path / "nope.log")
    data = (DATA / "max_autotune.log.gz").read_bytes()
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(data[: len(data) // 2])
    r = load_trace(cut)  # what the gzip stream held up to the break is read
    assert r.compiles and r.origin.problem_count == 1 and "gzip stream" in r.origin.problems[0]
    with pytest.raises(TraceFileError, match="gzip stream"):
        load_trace(cut, strict=True)


# -- the first-pass summary ----------------------------------------------------------
def _facts(rc):
    """A recompile as torch recorded it, without the doctor's reading of it."""
    import dataclasses

    return dataclasses.replace(rc, explanation="", suggestion=None, changes=[])



@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_summary_pass_has_the_counts_of_the_full_report_without_the_bulk(workload):
    full = load_trace(DATA / f"{workload}.log.gz")
    quick = load_trace(DATA / f"{workload}.log.gz", summary=True)
    assert quick.origin.summary and quick.origin.unread
    assert not set(quick.origin.unread) & SUMMARY_PAYLOADS
    assert [c.compile_id for c in quick.compiles] == [c.compile_id for c in full.compiles]
    assert [c.status for c in quick.compiles] == [c.status for c in full.compiles]
    assert [c.cache for c in quick.compiles] == [c.cache for c in full.compiles]
    assert quick.graph_break_count == full.graph_break_count and quick.graph_breaks == full.graph_breaks
    # the facts are the same; the doctor's words may differ (the first pass reads no guard trees)
    assert [_facts(rc) for rc in quick.recompiles] == [_facts(rc) for rc in full.recompiles]
    assert quick.failures == full.failures
    assert quick.compile_time == full.compile_time
    assert not quick.kernels and full.kernels
    assert {g.stage for g in quick.graphs} == {"dynamo"} < {g.stage for g in full.graphs}
    assert "kernels not read" in quick.summary() and "first-pass summary" in quick.summary()


# -- directories of rank logs ----------------------------------------------------------
def make_rank_dir(dest: Path, ranks=(0, 1, 2)) -> Path:
    """Rank logs made from the recorded training log (rank set in every event), plus other files."""
    records = [(r.metadata, r.payload) for r in iter_records(DATA / "quickstart.log.gz")]
    dest.mkdir()
    for rank in ranks:
        recs = [({**m, "rank": rank} if "str" not in m else m, p) for m, p in records]
        if rank == 2:  # rank 2 never recompiles
            recs = [(m, p) for m, p in recs if m.get("frame_compile_id", 0) == 0]
        write_trace(recs, dest / f"dedicated_log_torch_trace_rank_{rank}_abc{rank}.log")
    return dest


def test_a_directory_gives_its_rank_logs_and_says_what_it_ignored(tmp_path):
    d = make_rank_dir(tmp_path / "job")
    (d / "stdout.txt").write_text("training...\n")
    (d / "notes").mkdir()
    older = d / "dedicated_log_torch_trace_rank_1_old.log"
    shutil.copy(d / "dedicated_log_torch_trace_rank_1_abc1.log", older)
    os.utime(older, (1, 1))  # an older log of rank 1, as a restarted job leaves
    unranked = d / "dedicated_log_torch_trace_launcher.log.gz"
    unranked.write_bytes((DATA / "max_autotune.log.gz").read_bytes())

    reports = load_trace(d)
    assert isinstance(reports, RankReports) and list(reports) == [0, 1, 2]
    assert reports.files[1].endswith("rank_1_abc1.log")
    why = dict(reports.ignored)
    assert why["stdout.txt"] == "not a TORCH_TRACE log"
    assert why["notes"] == "a folder (not searched)"
    assert "an older log of rank 1" in why[older.name]
    assert "no rank" in why[unranked.name]
    text = str(reports)
    assert "3 rank logs" in text and "ranks 0-2" in text and "stdout.txt: not a TORCH_TRACE log" in text

    full = reports[2]  # read when asked for, complete
    assert full.kernels and full.origin.rank == 2 and not full.origin.summary
    assert reports[2] is full  # kept
    summary = reports.summaries[2]
    assert summary.origin.summary and not summary.kernels and not summary.recompiles
    assert {str(c.compile_id) for c in summary.compiles} == {str(c.compile_id) for c in full.compiles}
    assert all(g.code == "" for g in summary.graphs)  # slim: no graph code kept for each rank

    assert comparable(load_trace(d, rank=1)) == comparable(reports[1])
    with pytest.raises(TraceFileError, match=r"no log of rank 7 \(ranks: 0-2\)"):
        load_trace(d, rank=7)
    with pytest.raises(KeyError, match="rank 7"):
        reports[7]
    with pytest.raises(TraceFileError, match="log of rank 0, not rank 1"):
        load_trace(reports.files[0], rank=1)


def test_the_rank_logs_are_read_alike_in_worker_processes_and_here(tmp_path):
    d = make_rank_dir(tmp_path / "job", ranks=(0, 1, 2, 3))
    files, _ = find_rank_logs(str(d))
    seen = []
    parallel = read_summaries(files, workers=2, progress=lambda done, total: seen.append((done, total)))
    serial = read_summaries(files, workers=1)
    assert list(parallel) == list(serial) == [0, 1, 2, 3]
    for r in files:
        assert comparable(parallel[r]) == comparable(serial[r])
    total = sum(os.path.getsize(p) for p in files.values())
    assert len(seen) == 4 and seen[-1] == (total, total)


def test_a_directory_without_rank_logs_is_refused_with_what_it_holds(tmp_path):
    d = tmp_path / "single"
    d.mkdir()
    shutil.copy(DATA / "max_autotune.log.gz", d / "dedicated_log_torch_trace_x1.log.gz")
    one = load_trace(d)  # one process's log (TORCH_TRACE=DIR, not distributed): that log's report
    assert isinstance(one, CompileReport) and comparable(one) == comparable(load_trace(DATA / "max_autotune.log.gz"))
    with pytest.raises(TraceFileError, match="one process, without a rank"):
        load_trace(d, rank=0)
    shutil.copy(DATA / "quickstart.log.gz", d / "dedicated_log_torch_trace_x2.log.gz")
    with pytest.raises(TraceFileError, match=r"holds no rank logs.*2 trace logs without a rank .*read each file"):
        load_trace(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceFileError, match="it is empty"):
        load_trace(empty)
    (empty / "readme.md").write_text("hello\n")
    with pytest.raises(TraceFileError, match=r"readme\.md \(not a TORCH_TRACE log\)"):
        load_trace(empty)


def test_shared_recorded_logs_read_as_their_gzipped_copies():
    shared = Path(__file__).resolve().parents[2] / "shared" / "traces" / "gpu-h100"
    if not shared.is_dir():
        pytest.skip(f"{shared} is not on this machine")
    for workload in WORKLOADS:
        (log,) = (shared / workload).glob("dedicated_log_torch_trace_*.log")
        assert comparable(load_trace(log)) == comparable(load_trace(DATA / f"{workload}.log.gz"))


# -- hostile input: a clear error or a counted skip, never a traceback ------------------
import trace_inputs  # noqa: E402


def test_a_deeply_nested_envelope_is_a_counted_problem_of_its_line(tmp_path):
    path = trace_inputs.write_log(tmp_path / "deep.log", trace_inputs.records(), trace_inputs.deep_envelope_line())
    r = load_trace(path)
    clean = load_trace(DATA / "quickstart.log.gz")
    assert r.origin.problem_count == 1 and r.stats.records == clean.stats.records
    last = len(lines_of(path))
    assert r.origin.problems[0].startswith(f"line {last}: the JSON envelope is nested too deeply"), r.origin.problems
    with pytest.raises(TraceFileError, match=rf"deep\.log, line {last}: the JSON envelope is nested too deeply"):
        load_trace(path, strict=True)
    # nested less than the interpreter's limit, but deeper than any event torch writes: refused too
    shallow = trace_inputs.write_log(tmp_path / "deep2.log", trace_inputs.records(), trace_inputs.deep_envelope_line(500))
    r = load_trace(shallow)
    assert r.origin.problem_count == 1 and "nested too deeply" in r.origin.problems[0]
    assert r.to_json() and str(r)


@pytest.mark.parametrize("artifact", ["torch_version", "ipycompile_sources", "ipycompile_source_context"])
def test_a_deeply_nested_payload_with_a_valid_md5_is_a_counted_problem(tmp_path, artifact):
    path = trace_inputs.write_log(tmp_path / "deep.log", trace_inputs.records(),
                                  trace_inputs.deep_payload_event(artifact))
    r = load_trace(path)  # never a RecursionError
    assert r.origin.problem_count == 1, (r.origin.problems, r.stats.errors)
    assert "nested too deeply" in r.origin.problems[0]
    assert r.compiles and str(r)
    with pytest.raises(TraceFileError, match="nested too deeply"):
        load_trace(path, strict=True)


@pytest.mark.parametrize("artifact", ["recompile_reasons", "triton_kernel_info", "fx_graph_cache_miss",
                                      "inductor_provenance_tracking_kernel_stack_traces"])
@pytest.mark.parametrize("depth", [500, 100_000])
def test_a_deeply_nested_payload_of_an_event_is_a_counted_problem_of_the_event(tmp_path, artifact, depth):
    path = trace_inputs.write_log(tmp_path / "deep.log", trace_inputs.records(),
                                  trace_inputs.deep_payload_event(artifact, depth, compile_id=(0, 0)))
    r = load_trace(path)
    key = f"artifact:{artifact}"
    assert r.stats.parse_errors == {key: 1} and "nested too deeply" in r.stats.errors[0], r.stats.errors
    assert r.compiles and str(r) and CompileReport.from_json(r.to_json()) == r


def test_a_deeply_nested_line_in_a_rank_log_of_a_directory(tmp_path):
    d = make_rank_dir(tmp_path / "job", ranks=(0, 1))
    rank1 = next(d.glob("*rank_1_*"))
    rank1.write_bytes(trace_inputs.deep_envelope_line() + rank1.read_bytes())  # the very first line
    reports = load_trace(d, workers=1)
    assert list(reports) == [0, 1] and reports.summaries[1].origin.problem_count == 1
    assert "nested too deeply" in reports.summaries[1].origin.problems[0]
    assert reports[1].origin.problem_count == 1
    parallel = read_summaries(reports.files, workers=2)
    assert parallel[1].origin.problems == reports.summaries[1].origin.problems


@pytest.mark.parametrize("content, why", [
    (b"", r"empty\.log is empty: not a TORCH_TRACE log"),
    (b"\x1f\x8b" + b"garbage, not a gzip stream" * 10, r"empty\.log starts as a gzip file but cannot be decompressed"),
])
def test_an_empty_file_or_a_broken_gzip_header_is_not_a_trace_log(tmp_path, content, why):
    path = tmp_path / "empty.log"
    path.write_bytes(content)
    for strict in (False, True):
        with pytest.raises(TraceFileError, match=why):
            load_trace(path, strict=strict)


def test_a_symlink_loop_says_it_is_one(tmp_path):
    loop = tmp_path / "loop.log"
    os.symlink(loop, loop)
    with pytest.raises(TraceFileError, match=r"loop\.log: a symlink loop \(too many levels of symbolic links\)"):
        load_trace(loop)
    with pytest.raises(TraceFileError, match="no such file or directory"):
        load_trace(tmp_path / "missing.log")


def unreadable_rank_logs(d: Path) -> dict[str, str]:
    """Entries named like rank logs that cannot be read, as root too: ``{name: what the reason says}``."""
    made = {}
    broken = d / "dedicated_log_torch_trace_rank_2_broken.log"
    os.symlink(d / "gone.log", broken)  # a dangling symlink
    made[broken.name] = "a broken symlink"
    # a regular file whose read fails with an OS error (EIO), whoever reads it
    eio = d / "dedicated_log_torch_trace_rank_3_eio.log"
    os.symlink("/proc/self/mem", eio)
    made[eio.name] = "input/output error"
    os.mkfifo(d / "dedicated_log_torch_trace_rank_5_fifo.log")
    if os.geteuid() != 0:  # permissions stop reads only when not root
        locked = d / "dedicated_log_torch_trace_rank_4_locked.log"
        shutil.copy(next(d.glob("*rank_0_*")), locked)
        locked.chmod(0)
        made[locked.name] = "permission denied"
    return made


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem for an unreadable file")
def test_an_unreadable_rank_log_is_named_as_unreadable_and_strict_makes_it_fatal(tmp_path):
    d = make_rank_dir(tmp_path / "job", ranks=(0, 1))
    made = unreadable_rank_logs(d)
    reports = load_trace(d, workers=1)
    assert list(reports) == [0, 1]
    why = dict(reports.ignored)
    for name, reason in made.items():
        assert why[name].startswith("unreadable rank log: ") and reason in why[name].lower(), why[name]
    assert sorted(reports.unreadable) == sorted(made)
    assert why["dedicated_log_torch_trace_rank_5_fifo.log"] == "not a regular file"  # never opened: it would block
    assert "could not be read: the comparison covers ranks 0-1 only" in str(reports)
    with pytest.raises(TraceFileError, match="cannot be read"):
        load_trace(d, strict=True)
    with pytest.raises(TraceFileError, match="is not a regular file"):
        load_trace(d / "dedicated_log_torch_trace_rank_5_fifo.log")


# -- bounded memory, whatever the file holds (issue 28) -----------------------------------------
def _bytes_read() -> int:
    """Bytes this process has read through read(2) so far (Linux's /proc/self/io ``rchar``)."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_a_log_saved_with_a_utf8_bom_reads_as_the_log(tmp_path):
    version = ({"artifact": {"name": "torch_version", "encoding": "json"}}, '{"pytorch_version": "2.13.0"}')
    plain = tmp_path / "plain.log"  # led by torch's version, as torch writes a log
    write_trace([version] + [(r.metadata, r.payload) for r in iter_records(DATA / "max_autotune.log.gz")], plain)
    bom = tmp_path / "bom.log"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    r = load_trace(bom)
    assert not r.origin.problems and r.torch_version == "2.13.0"  # the first event (torch's version) is read
    assert comparable(r) == comparable(load_trace(plain))
    zipped = tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz"
    zipped.write_bytes(gzip.compress(bom.read_bytes()))
    assert load_trace(zipped).torch_version == r.torch_version


@pytest.mark.parametrize("where", ["envelope", "payload"])
def test_a_line_longer_than_the_limit_is_a_counted_problem_never_read_whole(tmp_path, where):
    from ipycompile.capture.tracefile import MAX_LINE_BYTES

    lines = lines_of(plain_copy("quickstart", tmp_path))
    envelopes = [i for i, line in enumerate(lines) if not line.startswith(b"\t")]
    at = next(i for i in envelopes[5:] if i + 1 < len(lines) and lines[i + 1].startswith(b"\t"))
    huge = (b"\t" if where == "payload" else b"V1123 ") + b"0" * (MAX_LINE_BYTES + 5) + b"\n"
    lines.insert(at + 1 if where == "payload" else at, huge)
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(gzip.compress(b"".join(lines), 1))  # a few KB that inflate past the limit
    r = load_trace(path)
    o = r.origin
    assert o.problem_count == 1 and "longer than the 16 MiB a log's line may have" in o.problems[0], o.problems
    clean = load_trace(DATA / "quickstart.log.gz")
    assert r.stats.records == clean.stats.records - (1 if where == "payload" else 0)  # the rest is read
    with pytest.raises(TraceFileError, match="longer than the 16 MiB"):
        load_trace(path, strict=True)


def test_a_rank_directory_beside_a_huge_file_reads_only_its_head(tmp_path):
    d = make_rank_dir(tmp_path / "job", ranks=(0, 1))
    with open(d / "core.dump", "wb") as f:  # 512 MiB of zeros (sparse: no disk used)
        f.truncate(512 << 20)
    before = _bytes_read()
    files, ignored = find_rank_logs(str(d))
    assert sorted(files) == [0, 1] and ("core.dump", "not a TORCH_TRACE log") in ignored
    assert _bytes_read() - before < 16 << 20  # the first MiB of it, not 512 MiB


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "trace.log"
    os.mkfifo(fifo)
    with pytest.raises(TraceFileError, match="not a regular file"):
        load_trace(fifo)
    d = make_rank_dir(tmp_path / "job", ranks=(0, 1))
    os.mkfifo(d / "dedicated_log_torch_trace_rank_2_x.log")
    files, ignored = find_rank_logs(str(d))
    assert sorted(files) == [0, 1] and ("dedicated_log_torch_trace_rank_2_x.log", "not a regular file") in ignored


def test_write_trace_is_atomic(tmp_path):
    path = tmp_path / "dedicated_log_torch_trace_x.log.gz"
    records = [(r.metadata, r.payload) for r in iter_records(DATA / "max_autotune.log.gz")]
    write_trace(records, path)
    before = path.read_bytes()

    def failing():
        yield from records[:20]
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left on device") as err:
        write_trace(failing(), path)
    assert err.value.filename == str(path)  # the path given, not a temporary one
    assert path.read_bytes() == before and os.listdir(tmp_path) == [path.name]
    assert load_trace(path).stats.records == len(records)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_payloads_own_tabs_are_kept_and_only_each_lines_first_tab_dropped(tmp_path, lazy):
    # the reader drops all tabs at once where a payload holds none but its lines' first ones:
    # a payload with tabs of its own (generated code, a traceback) reads back byte for byte
    texts = ["x = 1\n\ty = 2\n\t\tz = 3\t# tabbed", "one\ttab\nand none", "\t\n\t\t\n", "no tab\nat all\nhere"]
    log = tmp_path / "tabs.log"
    write_trace([({"artifact": {"name": f"a{i}", "encoding": "string"}}, t) for i, t in enumerate(texts)], log)
    got = [r.payload for r in iter_records(log, lazy=lazy)]
    assert got == texts
    report = read_trace(log, lazy=lazy, read_ahead=False)
    assert report.origin.problem_count == 0 and [a.payload for a in report.artifacts] == texts


# -- chromium events, read in batches --------------------------------------------------
def chromium_line(payload: "str | bytes", **meta) -> bytes:
    """A chromium event's line and payload (a valid md5 of the payload's bytes, whatever they are)."""
    import hashlib

    data = payload.encode() if isinstance(payload, str) else payload
    meta = {"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0, **meta,
            "has_payload": hashlib.md5(data).hexdigest()}
    return f"{trace_inputs.PREFIX} {json.dumps(meta)}\n".encode() + b"".join(b"\t" + x + b"\n" for x in data.split(b"\n"))


def hostile_chromium_events() -> bytes:
    ev = {"name": "inductor_compile", "ph": "B", "ts": 1795417300463967.2, "pid": 0, "tid": 0,
          "cat": "dynamo_timed", "args": {"compile_id": "0/0", "components": ["x" * 100] * 3}}
    lines = [
        chromium_line(json.dumps({**ev, "name": 7})),  # a type the report refuses: a problem of the event
        chromium_line(json.dumps({**ev, "ts": "soon"})),
        chromium_line(json.dumps({**ev, "ts": 2**64})),  # past what orjson holds exactly: json's value
        chromium_line('{"name": "dynamo", "ph": "B", "ts": NaN}'),  # not JSON to orjson
        chromium_line(b'{"name": "dyn\xff", "ph": "B", "ts": 1}'),  # not UTF-8: a problem of the line
        chromium_line("[1, 2]"),  # not an event
        chromium_line(""),
        chromium_line(json.dumps(ev), frame_id=-1),  # an unreadable compile id
        chromium_line(json.dumps({**ev, "args": {"compile_id": ["0/0"]}})),  # a container kept
        chromium_line(json.dumps({**ev, "name": "mm_template_autotuning", "ph": "E",
                                  "args": {"compile_id": "0/0", "autotune_shape": "8x8"}})),  # kept whole
        chromium_line(json.dumps({**ev, "name": "mm_template_autotuning", "args": {"deep": json.loads("[" * 80 + "]" * 80)}})),
        f'{trace_inputs.PREFIX} {{"chromium_event": {{}}, "frame_id": 0, "frame_compile_id": 0}}\n'.encode(),  # no payload
        chromium_line(json.dumps(ev), rank=3),  # another rank than the log's
        chromium_line(json.dumps(ev)).replace(b'"dynamo_timed"', b'"dynamo_timex"'),  # its md5 no longer matches
    ]
    return b"".join(lines)


@pytest.mark.parametrize("summary", [True, False])
def test_chromium_events_read_in_batches_give_the_report_a_record_each_gives(tmp_path, summary):
    from ipycompile.capture import tracefile
    from ipycompile.capture.builder import build_report
    from ipycompile.report.owners import CodeLayout

    recs = trace_inputs.records()
    path = trace_inputs.write_log(tmp_path / "chromium.log", recs[:40] + [({"rank": 0, **recs[40][0]}, recs[40][1])],
                                  hostile_chromium_events())
    rest = trace_inputs.write_log(tmp_path / "rest.log", recs[41:])  # after them: the batch comes before the next record
    with open(path, "ab") as f:
        f.write(rest.read_bytes())
    batched = read_trace(path, summary=summary, workers=1)
    holder: list = []
    layout = CodeLayout()
    one_each = tracefile._report(build_report(iter_records(path, summary=summary, origin=holder, layout=layout,
                                                           lazy=True), layout), holder[0], layout, summary)
    assert batched.to_json() == one_each.to_json() and repr(batched.origin) == repr(one_each.origin)
    # what each hostile event gave: problems of the events, counted alike
    assert batched.stats.parse_errors["chromium_event"] == 3, batched.stats.errors  # two types, one nested too deeply
    assert batched.origin.problem_count == 4, batched.origin.problems  # not UTF-8, the compile id, the rank, the md5
    assert any(a.kind == "chromium_event" for a in batched.artifacts)  # the one nested too deeply, kept raw
    assert batched.compile_time.total_s > 0 and batched.autotuning
