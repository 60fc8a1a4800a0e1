"""The plain-text summary of a report: counts first, then each problem where it happened."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

from .model import AutotuneGroup, group_autotuning
from .text import one_line, printable

if TYPE_CHECKING:
    from .report import CompileReport

class Hints(NamedTuple):
    """How the summary tells the reader to get more, in the words of where it is shown
    (the Python API by default; the command line passes its options)."""

    read_all: str = "load without summary=True for everything"
    errors: str = "see report.stats.errors"


CLI_HINTS = Hints(read_all="run again with --full for everything", errors="--json writes them, in stats.errors")


def plural(n: int, word: str) -> str:
    """``1 graph``, ``2 graphs``."""
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


def fmt_ranks(ranks) -> str:
    """Ranks as ranges: ``[0, 1, 2, 4, 6, 7]`` -> ``"0-2, 4, 6-7"``."""
    nums = sorted({int(r) for r in ranks})
    if not nums:
        return "none"
    out, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def settings_text(p) -> str:
    """The compile settings of a profiled run, as one line: ``mode=... backend=... dynamic=...``."""
    settings = [f"mode={p.settings.mode}", f"backend={p.settings.backend}"]
    if p.settings.dynamic is not None:
        settings.append(f"dynamic={p.settings.dynamic}")
    if p.settings.fullgraph:
        settings.append("fullgraph")
    settings += [f"{k}={v!r}" for k, v in p.settings.options.items()]
    config = p.settings.config
    if config:  # global torch config the user changed: it shapes the compile as much as the options
        settings.append("| config: " + " ".join(f"{k}={v}" for k, v in config.items()))
    return " ".join(settings)


def roofline_line(s) -> str:
    """Where the profiled kernel time of a call goes against the roofs (``Profile.roofline``), one line."""
    if s is None or s.busy_s <= 0:
        return ""
    if s.host_gap_s is not None:
        run = f" of each {fmt_seconds(s.run_s)} call" if s.run_s else " per call"
        gap = (f"; host gap {fmt_seconds(s.host_gap_s)}{run} (the GPU idle while the host runs Python, guards and "
               "launches: the run time less the GPU busy time of the busy-time phase)")
    else:
        gap = "; host gap: not measured (no GPU busy-time phase in this run: it needs CUDA and more than one timed run)"
    if not s.peak_known:
        return (f"roofline: {fmt_seconds(s.busy_s)} of kernel time per call; no verdicts: the peak of "
                f"{s.device or 'this device'} is unknown (bytes and FLOPs per kernel in the Kernels tab)"
                + (gap if s.host_gap_s is not None else ""))
    pct = lambda v: f"{100 * v / s.busy_s:.0f}%"  # noqa: E731
    parts = [f"{pct(s.near_roof_s)} within 70% of a roof", f"{pct(s.memory_far_s)} memory-bound further from it"]
    if s.compute_far_s:
        parts.append(f"{pct(s.compute_far_s)} compute-bound further from it")
    parts.append(f"{pct(s.latency_s)} latency-bound (too small for either roof)")
    if s.unknown_s:
        parts.append(f"{pct(s.unknown_s)} not estimated")
    return f"roofline: of {fmt_seconds(s.busy_s)} GPU busy time per call, " + ", ".join(parts) + gap


def _profile_lines(r: "CompileReport") -> list[str]:
    p = r.profile
    if p is None:
        return []
    out = []
    if p.first_call.compile_s is not None:
        wall = p.first_call.compile_wall_s
        net = f" net of {fmt_seconds(p.first_call.trace_logging_s)} capture logging (wall {fmt_seconds(wall)})" \
            if wall is not None and p.first_call.trace_logging_s else ""
        out.append(f"first call (compile) {fmt_seconds(p.first_call.compile_s)}{net}")
    if p.steady.run_median_s is not None:
        auto = ", auto" if p.steady.auto_runs else ""
        blocks = p.steady.run_block_calls
        st = p.steady
        how = f"{st.runs} calls in {len(st.run_times_s)} blocks of {blocks}" if blocks else f"{st.runs} runs"
        beside = [f"{name} {fmt_seconds(v)}" for name, v in (("device time", p.steady.device_median_s),
                                                             ("latency", p.steady.latency_median_s)) if v]
        noisy = " NOISY" if p.noisy("run time") else ""
        out.append(
            f"run time {fmt_seconds(p.steady.run_median_s)} per call{noisy} (IQR {fmt_seconds(p.steady.run_iqr_s)}, "
            f"{how} after {p.steady.warmup} warm-up{auto})" + (" | " + " | ".join(beside) if beside else "")
        )
    busy = p.steady.busy
    if busy is not None:
        noisy = " NOISY" if p.noisy("GPU busy share") else ""
        out.append(busy.text + noisy + (f"; {busy.advice}" if busy.advice else ""))
    mem = []
    if p.peak_device_bytes is not None:
        mem.append(f"device {fmt_bytes(p.first_call.peak_device_bytes)} compile / "
                   f"{fmt_bytes(p.steady.peak_device_bytes)} steady")
    if p.peak_host_bytes is not None:
        mem.append(f"host {fmt_bytes(p.first_call.peak_host_bytes)} compile / "
                   f"{fmt_bytes(p.steady.peak_host_bytes)} steady")
    if mem:
        out.append("peak memory: " + "; ".join(mem))
    e = p.eager
    if e is not None:
        sp = f"{e.speedup:.2f}x" if e.speedup is not None else "-"
        if e.speedup_ci95:
            sp += f" [{e.speedup_ci95[0]:.2f}x, {e.speedup_ci95[1]:.2f}x over {e.pairs} pairs]"
        if p.noisy("speedup vs eager"):
            sp += " NOISY"
        be = f"after {e.break_even_calls} calls" if e.break_even_calls is not None else "never (compiled is not faster)"
        c = e.check
        method = f" ({c.method})" if c is not None and c.method else ""
        match = "outputs not compared" if c is None else f"outputs match{method}" if c.match \
            else f"OUTPUTS DIFFER ({c.message})"
        out.append(f"vs eager: {sp} speedup (eager {fmt_seconds(e.run_median_s)}), break-even {be}, {match}")
        if e.busy is not None:
            out.append(f"eager: {e.busy.text}" + (" NOISY" if p.noisy("eager GPU busy share") else ""))
        if e.why_slower:
            out.append(e.why_slower)
    if p.caches:
        out.append("caches: " + ", ".join(f"{k} {v}" for k, v in p.caches.items()))
    if p.first_call.trace_logging_s is not None and p.first_call.compile_s:
        build = f", report built in {fmt_seconds(p.report_build_s)}" if p.report_build_s is not None else ""
        out.append(
            f"capture cost: {fmt_seconds(p.first_call.trace_logging_s)} of trace logging in the compile call "
            f"({p.first_call.trace_logging_s / p.first_call.compile_s:.1%}){build}; none during timed runs"
        )
    roof = roofline_line(p.roofline)
    if roof:
        out.append(roof)
    out.append(f"settings: {settings_text(p)} | torch {p.settings.torch_version} on {p.settings.device}")
    out += [f"noisy: {n}" for n in p.noise]
    out += [f"note: {n}" for n in p.notes]
    if p.error:
        out.append(f"the cell raised {p.error}")
    return out


def limit_lines(r: "CompileReport") -> list[str]:
    """One line per function that hit the recompile limit: which, where, since when."""
    out = []
    for rc in r.recompiles:
        if rc.limit_hit:
            first = next((c.first_line for c in r.compiles if c.compile_id.frame_id == rc.compile_id.frame_id
                          and c.first_line is not None), None)
            where = r.where(rc.filename, first) if rc.filename else "?"
            out.append(f"RECOMPILE LIMIT HIT: {rc.shown_function or '?'} ({where}) runs eagerly, uncompiled, "
                       f"since compile {rc.compile_id}")
    return out


def loop_headline(r: "CompileReport", u) -> str:
    """``loop at In [4], line 6 unrolled 32 times: 480 of 512 ops in this graph; consider scan``."""
    what = u.suggestion.title.split(": ", 1) if u.suggestion else ["", ""]
    copies = f"unrolled {u.repeats} times" if what[0] != "nested_compile_region" else f"{u.repeats} identical layers"
    where = f"loop at {r.where(u.filename, u.lineno)}" if u.lineno is not None else "a loop"
    consider = f"; consider {what[0]}" if what[0] and u.suggestion.code else ""
    if u.suggestion and not u.suggestion.code:  # a loop in code the user does not own: nothing of theirs to rewrite
        consider = "; in code you do not own"
    if what[0] == "map":
        consider += " (its iterations are independent)"
    return f"{where} {copies}: {u.ops_in_loop} of {u.ops_total} ops in this graph{consider}"


def stop_frame(b):
    """Where Dynamo stopped for graph break ``b`` (:attr:`GraphBreak.stop`)."""
    return b.stop


def reached_from(b) -> bool:
    """Whether the user's own line that led to break ``b`` is another place than where Dynamo stopped
    (:attr:`GraphBreak.reached_from`)."""
    return b.reached_from is not None


def shared_callers(r: "CompileReport", b) -> list:
    """The user's lines that reach break ``b`` where torch stopped in the user's own function
    called from several of them (three ``Foo().attr = x`` lines reaching ``__setattr__``'s
    ``graph_break()``): its ``callers`` in the user's code, when there are two or more; else []."""
    if reached_from(b):
        return []
    from .owners import Owner

    frames = [c for c in b.callers if c.filename and r.owner(c.filename) is Owner.USER]
    return frames if len(frames) >= 2 else []


