"""``benchmarks/roofline_truth.py``'s pure steps on the CPU: ncu's CSV parsed, the report's rows
compared with it, and ``why_differs`` computed from ncu's counters. The ncu run itself is the
GPU machine's; here a small CSV written as ``ncu --csv --page raw`` writes it (a header, a
units line, one row per launch; numbers with thousands separators)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import roofline_truth as rt  # noqa: E402

MB = 1e6
COLUMNS = ["ID", "Process ID", "Kernel Name", "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum"]


def _csv(launches: list[tuple[str, float, float, float, float, float]]) -> str:
    """(kernel, DRAM read bytes, DRAM write bytes, ns, L2 read bytes, L2 write bytes) per launch."""
    q = lambda v: '"' + str(v) + '"'  # noqa: E731
    lines = ["==PROF== Connected to process 4242", ",".join(map(q, COLUMNS)),
             ",".join(map(q, ["", "", "", "byte", "byte", "nsecond", "sector", "sector"]))]
    for i, (name, rd, wr, ns, l2r, l2w) in enumerate(launches):
        lines.append(",".join(map(q, [i, 4242, name, f"{rd:,.0f}", f"{wr:,.0f}", f"{ns:,.0f}", f"{l2r / 32:,.0f}",
                                      f"{l2w / 32:,.0f}"])))
    return "\n".join(lines) + "\n"


def _row(name, verdict, nbytes, written, us, share):
    return dict(name=name, kernel=name, kind="pointwise", written=written, launches_per_call=1.0, us_per_launch=us,
                share=share, bytes=nbytes, flops=0.0, how="", dtype="float16", gb_s=nbytes / us / 1e3,
                bw_pct=None, flops_pct=None, verdict=verdict, shapes=[])


@pytest.fixture(scope="module")
def compared():
    csv_text = _csv([
        # agrees: 100 MB read, 100 MB written, all of it in DRAM
        ("triton_poi_fused_add_0", 100 * MB, 100 * MB, 80_000, 100 * MB, 100 * MB),
        ("triton_poi_fused_add_0", 100 * MB, 100 * MB, 80_000, 100 * MB, 100 * MB),
        # 67 MB written to L2, 43 MB of it reached DRAM by the kernel's end
        ("triton_poi_fused_gelu_1", 67.11 * MB, 43 * MB, 48_900, 67.11 * MB, 67.11 * MB),
        # a 4 us kernel whose output stayed in L2
        ("triton_poi_fused_small_2", 2.1 * MB, 0.0, 4_200, 2.1 * MB, 2.1 * MB),
        # inputs read from L2 twice as often as from DRAM
        ("triton_red_fused_sum_3", 24 * MB, 1 * MB, 20_000, 49 * MB, 1 * MB),
        # a matmul template: compute-bound, not targeted
        ("triton_tem_fused_mm_4", 80 * MB, 30 * MB, 130_000, 300 * MB, 33 * MB),
    ])
    report = {"w": dict(
        rows=[_row("triton_poi_fused_add_0", "memory-bound", 200 * MB, 100 * MB, 70.0, 0.3),
              _row("triton_poi_fused_gelu_1", "memory-bound", 134.22 * MB, 67.11 * MB, 45.0, 0.2),
              _row("triton_poi_fused_small_2", "latency-bound", 4.2 * MB, 2.1 * MB, 3.0, 0.01),
              _row("triton_red_fused_sum_3", "memory-bound", 50 * MB, 1 * MB, 18.0, 0.1),
              _row("triton_tem_fused_mm_4", "compute-bound", 92 * MB, 33 * MB, 125.0, 0.35),
              _row("triton_poi_fused_not_in_ncu_5", "memory-bound", 1 * MB, 0.5 * MB, 2.0, 0.01),
              _row("extern_kernels.mm", "compute-bound", 92 * MB, None, 125.0, 0.03)],
        flop_counter=1e9, report_flops=1.02e9, roofline_line=["roofline: ..."])}
    rows = rt.parse_ncu_csv(csv_text)
    return rows, rt.step_compare(report, rows, ["w"])["w"]


def test_ncu_csv_rows_carry_dram_and_l2_traffic(compared):
    rows, _ = compared
    assert len(rows) == 6  # the units line and ncu's own lines are not launches
    gelu = rows[2]
    assert gelu["kernel"] == "triton_poi_fused_gelu_1" and gelu["dram_read"] == 67.11 * MB
    assert gelu["dram_write"] == 43 * MB and gelu["dram_bytes"] == 110.11 * MB and gelu["ns"] == 48_900
    assert gelu["l2_write"] == pytest.approx(67.11 * MB, abs=32) and gelu["l2_read"] == pytest.approx(67.11 * MB, abs=32)


def test_older_csv_without_l2_reads_still_parses():
    text = _csv([("k", 1 * MB, 1 * MB, 20_000, 1 * MB, 1 * MB)]).replace("lts__t_sectors_srcunit_tex_op_read.sum", "x")
    (row,) = rt.parse_ncu_csv(text)
    assert row["l2_read"] is None and row["l2_write"] == pytest.approx(1 * MB, abs=32)


def test_compare_says_why_bytes_differ(compared):
    _, w = compared
    by = {k["kernel"]: k for k in w["kernels"]}
    assert set(by) == {"triton_poi_fused_add_0", "triton_poi_fused_gelu_1", "triton_poi_fused_small_2",
                       "triton_red_fused_sum_3", "triton_tem_fused_mm_4"}  # extern and unmatched kernels left out
    add = by["triton_poi_fused_add_0"]
    assert add["bytes_ratio"] == pytest.approx(1.0) and add["why_differs"] == "" and add["in_target"]
    gelu = by["triton_poi_fused_gelu_1"]
    assert gelu["bytes_ratio"] == pytest.approx(134.22 / 110.11)
    assert gelu["why_differs"] == ("outputs still in L2 at the kernel's end (DRAM writes 43.00 MB of the 67.11 MB it "
                                   "wrote to L2, 67.11 MB estimated written)")
    assert gelu["bytes_ratio_read_l2_write"] == pytest.approx(1.0, abs=1e-6)
    small = by["triton_poi_fused_small_2"]
    assert small["why_differs"].startswith("under 10 us (4.2 us)") and not small["in_target"]
    assert "outputs still in L2" in small["why_differs"]
    red = by["triton_red_fused_sum_3"]
    assert red["why_differs"] == "L2 reuse of inputs (it read 49.00 MB from L2, 24.00 MB of them from DRAM)"
    mm = by["triton_tem_fused_mm_4"]
    assert mm["why_differs"] == "" and not mm["in_target"]  # compute-bound: its bytes are not targeted
    assert w["targeted"] == 3 and w["bytes_within_20pct"] == 1 and w["bytes_within_20pct_read_l2_write"] == 2
    assert w["flops_ratio"] == pytest.approx(1.02) and w["flops_within_5pct"]
    assert [k["kernel"] for k in w["kernels"]][0] == "triton_tem_fused_mm_4"  # by share
    assert "why" not in rt._table({"w": w}).splitlines()[0] and "[L2 reuse of inputs" in rt._table({"w": w})


def test_why_differs_names_reads_that_miss_the_estimate():
    # read twice from DRAM (a reduction's second pass missed L2)
    twice = rt.why_differs(100 * MB, 10 * MB, dict(us=50.0, dram_read=180 * MB, dram_write=10 * MB, l2_read=180 * MB,
                                                    l2_write=10 * MB))
    assert twice == "inputs read from DRAM more than once (DRAM reads 180.00 MB, estimated 90.00 MB)"
    # a broadcast or sliced input counted whole: the kernel asked L2 for a third of it
    never = rt.why_differs(100 * MB, 10 * MB, dict(us=50.0, dram_read=30 * MB, dram_write=10 * MB, l2_read=30 * MB,
                                                    l2_write=10 * MB))
    assert never.startswith("parts of its inputs never read (it read 30.00 MB from L2 of 90.00 MB estimated")
    odd = rt.why_differs(100 * MB, None, dict(us=50.0, dram_read=60 * MB, dram_write=10 * MB))
    assert odd == "not explained by ncu's counters (dram read 60.00 MB, dram write 10.00 MB)"


def test_help_runs_without_a_gpu():
    p = subprocess.run([sys.executable, str(BENCH / "roofline_truth.py"), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "{all,report,target,compare}" in p.stdout and "--only" in p.stdout and "--from" in p.stdout


def test_compare_again_from_saved_work_folders(tmp_path):
    """``compare --from A,B``: two earlier runs' folders (one plain, one gzipped) joined in one JSON."""
    import gzip
    import json

    one, two = tmp_path / "a", tmp_path / "b"
    one.mkdir(), two.mkdir()
    row = _row("triton_poi_fused_gelu_1", "memory-bound", 134.22 * MB, 67.11 * MB, 45.0, 0.2)
    (one / "roofline_report.json").write_text(json.dumps({"mlp": dict(
        rows=[row], flop_counter=1e9, report_flops=1e9, roofline_line=[], device="NVIDIA H100 80GB HBM3")}))
    (one / "ncu_stdout.csv").write_text(_csv([("triton_poi_fused_gelu_1", 67.11 * MB, 43 * MB, 48_900, 67.11 * MB,
                                               67.11 * MB)]))
    (two / "roofline_report.json.gz").write_bytes(gzip.compress(json.dumps({"resnet": dict(
        rows=[_row("triton_poi_fused_add_0", "memory-bound", 200 * MB, 100 * MB, 70.0, 0.3)], flop_counter=2e9,
        report_flops=2e9, roofline_line=[], device="NVIDIA H100 80GB HBM3")}).encode()))
    (two / "ncu_stdout.csv.gz").write_bytes(gzip.compress(_csv([("triton_poi_fused_add_0", 100 * MB, 100 * MB, 80_000,
                                                                 100 * MB, 100 * MB)]).encode()))
    out = tmp_path / "joined.json"
    r = subprocess.run([sys.executable, str(BENCH / "roofline_truth.py"), "compare", "--from", f"{one},{two}",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert set(doc["workloads"]) == {"mlp", "resnet"} and doc["device"] == "NVIDIA H100 80GB HBM3"
    assert doc["workloads"]["mlp"]["kernels"][0]["why_differs"].startswith("outputs still in L2")
    assert doc["workloads"]["resnet"]["bytes_within_20pct"] == 1 and doc["compared_from"] == [str(one), str(two)]
    assert "lts__t_sectors_srcunit_tex_op_read.sum" in doc["metrics"]
    missing = subprocess.run([sys.executable, str(BENCH / "roofline_truth.py"), "compare"], capture_output=True, text=True)
    assert missing.returncode == 2 and "compare needs --from" in missing.stderr
