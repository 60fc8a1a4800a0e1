"""The tabs of a report's view-model: one builder per tab, each ``(report) -> list of blocks``.

Summary, Graph breaks, Recompiles, Graphs, Kernels, Control flow, Profile, Guards.
Builders only read the report; the figures are in :mod:`.figures`, source excerpts
in :mod:`.excerpts`.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import TYPE_CHECKING, Any, Optional

from ..report.model import GRAPH_STAGES, OTHER_CPU_TIME, OTHER_DEVICE_TIME, group_autotuning
from ..report.text import fmt_bytes, fmt_seconds, plural
from .phrases import ddp_lines, gpu_lines, limit_lines, loop_headline, profile_lines, roofline_line, settings_text
from ..analysis.collectives import collective_share
from ..analysis.roofline import roofline
from .blocks import Block, Choice, Code, Figure, Place, Table, Text, TreeNode
from .figures import fig_memory, fig_memory_timeline, fig_phases, fig_roofline, fig_runs
from .excerpts import internal_frame, source_excerpt

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport


def gb_url(gb_code: str) -> str:
    return f"https://meta-pytorch.github.io/compile-graph-break-site/gb/{gb_code.lower()}.html"


def place_key(filename: str, lineno) -> str:
    """The id of the source excerpt of a place, the same wherever it is built."""
    import zlib

    return f"src{zlib.crc32(filename.encode('utf-8', 'replace')):08x}-{lineno}"


def place(r: "CompileReport", filename: str, lineno, shown: bool = True) -> "Place | str":
    """A user's place as a table cell: its text, its notebook cell and line, and (``shown``:
    an excerpt of it is in this view) the key of its source excerpt; "" for no file."""
    if not filename:
        return ""
    return Place(r.where(filename, lineno), r.cell_number(filename), lineno, place_key(filename, lineno) if shown else "")


def excerpt_blocks(r: "CompileReport", frame, title: str = "") -> list[Block]:
    """The source around a frame (a :class:`~ipycompile.report.UserFrame`, or anything
    with its ``filename``, ``lineno`` and ``source_line``), as blocks: the code the
    report kept, else the local file only where it matches what torch recorded (see
    :mod:`.excerpts`)."""
    ex = source_excerpt(frame.filename, frame.lineno, frame.source_line, cells=r.sources, spans=r.source_context)
    out: list[Block] = [Code(title or r.where(frame.filename, frame.lineno), ex.code, "python",
                             key=place_key(frame.filename, frame.lineno))] if ex.code else []
    if ex.note:
        out.append(Text(ex.note, "note"))
    return out


# -- Summary --------------------------------------------------------------------
def summary_tab(r: "CompileReport") -> list[Block]:
    out: list[Block] = []
    if r.compiled_nothing and r.reused_from:
        out.append(Text(f"Reused compiled code: nothing was compiled in this run. What follows is the diagnosis of the "
                        f"compiled code that ran, from {r.reused_from}, which compiled it; the profile is this run's.",
                        "note"))
    elif r.compiled_nothing:
        p = r.profile
        if p is not None and p.reused_compiled_code:
            out.append(Text("Reused compiled code: nothing was compiled in this run.", "note"))
        else:
            out.append(Text("torch.compile compiled nothing here (compiled code was reused, or no compiled code ran).", "note"))
    out += [Text(line, "warn") for line in limit_lines(r)]
    out += [Text(line) for line in gpu_lines(r)]
    out += [Text(line, "note") for line in ddp_lines(r)]
    if r.unrolled_loops:
        out += unrolled_loops_blocks(r)
    if r.failures:
        out.append(Text(plural(len(r.failures), "failure"), "heading"))
        rows, details, heads = [], [], []
        for f in r.failures:
            first = f.message.strip().splitlines()[0] if f.message.strip() else ""
            fn = f" in {f.frame.function}" if f.frame.function else ""
            heads.append(f"[{f.compile_id}] {f.type} at {r.where(f.frame.filename, f.frame.lineno)}{fn}: {first}")
            s = f.suggestion
            fix = "" if s is None else ("no specific fix known" if s.kind == "unknown" else s.title)
            rows.append([str(f.compile_id or ""), f.type, place(r, f.frame.filename, f.frame.lineno), f.frame.function,
                         first, fix])
            d: list[Block] = [*excerpt_blocks(r, f.frame), *suggestion_blocks(s), Code("message", f.message, "text")]
            if f.traceback:
                d.append(Code("traceback", f.traceback, "text"))
            details.append(d)
        out.append(Table(["compile", "type", "where", "function", "message", "fix"], rows, details=details,
                         headlines=heads))
    eager = r.ran_without_compiling
    if eager:
        out.append(Text(f"Ran without compiling: {plural(len(eager), 'frame')} "
                        f"({', '.join(sorted({c.function for c in eager}))}). torch could not compile them (a break it "
                        "could not resume from, e.g. in a loop) and ran them as plain Python: the code ran fine, "
                        "only slower. The Graph breaks tab says why.", "note"))
    if r.compiles:
        out.append(Text(plural(len(r.compiles), "compile"), "heading"))
        rows = []
        for c in r.compiles:
            rows.append([
                str(c.compile_id),
                c.function,
                r.where(c.filename, c.first_line),
                c.status,
                "" if c.graph_op_count is None else c.graph_op_count,
                "" if c.guard_count is None else c.guard_count,
                "" if c.entire_frame_compile_s is None else round(c.entire_frame_compile_s, 4),
                _cache_text(c.cache),
            ])
        out.append(Table(["compile", "function", "where", "status", "ops", "guards", "compile s", "caches"], rows,
                         sortable=True))
    ct = r.compile_time
    if ct.phases:
        out.append(Text(f"Compile time {fmt_seconds(ct.total_s)} by phase", "heading"))
        total = ct.total_s or sum(p.seconds for p in ct.phases) or 1.0
        rows = [[p.name, round(p.seconds, 4), f"{p.seconds / total:.1%}"] for p in sorted(ct.phases, key=lambda p: -p.seconds)]
        out.append(Table(["phase", "seconds", "share"], rows, sortable=True))
        if r.autotuning and any(p.name == "Autotuning" for p in ct.phases):
            out.append(Text(_autotune_spans(r), "note"))
    if r.control_flow:
        out.append(Text("Control flow: " + ", ".join(sorted({n.op for n in r.control_flow}))))
        out += [Text(f"{n.op} at {r.where(n.filename, n.lineno)}: inlined by torch: {plural(n.inlined_ops, 'plain op')}")
                for n in r.control_flow if n.inlined_ops is not None]
    if r.torch_log:  # what %%compile kept out of the cell's output: torch's raw words, one click away
        out.append(TreeNode(f"torch's log: {plural(len(r.torch_log), 'line')} about graph breaks and recompiles, "
                            "kept out of the cell's output (the report shows them)",
                            [Code("torch's log", "\n".join(r.torch_log), "text")]))
    if r.stats.unknown:
        out.append(Text(f"{plural(sum(r.stats.unknown.values()), 'trace event')} of unknown kinds kept as raw artifacts: "
                        + ", ".join(f"{k} ({v})" for k, v in sorted(r.stats.unknown.items())), "note"))
    parsed = {k: v for k, v in r.stats.parse_errors.items() if not k.startswith("doctor:")}
    doctor = {k[len("doctor:"):]: v for k, v in r.stats.parse_errors.items() if k.startswith("doctor:")}
    if parsed:
        out.append(Text(f"{plural(sum(parsed.values()), 'trace event')} could not be parsed: "
                        + ", ".join(f"{k} ({v})" for k, v in sorted(parsed.items())), "warn"))
    if doctor:
        out.append(Text(f"{plural(sum(doctor.values()), 'doctor error')} (an answer missing, the others stand): "
                        + ", ".join(f"{k} ({v})" for k, v in sorted(doctor.items())), "warn"))
    return out


def _autotune_spans(r: "CompileReport") -> str:
    """Why the Autotuning phase and max-autotune's own total differ: two timers of two spans."""
    total = sum(a.tuning_s for a in r.autotuning)
    return (f"The Autotuning phase ({fmt_seconds(r.compile_time.phase('Autotuning'))}) is torch's compile-time timer; "
            f"the autotuned sites' own precompile and benchmark timers add up to {fmt_seconds(total)} (the Kernels "
            "tab): the candidates' timers overlap (precompilation runs in parallel) and run partly outside that "
            "phase, so the two are different spans, not one inside the other.")


