"""A cell run compiled for the doctor's tests, and "the fix worked": the helpers the doctor's modules share.

:func:`run` runs a cell with ``ipycompile.run_cell`` (backend "eager": the doctor reads Dynamo's
decisions, not Inductor's code) from a clean Dynamo and returns its value and report, or the
exception and the report it carries when the cell fails. :func:`assert_clean` checks that a fix
left no break, no failure and nothing that ran without compiling.
"""

from __future__ import annotations

import textwrap

import ipycompile


def run(src: str, ns: dict, **kw):
    """Run a cell compiled (eager backend), from a clean Dynamo: (value, report), or (the exception, its report)."""
    ipycompile.reset()
    try:
        r = ipycompile.run_cell(textwrap.dedent(src), ns, backend="eager", runs=1, warmup=0, record=False, **kw)
        return r.value, r.report
    except Exception as exc:  # noqa: BLE001 - the failing cell's report is what the doctor reads
        report = getattr(exc, "ipycompile_report", None)
        if report is None:
            raise
        return exc, report
    finally:
        ipycompile.reset()


def assert_clean(report, *, graphs: bool = True) -> None:
    """The fix worked: no break, no failure, nothing ran without compiling (not merely moved); with
    ``graphs`` (the default), something was compiled into a graph with operations."""
    assert report.graph_break_count == 0, report.summary()
    assert not report.failures, report.summary()
    assert not report.ran_without_compiling, report.summary()
    if graphs:
        assert report.compiles and any(c.graph_op_count for c in report.compiles), report.summary()
