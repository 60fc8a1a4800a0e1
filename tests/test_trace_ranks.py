"""Many ranks: where the ranks of a job compiled differently.

The jobs are real: ``torch.distributed`` with the gloo backend, four CPU
processes (and the logs of two of them, ranks 0 and 1, as a job of two), each
with ``TORCH_TRACE`` set, writing to one directory (:mod:`trace_jobs`); rank 1
breaks the graph and recompiles where the others do not. The analysis's finer points are checked on hand-built reports.
"""

from __future__ import annotations

import pytest

from ipycompile import CompileId, CompileReport, load_trace
from ipycompile.analysis.ranks import rank_divergence
from ipycompile.report import Compile, GraphBreak, Recompile, TraceOrigin, UserFrame
from trace_jobs import dist_logs

JOB_FILE = "trace_jobs.py"


def line_of(marker: str) -> int:
    import trace_jobs

    lines = open(trace_jobs.__file__).read().splitlines()
    (hit,) = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"# <- {marker}")]
    return hit


@pytest.fixture(scope="module")
def job4():
    return load_trace(dist_logs(4), workers=2)


@pytest.fixture(scope="module")
def job2():
    return load_trace(dist_logs(2))


def test_every_rank_log_is_read_by_its_rank_and_the_launcher_output_ignored(job4):
    assert list(job4) == [0, 1, 2, 3]
    assert dict(job4.ignored) == {"launcher.out": "not a TORCH_TRACE log"}
    for rank, summary in job4.summaries.items():
        assert summary.origin.rank == rank and summary.origin.summary and not summary.origin.problems
        assert f"rank_{rank}_" in job4.files[rank]
    full = job4[1]
    assert full.origin.rank == 1 and not full.origin.summary and full.graphs


@pytest.mark.parametrize("world", [2, 4])
def test_the_divergence_names_rank_1_and_what_it_did_differently(world, job2, job4):
    reports = job2 if world == 2 else job4
    d = rank_divergence(reports)
    others = [r for r in range(world) if r != 1]
    assert d.ranks == list(range(world)) and d.diverged
    assert [g.ranks for g in d.behaviours] == ([others, [1]] if world > 2 else [[0], [1]])

    # rank 1 alone compiles the code after its own graph break, and recompiles `local`
    resume, again = d.compiles
    assert resume.ranks == again.ranks == [1]
    assert resume.what.startswith(f"torch_dynamo_resume_in_odd_rank_breaks_at_{line_of('rank-1-break')} ({JOB_FILE}:")
    assert again.what.startswith(f"local ({JOB_FILE}:") and ", recompile 1 [" in again.what
    fns = {str(c.compile_id): c.function for c in reports.summaries[1].compiles}
    assert fns[resume.compile_ids[0]].startswith("torch_dynamo_resume") and fns[again.compile_ids[0]] == "local"
    # tlparse's check compares raw ids: rank 1's extra frame shifts the ids of every later frame there
    raw = sorted({cid for p in d.compile_ids for cid in p.compile_ids})
    assert raw and all(1 in p.ranks or p.ranks == others for p in d.compile_ids)
    assert f"Compile ids not on every rank (tlparse's check): {', '.join(raw)}" in str(d)

    (gb,) = d.graph_breaks
    assert gb.counts == {r: (1 if r == 1 else 0) for r in range(world)}
    assert gb.what.startswith(f"{JOB_FILE}:{line_of('rank-1-break')} in odd_rank_breaks:")

    assert [g.ranks for g in d.recompiles] == [others, [1]]
    assert "size of dim 0 of `x` went 8 -> 12" in d.recompiles[1].text  # in the user's names (capture's guards)
    assert d.recompiles[0].text == "no recompiles"

    # the barrier breaks the graph on every rank: a collective break, not a divergence
    (coll,) = d.collective_breaks
    assert coll.counts == {r: 1 for r in range(world)} and "dist.barrier()" in coll.what
    assert f"{JOB_FILE}:{line_of('barrier')}" in coll.what

    ct = d.compile_time
    assert set(ct.per_rank) == set(range(world)) and all(t > 0 for t in ct.per_rank.values())
    assert ct.slowest_s == max(ct.per_rank.values()) and ct.ratio >= 1.0
    text = str(d)
    assert f"{world} ranks (0-{world - 1}) diverge: 2 behaviours" in text
    assert "2 compiles the others do not make" in text and "only on rank 1" in text and "Graph breaks at collectives" in text and f"slowest rank {ct.slowest}" in text