def unrolled_loops_blocks(r: "CompileReport") -> list[Block]:
    """The unrolled loops the doctor found: where, how often, how much of the graph, and the fix."""
    rows, details, heads = [], [], []
    for u in r.unrolled_loops:
        heads.append(f"[{u.compile_id}] {loop_headline(r, u)}")
        rows.append([r.where(u.filename, u.lineno), u.source_line.strip(), u.repeats, u.ops_in_loop, u.ops_total,
                     str(u.compile_id or ""), u.suggestion.title.split(":", 1)[0] if u.suggestion else ""])
        d: list[Block] = excerpt_blocks(r, u)  # an UnrolledLoop has the frame's filename, lineno, source_line
        d += suggestion_blocks(u.suggestion)
        details.append(d)
    return [
        Text(f"{plural(len(r.unrolled_loops), 'unrolled loop')}: compile time grows with the trip count "
             "(measure it with %%compile --sweep)", "heading"),
        Table(["loop at", "code", "copies", "ops in loop", "ops in graph", "compile", "consider"], rows, details=details,
              headlines=heads),
    ]


def _cache_text(cache) -> str:
    parts = []
    if cache.fx_graph:
        parts.append(f"fx graph {cache.fx_graph}")
    if cache.aot_autograd:
        parts.append(f"aot autograd {cache.aot_autograd}")
    return ", ".join(parts)


# -- Graph breaks -----------------------------------------------------------------
def suggestion_blocks(s, where: str = "") -> list[Block]:
    """The doctor's suggestion under a break or failure: title, explanation, code."""
    if s is None:
        return []
    if s.kind == "unknown":
        return [Text("No specific fix known for this kind of break: torch's own explanation and hints follow.", "note")]
    span = ""
    if s.first_line is not None:
        span = f" (replaces line {s.first_line})" if s.first_line == s.last_line else \
            f" (replaces lines {s.first_line}-{s.last_line})"
    standing = s.standing  # tried on the user's cell (verified, withdrawn), or code not tried there ("to try")
    withdrawn = standing == "withdrawn"
    offered = {"verified": "Fix, verified on your cell", "to try": "To try"}.get(standing, "Suggested fix")
    out: list[Block] = [Text(f"Withdrawn fix: {s.title}" if withdrawn else
                             f"{offered} ({s.confidence} confidence): {s.title}", "heading")]
    out += [Text(para) for para in s.explanation.split("\n\n") if para.strip()]
    if s.code and not withdrawn:
        out.append(Code("suggested code" + span, s.code, "python", copy=True))
    if s.check is not None:
        out.append(Text(s.check.text, "warn" if withdrawn else "note"))
        if s.check.torch_says:
            out.append(Text(f"torch, with the fix applied: {s.check.torch_says}", "note"))
    return out


def call_path(r: "CompileReport", b) -> str:
    """The frames from the user's own line down to where Dynamo stopped, one per line."""
    stack = [f for f in b.user_stack if not internal_frame(r, f.filename) or f is b.user_stack[-1]]
    start = max((i for i, f in enumerate(stack) if (f.filename, f.lineno) == (b.frame.filename, b.frame.lineno)), default=0)
    return "\n".join(f"{r.where(f.filename, f.lineno)} in {f.function}: {f.source_line.strip()}" for f in stack[start:])


