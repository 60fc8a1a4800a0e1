"""The plain-text summary of a report: counts first, then each problem where it happened."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import CompileReport


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _where(filename: str, lineno) -> str:
    name = os.path.basename(filename) if filename else "?"
    return f"{name}:{lineno}" if lineno is not None else name


def render_summary(report: "CompileReport") -> str:
    r = report
    lines: list[str] = []
    if r.compiled_nothing:
        lines.append("ipycompile: torch.compile compiled nothing here (compiled code was reused, or no compiled code ran).")
        if r.stats.records:
            lines.append(f"  ({r.stats.records} trace events seen)")
        return "\n".join(lines)

    generated = sum(1 for k in r.kernels if k.backend != "extern")
    extern = len(r.kernels) - generated
    graphs = sum(1 for g in r.graphs if g.stage == "dynamo")
    head = [
        _plural(len(r.compiles), "compile"),
        _plural(graphs, "graph"),
        _plural(r.graph_break_count, "graph break"),
        _plural(len(r.recompiles), "recompile"),
        f"{_plural(len(r.kernels), 'kernel')} ({generated} generated, {extern} extern)",
        _plural(len(r.failures), "failure"),
    ]
    lines.append("ipycompile report: " + ", ".join(head))
    if r.compile_time.total_s:
        phases = ", ".join(f"{p.name} {p.seconds:.2f}s" for p in sorted(r.compile_time.phases, key=lambda p: -p.seconds)[:4])
        lines.append(f"compile time {r.compile_time.total_s:.2f}s" + (f" ({phases})" if phases else ""))

    if r.failures:
        lines.append("")
        lines.append("Failures:")
        for f in r.failures:
            first = f.message.strip().splitlines()[0] if f.message.strip() else ""
            lines.append(f"  [{f.compile_id}] {f.type} at {_where(f.frame.filename, f.frame.lineno)}: {first}")
    if r.graph_breaks:
        lines.append("")
        lines.append("Graph breaks:")
        for b in r.graph_breaks:
            code = f" [{b.gb_code}]" if b.gb_code else ""
            times = f" (x{b.count})" if b.count > 1 else ""
            fn = f" in {b.frame.function}" if b.frame.function else ""
            lines.append(f"  {_where(b.frame.filename, b.frame.lineno)}{fn}: {b.reason}{code}{times}")
            if b.frame.source_line:
                lines.append(f"      {b.frame.source_line.strip()}")
            if b.hints:
                lines.append(f"      hint: {b.hints[0]}")
    if r.recompiles:
        lines.append("")
        lines.append("Recompiles:")
        for rc in r.recompiles:
            what = rc.reasons[0] if rc.reasons else "(no reason given)"
            more = f" (+{len(rc.reasons) - 1} more)" if len(rc.reasons) > 1 else ""
            limit = "  ** recompile limit hit: running eagerly **" if rc.limit_hit else ""
            lines.append(f"  [{rc.compile_id}] {rc.function}: {what}{more}{limit}")
    if r.control_flow:
        lines.append("")
        lines.append("Control flow: " + ", ".join(sorted({n.op for n in r.control_flow})))
    if r.stats.unknown or r.stats.parse_errors:
        lines.append("")
        if r.stats.unknown:
            lines.append(f"({sum(r.stats.unknown.values())} trace events of unknown kinds kept as raw artifacts)")
        if r.stats.parse_errors:
            lines.append(f"({sum(r.stats.parse_errors.values())} trace events could not be parsed; see report.stats.errors)")
    return "\n".join(lines)
