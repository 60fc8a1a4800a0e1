"""Real NCCL jobs on two H100s, replayed on the CPU (``tests/data/nccl-h100x2/``, made by
``tools/nccl_gpu_run.sh`` from ``tests/nccl_jobs.py``; torch 2.11, Inductor).

What the logs show, rank by rank: DDP's bucket splits (not graph breaks), FSDP2's ranks
alike, a rank that diverges named with what only it compiled, collectives inside the
compiled code as what they are (kernels and profiled NCCL time), graph breaks at
collectives, tlparse's compile ids per rank; and the capture opened inside each rank of
the DDP job holding what that rank's TORCH_TRACE log holds, gathered on rank 0 into the
same divergence ``load_trace`` reads from the logs.
"""

from __future__ import annotations

import json

import pytest

from ipycompile import load_trace
from ipycompile.analysis.collectives import collective_share
from ipycompile.analysis.ranks import rank_divergence
from ipycompile.report import CompileReport, collective_kind
from ipycompile.run.kernel_times import ProfiledEvent, attribute
from nccl_data import nccl_data

JOBS = ("ddp", "fsdp2", "diverge", "collective")


def line_of(marker: str) -> int:
    import nccl_jobs

    lines = open(nccl_jobs.__file__).read().splitlines()
    (hit,) = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"# <- {marker}")]
    return hit


@pytest.fixture(scope="module")
def jobs():
    return {job: load_trace(nccl_data() / job) for job in JOBS}


@pytest.mark.parametrize("job", JOBS)
def test_every_job_reads_as_two_ranks_with_their_logs(jobs, job):
    reports = jobs[job]
    assert list(reports) == [0, 1] and not reports.ignored and not reports.problems
    for rank in reports:
        assert reports.summaries[rank].origin.rank == rank and f"rank_{rank}_" in reports.files[rank]
        full = reports[rank]
        assert full.compiles and full.graphs and full.kernels  # Inductor on the GPU: Triton kernels
        assert any(k.backend == "triton" for k in full.kernels)


def test_ddp_splits_at_the_buckets_alike_on_both_ranks(jobs):
    reports = jobs["ddp"]
    d = rank_divergence(reports)
    assert not d.diverged and not d.ddp_splits and not d.graph_breaks
    for rank in reports:
        full = reports[rank]
        (cid,) = full.ddp_splits
        assert full.compile(cid).function == "forward" and full.ddp_splits[cid] == 4
        assert [g.name for g in full.graphs_for(cid, "ddp_bucket")] == [f"submod_{i}" for i in range(4)]
        assert not [b for b in full.graph_breaks if b.compile_id == cid]  # splits are not breaks
    assert d.ddp_alike == f"[{cid}] forward into 4 bucket subgraphs"


def test_fsdp2_ranks_compile_alike_and_its_hooks_are_breaks_at_collectives(jobs):
    d = rank_divergence(jobs["fsdp2"])
    assert not d.diverged and "compiled alike" in str(d)
    (coll,) = d.collective_breaks  # FSDP2's hooks around backward: every rank, the same count
    assert coll.counts[0] == coll.counts[1] > 0 and "nccl_jobs.py:" in coll.what


def test_the_rank_that_diverges_is_named_with_what_only_it_compiled(jobs):
    d = rank_divergence(jobs["diverge"])
    assert d.diverged and [g.ranks for g in d.behaviours] == [[0], [1]]
    assert all(p.ranks == [1] for p in d.compiles)
    assert any(p.what.startswith(f"train_step (nccl_jobs.py:{line_of('print-loss') - 3})") for p in d.compiles)
    others, odd = d.recompiles
    assert others.ranks == [0] and odd.ranks == [1] and others.text == "no recompiles"
    assert "size of dim 0 of `ids` went 4 -> 6" in odd.text  # the batch of 6, rank 1 only, in the user's names
    assert d.compile_ids and all(p.ranks == [1] for p in d.compile_ids)
    (gb,) = d.graph_breaks
    assert gb.counts[1] > gb.counts[0]
    assert "2 ranks (0-1) diverge: 2 behaviours" in str(d)


def test_collectives_in_the_compiled_code_are_kernels_of_their_own_kind(jobs):
    full = jobs["collective"][0]
    kinds = {k.name: k.collective for k in full.kernels if k.compile_id is not None and str(k.compile_id) == "0/0"}
    assert kinds["_c10d_functional.all_reduce_.default"] == "all_reduce"
    assert kinds["_c10d_functional.all_gather_into_tensor.default"] == "all_gather"
    assert kinds["_c10d_functional.wait_tensor.default"] == "wait"
    assert kinds["extern_kernels.mm"] == ""
    # the Triton kernel writing relu's output into the all-reduce's buffer is compute
    assert kinds["triton_poi_fused_all_reduce_relu_0"] == ""
    d = rank_divergence(jobs["collective"])
    (barrier,) = d.collective_breaks
    assert barrier.counts == {0: 1, 1: 1} and f"nccl_jobs.py:{line_of('barrier')}" in barrier.what
    assert not d.diverged