def graph_breaks_tab(r: "CompileReport") -> list[Block]:
    if not r.graph_breaks:
        return [Text("No graph breaks: each compiled function is one graph.", "note")]
    rows, details, heads = [], [], []
    for b in r.graph_breaks:
        stop = b.stop
        where = r.where(stop.filename, stop.lineno)
        callers = r.shared_callers(b)
        reached = (r.where(b.frame.filename, b.frame.lineno) if b.reached_from is not None
                   else ", ".join(r.where(c.filename, c.lineno) for c in callers))
        s = b.suggestion
        fix = "" if s is None else ("no specific fix known" if s.kind == "unknown" else s.title)
        reached_cell = place(r, b.frame.filename, b.frame.lineno) if b.reached_from is not None else reached
        rows.append([place(r, stop.filename, stop.lineno), stop.function, stop.source_line.strip(), reached_cell,
                     b.reason, b.gb_code, b.count, fix])
        fn = f" in {stop.function}" if stop.function else ""
        heads.append(f"{where}{fn}: {b.reason}" + (f" [{b.gb_code}]" if b.gb_code else "")
                     + (f" (x{b.count})" if b.count > 1 else ""))
        d: list[Block] = excerpt_blocks(r, stop, f"where torch stopped: {where}")
        if b.reached_from is not None:
            src = b.frame.source_line.strip()
            d.append(Text(f"reached from {reached}" + (f": {src}" if src else "")))
        elif callers:
            d.append(Text(f"reached from {reached}"))
        for c in callers:
            d += excerpt_blocks(r, c, f"your line that led there: {r.where(c.filename, c.lineno)}")
        if reached and not callers:
            d += excerpt_blocks(r, b.frame, f"your line that led there: {reached}")
            path = call_path(r, b)
            if path:
                d.append(Code("call path, from your line to where torch stopped", path, "text"))
        d += suggestion_blocks(s)
        if b.explanation:
            d.append(Text(f"torch: {b.explanation}"))
        for h in b.hints:
            d.append(Text(f"torch's hint: {h}", "note"))
        if b.gb_code:
            d.append(Text(f"{b.gb_code}: what it means and how to fix it", url=gb_url(b.gb_code)))
        if b.compile_ids:
            d.append(Text("Hit by compile" + ("s " if len(b.compile_ids) > 1 else " ") + ", ".join(str(c) for c in b.compile_ids)))
        details.append(d)
    return [
        Text(f"{plural(r.graph_break_count, 'graph break')} at {plural(len(r.graph_breaks), 'site')}", "heading"),
        Table(["where torch stopped", "function", "code", "reached from", "reason", "GB", "count", "fix"], rows,
              sortable=True, details=details, headlines=heads, columns_shown=[0, 2, 4, 6, 7]),
    ]


# -- Recompiles -------------------------------------------------------------------
def recompiles_tab(r: "CompileReport") -> list[Block]:
    if not r.recompiles:
        return [Text("No recompiles: no guard failed.", "note")]
    by_cid = {rc.compile_id: rc for rc in r.recompiles}
    # one code object per Dynamo frame id: its compiles are frame/0, frame/1, ...
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for c in r.compiles:
        groups.setdefault((c.compile_id.compiled_autograd_id, c.compile_id.frame_id), []).append(c)
    for rc in r.recompiles:  # a recompile whose compile the report lacks still shows
        if r.compile(rc.compile_id) is None:
            groups.setdefault((rc.compile_id.compiled_autograd_id, rc.compile_id.frame_id), []).append(rc)
    out: list[Block] = []
    for items in groups.values():
        rcs = [by_cid[i.compile_id] for i in items if i.compile_id in by_cid]
        if not rcs:
            continue
        function = next((i.function for i in items if i.function), "?")
        filename = next((i.filename for i in items if i.filename), "")
        first_line = next((i.first_line for i in items if getattr(i, "first_line", None) is not None), None)
        limit = next((rc for rc in rcs if rc.limit_hit), None)
        where = r.where(filename, first_line) if filename else "?"
        label = f"{function} ({where}): {plural(len(items), 'compile')}, {plural(len(rcs), 'recompile')}"
        if limit:
            label += ": recompile limit hit"
        blocks: list[Block] = []
        if limit:
            msg = (limit.limit_message or "").strip().splitlines()
            blocks.append(Text(f"Recompile limit hit at compile {limit.compile_id}: torch stopped compiling "
                               f"{function} ({where}) and runs it eagerly from here on"
                               + (f" ({msg[0]})" if msg else ""), "warn"))
        rows, details, heads = [], [], []
        for i in sorted(items, key=lambda i: i.compile_id):
            rc = by_cid.get(i.compile_id)
            status = getattr(i, "status", "")
            if rc is None:
                rows.append([str(i.compile_id), status, "first compile (nothing failed before it)", "", "", "", ""])
                heads.append(f"[{i.compile_id}] first compile (nothing failed before it)")
                details.append([])  # the first compile: nothing failed before it
                continue
            reasons = [r.readable(reason) for reason in rc.reasons]  # cells as In [n], line L
            why = " ".join(reasons[0].strip().splitlines()[0].split()) if reasons and reasons[0].strip() else "(no reason given)"
            if len(rc.reasons) > 1:
                why += f" (+{len(rc.reasons) - 1} more)"
            heads.append(f"[{rc.compile_id}] {why}" + (": recompile limit hit, running eagerly" if rc.limit_hit else ""))
            rows.append([str(rc.compile_id), status or ("recompile limit" if rc.limit_hit else ""), why,
                         ", ".join(str(c) for c in rc.failed_compile_ids), rc.explanation,
                         rc.suggestion.title.split(":", 1)[0] if rc.suggestion else "", "LIMIT HIT" if rc.limit_hit else ""])
            d: list[Block] = []
            if rc.explanation:
                d.append(Text(rc.explanation, "warn" if rc.limit_hit else "plain"))
            d += suggestion_blocks(rc.suggestion)
            if any(ch.failed_guard or ch.new_guard for ch in rc.changes):
                d.append(Table(["what changed", "failed guard (of the earlier compile)", f"guard of {rc.compile_id}"],
                               [[ch.text, f"{ch.failed_compile_id}: {ch.failed_guard}" if ch.failed_guard else "",
                                 ch.new_guard] for ch in rc.changes], title="The failed guard beside the new one"))
            d.append(Text(f"Compile {rc.compile_id} happened because these guards failed (torch's words):", "heading"))
            for j, reason in enumerate(reasons):
                of = f"guards of compile {rc.failed_compile_ids[j]}" if j < len(rc.failed_compile_ids) else "a guard"
                if "\n" in reason.strip():
                    d.append(Code(of, reason.strip(), "text"))
                else:
                    d.append(Text(f"{of}: {reason.strip()}"))
            if not rc.reasons:
                d.append(Text("(no reason given)"))
            if rc.limit_hit:
                d.append(Text("Recompile limit hit", "warn"))
                if rc.limit_message:
                    d.append(Code("torch's message", rc.limit_message.strip(), "text"))
            details.append(d)
        blocks.append(Table(["compile", "status", "caused by (guard failure)", "failed guards of", "what changed", "fix",
                             "limit"], rows, details=details, headlines=heads, columns_shown=[0, 2, 5]))
        out.append(TreeNode(label, blocks, [], open=True))
    return out


