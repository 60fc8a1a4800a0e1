"""Agreement with tlparse on real logs: compile ids, graph-break, recompile and failure counts.

Each log is read by ``load_trace`` and by the real ``tlparse`` binary
(:mod:`tlparse_truth`); the counts must be equal. Where ipycompile counts
differently by design, the test says how, and so does docs/trace-files.md:

* compile ids: tlparse keys a restarted attempt on its own (``[2/0_1]``);
  a report folds attempts into the compile (``Compile.attempt`` is the last one);
* failures: tlparse lists every compile whose metrics carry a ``fail_type``;
  a report calls a frame that Dynamo gave up on and ran eagerly (a graph break
  inside a loop) ``skipped``, not failed, and shows its graph break instead.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ipycompile import load_trace
from tlparse_truth import assert_report_agrees as assert_agrees, tlparse_all_ranks, tlparse_counts
from trace_jobs import FEATURES, dist_logs, feature_logs

DATA = Path(__file__).parent / "data" / "gpu-h100"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "gpu-h100"
WORKLOADS = ("quickstart", "max_autotune", "reduce_overhead")


@pytest.fixture(scope="module")
def features() -> dict[str, Path]:
    return feature_logs()


@pytest.mark.parametrize("feature", FEATURES)
def test_feature_logs_agree_with_tlparse(features, feature):
    report = load_trace(features[feature])
    assert not report.origin.problems and not report.stats.parse_errors
    truth = tlparse_counts(features[feature])
    assert_agrees(report, truth)
    # each log holds the feature it is named for
    if feature == "breaks":
        assert report.graph_break_count >= 4 and truth["restarts"] >= 1
        assert any(c.attempt > 0 for c in report.compiles) and any(c.status == "skipped" for c in report.compiles)
    elif feature == "recompiles":
        assert len(report.recompiles) == 3
    elif feature == "recompile_limit":
        assert any(rc.limit_hit for rc in report.recompiles)
    elif feature == "failures":
        assert {f.type for f in report.failures} == {"Unsupported", "BackendCompilerFailed"}
    elif feature == "cache":
        assert [c.cache.fx_graph for c in report.compiles] == ["miss", "hit"]
        assert [c.cache.aot_autograd for c in report.compiles] == ["miss", "hit"]
    elif feature == "control_flow":
        assert {n.op for n in report.control_flow} >= {"cond", "while_loop", "scan", "map"}


def test_rank_logs_agree_with_tlparse_rank_by_rank_and_on_the_all_ranks_page():
    d = dist_logs(4)
    reports = load_trace(d)
    truth = tlparse_all_ranks(d)
    assert truth["ranks"] == list(reports) == [0, 1, 2, 3]
    for rank in reports:
        assert_agrees(reports[rank], truth["per_rank"][rank])
        assert_agrees(reports.summaries[rank], truth["per_rank"][rank])
    from ipycompile.analysis.ranks import rank_divergence

    assert truth["compile_id_divergence"] == bool(rank_divergence(reports).compile_ids)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_recorded_h100_logs_agree_with_tlparse(workload, tmp_path):
    plain = tmp_path / f"{workload}.log"  # tlparse reads plain files only
    plain.write_bytes(gzip.decompress((DATA / f"{workload}.log.gz").read_bytes()))
    assert_agrees(load_trace(DATA / f"{workload}.log.gz"), tlparse_counts(plain))
    if SHARED.is_dir():
        (log,) = (SHARED / workload).glob("dedicated_log_torch_trace_*.log")
        assert_agrees(load_trace(log), tlparse_counts(log))