def test_the_ranks_agree_with_their_full_reports(job4):
    """The slim summaries the divergence reads hold what the full reports hold."""
    for rank in job4:
        s, f = job4.summaries[rank], job4[rank]
        assert [c.compile_id for c in s.compiles] == [c.compile_id for c in f.compiles]
        assert s.graph_break_count == f.graph_break_count and len(s.recompiles) == len(f.recompiles)


# -- on hand-built reports ----------------------------------------------------------
def report(cids, *, seconds=1.0, breaks=(), recompile=None, rank=None, fx=""):
    r = CompileReport(origin=TraceOrigin(path=f"rank{rank}.log", rank=rank) if rank is not None else None)
    for i, cid in enumerate(cids):
        c = Compile(CompileId.parse(cid), function=f"f{i}", entire_frame_compile_s=seconds / len(cids))
        c.cache.fx_graph = fx
        r.compiles.append(c)
    for i, (site, n, stack) in enumerate(breaks):
        r.graph_breaks.append(GraphBreak(site, gb_code="GB0007", frame=UserFrame("/job/train.py", 10 + i, "step", "x = f(x)"),
                                         user_stack=stack, count=n))
    if recompile:
        r.recompiles.append(Recompile(CompileId.parse(cids[-1]), "step", reasons=[recompile]))
    return r


def test_ranks_that_compiled_alike_say_so():
    reps = {r: report(["0/0", "1/0"], rank=r) for r in range(8)}
    d = rank_divergence(reps)
    assert not d.diverged and not d.compile_ids and not d.graph_breaks and not d.recompiles and not d.cache
    assert str(d).startswith("8 ranks (0-7) compiled alike")
    assert d.compile_time.ratio == pytest.approx(1.0)


def test_the_slowest_rank_and_the_compile_behind_it():
    reps = {r: report(["0/0", "1/0"], seconds=2.0) for r in range(5)}
    reps[3].compiles[1].entire_frame_compile_s = 4.0  # rank 3: 5 s in all, 4 s of it in [1/0]
    ct = rank_divergence(reps).compile_time
    assert (ct.slowest, ct.median_s, ct.slowest_s) == (3, 2.0, 5.0)
    assert ct.ratio == pytest.approx(2.5) and ct.spread_compile == "[1/0] f1"
    assert "slowest rank 3: 5.00 s, 2.50x the median (2.00 s, +3.00 s)" in ct.describe()
    assert "the largest difference is [1/0] f1: 4.00 s on rank 3, median 1.00 s" in ct.describe()


def test_a_thousand_ranks_stay_on_one_screen():
    reps = {r: report(["0/0"], fx="hit") for r in range(1000)}
    for r in (17, 500, 501, 502):
        reps[r] = report(["0/0", "0/1"], recompile=f"tensor 'x' size mismatch at index 0. expected 8, actual {r}", fx="miss")
    d = rank_divergence(reps)
    assert [g.ranks for g in d.behaviours][0] == [r for r in range(1000) if r not in (17, 500, 501, 502)]
    assert d.compile_ids[0].describe(d.ranks) == "0/1: only on ranks 17, 500-502"
    assert d.compiles[0].describe(d.ranks) == "f1, recompile 1 [0/1]: only on ranks 17, 500-502"
    assert [g.ranks for g in d.cache] == [d.behaviours[0].ranks, [17, 500, 501, 502]]
    assert d.cache[0].text == "fx_graph 1 hit" and d.cache[1].text == "fx_graph 2 miss"
    text = str(d)
    assert "ranks 0-16, 18-499, 503-999 (996)" in text
    assert len(text.splitlines()) < 40