# -- Graphs -----------------------------------------------------------------------
def _stage_order(stage: str) -> tuple:
    return (GRAPH_STAGES.index(stage), "") if stage in GRAPH_STAGES else (len(GRAPH_STAGES), stage)


_DDP_NOTE = ("DistributedDataParallel's optimizer split this compile's graph at gradient-bucket boundaries and "
             "compiled each bucket's subgraph on its own, so each bucket's all-reduce can start during the backward: "
             "not a graph break, nothing to fix.")


def _stage_name(g) -> str:
    return f"{g.stage} {g.name}" if g.name else g.stage


def _collectives_cell(g) -> str:
    """``all_reduce ×1, all_gather ×1`` (the waits apart): the Graphs table's column."""
    return ", ".join(f"{k} \u00d7{n}" for k, n in g.collective_counts().items() if k != "wait")


def _collectives_note(g) -> Optional[Text]:
    counts = g.collective_counts()
    calls = {k: n for k, n in counts.items() if k != "wait"}
    if not calls:
        return None
    waits = counts.get("wait", 0)
    said = ", ".join(f"{k} \u00d7{n}" for k, n in calls.items())
    wait = (f"; compute that needs a result waits for it at its wait_tensor ({plural(waits, 'wait')} here)"
            if waits else "")
    return Text(f"Collectives in this graph: {said} (torch's functional collectives, run by NCCL on its own "
                f"stream{wait}, so they can overlap with the compute before it). Their device time against "
                "compute is in the Kernels tab when the cell runs with --profile-kernels.", "note")


def dumped_files_blocks(r: "CompileReport") -> list[Block]:
    """The files of generated code torch wrote whole into its trace (``dump_file``, as tlparse
    shows them): a table of their names, then each file's code, one at a time."""
    files = r.dumped_files
    if not files:
        return []
    codes = [f.code for f in files]  # each read once (a large log's files are read from the log)
    rows = [[f.name, str(f.compile_id or ""), code.count("\n") + 1 if code else 0] for f, code in zip(files, codes)]
    options: dict[str, list[Block]] = {}
    for f, code in zip(files, codes):
        key, n = f.name, 2
        while key in options:
            key = f"{f.name} ({n})"
            n += 1
        by = f" when compile {f.compile_id} traced it" if f.compile_id is not None else ""
        options[key] = [Text(f"{f.name}: generated code that exists in no file on disk; torch wrote it into its "
                             f"trace{by}"), Code(key, code, "python")]
    return [
        Text(f"Generated code torch traced: {plural(len(files), 'file')} written into its trace (dump_file), "
             "such as an FX GraphModule's forward (<eval_with_key>): the code the graphs' places name", "note"),
        Table(["file", "compile", "lines"], rows, sortable=True, title="Dumped files"),
        Choice("dumped file", options, next(iter(options))),
    ]


def graphs_tab(r: "CompileReport") -> list[Block]:
    if not r.graphs:
        return [Text("No graphs were captured.", "note"), *dumped_files_blocks(r)]
    ordered = sorted(r.graphs, key=lambda g: (g.compile_id, _stage_order(g.stage)))
    codes = [g.code for g in ordered]  # each read once (a large log's graphs are read from the log)
    with_collectives = any(_collectives_cell(g) for g in ordered)
    heads = ["compile", "stage", "ops", "lines"] + (["collectives"] if with_collectives else [])
    rows = [[str(g.compile_id), _stage_name(g), g.op_count, code.count("\n") + 1 if code else 0]
            + ([_collectives_cell(g)] if with_collectives else []) for g, code in zip(ordered, codes)]
    compiles: dict = {}
    for c in r.compiles:  # as r.compile(), once for all the graphs
        compiles.setdefault(c.compile_id, c)
    options: dict[str, list[Block]] = {}
    for g, code in zip(ordered, codes):
        key = f"{g.compile_id} · {_stage_name(g)}"
        n = 2
        while key in options:  # two graphs of one stage (e.g. several pre_grad passes)
            key = f"{g.compile_id} · {g.stage} ({n})"
            n += 1
        c = compiles.get(g.compile_id)
        fn = f" of {c.function}" if c and c.function else ""
        loops = [u for u in r.unrolled_loops if u.compile_id == g.compile_id] if g.stage == "dynamo" else []
        ddp = [Text(_DDP_NOTE, "note")] if g.stage in ("ddp_split", "ddp_bucket") else []
        coll = _collectives_note(g)
        options[key] = [
            Text(f"{_stage_name(g)} graph of compile {g.compile_id}{fn}: {plural(g.op_count, 'op')}"),
            *ddp,
            *([coll] if coll else []),
            *(Text(f"{loop_headline(r, u)} (Summary tab: the fix)", "warn") for u in loops),
            Code(key, code, "python"),
        ]
    default = next((k for k, g in zip(options, ordered) if g.stage == "dynamo"), None)
    return [
        Table(heads, rows, sortable=True, title="Graphs"),
        Choice("compile id · stage", options, default),
        *dumped_files_blocks(r),
    ]


