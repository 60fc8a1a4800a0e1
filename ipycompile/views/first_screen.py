"""The first screen of a report: what is wrong, what to do, ranked by cost, then the headline numbers.

Every rendering of a report (text, static HTML, the widget) opens with this, built once
here as plain data (:class:`Problem` and :class:`~.blocks.Chip`), so the three say the
same thing in the same order:

1. **Problems**, most costly first: a run in which torch compiled nothing, or ran most of the
   user's code eagerly (the doctor's ``eager_run``: where torch gave up, why, and the fix that
   compiles the model, such as ``DDP(torch.compile(model))``), then compiled code that computes something else than eager
   (the doctor's ``eager_differences``: a cache torch ignores, a generator it consumes), a
   failed compile or outputs that differ from eager (wrong results cost more than slow ones), then graph breaks and recompiles ranked
   together by the calls they cost and the time (a break by the calls that hit it, breaks that one
   answer's code removes from one user line as one problem with their count, a
   function's recompiles by their number and their compile time), then unrolled loops,
   then a slowdown against eager, then a host-bound verdict. Each names the user's line
   (where the break happened, not the ``def`` line) and the doctor's fix.
2. **Headline numbers**: compile time, run time, speedup with its interval, memory.

Torch's internals (compile ids, guard counts, resume-function names) are not here: the
tabs hold them. Only the report's records are read (schema 2's records, not the flat
names of schema 1); nothing is computed that the report and the doctor did not say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..report.text import fmt_bytes, fmt_seconds, plural
from .blocks import Chip, Place

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["Problem", "problems", "headline", "stop", "user_line", "fix_label"]


@dataclass
class Problem:
    """One thing wrong, with what it costs and what to do.

    ``kind``: ``"eager_run"``, ``"semantics"``, ``"failure"``, ``"outputs"``, ``"graph_break"``, ``"recompile"``,
    ``"unrolled_loop"``, ``"slowdown"``, ``"host_bound"``. ``where`` is the user's line as
    the user knows it (``In [4], line 13``), ``code`` that line's source; ``filename`` and
    ``lineno`` the same place, for links. ``fix`` is the doctor's fix title ("" when none),
    ``fix_code`` its code, ``fix_label`` how it is offered (:func:`fix_label`: "Fix" only where it
    was verified on the user's cell or has no code, "To try" for code that was not), ``check``
    what trying it on the user's cell showed (or that it is being tried), ``note`` torch's own
    hint when the doctor has no fix (or a fix withdrawn, in torch's words). ``tab``
    is the key of the tab with every detail. ``calls`` and ``seconds`` rank it."""

    kind: str
    title: str
    cost: str = ""
    where: str = ""
    code: str = ""
    fix: str = ""
    fix_code: str = ""
    fix_label: str = ""
    check: str = ""
    confidence: str = ""
    note: str = ""
    tab: str = ""
    filename: str = ""
    lineno: Optional[int] = None
    calls: int = 0
    seconds: float = 0.0
    severe: bool = True  # shown as a warning (False: a verdict to consider)
    place: Optional[Place] = None  # ``where`` as a link: its notebook cell and line, its source excerpt in the tabs


def stop(b):
    """Where Dynamo stopped for graph break ``b`` (:attr:`ipycompile.report.GraphBreak.stop`)."""
    return b.stop


def user_line(r: "CompileReport", b):
    """The user's own line for break ``b``: the line in the user's code that breaks (its
    ``frame``, the user's line that led to the break), else where torch stopped."""
    if b.frame.filename:
        return b.frame
    return stop(b)


#: how a suggestion is offered on the first screen, by its :attr:`~ipycompile.report.Suggestion.standing`
FIX_LABELS = {"verified": "Fix", "advice": "Fix", "to try": "To try"}


def fix_label(s) -> str:
    """"Fix" for a suggestion verified on the user's cell or one without code, "To try" for code
    that was not tried on this cell (never shown as a fix), "" for one withdrawn or unknown."""
    return FIX_LABELS.get(s.standing, "") if s is not None else ""


def _fix(p: Problem, s, pending: bool = False) -> None:
    if s is None:
        return
    standing = s.standing
    if standing == "unknown":
        p.note = "no specific fix known: torch's explanation is in the tab"
        return
    if standing == "withdrawn":  # tried on the user's cell: it did not remove the problem (or changed outputs)
        says = f"; torch, with it applied: {s.check.torch_says}" if s.check.torch_says else ""
        p.note = f"{s.title}: {s.check.text}{says}"
        return
    p.fix, p.fix_code, p.confidence, p.fix_label = s.title, s.code, str(s.confidence), fix_label(s)
    if s.check is not None:
        p.check = s.check.text
    elif pending and standing == "to try":
        p.check = "being tried on your cell in a scratch compile: this updates when it is done"


def _compile_seconds(r: "CompileReport", cid) -> float:
    c = r.compile(cid) if cid is not None else None
    return (c.entire_frame_compile_s or 0.0) if c is not None else 0.0


def _one_answer(r: "CompileReport") -> list[list]:
    """The graph breaks, grouped where one answer's code, written against one user line, removes them all (a
    library switch: the lock and the hook transformers takes under ``output_attentions=True``); in report order."""
    groups: dict = {}
    for i, b in enumerate(r.graph_breaks):
        s, line = b.suggestion, user_line(r, b)
        code = s.code.strip() if s is not None and s.standing in ("to try", "verified") else ""
        key = (code, line.filename, line.lineno) if code else i
        groups.setdefault(key, []).append(b)
    return list(groups.values())


def problems(r: "CompileReport") -> list[Problem]:
    """What is wrong, most costly first (see the module's docstring)."""
    first: list[Problem] = []
    pending = r.fix_verification is not None and r.fix_verification.pending  # the fixes are being tried now
    run = r.eager_run
    if run is not None:  # nothing (or little) compiled: before everything else, the rest is moot until it compiles
        line = run.user_line
        at = (f"`{run.frame.function}` ({r.where(run.frame.filename, run.frame.lineno)})" if run.frame.function
              else r.where(run.frame.filename, run.frame.lineno)) if run.frame.filename else "?"
        why = run.reason.strip().splitlines()[0] if run.reason.strip() else ""
        cost = (f"{plural(run.graphs, 'graph')} compiled in {plural(run.frames, 'frame')}; torch gave up at {at}"
                + (f": {why}" if why else "") + (f" [{run.gb_code}]" if run.gb_code else ""))
        p = Problem("eager_run", run.title, cost, r.where(line.filename, line.lineno) if line.filename else "",
                    line.source_line.strip(), tab="summary", filename=line.filename, lineno=line.lineno)
        _fix(p, run.suggestion, pending)
        if not p.fix and not p.note:
            p.note = run.explanation
        first.append(p)
    for d in r.eager_differences:  # wrong results, recognised by the doctor: before everything else
        p = Problem("semantics", d.title, d.explanation, r.where(d.frame.filename, d.frame.lineno) if d.frame.filename
                    else "", d.frame.source_line.strip(), tab="summary", filename=d.frame.filename, lineno=d.frame.lineno)
        _fix(p, d.suggestion)
        first.append(p)
    # torch records the recompile limit as a failed compile too: the limit's own problem (below) says it
    limits = {rc.compile_id for rc in r.recompiles if rc.limit_hit}
    for f in r.failures:
        if f.compile_id in limits:
            continue
        msg = f.message.strip().splitlines()[0] if f.message.strip() else f.type
        p = Problem("failure", f"Compile failed: {msg}", "the code ran without compiling" if f.type else "",
                    r.where(f.frame.filename, f.frame.lineno) if f.frame.filename else "", f.frame.source_line.strip(),
                    tab="summary", filename=f.frame.filename, lineno=f.frame.lineno)
        _fix(p, f.suggestion, pending)
        first.append(p)
    prof = r.profile
    kept = prof.kept if prof is not None else None
    if kept is not None and kept.not_restored:  # the measuring calls changed what nothing could put back
        back = f"ipycompile put {', '.join(kept.restored)} back as the first call left them; " if kept.restored else ""
        first.append(Problem(
            "state", "The calls that measured the cell also changed " + ", ".join(kept.not_restored[:4])
            + (f" and {len(kept.not_restored) - 4} more" if len(kept.not_restored) > 4 else ""),
            back + "warm-up, timing and the eager comparison ran the cell again, and those changes stay",
            note="`%%compile --observe` runs the cell once, as ordinary code, under the capture", tab="profile"))
    e = prof.eager if prof is not None else None
    if e is not None and e.check is not None and not e.check.match:
        first.append(Problem("outputs", "Outputs differ from eager", e.check.message, tab="profile"))

    ranked: list[Problem] = []
    for group in _one_answer(r):
        b = group[0]
        line = user_line(r, b)
        s = stop(b)
        elsewhere = (s.filename, s.lineno) != (line.filename, line.lineno) and s.filename
        count = sum(g.count for g in group)
        if len(group) == 1:
            title = f"Graph break: {b.reason}"
            cost = f"hit {plural(b.count, 'time')}" + (
                f"; torch stopped in {r.where(s.filename, s.lineno)}" if elsewhere else "")
        else:  # several breaks the same code removes: one problem, each break in the Graph breaks tab
            reasons = list(dict.fromkeys(g.reason for g in group))
            title = "Graph break: " + "; ".join(reasons) + f" ({len(group)} breaks, one answer)"
            codes = ", ".join(dict.fromkeys(g.gb_code for g in group if g.gb_code))
            cost = (f"{len(group)} breaks{f' ({codes})' if codes else ''}, hit {plural(count, 'time')} in all; torch "
                    "stopped in " + ", ".join(dict.fromkeys(r.where(stop(g).filename, stop(g).lineno) for g in group)))
        p = Problem("graph_break", title, cost, r.where(line.filename, line.lineno),
                    line.source_line.strip(), tab="graph_breaks", filename=line.filename, lineno=line.lineno,
                    calls=count, seconds=sum(_compile_seconds(r, c) for g in group for c in g.compile_ids))
        _fix(p, b.suggestion, pending)
        if not p.fix and not p.note and b.hints:
            p.note = f"torch's hint: {b.hints[0]}"
        ranked.append(p)
    by_function: dict[tuple, list] = {}
    for rc in r.recompiles:
        by_function.setdefault((rc.filename, rc.function), []).append(rc)
    for (filename, function), rcs in by_function.items():
        seconds = sum(_compile_seconds(r, rc.compile_id) for rc in rcs)
        limit = next((rc for rc in rcs if rc.limit_hit), None)
        first_line = next((c.first_line for c in r.compiles if c.filename == filename and c.function == function
                           and c.first_line is not None), None)
        what = next((rc.explanation for rc in rcs if rc.explanation), "")
        if not what and rcs[0].reasons:
            what = " ".join(r.readable(rcs[0].reasons[0]).splitlines()[0].split())
        name = rcs[0].shown_function or function or "?"  # the user's name for it, not torch's resume function
        title = f"{name} recompiled {plural(len(rcs), 'time')}" + (f": {what}" if what else "")
        cost = f"{fmt_seconds(seconds)} of compiling" if seconds else ""
        if limit is not None:
            title = f"Recompile limit hit: {name} now runs without compiling" + (f" ({what})" if what else "")
        p = Problem("recompile", title, cost, r.where(filename, first_line) if filename else "", tab="recompiles",
                    filename=filename, lineno=first_line, calls=len(rcs) + (1_000_000 if limit else 0), seconds=seconds)
        _fix(p, next((rc.suggestion for rc in reversed(rcs) if rc.suggestion is not None), None), pending)
        ranked.append(p)
    ranked.sort(key=lambda p: (-p.calls, -p.seconds))
    for u in r.unrolled_loops:
        from .phrases import loop_headline

        p = Problem("unrolled_loop", loop_headline(r, u), "compile time grows with the trip count",
                    r.where(u.filename, u.lineno) if u.lineno is not None else "", u.source_line.strip(),
                    tab="summary", filename=u.filename, lineno=u.lineno)
        _fix(p, u.suggestion)  # a loop's rewrite is not tried on the cell
        ranked.append(p)
    late: list[Problem] = []
    if e is not None and e.speedup is not None and e.speedup < 1:
        sure = bool(e.speedup_ci95) and e.speedup_ci95[1] < 1
        noisy = prof.noisy("speedup vs eager")
        ci = f" (95 % interval {e.speedup_ci95[0]:.2f}x to {e.speedup_ci95[1]:.2f}x)" if e.speedup_ci95 else ""
        late.append(Problem("slowdown", f"Compiled is slower than eager: {e.speedup:.2f}x{ci}",
                            e.why_slower or (noisy if noisy else ("beyond doubt" if sure else "not beyond doubt")),
                            tab="profile", severe=sure and not noisy))
    busy = prof.steady.busy if prof is not None else None
    if busy is not None and busy.verdict == "host-bound":
        late.append(Problem("host_bound", f"Host-bound: {busy.text}", "", note=busy.advice, tab="profile",
                            severe=False))
    for p in first + ranked + late:
        if p.filename:
            from .tabs import place

            # a recompile's place is the function's first line: no excerpt of it is shown
            p.place = place(r, p.filename, p.lineno,
                            shown=p.kind in ("eager_run", "semantics", "failure", "graph_break", "unrolled_loop"))
    return first + ranked + late


def headline(r: "CompileReport") -> list[Chip]:
    """The headline numbers: compile time, run time, speedup with its interval, memory."""
    p = r.profile
    out: list[Chip] = []
    compile_s = p.first_call.compile_s if p is not None and p.first_call.compile_s is not None else (
        r.compile_time.total_s or None)
    # a run that reused compiled code compiled nothing: its first call is no compile time
    reused = bool(r.reused_from) or (p is not None and p.reused_compiled_code and r.compiled_nothing)
    if compile_s is not None and reused and p is not None and p.first_call.compile_s is not None:
        out.append(Chip(f"first call {fmt_seconds(compile_s)} (reused, no compile)", False,
                        "compile_time", None, "this run compiled nothing: the first call ran code compiled earlier"))
    elif compile_s is not None:
        what = "first call (compile)" if p is not None and p.first_call.compile_s is not None else "compile"
        out.append(Chip(f"{what} {fmt_seconds(compile_s)}", False, "compile_time", compile_s))
    if p is None:
        return out
    st = p.steady
    if st.run_median_s is not None:
        noisy = p.noisy("run time")
        out.append(Chip(f"run {fmt_seconds(st.run_median_s)} median" + (" (noisy)" if noisy else ""), bool(noisy),
                        "run_time", st.run_median_s, noisy or f"{st.runs} runs, IQR {fmt_seconds(st.run_iqr_s)}"))
    e = p.eager
    if e is not None:
        noisy = p.noisy("speedup vs eager")
        mark = " (noisy)" if noisy else ""
        if e.speedup is not None:
            ci = f" [{e.speedup_ci95[0]:.2f}x, {e.speedup_ci95[1]:.2f}x]" if e.speedup_ci95 else ""
            out.append(Chip(f"{e.speedup:.2f}x vs eager{ci}{mark}", e.speedup < 1 or bool(noisy), "speedup", e.speedup,
                            noisy or (f"eager median {fmt_seconds(e.run_median_s)}; 95 % interval over {e.pairs} pairs"
                                      if e.speedup_ci95 else f"eager median {fmt_seconds(e.run_median_s)}")))
        if e.run_median_s is not None or e.speedup is not None:
            if e.break_even_calls is not None:
                out.append(Chip(f"break-even after {e.break_even_calls} calls{mark}", bool(noisy), "break_even",
                                e.break_even_calls, noisy))
            else:
                out.append(Chip(f"never breaks even{mark}", True, "break_even", None, noisy))
        if e.check is not None and not e.check.match:
            out.append(Chip("outputs differ from eager", True, "outputs", False, e.check.message))
    if p.peak_device_bytes is not None:
        out.append(Chip(f"device peak {fmt_bytes(p.peak_device_bytes)}", False, "device_memory", p.peak_device_bytes))
    if p.peak_host_added_bytes is not None:  # the cell's own; the process's RSS is in the Profile tab
        out.append(Chip(f"host +{fmt_bytes(p.peak_host_added_bytes)} at peak (over the process's "
                        f"{fmt_bytes(p.memory.host_before_bytes)} before the cell)", False, "host_memory",
                        p.peak_host_added_bytes, "what the cell added to the process's resident memory at its peak"))
    elif p.peak_host_bytes is not None:  # reports without the RSS before the cell
        out.append(Chip(f"host peak {fmt_bytes(p.peak_host_bytes)} (process RSS)", False, "host_memory",
                        p.peak_host_bytes, "the process's peak resident memory while the cell ran"))
    if p.error:
        out.append(Chip(f"raised {p.error.splitlines()[0][:120]}", True, "error", p.error))
    return out