def first_line_of(r: "CompileReport", compile_id):
    c = r.compile(compile_id) if compile_id is not None else None
    return c.first_line if c is not None else None


def suggestion_lines(s, indent: str = "      ") -> list[str]:
    """A suggestion as text lines: the title, the explanation, the code indented."""
    import textwrap

    if s is None:
        return []
    if s.kind == "unknown":
        out = [f"{indent}no specific fix known"]
        out += [f"{indent}  " + ln for ln in s.explanation.splitlines() if ln.strip() and "ipycompile knows no" not in ln]
        return out
    withdrawn = s.check is not None and s.check.status == "failed"  # --verify-fixes tried it here: it failed
    out = [f"{indent}withdrawn fix: {s.title}" if withdrawn else f"{indent}fix ({s.confidence}): {s.title}"]
    for para in s.explanation.split("\n\n"):
        out += textwrap.wrap(para, 100, initial_indent=indent + "  ", subsequent_indent=indent + "  ")
    if s.check is not None:
        out += textwrap.wrap(s.check.text, 100, initial_indent=indent + "  ", subsequent_indent=indent + "    ")
        if s.check.torch_says:
            out += textwrap.wrap(f"torch, with the fix applied: {s.check.torch_says}", 100,
                                 initial_indent=indent + "  ", subsequent_indent=indent + "    ")
    if s.code and not withdrawn:
        if s.first_line is not None:
            span = f"line {s.first_line}" if s.first_line == s.last_line else f"lines {s.first_line}-{s.last_line}"
            out.append(f"{indent}  replace {span} with:")
        out += [f"{indent}  | {ln}" for ln in s.code.splitlines()]
    return out


