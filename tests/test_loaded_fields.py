"""Every optional field of a saved report: left out or null, the report renders or is refused at load
(issue 37, section 5).

A saved report with a profile (a real ``run_cell``: timing, the eager comparison and its output
check, compile time, graphs, a graph break) is edited one field at a time, every field of its JSON:
the field deleted, then set to null. ``CompileReport.from_json`` must either refuse it with a
``ValueError`` naming the field, or give a report whose text (``str``), notebook output and page
render without an exception (the page's figures are drawn for the whole report and the null
``eager_error`` only: a second each).
"""

from __future__ import annotations

import copy
import functools
import json

import pytest
import torch

import ipycompile
from ipycompile import CompileReport


@functools.cache
def saved() -> dict:
    run = ipycompile.run_cell("y = x.sin() * 2\nif y.sum() > 0:\n    y = y + 1\ny.cos()", {"x": torch.randn(64)},
                              backend="aot_eager", runs=3, warmup=1, record=False, compare_eager=True)
    data = json.loads(run.report.to_json())
    check = data["profile"]["eager"]["check"]
    assert check is not None
    # an RMSE check (a float output checked against float64): every field of it has a value
    check.update(compiled_error=check.get("compiled_error") or 1e-7, eager_error=check.get("eager_error") or 2e-7,
                 allowed_error=check.get("allowed_error") or 1e-5)
    return data


def paths(value, at=()) -> list[tuple]:
    """Every key path of ``value``'s dicts (list items: their first one)."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*at, k))
            out += paths(v, (*at, k))
    elif isinstance(value, list) and value:
        out += paths(value[0], (*at, 0))
    return out


def edited(data: dict, path: tuple, how: str) -> dict:
    data = copy.deepcopy(data)
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    if how == "deleted":
        del parent[path[-1]]
    else:
        parent[path[-1]] = None
    return data


def name(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def renders(report: CompileReport, figures: bool = False) -> None:
    """Its text, its notebook output and its full page (``figures``: with the figures drawn, a
    second each: the fuzz leaves them out)."""
    from ipycompile.views.html import Limits, render_view_model
    from ipycompile.views.viewmodel import view_model

    text = str(report)
    assert "the text view failed" not in text, text[-300:]
    report.summary()
    report._repr_mimebundle_()
    render_view_model(view_model(report), limits=Limits(figures=figures))


def test_the_saved_report_renders_whole():
    report = CompileReport.from_dict(saved())
    assert report.profile is not None and report.profile.eager.check is not None
    renders(report, figures=True)


def test_a_null_eager_error_renders_the_profile_tab():
    data = edited(saved(), ("profile", "eager", "check", "eager_error"), "null")
    report = CompileReport.from_dict(data)
    renders(report, figures=True)
    assert "compiled 1e-07, eager ?" in str(report)


@pytest.mark.parametrize("how", ["deleted", "null"])
def test_every_field_left_out_or_null_renders_or_is_refused_naming_it(how):
    data = saved()
    failures = []
    for path in paths(data):
        if path == ("schema_version",):
            continue
        try:
            report = CompileReport.from_dict(edited(data, path, how))
        except ValueError as exc:
            leaf = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
            if leaf not in str(exc):
                failures.append(f"{name(path)} {how}: refused without naming it: {exc}")
            continue
        try:
            renders(report)
        except Exception as exc:
            failures.append(f"{name(path)} {how}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)
