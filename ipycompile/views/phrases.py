"""The sentences the report's view says in more than one place, each written once.

The tab builders (:mod:`.tabs`), the first screen (:mod:`.first_screen`) and the view
model (:mod:`.viewmodel`) put these into blocks; the three renderers (text, static HTML,
widget) only lay the blocks out. Formatting of numbers and units is
:mod:`ipycompile.report.text`'s (``fmt_seconds``, ``fmt_bytes``, ``plural``); queries on
the report (where a break stopped, a compile's first line) are the report's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from ..report.model import AutotuneGroup, group_autotuning
from ..report.text import fmt_bytes, fmt_seconds, one_line, plural

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["Hints", "CLI_HINTS", "settings_text", "roofline_line", "profile_lines", "limit_lines", "loop_headline",
           "origin_lines", "autotune_group_line", "gpu_lines", "ddp_lines"]


class Hints(NamedTuple):
    """How the view tells the reader to get more, in the words of where it is shown (the
    Python API by default; the command line passes :data:`CLI_HINTS`)."""

    read_all: str = "load without summary=True for everything"
    errors: str = "see report.stats.errors"


CLI_HINTS = Hints(read_all="run again with --full for everything", errors="--json writes them, in stats.errors")


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


def profile_lines(r: "CompileReport") -> list[str]:
    """The run's profile in short, one verdict a line (the Profile tab opens with them; its
    table has every field)."""
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
            out.append(f"Recompile limit hit: {rc.shown_function or '?'} ({where}) runs eagerly, uncompiled, "
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


def log_change(o) -> str:
    """How the log a report was read from has changed in size since (a job still writing it, or a
    log cut short or replaced), in words; "" when it has not, or is not on this machine."""
    try:
        size = os.stat(o.path).st_size if o.path and o.size_bytes else None
    except (OSError, ValueError):
        return ""
    if size is None or size == o.size_bytes:
        return ""
    if size > o.size_bytes:
        return (f"the log grew by {size - o.size_bytes:,} bytes since it was read (a job still writing it?): "
                f"this report is of the {o.size_bytes:,} bytes read; read it again for the rest")
    return (f"the log is {o.size_bytes - size:,} bytes shorter than when it was read (cut short or replaced): "
            "text no longer in it is marked as not shown")


def origin_lines(r: "CompileReport", hints: Hints = Hints()) -> list[str]:
    """Where a report read from a trace log came from, and what could not be read."""
    o = r.origin
    if o is None:
        return []
    rank = f" (rank {o.rank})" if o.rank is not None else ""
    torch = f", torch {r.torch_version}" if r.torch_version else ""
    out = [f"read from {one_line(o.path)}{rank}: {plural(o.records, 'trace event')}{torch}"]
    changed = log_change(o)
    if changed:
        out.append(changed)
    if o.summary:
        out.append(f"first-pass summary: {plural(sum(o.unread.values()), 'bulky event')} (generated code, "
                   f"graphs after Dynamo's, guards) not read; kernels not read; {hints.read_all}")
    if o.problem_count:
        first = f", e.g. {o.problems[0]}" if o.problems else ""
        out.append(f"{plural(o.problem_count, 'unreadable trace event')} skipped ({plural(o.skipped_lines, 'line')}){first}")
    parsed = {k: v for k, v in r.stats.parse_errors.items() if not k.startswith("doctor:")}
    doctor = sum(v for k, v in r.stats.parse_errors.items() if k.startswith("doctor:"))
    if parsed:
        out.append(f"{plural(sum(parsed.values()), 'trace event')} could not be parsed; {hints.errors}")
    if doctor:
        out.append(f"{plural(doctor, 'doctor error')}: an answer the doctor could not give is missing, the others "
                   f"stand; {hints.errors}")
    return out


def _us(ms) -> str:
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


def gpu_lines(r: "CompileReport") -> list[str]:
    """max-autotune's winners and the CUDA-graph status, one line each."""
    out = [autotune_group_line(g) for g in group_autotuning(getattr(r, "autotuning", []))]
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


def ddp_lines(r: "CompileReport") -> list[str]:
    """DDP's split of graphs at gradient buckets, said once: not graph breaks."""
    splits = r.ddp_splits
    if not splits:
        return []
    where = ", ".join(f"[{cid}] into {plural(n, 'bucket subgraph')}" for cid, n in sorted(splits.items()))
    return [f"DDP split {where}: DistributedDataParallel's optimizer cut the graph at gradient-bucket "
            "boundaries so each bucket's all-reduce overlaps the backward; not graph breaks, nothing to fix "
            "(torch._dynamo.config.optimize_ddp=False compiles one graph, without that overlap)"]