def origin_lines(r: "CompileReport", hints: Hints = Hints()) -> list[str]:
    """Where a report read from a trace log came from, and what could not be read."""
    o = r.origin
    if o is None:
        return []
    rank = f" (rank {o.rank})" if o.rank is not None else ""
    torch = f", torch {r.torch_version}" if r.torch_version else ""
    out = [f"read from {one_line(o.path)}{rank}: {plural(o.records, 'trace event')}{torch}"]
    if o.summary:
        out.append(f"first-pass summary: {plural(sum(o.unread.values()), 'bulky event')} (generated code, "
                   f"graphs after Dynamo's, guards) not read; {hints.read_all}")
    if o.problem_count:
        first = f", e.g. {o.problems[0]}" if o.problems else ""
        out.append(f"{plural(o.problem_count, 'unreadable trace event')} skipped ({plural(o.skipped_lines, 'line')}){first}")
    return out


def _us(ms: Optional[float]) -> str:
    return f"{ms * 1e3:.1f} us"


def autotune_group_line(g: AutotuneGroup) -> str:
    """One line for the sites of one op and input shapes: how many, the winner and its time
    against the extern (cuBLAS) choice and the best Triton choice, the choices tried, and
    the time autotuning took ("cached" where torch reused timings it had)."""
    a = g.first
    n = len(g.sites)
    sites = f" x{n} sites" if n > 1 else ""
    if not a.winner:
        return f"autotune {g.op}({g.shape or 'shapes not in the trace'}){sites}: cached (its choice is in no event of this trace)"
    t = f" {_us(a.winner_ms)}" if a.winner_ms else ""
    if a.winner_kind == "extern":
        won = f"the extern {a.winner} won,{t}"
    else:
        vs = f" vs extern {_us(a.extern_ms)}" if a.extern_ms else ""
        won = f"{a.winner}{t}{vs}"
    if a.winner_kind != "triton" and a.best_triton_ms:
        won += f"; best Triton {a.best_triton} {_us(a.best_triton_ms)}"
    if len(g.winners) > 1:
        won += f" ({len(g.winners)} different winners across the sites)"
    failed = f", {len(a.failed)} failed" if a.failed else ""
    choices = f", of {a.num_choices} choices{failed}" if a.num_choices else failed
    if g.cached == n:
        took = "cached"
    elif g.cached:
        took = f"{fmt_seconds(g.tuning_s)}; {g.cached} of {n} cached"
    else:
        took = fmt_seconds(g.tuning_s)
    return f"autotune {g.op}({g.shape}){sites}: {won}{choices} ({took})"