@pytest.mark.parametrize("rank", [0, 1])
def test_profiled_nccl_kernels_are_charged_to_the_collectives_against_compute(jobs, rank):
    """--profile-kernels' attribution of the recorded profile: NCCL's device kernels are
    charged to the extern collective calls that launched them."""
    raw = json.loads((nccl_data() / "profile" / f"events_rank{rank}.json").read_text())
    events = [ProfiledEvent(**{**e, "ops": tuple(e["ops"]), "inputs": None}) for e in raw]
    nccl = [e for e in events if e.on_device and e.name.startswith("ncclDevKernel_")]
    assert {collective_kind(e.name) for e in nccl} == {"all_reduce", "all_gather"}
    times = attribute(events, jobs["collective"][rank].kernels, device=True)
    by_name = {t.name: t for t in times}
    for name, kind in (("_c10d_functional.all_reduce_.default", "all_reduce"),
                       ("_c10d_functional.all_gather_into_tensor.default", "all_gather")):
        t = by_name[name]
        assert t.collective == kind and t.calls == 5 and t.total_s * 1e6 == pytest.approx(
            sum(e.duration_us for e in nccl if collective_kind(e.name) == kind))
    share = collective_share(times)
    assert set(share.by_kind) == {"all_reduce", "all_gather"}
    compute = [t for t in times if not t.collective and t.kernel]
    assert share.compute_s == pytest.approx(sum(t.per_call_s for t in compute))
    assert 0 < share.share < 1 and "Collectives (NCCL):" in share.describe()