# -- Kernels ----------------------------------------------------------------------
def kernels_tab(r: "CompileReport") -> list[Block]:
    times = r.profile.kernels.times if r.profile is not None else []
    if not r.kernels and not times:
        return [Text("No kernels: nothing went through Inductor (or its output was not captured).", "note")]
    timed = {(t.kernel, str(t.compile_id or ""), t.graph_stage): t for t in times if t.kernel}
    roof = roofline(r) if times else None
    roofs = {id(x.time): x for x in roof.rows} if roof is not None else {}
    rows, details = [], []
    for k in r.kernels:
        us = k.info.get("compile_time_us")
        ms = round(us / 1e3, 2) if isinstance(us, (int, float)) else ""
        rows.append([k.name, k.backend, f"collective: {k.collective}" if k.collective else k.kind, ", ".join(k.aten_ops), k.launches, ms,
                     str(k.compile_id or ""), k.graph_stage, _user_line(r, k)])
        d: list[Block] = []
        t = timed.pop((k.name, str(k.compile_id or ""), k.graph_stage), None)
        if times:
            rows[-1][4:4] = _time_cells(t)
        if times:
            rows[-1][6:6] = _roof_cells(roofs.get(id(t)) if t is not None else None)
        if t is not None:
            d.append(Text(f"profiled: {plural(t.calls, 'kernel call')} in {plural(r.profile.kernels.calls, 'call')} "
                          f"of the cell, {fmt_seconds(t.total_s)} in all"))
            d.extend(_roof_text(roofs.get(id(t))))
        info = {key: v for key, v in k.info.items() if key != "compile_time_us"}
        if info:
            d.append(Text("; ".join(f"{key}: {v}" for key, v in info.items())))
        if k.user_lines:
            how = {"provenance": "torch's kernel provenance", "nodes": "its FX nodes' recorded stack",
                   "ops": "approximate: lines of its graph that run its ATen ops"}.get(k.user_lines_from, "")
            d.append(Text(f"user source ({how}):", "heading"))
            for f in k.user_lines:
                d.append(Text(f"{r.where(f.filename, f.lineno)}: {f.source_line.strip()}"))
        if k.source_nodes:
            d.append(Text("from FX nodes: " + ", ".join(k.source_nodes)))
        if k.source:
            d.append(Code(k.name, k.source, "cpp" if k.backend == "cpp" else "python"))
        else:
            d.append(Text("An extern call: Inductor launches a library kernel, no generated source." if k.backend == "extern"
                          else "No source captured.", "note"))
        details.append(d)
    columns = ["kernel", "backend", "kind", "fused ATen ops", "launches", "compile ms", "compile", "stage", "user line"]
    counts = Counter((k.backend, k.kind) for k in r.kernels)
    by = ", ".join(f"{n} {b} {kd}" if b != kd else f"{n} {b}" for (b, kd), n in sorted(counts.items()))
    out: list[Block] = [Text(f"{plural(len(r.kernels), 'kernel')}: {by}" if r.kernels
                             else "No kernels compiled in this run (compiled code was reused)", "heading")]
    if times:
        p = r.profile
        what = "device" if p.kernels.device == "cuda" else "CPU"
        columns[4:4] = [f"{what} time (us/call)", "share %", "MB/launch", "GFLOP/launch", "GB/s", "% peak BW",
                        "TFLOP/s", "% peak FLOP/s", "verdict"]
        for t in times:  # time no kernel row holds: the other time, kernels this report lacks
            if (t.kernel, str(t.compile_id or ""), t.graph_stage) in timed or not t.kernel:
                rows.append([t.name, "", "", "", *_time_cells(t), *_roof_cells(roofs.get(id(t))), t.calls or "", "",
                             str(t.compile_id or ""), t.graph_stage, ""])
                details.append([Text(_untimed_note(t, what), "note"), *_roof_text(roofs.get(id(t)))])
        order = sorted(range(len(rows)), key=lambda i: -(rows[i][4] or 0))
        rows, details = [rows[i] for i in order], [details[i] for i in order]
        total = sum(t.total_s for t in times) / max(p.kernels.calls, 1)
        out.append(Text(f"{what} time per kernel over {plural(p.kernels.calls, 'profiled call')} after the timed "
                        f"runs: {fmt_seconds(total)} per call in all ("
                        + ("all device time" if what == "device" else "wall time of the calls") + "), longest first"))
        coll = collective_share(times)
        if coll is not None:
            out.append(Text(coll.describe()))
    # by default: the kernel, its backend, its time and verdict when profiled, and the user's line; the rest on demand
    shown = ["kernel", "backend", "kind", "launches", "user line"] + (
        [columns[4], "share %", "verdict"] if times else ["compile ms"])
    out.append(Table(columns, rows, sortable=True, details=details, columns_shown=[columns.index(c) for c in shown]))
    if roof is not None:
        out.extend(roofline_blocks(r, roof))
    if r.autotuning:
        out.extend(autotune_blocks(r))
    return out


def _roof_cells(x) -> list[Any]:
    """MB and GFLOP per launch, GB/s, % of peak bandwidth, TFLOP/s, % of peak FLOP/s, verdict."""
    if x is None or x.bytes_per_launch is None:
        return ["", "", "", "", "", "", ""]
    sig = lambda v: float(f"{v:.3g}") if v is not None else ""  # noqa: E731  (three significant figures)
    return [sig(x.bytes_per_launch / 1e6), _flops_cell(x.flops_per_launch, 1e9), sig(x.bytes_s / 1e9),
            sig(x.bw_pct), _flops_cell(x.flops_s, 1e12), sig(x.flops_pct), x.verdict]


def _flops_cell(v, scale: float):
    """A FLOPs figure in ``scale`` units to three significant figures, or "—" where no FLOPs were
    counted (pointwise and reduction kernels: only matmuls, convolutions and GEMM templates are),
    rather than a 0.0 that reads as a measurement."""
    return float(f"{v / scale:.3g}") if v else "—"


def _roof_text(x) -> list[Block]:
    if x is None or not x.how:
        return []
    out: list[Block] = [Text(f"bytes and FLOPs: {x.how}" + (f" ({x.dtype})" if x.dtype else ""))]
    if x.verdict:
        out.append(Text(f"{x.verdict}: {x.roof_fraction:.0%} of the roof at intensity "
                        f"{x.intensity or 0:.2f} FLOP/byte" + (" (near the roof)" if x.near_roof else "")))
    return out


def roofline_blocks(r: "CompileReport", roof) -> list[Block]:
    """The roofline's line (where the kernel time goes) and its figure, the longest kernels labelled with their name."""
    out: list[Block] = []
    line = roofline_line(roof.shares)
    if line:
        out.append(Text(line))
    if roof.peak is None:
        out.append(Text(f"No verdicts: the peak of {roof.device or 'this device'} is unknown "
                        "(ipycompile/analysis/device_peaks.py lists the devices it knows); bytes and FLOPs are shown.", "note"))
    else:
        out.append(Text(f"Peaks ({roof.peak.name}, datasheet, dense): HBM {roof.peak.dram_bytes_s / 1e12:.2f} TB/s, "
                        f"{roof.peak.flops_for('bfloat16') / 1e12:.0f} TFLOP/s bf16/fp16, "
                        f"{roof.peak.flops_for('float32') / 1e12:.0f} fp32; source {roof.peak.source}", "note"))
    if any(x.bytes_s is not None for x in roof.rows):
        out.append(Figure("Roofline (--profile-kernels)", lambda: fig_roofline(roof)))
    return out


