"""The listener: it records without changing torch, and always puts logging back."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys

import pytest
import torch

import ipycompile
from ipycompile import CompileReport

TRACE = logging.getLogger("torch.__trace")


def _state():
    return (TRACE.level, list(TRACE.handlers), TRACE.propagate, TRACE.disabled)


def _add(x):
    return torch.sin(x) + 1


def test_records_events_and_restores_logging():
    torch._dynamo.reset()
    before = _state()
    fn = torch.compile(_add, backend="eager")
    with ipycompile.capture() as cap:
        from ipycompile.capture.routing import ROUTER

        assert TRACE.handlers[0] is ROUTER.listener
        fn(torch.randn(4))
    assert _state() == before
    kinds = cap.report.stats.by_kind
    assert kinds.get("dynamo_start") == 1 and kinds.get("dynamo_output_graph") == 1
    assert [c.function for c in cap.report.compiles] == ["_add"]


def test_restores_after_exception_and_keyboard_interrupt():
    before = _state()
    fn = torch.compile(_add, backend="eager")
    for exc in (ValueError("boom"), KeyboardInterrupt()):
        torch._dynamo.reset()
        with pytest.raises(type(exc)):
            with ipycompile.capture() as cap:
                fn(torch.randn(3))
                raise exc
        assert _state() == before
        assert not cap.active
        assert len(cap.report.compiles) == 1  # what was seen before the exception is kept


def test_restores_a_custom_level_and_existing_handlers():
    before = _state()
    extra = logging.NullHandler()
    TRACE.addHandler(extra)
    TRACE.setLevel(logging.WARNING)
    try:
        with ipycompile.capture():
            assert TRACE.level == logging.DEBUG
        assert TRACE.level == logging.WARNING and TRACE.handlers[-1] is extra
    finally:
        TRACE.removeHandler(extra)
        TRACE.setLevel(before[0])
    assert _state() == before


def test_nested_captures_see_their_own_events():
    torch._dynamo.reset()
    f1 = torch.compile(lambda x: x.cos() * 3, backend="eager")
    f2 = torch.compile(lambda x: x.tan() - 2, backend="eager")
    before = _state()
    with ipycompile.capture() as outer:
        f1(torch.randn(2))
        with ipycompile.capture() as inner:
            f2(torch.randn(2))
        f1(torch.randn(2, 2))  # a recompile, seen by the outer only
    assert _state() == before
    assert len(inner.report.compiles) == 1
    assert len(outer.report.compiles) == 3
    assert {str(c.compile_id) for c in inner.report.compiles} < {str(c.compile_id) for c in outer.report.compiles}
    assert len(outer.report.recompiles) == 1 and not inner.report.recompiles


def test_reused_compiled_code_yields_a_report_that_says_so():
    torch._dynamo.reset()
    fn = torch.compile(_add, backend="eager")
    fn(torch.randn(4))
    with ipycompile.capture() as cap:
        fn(torch.randn(4))
    assert cap.report.compiled_nothing
    assert "compiled nothing" in str(cap.report)


def _generated_code(fn, x):
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, codes = run_and_get_code(fn, x)
    # kernel paths and cache keys differ from run to run; the code itself must not
    return [re.sub(r"/tmp/\S+|[a-z0-9]{52}", "<path>", c) for c in codes]


def test_capture_does_not_change_what_torch_compiles():
    fn = torch.compile(lambda x: torch.relu(x @ x.T).sum(dim=0) * 2)
    x = torch.randn(8, 8)
    configs = (torch._dynamo.config.get_config_copy(), torch._inductor.config.get_config_copy())
    without = _generated_code(fn, x)
    with ipycompile.capture() as cap:
        with_capture = _generated_code(fn, x)
    assert with_capture == without and without
    assert (torch._dynamo.config.get_config_copy(), torch._inductor.config.get_config_copy()) == configs
    # and the capture saw the very code torch generated
    seen = [k for k in cap.report.kernels if k.backend == "cpp"]
    assert seen and all(k.name in "".join(with_capture) for k in seen)


def test_import_is_light_and_a_saved_report_loads_without_torch(tmp_path):
    torch._dynamo.reset()
    fn = torch.compile(_add, backend="eager")
    with ipycompile.capture() as cap:
        fn(torch.randn(4))
    path = tmp_path / "report.json"
    cap.report.save(str(path))
    code = f"""
import sys
sys.modules['torch'] = None  # any import of torch now fails
import ipycompile
from ipycompile import CompileReport
r = CompileReport.load({str(path)!r})
assert r.compiles[0].function == '_add', r.compiles
heavy = [m for m in ('torch', 'IPython', 'ipywidgets', 'matplotlib', 'pandas') if sys.modules.get(m)]
assert not heavy, heavy
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert CompileReport.from_dict(json.loads(path.read_text())) == cap.report