def test_many_differing_sites_are_capped_with_a_count():
    reps = {0: report(["0/0"], breaks=[(f"reason {i}", 1, []) for i in range(12)]), 1: report(["0/0"])}
    d = rank_divergence(reps)
    assert len(d.graph_breaks) == 12
    assert "  ... and 4 more" in str(d).splitlines()


def test_collective_breaks_are_found_by_their_stack_or_their_line():
    in_dist = [UserFrame("/job/train.py", 10, "step"), UserFrame("/venv/torch/distributed/distributed_c10d.py", 1, "all_gather_object")]
    reps = {r: report(["0/0"], breaks=[("Attempted to call function marked as skipped", 1, in_dist)]) for r in range(2)}
    reps[1].graph_breaks.append(GraphBreak("Unsupported call", frame=UserFrame("/job/train.py", 20, "step", "dist.broadcast_object_list(objs)")))
    reps[1].graph_breaks.append(GraphBreak("Data-dependent branching", frame=UserFrame("/job/train.py", 30, "step", "if x.sum() > 0:")))
    # saved and loaded, as a report saved before capture read what a break names: read at load
    reps = {r: CompileReport.from_dict(rep.to_dict()) for r, rep in reps.items()}
    assert [b.names_collective for b in reps[1].graph_breaks[-2:]] == [True, False]
    d = rank_divergence(reps)
    assert [c.counts for c in d.collective_breaks] == [{0: 1, 1: 1}, {0: 0, 1: 1}]
    assert len(d.graph_breaks) == 2  # the broadcast and the branch, both on rank 1 only


def test_unreadable_events_are_named_by_rank():
    reps = {r: report(["0/0"], rank=r) for r in range(3)}
    reps[2].origin.problem_count = 4
    assert rank_divergence(reps).unreadable == {2: 4}
    assert "Unreadable events skipped: rank 2: 4" in str(rank_divergence(reps))


def test_compiles_are_matched_by_code_not_by_id():
    """Rank 1 compiles one extra frame first: every later compile there has another id, yet is the same compile."""
    reps = {0: report(["0/0", "1/0"]), 1: report(["0/0", "1/0", "2/0"])}
    extra = reps[1].compiles[0]
    extra.function = "warmup_only_on_rank_1"
    reps[1].compiles[1].function, reps[1].compiles[2].function = "f0", "f1"
    reps[1].compiles[1].compile_id, reps[1].compiles[2].compile_id = CompileId(1, 0), CompileId(2, 0)
    d = rank_divergence(reps)
    assert [p.what for p in d.compiles] == ["warmup_only_on_rank_1 [0/0]"]
    assert [(p.compile_ids, p.ranks) for p in d.compile_ids] == [(["2/0"], [1])]  # tlparse's check sees 2/0 only

    # the same function compiled as a second frame (e.g. a second code object) is a compile of its own
    reps = {0: report(["0/0"]), 1: report(["0/0", "1/0"])}
    reps[1].compiles[1].function = "f0"
    (p,) = rank_divergence(reps).compiles
    assert p.what == "f0, #2 of its kind [1/0]" and p.ranks == [1]


# -- DistributedDataParallel: graph splits at bucket boundaries are not graph breaks --------------
@pytest.fixture(scope="module")
def ddp_dirs():
    from trace_jobs import ddp_logs

    return ddp_logs(), ddp_logs(uneven=True)