def _user_line(r: "CompileReport", k) -> "Place | str":
    """The first user line a kernel computes, as ``In [4], line 7: attn = q @ k...`` (and how many more),
    linked to its cell and line."""
    if not k.user_lines:
        return ""
    f = k.user_lines[0]
    more = f" (+{len(k.user_lines) - 1})" if len(k.user_lines) > 1 else ""
    approx = "~ " if k.user_lines_from == "ops" else ""
    return Place(f"{approx}{r.where(f.filename, f.lineno)}: {f.source_line.strip()[:60]}{more}",
                 r.cell_number(f.filename), f.lineno)


def _ms(v) -> str:
    return "" if v is None else ("failed" if v == float("inf") else f"{v * 1e3:.1f}")


def autotune_blocks(r: "CompileReport") -> list[Block]:
    """max-autotune, one row per op and input shapes (a model's repeated layers are one row):
    how many sites, how many of them torch took from its autotune cache, the candidates, the
    winner and its configuration against the extern (cuBLAS) choice and the best Triton
    choice, and the time spent precompiling and benchmarking; each site in the details."""
    groups = group_autotuning(r.autotuning)
    rows, details = [], []
    for g in groups:
        a = g.first
        vs = ""
        if a.extern_ms and a.winner_ms:
            vs = f"{a.extern_ms / a.winner_ms:.2f}x" if a.winner_kind != "extern" else "(extern won)"
        tri = a.best_triton_time_ms
        took = "cached" if g.cached == len(g.sites) else round(g.tuning_s, 2)
        rows.append([a.op, g.shape, g.dtypes.replace("torch.", ""), len(g.sites), g.cached,
                     a.num_choices if a.num_choices is not None else "",
                     f"{a.winner} ({a.winner_kind})" if a.winner_kind else (a.winner or "cached"), _ms(a.winner_ms),
                     _ms(a.extern_ms), vs, _ms(tri), took,
                     ", ".join(dict.fromkeys(x.kernel for x in g.sites if x.kernel)),
                     ", ".join(dict.fromkeys(str(x.compile_id or "") for x in g.sites))])
        d: list[Block] = []
        if len(g.winners) > 1:
            d.append(Text(f"The sites chose {len(g.winners)} different winners: " + "; ".join(g.winners), "warn"))
        if a.winner_desc:
            d.append(Text(f"winner's configuration: {a.winner_desc}"))
        if a.best_triton and a.winner_kind != "triton":
            d.append(Text(f"best Triton choice: {a.best_triton} ({_ms(a.best_triton_ms)} us)"))
        if a.runner_up:
            d.append(Text(f"runner-up: {a.runner_up} ({_ms(a.runner_up_ms)} us)"))
        if a.failed:
            d.append(Text(f"{len(a.failed)} of the {a.num_choices or '?'} choices failed (torch's words): "
                          + "; ".join(a.failed), "note"))
        if len(g.sites) > 1 or g.cached:
            d.append(Table(["site", "compile", "winner", "us", "precompile s", "benchmark s", "kernel"],
                           [[i + 1, str(x.compile_id or ""), x.winner or "", _ms(x.winner_ms),
                             round(x.precompile_s, 3) if x.precompile_s is not None else "",
                             "cached" if x.cached else (round(x.benchmark_s, 2) if x.benchmark_s is not None else ""),
                             x.kernel] for i, x in enumerate(g.sites)],
                           title="the sites (cached: torch reused the timings of an earlier site of these shapes, "
                                 "or its on-disk autotune cache, and benchmarked nothing)"))
        if a.choices:
            d.append(Table(["choice", "kind", "us", "vs winner", "configuration"],
                           [[c.name, c.kind, _ms(c.time_ms),
                             f"{a.winner_ms / c.time_ms:.0%}" if a.winner_ms and c.time_ms and c.time_ms != float("inf") else "",
                             c.description] for c in a.choices], title="every candidate, fastest first"))
        elif "feedback" not in a.source:
            d.append(Text("Only torch's summary of this op was captured (the trace's autotune_choices_stats): "
                          "every candidate's time comes from a live run.", "note"))
        details.append(d)
    total = sum(a.tuning_s for a in r.autotuning)
    cached = sum(a.cached for a in r.autotuning)
    sites = f"{plural(len(r.autotuning), 'site')} in {plural(len(groups), 'group')} of op and input shapes"
    if cached:
        sites += f", {cached} cached"
    head = Text(f"max-autotune: {sites}, {fmt_seconds(total)} precompiling and "
                "benchmarking candidates (the sites' own timers, summed)", "heading")
    cols = ["op", "input shapes", "dtypes", "sites", "cached", "choices", "winner", "winner us", "extern us",
            "vs extern", "best Triton us", "autotune s", "kernels", "compiles"]
    shown = ["op", "input shapes", "sites", "winner", "winner us", "vs extern", "autotune s"]
    return [head, Table(cols, rows, sortable=True, details=details, columns_shown=[cols.index(c) for c in shown])]


def _time_cells(t) -> list[Any]:
    """The time per call (us) and share (%) cells of a kernel's row; blank when it was not seen."""
    if t is None:
        return ["", ""]
    return [round(t.per_call_s * 1e6, 2), round(t.share * 100, 1)]


def _untimed_note(t, what: str) -> str:
    if t.name == OTHER_DEVICE_TIME:
        if t.parts:  # what it was, largest first
            parts = sorted(t.parts.items(), key=lambda kv: -kv[1])
            return "Device time in no kernel of this report: " + "; ".join(
                f"{cause} {100 * s / t.total_s:.0f} %" if t.total_s else cause for cause, s in parts) + "."
        return ("Device time in no kernel of this report: kernels of eager code (outside the compiled graphs), "
                "library kernels launched where no extern kernel of the report is, copies and memsets.")
    if t.name == OTHER_CPU_TIME:
        return ("CPU time of the calls in no kernel: the compiled code's Python wrapper, guards, allocation, "
                "and eager code outside the compiled graphs.")
    if t.collective:
        return (f"An NCCL kernel ({t.collective}) launched outside the compiled code (e.g. DDP's gradient "
                "all-reduce, FSDP's parameter gathers), on NCCL's own stream.")
    return (f"A kernel the profiler saw ({what} time) that this report does not hold: its compiled code was "
            "reused, so this run did not capture its compile.")


