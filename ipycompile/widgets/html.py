"""A self-contained HTML rendering of a report (inline CSS, no JavaScript, no external requests).

This is the interim notebook display; the full view-model and widget arrive
with the report-view issue.
"""

from __future__ import annotations

import html
from typing import Iterable

from ..report import CompileReport
from ..report.report import _renderers, register_renderer
from ..report.summary import fmt_bytes, fmt_seconds

_CSS = """
<style>
.ipyc{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4;max-width:1100px}
.ipyc .strip{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0 8px}
.ipyc .chip{border-radius:4px;padding:2px 8px;background:#eef2f7;border:1px solid #d0d7e2}
.ipyc .warn{background:#fff4e5;border-color:#f0a848;color:#8a4b00}
.ipyc table{border-collapse:collapse;margin:4px 0 10px}
.ipyc th,.ipyc td{border:1px solid #dde3ea;padding:2px 6px;text-align:left;vertical-align:top}
.ipyc th{background:#f5f7fa}
.ipyc pre{background:#f8f9fb;border:1px solid #e3e7ee;padding:6px;overflow:auto;max-height:360px}
.ipyc details{margin:2px 0}
</style>
"""


def _e(text) -> str:
    return html.escape(str(text))


def _table(headers: Iterable[str], rows: Iterable[Iterable]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(report: CompileReport) -> str:
    r = report
    p = r.profile
    chips = []

    def chip(text, warn=False):
        chips.append(f'<span class="chip{" warn" if warn else ""}">{_e(text)}</span>')

    graphs = sum(1 for g in r.graphs if g.stage == "dynamo")
    generated = sum(1 for k in r.kernels if k.backend != "extern")
    chip(f"{graphs} graph" + ("" if graphs == 1 else "s"))
    chip(f"{r.graph_break_count} graph break" + ("" if r.graph_break_count == 1 else "s"), r.graph_break_count > 0)
    chip(f"{len(r.recompiles)} recompile" + ("" if len(r.recompiles) == 1 else "s"), bool(r.recompiles))
    chip(f"{len(r.kernels)} kernels ({generated} generated / {len(r.kernels) - generated} extern)")
    if r.failures:
        chip(f"{len(r.failures)} failure" + ("" if len(r.failures) == 1 else "s"), True)
    if r.compiled_nothing:
        chip("reused compiled code" if p and p.reused_compiled_code else "nothing compiled")
    if p is not None:
        if p.compile_s is not None:
            chip(f"compile {fmt_seconds(p.compile_s)}")
        if p.run_median_s is not None:
            chip(f"run {fmt_seconds(p.run_median_s)} median")
        if p.eager and p.eager.speedup is not None:
            chip(f"{p.eager.speedup:.2f}x vs eager", p.eager.speedup < 1)
        if p.peak_device_bytes is not None:
            chip(f"device peak {fmt_bytes(p.peak_device_bytes)}")
        if p.peak_host_bytes is not None:
            chip(f"host peak {fmt_bytes(p.peak_host_bytes)}")
        if p.error:
            chip(f"raised {p.error}", True)

    parts = [_CSS, '<div class="ipyc">', '<div class="strip">', *chips, "</div>"]
    if r.failures:
        rows = [(_e(f.compile_id), _e(f.type), _e(r.where(f.frame.filename, f.frame.lineno)), f"<pre>{_e(f.message)}</pre>") for f in r.failures]
        parts += ["<h4>Failures</h4>", _table(("compile", "type", "where", "message"), rows)]
    if r.graph_breaks:
        rows = []
        for b in r.graph_breaks:
            hints = "".join(f"<li>{_e(h)}</li>" for h in b.hints)
            detail = f"<details><summary>{_e(b.reason)}</summary><p>{_e(b.explanation)}</p><ul>{hints}</ul></details>"
            rows.append((_e(r.where(b.frame.filename, b.frame.lineno)), f"<code>{_e(b.frame.source_line.strip())}</code>", detail, _e(b.gb_code), b.count))
        parts += ["<h4>Graph breaks</h4>", _table(("where", "code", "reason", "GB", "count"), rows)]
    if r.recompiles:
        rows = [(_e(rc.compile_id), _e(rc.function), "<br>".join(_e(x) for x in rc.reasons) + (" <b>recompile limit hit</b>" if rc.limit_hit else "")) for rc in r.recompiles]
        parts += ["<h4>Recompiles</h4>", _table(("compile", "function", "guard failures"), rows)]
    if r.kernels:
        rows = [(_e(k.name), _e(k.backend), _e(k.kind), _e(", ".join(k.aten_ops))) for k in r.kernels]
        parts += ["<details><summary><b>Kernels</b></summary>", _table(("kernel", "backend", "kind", "fused ATen ops"), rows), "</details>"]
    if r.control_flow:
        parts += ["<h4>Control flow</h4>", "<ul>", *(_cf(n) for n in r.control_flow), "</ul>"]
    if p is not None:
        parts += [f"<details><summary><b>Profile</b></summary><pre>{_e(r.summary())}</pre></details>"]
    parts.append("</div>")
    return "".join(parts)


def _cf(node) -> str:
    subs = "".join(f"<li>{_e(s.role or s.name)}: {_e(s.name)} ({s.op_count} ops)</li>" for s in node.subgraphs)
    kids = "".join(_cf(c) for c in node.children)
    return f"<li><code>{_e(node.op)}</code> {_e(node.operands)}<ul>{subs}{kids}</ul></li>"


def _bundle(report: CompileReport) -> dict[str, str]:
    return {"text/html": render_html(report)}


def register() -> None:
    """Make reports display as HTML in notebooks."""
    register_renderer(_bundle)


def unregister() -> None:
    while _bundle in _renderers:
        _renderers.remove(_bundle)
