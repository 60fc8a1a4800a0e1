"""The plain-text summary of a report: counts first, then each problem where it happened."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import CompileReport


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt_seconds(s) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def fmt_bytes(n) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def settings_text(p) -> str:
    """The compile settings of a profiled run, as one line: ``mode=... backend=... dynamic=...``."""
    settings = [f"mode={p.mode}", f"backend={p.backend}"]
    if p.dynamic is not None:
        settings.append(f"dynamic={p.dynamic}")
    if p.fullgraph:
        settings.append("fullgraph")
    settings += [f"{k}={v!r}" for k, v in p.options.items()]
    config = getattr(p, "config", None) or {}
    if config:  # global torch config the user changed: it shapes the compile as much as the options
        settings.append("| config: " + " ".join(f"{k}={v}" for k, v in config.items()))
    return " ".join(settings)


def _profile_lines(r: "CompileReport") -> list[str]:
    p = r.profile
    if p is None:
        return []
    out = []
    if p.compile_s is not None:
        wall = getattr(p, "compile_wall_s", None)
        net = f" net of {fmt_seconds(p.trace_logging_s)} capture logging (wall {fmt_seconds(wall)})" \
            if wall is not None and p.trace_logging_s else ""
        out.append(f"first call (compile) {fmt_seconds(p.compile_s)}{net}")
    if p.run_median_s is not None:
        auto = ", auto" if p.auto_runs else ""
        blocks = getattr(p, "run_block_calls", 0)
        how = f"{p.runs} calls in {len(p.run_times_s)} blocks of {blocks}" if blocks else f"{p.runs} runs"
        beside = [f"{name} {fmt_seconds(v)}" for name, v in (("device time", getattr(p, "device_median_s", None)),
                                                             ("latency", getattr(p, "latency_median_s", None))) if v]
        out.append(
            f"run time {fmt_seconds(p.run_median_s)} per call (IQR {fmt_seconds(p.run_iqr_s)}, "
            f"{how} after {p.warmup} warm-up{auto})" + (" | " + " | ".join(beside) if beside else "")
        )
    mem = []
    if p.peak_device_bytes is not None:
        mem.append(f"device {fmt_bytes(p.peak_device_bytes_compile)} compile / {fmt_bytes(p.peak_device_bytes_run)} steady")
    if p.peak_host_bytes is not None:
        mem.append(f"host {fmt_bytes(p.peak_host_bytes_compile)} compile / {fmt_bytes(p.peak_host_bytes_run)} steady")
    if mem:
        out.append("peak memory: " + "; ".join(mem))
    e = p.eager
    if e is not None:
        sp = f"{e.speedup:.2f}x" if e.speedup is not None else "-"
        be = f"after {e.break_even_calls} calls" if e.break_even_calls is not None else "never (compiled is not faster)"
        method = f" ({e.check_method})" if getattr(e, "check_method", "") else ""
        match = f"outputs match{method}" if e.outputs_match else f"OUTPUTS DIFFER ({e.message})"
        out.append(f"vs eager: {sp} speedup (eager {fmt_seconds(e.run_median_s)}), break-even {be}, {match}")
    if p.caches:
        out.append("caches: " + ", ".join(f"{k} {v}" for k, v in p.caches.items()))
    if p.trace_logging_s is not None and p.compile_s:
        build = f", report built in {fmt_seconds(p.report_build_s)}" if p.report_build_s is not None else ""
        out.append(
            f"capture cost: {fmt_seconds(p.trace_logging_s)} of trace logging in the compile call "
            f"({p.trace_logging_s / p.compile_s:.1%}){build}; none during timed runs"
        )
    out.append(f"settings: {settings_text(p)} | torch {p.torch_version} on {p.device}")
    out += [f"note: {n}" for n in p.notes]
    if p.error:
        out.append(f"the cell raised {p.error}")
    return out


def _gpu_lines(r: "CompileReport") -> list[str]:
    """max-autotune's winners and the CUDA-graph status, one line each."""
    out = []
    for a in getattr(r, "autotuning", []):
        t = f" {a.winner_ms * 1e3:.1f} us" if a.winner_ms else ""
        if a.winner_kind == "extern":
            other = f"; best Triton {a.best_triton} {a.best_triton_ms * 1e3:.1f} us" if a.best_triton_ms else ""
            won = f"the extern {a.winner} won,{t}{other}"
        else:
            vs = f" vs extern {a.extern_ms * 1e3:.1f} us" if a.extern_ms else ""
            won = f"{a.winner}{t}{vs}"
        out.append(f"autotune {a.op}({a.shape}): {won}, of {a.num_choices} choices "
                   f"({fmt_seconds((a.precompile_s or 0) + (a.benchmark_s or 0))})")
    for c in getattr(r, "cudagraphs", []):
        why = f": {c.reason}" if c.reason else ""
        where = ""
        if c.culprit_frame.filename:
            where = f" at {r.where(c.culprit_frame.filename, c.culprit_frame.lineno)}"
        elif c.culprit:
            where = f" ({c.culprit})"
        rec = f", {c.recordings} recorded" + (f" ({c.rerecordings} re-recorded)" if c.rerecordings else "") if c.recordings else ""
        out.append(f"CUDA graphs [{c.compile_id}]: {c.status}{why}{where}{rec}")
    return out


