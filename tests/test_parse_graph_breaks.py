"""Graph-break and recompile payload parsers, fed by real torch structured-trace
records (CPU compiles with ``backend="eager"``) and by the H100 logs."""

from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np
import pytest
import torch

from ipycompile.capture.parse.graph_breaks import parse_graph_break, registry_entry
from ipycompile.capture.parse.recompiles import (
    compile_status,
    is_recompile_limit_message,
    is_skip_message,
    parse_recompile_limit_warning,
    parse_recompile_reasons,
    recompile_limit_type,
    recompile_limit_value,
    resume_origin,
)
from ipycompile.report.model import CompileId, GraphBreak
from tracefile import gpu_records

THIS = Path(__file__).resolve()
_SOURCE = THIS.read_text(encoding="utf-8").splitlines()
_GB_CODE = re.compile(r"^GB\d{4}$")


def line_of(marker: str) -> int:
    """The line of this file carrying the comment ``# LINE:<marker>``."""
    tag = f"# LINE:{marker}"
    hits = [i for i, text in enumerate(_SOURCE, 1) if text.rstrip().endswith(tag)]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


# ---------------------------------------------------------------------------
# capturing the structured trace


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[dict[str, Any], Optional[str]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if isinstance(meta, dict):
            self.records.append((dict(meta), getattr(record, "payload", None)))

    def artifacts(self, name: str) -> list[tuple[dict[str, Any], str]]:
        return [(m, p or "") for m, p in self.records if m.get("artifact", {}).get("name") == name]

    def payloads(self, name: str) -> list[str]:
        return [p for _, p in self.artifacts(name)]

    def metrics(self) -> list[dict[str, Any]]:
        return [m["compilation_metrics"] for m, _ in self.records if "compilation_metrics" in m]


@contextlib.contextmanager
def tracing() -> Iterator[_Recorder]:
    """Record every ``torch.__trace`` event of the block; Dynamo is reset first."""
    torch._dynamo.reset()
    logger = logging.getLogger("torch.__trace")
    rec = _Recorder()
    old_level = logger.level
    logger.addHandler(rec)
    logger.setLevel(logging.DEBUG)
    try:
        yield rec
    finally:
        logger.removeHandler(rec)
        logger.setLevel(old_level)
        torch._dynamo.reset()


def graph_breaks_of(fn: Callable[..., Any], *args: Any) -> list[GraphBreak]:
    with tracing() as rec:
        torch.compile(fn, backend="eager")(*args)
    payloads = rec.payloads("dynamo_graph_break_reason")
    assert payloads, "expected torch to log a graph break"
    return [parse_graph_break(p) for p in payloads]


def assert_break(gb: GraphBreak, gb_type: str, marker: str, function: str) -> None:
    assert gb.gb_type == gb_type
    assert gb.reason == gb_type
    assert _GB_CODE.match(gb.gb_code), gb.gb_code
    assert gb.explanation.strip()
    assert gb.hints and all(h.strip() for h in gb.hints)
    assert not gb.hints_from_registry
    assert Path(gb.frame.filename).resolve() == THIS
    assert gb.frame.lineno == line_of(marker)
    assert gb.frame.function == function
    assert gb.frame.source_line == _SOURCE[line_of(marker) - 1].strip()
    assert gb.user_stack and gb.user_stack[-1] == gb.frame
    assert not any("_dynamo" in f.filename for f in gb.user_stack)  # torch internals never leak in
    assert gb.detail


# ---------------------------------------------------------------------------
# real CPU graph breaks


def _branch(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:  # LINE:branch
        return x + 1
    return x - 1


def _helper(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:  # LINE:helper-branch
        return x * 2
    return x


def _calls_helper(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x)
    return _helper(y) + 1


def _prints(x: torch.Tensor) -> torch.Tensor:
    y = x + 1
    print("value", y.shape)  # LINE:print
    return y * 2


def _item(x: torch.Tensor) -> torch.Tensor:
    return x * x.sum().item()  # LINE:item


def _tolist(x: torch.Tensor) -> torch.Tensor:
    values = x.tolist()  # LINE:tolist
    return x + len(values)


def _numpy(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.numpy())) + 1  # LINE:numpy


def test_data_dependent_branch() -> None:
    (gb,) = graph_breaks_of(_branch, torch.randn(8))
    assert_break(gb, "Data-dependent branching", "branch", "_branch")
    assert gb.gb_code == "GB0170"
    assert "torch.cond" in " ".join(gb.hints)
    assert "data-dependent branching" in gb.explanation


def test_branch_one_frame_down_points_at_the_helper() -> None:
    gbs = graph_breaks_of(_calls_helper, torch.randn(8))
    assert gbs, "no graph break"
    for gb in gbs:  # 2.13 logs it for the outer frame and again for the helper's own frame
        assert_break(gb, "Data-dependent branching", "helper-branch", "_helper")
    assert any(f.function == "_calls_helper" for f in gbs[0].user_stack)


def test_print() -> None:
    gbs = graph_breaks_of(_prints, torch.randn(4))
    assert_break(gbs[0], "Failed to trace builtin operator", "print", "_prints")
    assert "print" in gbs[0].explanation


def test_item() -> None:
    gbs = graph_breaks_of(_item, torch.randn(4))
    assert_break(gbs[0], "Unsupported Tensor.item() call with capture_scalar_outputs=False", "item", "_item")
    assert "capture_scalar_outputs" in " ".join(gbs[0].hints)


def test_tolist() -> None:
    gbs = graph_breaks_of(_tolist, torch.randn(4))
    assert gbs[0].gb_type.startswith("Tensor.tolist()")
    assert_break(gbs[0], gbs[0].gb_type, "tolist", "_tolist")


def test_numpy_call() -> None:
    # torch 2.13 traces numpy through torch._numpy: np.sin(x.numpy()) only breaks with trace_numpy off
    with torch._dynamo.config.patch(trace_numpy=False):
        gbs = graph_breaks_of(_numpy, torch.randn(4))
    first = gbs[0]
    assert "numpy" in first.gb_type and "trace_numpy" in first.gb_type
    assert_break(first, first.gb_type, "numpy", "_numpy")


def test_user_files_override() -> None:
    (gb,) = graph_breaks_of(_branch, torch.randn(8))
    # the user traceback runs from pytest's entry point down to _branch
    assert any("/_pytest/" in f.filename for f in gb.user_stack)
    as_user = parse_graph_break(gb.detail, user_files=lambda f: "/_pytest/" in f)
    assert "/_pytest/" in as_user.frame.filename
    # nothing counts as user code: the "Graph break in user code at FILE:LINE" header decides
    nobody = parse_graph_break(gb.detail, user_files=lambda f: False)
    assert (nobody.frame.filename, nobody.frame.lineno, nobody.frame.function) == (gb.frame.filename, gb.frame.lineno, "_branch")


def test_restart_reason_text_without_header() -> None:
    with tracing() as rec:
        torch.compile(_prints, backend="eager")(torch.randn(4))
    reasons = [r for m in rec.metrics() for r in (m.get("restart_reasons") or [])]
    assert reasons
    gb = parse_graph_break(reasons[0])
    assert gb.gb_type == "Failed to trace builtin operator"
    assert _GB_CODE.match(gb.gb_code) and gb.hints and gb.explanation


# ---------------------------------------------------------------------------
# GPU 2.11 payloads


def _gpu_breaks(workload: str) -> list[GraphBreak]:
    payloads = [p or "" for m, p in gpu_records(workload) if m.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert payloads
    return [parse_graph_break(p) for p in payloads]


def test_gpu_quickstart() -> None:
    for gb in _gpu_breaks("quickstart"):
        assert gb.gb_type == gb.reason == "Data-dependent branching"
        assert gb.gb_code == "GB0170"
        assert gb.frame.lineno == 17
        assert gb.frame.function == "forward"
        assert gb.frame.filename.endswith("gpu_traces.py")
        assert gb.frame.source_line.startswith("if h.mean() > 0:")
        assert len(gb.hints) == 2 and not gb.hints_from_registry
        assert gb.explanation.startswith("Detected data-dependent branching")
        # nn.Module frames are in the user traceback but are not the user's frame
        assert any("torch/nn/modules/module.py" in f.filename for f in gb.user_stack)


def test_gpu_reduce_overhead_item() -> None:
    (gb,) = _gpu_breaks("reduce_overhead")
    assert gb.gb_type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert gb.gb_code == "GB0124"
    assert (gb.frame.lineno, gb.frame.function) == (46, "cpu_scalar")
    assert [f.function for f in gb.user_stack] == ["<module>", "reduce_overhead", "cpu_scalar"]
    assert "Traceback (most recent call last)" in gb.detail  # torch internals stay out of user_stack


# ---------------------------------------------------------------------------
# the registry


def _strip_hints(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("Hint:"))


def test_registry_fills_stripped_hints() -> None:
    (gb,) = graph_breaks_of(_branch, torch.randn(8))
    stripped = parse_graph_break(_strip_hints(gb.detail))
    assert stripped.hints_from_registry
    assert "Use `torch.cond` to express dynamic control flow." in stripped.hints
    assert stripped.gb_type == "Data-dependent branching" and stripped.gb_code == "GB0170"
    assert stripped.frame == gb.frame


def test_registry_fills_hints_for_gpu_payload() -> None:
    (gb,) = _gpu_breaks("reduce_overhead")
    stripped = parse_graph_break(_strip_hints(gb.detail))
    assert stripped.hints_from_registry
    assert stripped.hints == gb.hints  # the registry's fragments are joined back into whole hints


def test_registry_fills_everything_from_a_bare_code() -> None:
    gb = parse_graph_break("see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html")
    assert gb.gb_code == "GB0170"
    assert gb.gb_type == gb.reason == "Data-dependent branching"
    assert gb.explanation.startswith("Detected data-dependent branching")
    assert gb.hints and gb.hints_from_registry


def test_registry_entry_prefers_prose_variants() -> None:
    entry = registry_entry("gb0170", "Data-dependent branching")
    assert entry is not None
    assert entry["Gb_type"] == "Data-dependent branching"
    assert entry["Explanation"] and not entry["Explanation"].startswith(("_", '"'))
    assert entry["Hints"]
    assert registry_entry("GB9999") is None


# ---------------------------------------------------------------------------
# garbage


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "something odd happened\nsecond line",
        "Graph Break Reason:",
        "Graph break in user code at nowhere\nUser code traceback:\n  File \"x\", line",
        'User code traceback:\n  File "a.py", line 3, in f\n',
        "\x00\x01\x02",
        "Graph Break Reason: call_function BuiltinVariable(print) [ConstantVariable()] {}",
        None,
    ],
)
def test_garbage_never_raises(text: Any) -> None:
    gb = parse_graph_break(text)
    assert isinstance(gb, GraphBreak)
    assert gb.reason and "\n" not in gb.reason
    assert gb.detail == (text or "")
    assert parse_recompile_reasons(text) is not None


def test_old_style_reason_is_the_first_meaningful_line() -> None:
    gb = parse_graph_break(
        "Graph break in user code at /u/m.py:7\n"
        "Graph Break Reason: call_function BuiltinVariable(print) [ConstantVariable()] {}\n"
        "User code traceback:\n"
        '  File "/u/m.py", line 7, in f\n'
        "    print(x)\n"
    )
    assert gb.reason == "call_function BuiltinVariable(print) [ConstantVariable()] {}"
    assert gb.gb_type == "" and gb.gb_code == ""
    assert (gb.frame.filename, gb.frame.lineno, gb.frame.function, gb.frame.source_line) == ("/u/m.py", 7, "f", "print(x)")


def test_header_is_the_fallback_frame() -> None:
    gb = parse_graph_break("Graph break in user code at /u/m.py:12\nGraph Break Reason: Data-dependent branching\n")
    assert (gb.frame.filename, gb.frame.lineno) == ("/u/m.py", 12)
    assert gb.reason == "Data-dependent branching"


# ---------------------------------------------------------------------------
# recompile reasons


def _recompile_pairs(fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[tuple[dict[str, Any], list[tuple[Optional[CompileId], str]]]]:
    with tracing() as rec:
        for args in calls:
            fn(*args)
    arts = rec.artifacts("recompile_reasons")
    assert arts, "expected a recompile"
    return [(m, parse_recompile_reasons(p)) for m, p in arts]


def _previous(meta: dict[str, Any]) -> CompileId:
    return CompileId(meta["frame_id"], meta["frame_compile_id"] - 1)


def test_recompile_on_shape_change() -> None:
    f = torch.compile(lambda x: x * 2, backend="eager")
    ((meta, pairs),) = _recompile_pairs(f, [(torch.randn(8),), (torch.randn(16),)])
    assert pairs == [(_previous(meta), "tensor 'x' size mismatch at index 0. expected 8, actual 16")]


def test_recompile_on_dtype_change() -> None:
    f = torch.compile(lambda x: x + 1, backend="eager")
    ((meta, pairs),) = _recompile_pairs(f, [(torch.randn(4),), (torch.randn(4, dtype=torch.float64),)])
    ((cid, reason),) = pairs
    assert cid == _previous(meta)
    assert "tensor 'x'" in reason and "dtype mismatch" in reason and "Double" in reason


def test_recompile_on_python_int() -> None:
    g = torch.compile(lambda x, n: x * n, backend="eager", dynamic=False)
    x = torch.randn(4)
    ((meta, pairs),) = _recompile_pairs(g, [(x, 2), (x, 3)])
    ((cid, reason),) = pairs
    assert cid == _previous(meta)
    assert re.match(r"n == 2\b", reason)
    # the guard's source comes on following lines; it stays part of this one reason
    assert "User stack trace:" in reason


def test_recompile_reasons_formats() -> None:
    assert parse_recompile_reasons("0/0: tensor 'x' size mismatch") == [(CompileId(0, 0), "tensor 'x' size mismatch")]
    as_json = '[\n"0/1: a\\nUser stack trace:\\n  File \\"f.py\\", line 1, in g",\n"0/0: b"\n]'
    assert parse_recompile_reasons(as_json) == [
        (CompileId(0, 1), 'a\nUser stack trace:\n  File "f.py", line 1, in g'),
        (CompileId(0, 0), "b"),
    ]
    assert parse_recompile_reasons("0/2: x\n0/1: y\n  more\n!1/3/0: z") == [
        (CompileId(0, 2), "x"),
        (CompileId(0, 1), "y\n  more"),
        (CompileId(3, 0, 1), "z"),
    ]
    assert parse_recompile_reasons("no id here") == [(None, "no id here")]
    assert parse_recompile_reasons("") == []


# ---------------------------------------------------------------------------
# recompile limit and compile statuses

_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int32,
    torch.int64,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.complex64,
]


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_recompile_limit() -> None:
    warn_logger = logging.getLogger("torch._dynamo.convert_frame")
    warnings = _Warnings()
    warn_logger.addHandler(warnings)
    try:
        with torch._dynamo.config.patch(recompile_limit=8), tracing() as rec:
            f = torch.compile(lambda x: x * 2 + 1, backend="eager")
            for dtype in _DTYPES:
                f(torch.ones(3, dtype=dtype))  # falls back to eager once the limit is hit
    finally:
        warn_logger.removeHandler(warnings)

    statuses = [compile_status(m) for m in rec.metrics()]
    assert statuses[:8] == ["ok"] * 8
    assert "recompile limit" in statuses[8:]
    limit = next(m for m in rec.metrics() if compile_status(m) == "recompile limit")
    assert limit["fail_type"] == "Unsupported" and limit.get("co_name") is None
    assert is_recompile_limit_message(limit["fail_reason"])
    assert recompile_limit_type(limit["fail_reason"]) == "recompile_limit"
    assert recompile_limit_value(limit["fail_reason"]) == 8  # "... (currently set to 8)"
    assert recompile_limit_value("Hard failure due to fullgraph=True", limit["dynamo_config"]) == 8  # the config torch logged
    assert recompile_limit_value("Hard failure due to fullgraph=True") is None
    gb = parse_graph_break(limit["fail_reason"])
    assert gb.gb_code == "GB0039" and gb.gb_type == "Dynamo recompile limit exceeded"

    # the limit compile still logs which earlier compiles' guards failed (all 8 of them)
    cid = CompileId.parse(limit["compile_id"])
    (payload,) = [p for m, p in rec.artifacts("recompile_reasons") if (m["frame_id"], m["frame_compile_id"]) == (cid.frame_id, cid.frame_compile_id)]
    failed = [c for c, _ in parse_recompile_reasons(payload)]
    assert sorted(c.frame_compile_id for c in failed if c) == list(range(8))

    hit = [w for w in map(parse_recompile_limit_warning, warnings.messages) if w]
    assert hit and hit[0].limit_type == "recompile_limit" and hit[0].limit == 8
    assert "dtype mismatch" in hit[0].last_reason


def test_recompile_limit_fullgraph() -> None:
    with torch._dynamo.config.patch(recompile_limit=8), tracing() as rec:
        f = torch.compile(lambda x: x * 2, backend="eager", fullgraph=True)
        for dtype in _DTYPES[:9]:
            with contextlib.suppress(Exception):
                f(torch.ones(3, dtype=dtype))
    limit = [m for m in rec.metrics() if m.get("fail_type")]
    assert limit and limit[0]["fail_type"] == "FailOnRecompileLimitHit"
    assert compile_status(limit[0]) == "recompile limit"


def _metrics_of(fn: Callable[..., Any], *args: Any, **compile_kwargs: Any) -> tuple[list[dict[str, Any]], _Recorder]:
    with tracing() as rec:
        with contextlib.suppress(Exception):
            torch.compile(fn, backend="eager", **compile_kwargs)(*args)
    return rec.metrics(), rec


def test_status_ok() -> None:
    metrics, _ = _metrics_of(lambda x: x.sin() + 1, torch.randn(4))
    assert [compile_status(m) for m in metrics] == ["ok"]


def test_status_graph_break() -> None:
    metrics, rec = _metrics_of(_prints, torch.randn(4))
    assert compile_status(metrics[0]) == "graph break"  # a print break restarts the analysis
    assert resume_origin(metrics[-1]["co_name"]) == ("_prints", line_of("print"))

    # a data-dependent jump in the frame itself does not restart: only the artifact tells
    metrics, rec = _metrics_of(_branch, torch.randn(4))
    (first, *_) = metrics
    assert first["restart_reasons"] == [] and rec.payloads("dynamo_graph_break_reason")
    assert compile_status(first) == "ok"
    assert compile_status(first, graph_break=True) == "graph break"


def _loop_break(x: torch.Tensor) -> torch.Tensor:
    for i in range(2):
        x = x + 1
        print(i)
    return x


def _skip_frame(x: torch.Tensor) -> torch.Tensor:
    x = x + 1
    torch._dynamo.skip_frame("probe")
    return x


def test_status_skipped() -> None:
    for fn in (_loop_break, _skip_frame):
        metrics, rec = _metrics_of(fn, torch.randn(4))
        (m,) = metrics
        assert m["fail_type"] == "Unsupported" and m["has_guarded_code"] is False
        assert compile_status(m) == "skipped"
        (payload,) = rec.payloads("dynamo_graph_break_reason")
        assert is_skip_message(payload)
        assert _GB_CODE.match(parse_graph_break(payload).gb_code)
    # nothing for Dynamo to compile: no FX graph at all
    metrics, _ = _metrics_of(lambda a, b: a + b, 1, 2)
    assert [compile_status(m) for m in metrics] == ["skipped"]


def test_status_failed() -> None:
    metrics, _ = _metrics_of(_branch, torch.randn(4), fullgraph=True)
    (m,) = metrics
    assert m["fail_type"] == "Unsupported"
    assert compile_status(m) == "failed"


def test_status_defensive() -> None:
    assert compile_status({}) == "ok"
    assert compile_status({}, graph_break=True) == "graph break"
    assert compile_status({"fail_type": "BackendCompilerFailed", "fail_reason": "boom"}) == "failed"
    assert compile_status({"fail_type": "Unsupported", "fail_reason": "cache_size_limit reached"}) == "recompile limit"
    assert compile_status(None) == "ok"  # type: ignore[arg-type]
    assert resume_origin("forward") is None