def _gpu_lines(r: "CompileReport") -> list[str]:
    """max-autotune's winners and the CUDA-graph status, one line each."""
    out = []
    for g in group_autotuning(getattr(r, "autotuning", [])):
        out.append(autotune_group_line(g))
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


def _ddp_lines(r: "CompileReport") -> list[str]:
    splits = r.ddp_splits
    if not splits:
        return []
    where = ", ".join(f"[{cid}] into {plural(n, 'bucket subgraph')}" for cid, n in sorted(splits.items()))
    return [f"DDP split {where}: DistributedDataParallel's optimizer cut the graph at gradient-bucket "
            "boundaries so each bucket's all-reduce overlaps the backward; not graph breaks, nothing to fix "
            "(torch._dynamo.config.optimize_ddp=False compiles one graph, without that overlap)"]


def render_summary(report: "CompileReport", hints: Hints = Hints()) -> str:
    """The report as plain text: counts first, then each problem where it happened; control
    characters escaped (:func:`printable`)."""
    return printable(_summary(report, hints))


def _summary(r: "CompileReport", hints: Hints) -> str:
    lines: list[str] = []
    if r.compiled_nothing and r.origin is not None:
        return "\n".join(["ipycompile report: the trace log holds no compiles"] + origin_lines(r, hints))
    if r.compiled_nothing and r.reused_from:
        lines.append("ipycompile: reused compiled code: nothing was compiled in this run.")
        lines.append(f"The diagnosis below is of the compiled code that ran, from {r.reused_from}, which compiled it; "
                     "the profile is this run's.")
    elif r.compiled_nothing:
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
    first_pass = r.origin is not None and r.origin.summary
    head = [
        plural(len(r.compiles), "compile"),
        plural(graphs, "graph"),
        plural(r.graph_break_count, "graph break"),
        plural(len(r.recompiles), "recompile"),
        "kernels not read" if first_pass else f"{plural(len(r.kernels), 'kernel')} ({generated} generated, {extern} extern)",
        plural(len(r.failures), "failure"),
    ]
    eager = r.ran_without_compiling
    if eager:
        head.append(f"ran without compiling: {plural(len(eager), 'frame')}")
    lines.append("ipycompile report: " + ", ".join(head))
    lines += [f"** {line} **" for line in limit_lines(r)]
    lines += origin_lines(r, hints)
    if r.compile_time.total_s:
        phases = ", ".join(f"{p.name} {p.seconds:.2f}s" for p in sorted(r.compile_time.phases, key=lambda p: -p.seconds)[:4])
        when = f" in {r.reused_from}" if r.reused_from else ""
        lines.append(f"compile time{when} {r.compile_time.total_s:.2f}s" + (f" ({phases})" if phases else ""))
    lines += _profile_lines(r)
    lines += _gpu_lines(r)

    lines += _ddp_lines(r)

    if r.failures:
        lines.append("")
        lines.append("Failures:")
        for f in r.failures:
            first = f.message.strip().splitlines()[0] if f.message.strip() else ""
            fn = f" in {f.frame.function}" if f.frame.function else ""
            lines.append(f"  [{f.compile_id}] {f.type} at {r.where(f.frame.filename, f.frame.lineno)}{fn}: {first}")
            if f.frame.source_line:
                lines.append(f"      {f.frame.source_line.strip()}")
            lines += suggestion_lines(f.suggestion)
    if r.graph_breaks:
        lines.append("")
        lines.append("Graph breaks:")
        for b in r.graph_breaks:
            code = f" [{b.gb_code}]" if b.gb_code else ""
            times = f" (x{b.count})" if b.count > 1 else ""
            stop = stop_frame(b)
            fn = f" in {stop.function}" if stop.function else ""
            lines.append(f"  {r.where(stop.filename, stop.lineno)}{fn}: {b.reason}{code}{times}")
            if stop.source_line:
                lines.append(f"      {stop.source_line.strip()}")
            if reached_from(b):
                src = f": {b.frame.source_line.strip()}" if b.frame.source_line.strip() else ""
                lines.append(f"      reached from {r.where(b.frame.filename, b.frame.lineno)}{src}")
            callers = shared_callers(r, b)
            if callers:
                lines.append(f"      reached from {', '.join(r.where(c.filename, c.lineno) for c in callers)}")
            if b.suggestion is not None:
                lines += suggestion_lines(b.suggestion)
            elif b.hints:
                lines.append(f"      hint: {b.hints[0]}")
    if r.recompiles:
        lines.append("")
        lines.append("Recompiles:")
        for rc in r.recompiles:
            what = " ".join(r.readable(rc.reasons[0]).splitlines()[0].split()) if rc.reasons else "(no reason given)"
            more = f" (+{len(rc.reasons) - 1} more)" if len(rc.reasons) > 1 else ""
            limit = "  ** recompile limit hit: running eagerly **" if rc.limit_hit else ""
            at = f" ({r.where(rc.filename, first_line_of(r, rc.compile_id))})" if rc.filename else ""
            lines.append(f"  [{rc.compile_id}] {rc.shown_function}{at}: {what}{more}{limit}")
            if rc.explanation:
                lines.append(f"      {rc.explanation}")
            lines += suggestion_lines(rc.suggestion)
    if r.unrolled_loops:
        lines.append("")
        lines.append("Unrolled loops (compile time grows with the trip count; measure it with %%compile --sweep):")
        for u in r.unrolled_loops:
            lines.append(f"  [{u.compile_id}] {loop_headline(r, u)}")
            if u.source_line:
                lines.append(f"      {u.source_line.strip()}")
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
        for n in r.control_flow:
            if n.inlined_ops is not None:
                lines.append(f"  {n.op} at {r.where(n.filename, n.lineno)}: inlined by torch: {plural(n.inlined_ops, 'plain op')}")
    if r.stats.unknown or r.stats.parse_errors:
        lines.append("")
        if r.stats.unknown:
            lines.append(f"({plural(sum(r.stats.unknown.values()), 'trace event')} of unknown kinds kept as raw artifacts)")
        if r.stats.parse_errors:
            lines.append(f"({plural(sum(r.stats.parse_errors.values()), 'trace event')} could not be parsed; {hints.errors})")
    return "\n".join(lines)