def test_ddp_bucket_splits_are_read_and_named_as_what_they_are(ddp_dirs):
    """A real gloo DDP job: four 1 MiB layers in 1 MiB buckets. torch logs the split graph and one
    subgraph per bucket (``optimize_ddp_split_graph`` / ``_child``); the report counts them per
    compile, in a full read and in the quick first pass alike, and says they are not graph breaks."""
    even, _ = ddp_dirs
    full = load_trace(even, rank=0)
    quick = load_trace(even, rank=0, summary=True)
    (cid,) = full.ddp_splits
    assert full.compile(cid).function == "forward"
    assert full.ddp_splits == quick.ddp_splits == {cid: 4}
    buckets = full.graphs_for(cid, "ddp_bucket")
    assert [g.name for g in buckets] == [g.name for g in quick.graphs_for(cid, "ddp_bucket")] == [f"submod_{i}" for i in range(4)]
    assert all(g.op_count > 0 for g in buckets) and full.graphs_for(cid, "ddp_split")
    text = str(full)
    assert f"DDP split [{cid}] into 4 bucket subgraphs" in text and "not graph breaks" in text
    # the compiled forward itself has no graph break: the splits are not counted as breaks
    assert not [b for b in full.graph_breaks if b.compile_id == cid]


def test_ranks_that_split_alike_and_ranks_that_do_not(ddp_dirs):
    even, uneven = ddp_dirs
    alike = rank_divergence(load_trace(even))
    assert not alike.diverged and not alike.ddp_splits
    assert "alike on every rank: [" in str(alike) and "forward into 4 bucket subgraphs" in alike.ddp_alike

    # rank 2's buckets: DDP's first bucket is always 1 MiB, then 2 MiB ones: 1 + 2 + 1 layers, 3 subgraphs
    differ = rank_divergence(load_trace(uneven))
    assert differ.diverged and [g.ranks for g in differ.ddp_splits] == [[0, 1], [2]]
    assert "into 4 bucket subgraphs" in differ.ddp_splits[0].text and "into 3 bucket subgraphs" in differ.ddp_splits[1].text
    assert "other DDP graph splits" in str(differ) and "DDP graph splits differ:" in str(differ)


# -- recompiles across ranks in the user's words (guards read by capture: the recompiles branch) --
def test_recompiles_across_ranks_name_the_users_values():
    from ipycompile.report import model

    failed_guard = getattr(model, "FailedGuard", None)
    if failed_guard is None:
        pytest.skip("needs capture's guard records (Recompile.guards, FailedGuard: the recompiles branch)")
    reps = {0: report(["0/0"]), 1: report(["0/0", "0/1"], recompile="tensor 'L['ids']' size mismatch at index 0. expected 4, actual 6"),
            2: report(["0/0", "0/1"], recompile="___as_tensor(L['___stack2']).item() == 0.0393")}
    reps[1].recompiles[0].guards = [failed_guard(kind="size", source="L['ids']", path="ids", name="ids", origin="argument",
                                                 dim=0, before="4", after="6")]
    carried = "a value torch carries across the graph break at line 38 of `g` (`s = x.sum().item()`)"
    reps[2].recompiles[0].guards = [failed_guard(kind="value", source="___stack2", origin="carried", described=carried,
                                                 before="0.0393", after="0.0412")]
    d = rank_divergence(reps)
    texts = {tuple(g.ranks): g.text for g in d.recompiles}
    assert "size of dim 0 of `ids` went 4 -> 6" in texts[(1,)]
    assert f"{carried} went 0.0393 -> 0.0412" in texts[(2,)] and "___stack2" not in texts[(2,)]
    reps[1].recompiles[0].guards = []  # no guard read (a report saved before): torch's words
    assert "expected 4, actual 6" in {tuple(g.ranks): g.text for g in rank_divergence(reps).recompiles}[(1,)]


def test_rank_lists_at_4096_ranks_stay_one_line_each():
    reps = {r: report(["0/0"]) for r in range(4096)}
    odd = list(range(1, 4096, 97))
    for r in odd:
        reps[r] = report(["0/0", "0/1"], recompile="tensor 'x' size mismatch at index 0. expected 8, actual 12")
    text = str(rank_divergence(reps))
    assert len(text.splitlines()) < 40 and max(len(line) for line in text.splitlines()) < 400
    assert f"ranks 1, 98, 195, 292, 389, 486, 583, 680, ... ({len(odd)} ranks in {len(odd)} ranges)" in text