def render_summary(report: "CompileReport") -> str:
    r = report
    lines: list[str] = []
    if r.compiled_nothing:
        if r.profile is not None and r.profile.reused_compiled_code:
            lines.append("ipycompile: reused compiled code: nothing was compiled in this run.")
        else:
            lines.append("ipycompile: torch.compile compiled nothing here (compiled code was reused, or no compiled code ran).")
        if r.stats.records:
            lines.append(f"  ({r.stats.records} trace events seen)")
        lines += _profile_lines(r)
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
    lines += _profile_lines(r)
    lines += _gpu_lines(r)

    if r.failures:
        lines.append("")
        lines.append("Failures:")
        for f in r.failures:
            first = f.message.strip().splitlines()[0] if f.message.strip() else ""
            lines.append(f"  [{f.compile_id}] {f.type} at {r.where(f.frame.filename, f.frame.lineno)}: {first}")
    if r.graph_breaks:
        lines.append("")
        lines.append("Graph breaks:")
        for b in r.graph_breaks:
            code = f" [{b.gb_code}]" if b.gb_code else ""
            times = f" (x{b.count})" if b.count > 1 else ""
            fn = f" in {b.frame.function}" if b.frame.function else ""
            lines.append(f"  {r.where(b.frame.filename, b.frame.lineno)}{fn}: {b.reason}{code}{times}")
            if b.frame.source_line:
                lines.append(f"      {b.frame.source_line.strip()}")
            if b.hints:
                lines.append(f"      hint: {b.hints[0]}")
    if r.recompiles:
        lines.append("")
        lines.append("Recompiles:")
        for rc in r.recompiles:
            what = " ".join(r.readable(rc.reasons[0]).splitlines()[0].split()) if rc.reasons else "(no reason given)"
            more = f" (+{len(rc.reasons) - 1} more)" if len(rc.reasons) > 1 else ""
            limit = "  ** recompile limit hit: running eagerly **" if rc.limit_hit else ""
            lines.append(f"  [{rc.compile_id}] {rc.function}: {what}{more}{limit}")
    if r.control_flow:
        lines.append("")
        def walk(nodes, depth=0):
            for n in nodes:
                yield n.op, depth
                yield from walk(n.children, depth + 1)

        tree = list(walk(r.control_flow))
        ops = sorted({op for op, _ in tree})
        nested = sorted({op for op, depth in tree if depth > 0})
        lines.append("Control flow: " + ", ".join(ops) + (f" (nested: {', '.join(nested)})" if nested else ""))
    if r.stats.unknown or r.stats.parse_errors:
        lines.append("")
        if r.stats.unknown:
            lines.append(f"({_plural(sum(r.stats.unknown.values()), 'trace event')} of unknown kinds kept as raw artifacts)")
        if r.stats.parse_errors:
            lines.append(f"({_plural(sum(r.stats.parse_errors.values()), 'trace event')} could not be parsed; see report.stats.errors)")
    return "\n".join(lines)