# -- Control flow -----------------------------------------------------------------
def _cf_node(node, r: "CompileReport") -> TreeNode:
    where = f" (compile {node.compile_id}" + (f", node {node.node_name})" if node.node_name else ")") if node.compile_id else ""
    blocks: list[Block] = []
    if node.inlined_ops is not None:
        at = f" at {r.where(node.filename, node.lineno)}" if node.filename else ""
        blocks.append(Text(f"You called {node.op}{at}, but torch traced it into plain ops: there is no {node.op} "
                           f"higher-order op in the graph, and its {plural(node.inlined_ops, 'op')} stand in the graph "
                           "(e.g. associative_scan with combine_mode='generic').", "note"))
        where = f" -- inlined by torch: {plural(node.inlined_ops, 'plain op')}{where}"
    if node.operands:
        blocks.append(Text(f"operands: {node.operands}"))
    if node.source_line:
        blocks.append(Code("source", node.source_line, "python"))
    placed: set[int] = set()
    subs = []
    for s in node.subgraphs:
        kids = []
        for i, c in enumerate(node.children):  # a nested op sits in the subgraph whose code calls it
            if i not in placed and c.node_name and s.code and f"{c.node_name} =" in s.code:
                kids.append(_cf_node(c, r))
                placed.add(i)
        subs.append(TreeNode(f"{s.role or 'subgraph'}: {s.name} ({plural(s.op_count, 'op')})",
                             [Code(s.name, s.code, "python")] if s.code else [], kids))
    rest = [_cf_node(c, r) for i, c in enumerate(node.children) if i not in placed]
    return TreeNode(f"{node.op}{where}", blocks, subs + rest)


def control_flow_tab(r: "CompileReport") -> list[Block]:
    if not r.control_flow:
        return [Text("No higher-order control-flow ops (cond, while_loop, scan, map, ...) in the graphs.", "note")]
    ops = Counter()

    def walk(ns):
        for n in ns:
            ops[n.op] += 1
            walk(n.children)

    walk(r.control_flow)
    head = Text("Higher-order ops: " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())), "heading")
    return [head, *(_cf_node(n, r) for n in r.control_flow)]


# -- Profile ----------------------------------------------------------------------
def profile_tab(r: "CompileReport") -> list[Block]:
    out: list[Block] = []
    ct = r.compile_time
    p = r.profile
    if ct.events or ct.phases:
        out.append(Figure("Compile time by phase", lambda: fig_phases(r)))
    if r.autotuning:
        parts = [f"{a.op} {a.shape}: {fmt_seconds(a.precompile_s or 0)} precompiling + {fmt_seconds(a.benchmark_s or 0)} "
                 f"benchmarking {a.num_choices or '?'} choices" for a in r.autotuning]
        out.append(Text(f"Autotuning by site (the sites' own timers): " + "; ".join(parts)
                        + " (the Kernels tab has the choices)"))
        if any(p.name == "Autotuning" for p in ct.phases):
            out.append(Text(_autotune_spans(r), "note"))
    if r.cudagraphs:
        out.extend(cudagraph_blocks(r))
    if p is None:
        if not out:
            return [Text("No compile-time events and no profile (run the cell with %%compile for one).", "note")]
        out.append(Text("No run profile: run the cell with %%compile (or ipycompile.run_cell) for run times and memory.", "note"))
        return out
    out = [Text(line, "warn" if line.startswith(("the cell raised", "noisy:")) else "plain")
           for line in profile_lines(r)] + out
    if p.steady.run_times_s:
        out.append(Figure("Run-time distribution", lambda: fig_runs(r)))
    if p.peak_device_bytes is not None or p.peak_host_bytes is not None:
        out.append(Figure("Peak memory", lambda: fig_memory(r)))
    if p.memory.timelines:
        out.append(Figure("CUDA memory over the call (--memory-timeline)", lambda: fig_memory_timeline(r)))
        out.extend(_memory_tables(r))
    out.append(Table(["field", "value"], _profile_rows(p), title="Profile"))
    return out


def _memory_tables(r: "CompileReport") -> list[Block]:
    out: list[Block] = []
    for tl in r.profile.memory.timelines:
        rows, details = [], []
        for a in tl.top_at_peak:
            line = f"{r.where(a.frame.filename, a.frame.lineno)}: {a.frame.source_line.strip()}" if a.frame.filename else ""
            rows.append([fmt_bytes(a.size_bytes), line, a.where, ", ".join(a.source_nodes)])
            details.append([Code("allocation stack (innermost first)",
                                 "\n".join(f"{f.filename}:{f.lineno} in {f.function}: {f.source_line}" for f in a.stack),
                                 "text")] if a.stack else [])
        check = ""
        if tl.allocator_peak_bytes is not None:
            check = ("; the allocator's own peak counter agrees" if tl.allocator_peak_bytes == tl.peak_bytes
                     else f"; the allocator's own peak counter says {fmt_bytes(tl.allocator_peak_bytes)}")
        title = (f"{tl.label}: largest of the {tl.live_at_peak} blocks live at the peak ({fmt_bytes(tl.peak_bytes)}; "
                 f"{tl.allocations} allocations in the call{check})")
        out.append(Table(["size", "user line", "allocated in", "FX nodes"], rows, details=details, title=title))
    return out


def cudagraph_blocks(r: "CompileReport") -> list[Block]:
    """CUDA graphs per compile: recorded or skipped, torch's reason, the recordings."""
    rows, details = [], []
    for c in r.cudagraphs:
        culprit = c.culprit
        if c.culprit_frame.filename:
            culprit = f"{r.where(c.culprit_frame.filename, c.culprit_frame.lineno)}: {c.culprit_frame.source_line.strip()}"
        rows.append([str(c.compile_id or ""), c.status, c.reason, culprit, c.recordings, c.rerecordings,
                     fmt_seconds(c.recording_s) if c.recording_s else ""])
        d: list[Block] = []
        if c.detail:
            d.append(Code("torch's message", c.detail, "text"))
        if c.functions:
            d.append(Text("recordings per function: " + ", ".join(f"{k}: {v}" for k, v in c.functions.items())))
        for why in c.rerecord_reasons:
            d.append(Text(f"re-recorded: {why}", "note"))
        for n in c.notes:
            d.append(Text(n, "note"))
        details.append(d)
    skipped = sum(1 for c in r.cudagraphs if "skipped" in c.status)
    head = Text(f"CUDA graphs: {plural(len(r.cudagraphs), 'compile')}, {skipped} skipped", "warn" if skipped else "heading")
    return [head, Table(["compile", "status", "reason (torch's words)", "input / op / line", "recordings",
                         "re-recordings", "recording time"], rows, details=details)]