def test_nccl_outside_compiled_code_keeps_its_name():
    """DDP's gradient all-reduce runs in eager code: its NCCL kernel is not other device time."""
    events = [ProfiledEvent("ipycompile: profiled call", 100.0),
              ProfiledEvent("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 30.0, True, ("record_param_comms", "c10d::allreduce_", "ipycompile: profiled call"), 7),
              ProfiledEvent("memcpy", 5.0, True, ("aten::copy_", "ipycompile: profiled call"), 8)]
    times = {t.name: t for t in attribute(events, [], device=True)}
    assert times["ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)"].collective == "all_reduce"
    assert times["other device time"].total_s == pytest.approx(5e-6)


def test_collective_kind_by_name():
    assert collective_kind("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "reduce_scatter"
    assert collective_kind("ncclKernel_AllReduce_RING_LL_Sum_float") == "all_reduce"
    assert collective_kind("ncclDevKernel_SendRecv") == "send_recv"
    assert collective_kind("_c10d_functional.reduce_scatter_tensor.default") == "reduce_scatter"
    assert collective_kind("_c10d_functional.all_to_all_single.default") == "all_to_all"
    assert collective_kind("triton_poi_fused_all_reduce_relu_0") == collective_kind("aten.mm") == ""


# -- the capture inside every rank of the same jobs -----------------------------------
@pytest.mark.parametrize("job", ["ddp", "diverge"])
def test_the_capture_inside_each_rank_holds_what_its_trace_log_holds(jobs, job):
    """On two GPUs, ipycompile.capture() in each rank received every event its TORCH_TRACE log
    holds (the same count), so its report holds the same graphs, bucket splits and kernels:
    the backward's kernels, compiled on autograd's device thread, and Triton's autotuning
    there (events without a compile id) included."""
    for rank in (0, 1):
        live = json.loads((nccl_data() / f"{job}-capture" / f"capture_rank{rank}.json").read_text())
        full = jobs[job][rank]
        assert (live["compiles"], live["graphs"], live["graph_breaks"], live["kernels"], live["records"]) == (
            len(full.compiles), len(full.graphs), full.graph_break_count, len(full.kernels), full.stats.records)
        assert live["graphs"] > 0 and live["kernels"] > 0
        assert live["ddp_splits"] == {str(c): n for c, n in full.ddp_splits.items()}
    if job == "ddp":
        diag = json.loads((nccl_data() / "ddp-capture" / "diag_rank0.json").read_text())
        assert any(k.startswith("Dummy-") and k.endswith("|inductor_output_code") for k in diag)  # the device thread


#: what a TORCH_TRACE log by itself lacks of a live capture (where code lived, the source kept,
#: the recompile limits), and where each was read from
# (and the schema: the live captures were saved as JSON at schema 2; a log read today is schema 3)
LIVE_ONLY = {"origin", "code_layout", "source_context", "recompile_limits", "sources", "torch_version", "schema_version",
             "shape_guards",  # the size guards torch added: the recorded logs predate their reading
             "node_lines"}  # kept since the graphs' node-to-line map is a record: a summary saved before is filled at
# load from its graphs, where a rank summary read now leaves it empty


@pytest.mark.parametrize("job", ["ddp", "diverge"])
def test_rank_0_gathered_the_divergence_load_trace_reads(jobs, job):
    gathered = json.loads((nccl_data() / f"{job}-capture" / "gathered.json").read_text())
    assert gathered["missing"] == {} and sorted(gathered["summaries"]) == ["0", "1"]
    # the same ranks behave alike and differ as the logs read now say (the recorded text predates the
    # recompiles' wording in the user's names, so the groups are compared, not the words)
    now = rank_divergence(jobs[job])
    assert gathered["divergence"].splitlines()[0] == str(now).splitlines()[0]
    assert len(gathered["divergence"].splitlines()) == len(str(now).splitlines())
    for r, summary in gathered["summaries"].items():
        live = CompileReport.from_dict(summary).to_dict()
        logged = jobs[job].summaries[int(r)].to_dict()
        assert {k for k in live if _differs(live[k], logged[k])} <= LIVE_ONLY


_EMPTY = ("", [], {}, None)


def _differs(recorded, read) -> bool:
    """Whether the gathered summary (recorded on the GPU by an earlier version) and the report read now
    differ in what the summary recorded: a field it holds empty where the report read now fills it (a
    record added since, e.g. a break's ``said``, a graph's ``nodes``) is not compared."""
    if isinstance(recorded, dict) and isinstance(read, dict):
        return any(_differs(v, read.get(k)) for k, v in recorded.items()
                   if not (v in _EMPTY and read.get(k) not in _EMPTY))
    if isinstance(recorded, list) and isinstance(read, list):
        return len(recorded) != len(read) or any(_differs(a, b) for a, b in zip(recorded, read))
    return recorded != read


@pytest.mark.slow
@pytest.mark.parametrize("job", JOBS)
def test_tlparse_compile_ids_per_rank_agree(job):
    from tlparse_truth import assert_report_agrees, tlparse_all_ranks

    reports = load_trace(nccl_data() / job)
    truth = tlparse_all_ranks(nccl_data() / job)
    assert truth["ranks"] == list(reports) == [0, 1]
    for rank in reports:
        assert_report_agrees(reports.summaries[rank], truth["per_rank"][rank])
    assert truth["compile_id_divergence"] == bool(rank_divergence(reports).compile_ids)


def test_the_diverging_ranks_recompile_is_said_in_the_users_names(jobs):
    """With capture's guard records (the recompiles branch), rank 1's recompile of the step
    names the argument of the user's call, not torch's ``L['ids']``."""
    from ipycompile.report import model

    if not hasattr(model, "FailedGuard"):
        pytest.skip("needs capture's guard records (Recompile.guards, FailedGuard: the recompiles branch)")
    text = str(rank_divergence(jobs["diverge"]))
    assert "[0/1] train_step: size of dim 0 of `ids` went 4 -> 6" in text


def test_the_kernels_view_shows_collectives_and_their_time_against_compute():
    from ipycompile.report.model import KernelTimes, Profile
    from ipycompile.views.html import render_html

    report = load_trace(nccl_data() / "collective", rank=0)  # its own copy: the profile is set on it
    raw = json.loads((nccl_data() / "profile" / "events_rank0.json").read_text())
    events = [ProfiledEvent(**{**e, "ops": tuple(e["ops"]), "inputs": None}) for e in raw]
    report.profile = Profile(kernels=KernelTimes(times=attribute(events, report.kernels, device=True), device="cuda", calls=5))
    page = render_html(report)
    assert "collective: all_reduce" in page and "collective: all_gather" in page and "collective: wait" in page
    assert "Collectives (NCCL):" in page and "all_gather" in page


def test_the_graphs_view_marks_the_collectives_each_graph_calls(jobs):
    """Collectives inside compiled code are read from every printed stage of the graph (Dynamo's
    ``all_reduce``, the post-grad graph's in-place ``all_reduce_``), counted by kind with the
    waits apart, shown as a column of the Graphs table and said in the graph's panel; a job
    whose collectives run outside the compiled code (DDP's hooks) gets no such column."""
    from ipycompile.views.html import render_html
    from ipycompile.views.tabs import graphs_tab

    report = jobs["collective"][0]
    by_stage = {(str(g.compile_id), g.stage): g for g in report.graphs}
    dynamo, post = by_stage[("0/0", "dynamo")], by_stage[("0/0", "post_grad")]
    assert dynamo.collective_counts() == {"all_reduce": 1, "wait": 2, "all_gather": 1}
    assert post.collectives[0] == "_c10d_functional.all_reduce_.default"  # Inductor's in-place form
    assert not by_stage[("1/0", "dynamo")].collectives  # the barrier's graph break left no collective in it
    table = graphs_tab(report)[0]
    assert table.columns[-1] == "collectives"
    cells = {(r[0], r[1]): r[-1] for r in table.rows}
    assert cells[("0/0", "dynamo")] == "all_reduce \u00d71, all_gather \u00d71" and cells[("1/0", "dynamo")] == ""
    page = render_html(report)
    assert "Collectives in this graph: all_reduce \u00d71, all_gather \u00d71" in page and "2 waits" in page
    assert CompileReport.from_json(report.to_json()).graphs[0].collectives == report.graphs[0].collectives
    assert "collectives" not in graphs_tab(jobs["ddp"][0])[0].columns