def _profile_rows(p) -> list[list[Any]]:
    rows: list[list[Any]] = []

    def row(name, value):
        if value is not None and value != "" and value != [] and value != {}:
            rows.append([name, value])

    row("first call (compile + run), net of the capture", fmt_seconds(p.first_call.compile_s) if p.first_call.compile_s is not None else None)
    row("first call, wall time", fmt_seconds(p.first_call.compile_wall_s) if p.first_call.compile_wall_s is not None else None)
    row("run time (median)", fmt_seconds(p.steady.run_median_s) if p.steady.run_median_s is not None else None)
    row("run time IQR", fmt_seconds(p.steady.run_iqr_s) if p.steady.run_iqr_s is not None else None)
    row("run time min / max", f"{fmt_seconds(p.steady.run_min_s)} / {fmt_seconds(p.steady.run_max_s)}" if p.steady.run_min_s is not None else None)
    row("device time (median)", fmt_seconds(p.steady.device_median_s) if p.steady.device_median_s is not None else None)
    row("latency (median)", fmt_seconds(p.steady.latency_median_s) if p.steady.latency_median_s is not None else None)
    row("timing method", p.steady.timing_method)
    row("runs", f"{p.steady.runs} after {p.steady.warmup} warm-up" + (" (auto)" if p.steady.auto_runs else ""))
    row("blocks dropped (torch compiled or recorded in them)", p.steady.run_dropped_blocks or None)
    row("peak device memory, compile", fmt_bytes(p.first_call.peak_device_bytes) if p.first_call.peak_device_bytes is not None else None)
    row("peak device memory, steady state", fmt_bytes(p.steady.peak_device_bytes) if p.steady.peak_device_bytes is not None else None)
    row("peak host memory, compile", fmt_bytes(p.first_call.peak_host_bytes) if p.first_call.peak_host_bytes is not None else None)
    row("peak host memory, steady state", fmt_bytes(p.steady.peak_host_bytes) if p.steady.peak_host_bytes is not None else None)
    row("host memory added by the cell (its peak RSS over the process's before it)",
        fmt_bytes(p.peak_host_added_bytes) if p.peak_host_added_bytes is not None else None)
    row("host memory method", p.memory.host_method)
    e = p.eager
    if e is not None:
        row("eager run time (median)", fmt_seconds(e.run_median_s) if e.run_median_s is not None else None)
        row("eager device time (median)", fmt_seconds(e.device_median_s) if e.device_median_s is not None else None)
        row("eager latency (median)", fmt_seconds(e.latency_median_s) if e.latency_median_s is not None else None)
        row("speedup vs eager", f"{e.speedup:.2f}x" if e.speedup is not None else None)
        row("break-even", f"after {e.break_even_calls} calls" if e.break_even_calls is not None else "never (compiled is not faster)")
        row("memory vs eager", f"{e.memory_ratio:.2f}x" if e.memory_ratio is not None else None)
        row("eager peak device memory", fmt_bytes(e.peak_device_bytes) if e.peak_device_bytes is not None else None)
        row("eager peak host memory", fmt_bytes(e.peak_host_bytes) if e.peak_host_bytes is not None else None)
        c = e.check
        if c is not None:
            row("outputs", "match eager" if c.match else f"DIFFER from eager ({c.message})")
            row("max abs diff", f"{c.max_abs_diff:.3g}" if c.max_abs_diff is not None else None)
            row("output check method", c.method)
            if c.compiled_error is not None:  # a saved report may lack the others (left out, or null)
                g3 = lambda v: "?" if v is None else f"{v:.3g}"  # noqa: E731
                allowed = f" (allowed {g3(c.allowed_error)})" if c.allowed_error is not None else ""
                row("RMSE vs float64", f"compiled {g3(c.compiled_error)}, eager {g3(c.eager_error)}{allowed}")
            for line in c.leaves[:8]:
                row("output check", line)
    if p.kernels.times:
        what = "device" if p.kernels.device == "cuda" else "CPU"
        row("kernel profile", f"{plural(p.kernels.calls, 'call')} under torch.profiler after the timed runs: "
                              f"{what} time per kernel in the Kernels tab")
    row("caches", ", ".join(f"{k} {v}" for k, v in p.caches.items()))
    row("reused compiled code", "yes" if p.reused_compiled_code else None)
    row("one-time start-up (not in first call)", fmt_seconds(p.first_call.one_time_s) if p.first_call.one_time_s is not None else None)
    row("trace logging in first call (the capture's cost, torch's tally)", fmt_seconds(p.first_call.trace_logging_s) if p.first_call.trace_logging_s is not None else None)
    row("report build", fmt_seconds(p.report_build_s) if p.report_build_s is not None else None)
    row("settings", settings_text(p))
    row("torch", p.settings.torch_version)
    row("device", p.settings.device)
    row("label", p.settings.label)
    row("sweep point", ", ".join(f"{k}={v!r}" for k, v in p.settings.params.items()) if p.settings.params else None)
    for n in p.notes:
        row("note", n)
    row("error", p.error)
    return rows


# -- Guards -----------------------------------------------------------------------
def guards_tab(r: "CompileReport") -> list[Block]:
    if not r.guards:
        return [Text("No guards were captured.", "note")]
    ordered = sorted(r.guards, key=lambda g: g.compile_id)
    rows = []
    for g in ordered:
        c = r.compile(g.compile_id)
        rows.append([str(g.compile_id), c.function if c else "", g.count])
    out: list[Block] = [Table(["compile", "function", "guards"], rows, sortable=True, title="Guards per compile")]
    for g in ordered:
        out.append(Code(f"compile {g.compile_id}: {plural(g.count, 'guard')}", g.tree, "text"))
    return out
