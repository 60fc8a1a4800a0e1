"""max-autotune's choices, per op, from the trace's chromium events and torch's feedback hook.

Torch times ``select_algorithm`` in two ``dynamo_timed`` spans per op, logged as
chromium events: ``<op>_template_precompiling`` (its end event's ``metadata``
lists candidates that failed to compile) and ``<op>_template_autotuning`` (args
``autotune_shape``, ``autotune_dtypes``; with ``max_autotune_report_choices_stats``,
on by default in torch 2.11 and 2.13, the end event carries
``autotune_choices_stats``: ``num_choices``, ``num_triton_choices``,
``best_kernel``, ``best_kernel_desc``, ``best_time`` (ms), ``best_triton_pos`` and,
when the winner is not Triton, ``best_triton_kernel`` / ``best_triton_time``).
What the trace does not hold, every candidate's time (so the extern cuBLAS
baseline and the runner-up), comes from torch's autotune feedback hook when the
capture was live (:mod:`ipycompile.capture.hooks`, events ``ipycompile_autotune``).

torch 2.13 on CPU autotunes only with its C++ GEMM template (frozen weights) and
logs the same spans there; a run without autotuning has none.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional

from ...report.model import Autotune, AutotuneChoice, CompileId, Kernel
from ..records import loads

__all__ = ["autotune_from_events", "merge_feedback", "link_kernels"]

_AUTOTUNING = "_template_autotuning"
_PRECOMPILING = "_template_precompiling"


def _json(text: Any) -> Any:
    if isinstance(text, (dict, list)):
        return text
    try:
        return loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _cid(text: Any) -> Optional[CompileId]:
    try:
        return CompileId.parse(str(text)) if text else None
    except ValueError:
        return None


def autotune_from_events(events: Iterable[dict[str, Any]]) -> list[Autotune]:
    """One :class:`Autotune` per op site, in order.

    Torch precompiles the candidates of every site (a ``<op>_template_precompiling`` span),
    then benchmarks them (``<op>_template_autotuning``) unless its autotune cache already
    holds their timings for these input shapes (an earlier site of the same shapes, or the
    on-disk cache): a precompiling span that no autotuning span follows is such a cached
    site (``cached=True``; what it chose comes from the feedback hook when live)."""
    out: list[Autotune] = []
    open_: dict[tuple[str, str], list[float]] = {}
    pending: dict[tuple[str, str], Autotune] = {}  # the site whose precompiling span ended last, per op
    for ev in events:
        name, ph, ts = str(ev.get("name", "")), ev.get("ph"), ev.get("ts")
        if not isinstance(ts, (int, float)) or not (name.endswith(_AUTOTUNING) or name.endswith(_PRECOMPILING)):
            continue
        args = ev.get("args") or {}
        key = (name, str(args.get("compile_id") or ""))
        if ph == "B":
            open_.setdefault(key, []).append(float(ts))
            continue
        if ph != "E":
            continue
        starts = open_.get(key) or [float(ts)]
        seconds = max(0.0, float(ts) - starts.pop()) / 1e6
        if name.endswith(_PRECOMPILING):
            meta = _json(args.get("metadata")) or {}
            failed = [f"{e.get('choice', '')}: {e.get('exception', '')} {e.get('exception_message', '')}".strip()
                      for e in (meta.get("exceptions") or []) if isinstance(e, dict)]
            op = name[: -len(_PRECOMPILING)]
            site = Autotune(op=op, compile_id=_cid(key[1]), precompile_s=seconds, failed=failed, cached=True, source="trace")
            pending[(op, key[1])] = site
            out.append(site)
            continue
        op = name[: -len(_AUTOTUNING)]
        a = pending.pop((op, key[1]), None)
        if a is None:  # no precompiling span before it
            a = Autotune(op=op, compile_id=_cid(key[1]), source="trace")
            out.append(a)
        a.cached = False
        a.shape, a.dtypes = str(args.get("autotune_shape") or ""), str(args.get("autotune_dtypes") or "")
        a.benchmark_s = seconds
        stats = _json(args.get("autotune_choices_stats"))
        if isinstance(stats, dict):
            a.num_choices = stats.get("num_choices")
            a.num_triton_choices = stats.get("num_triton_choices")
            a.winner = str(stats.get("best_kernel") or "")
            a.winner_desc = str(stats.get("best_kernel_desc") or "")
            a.winner_ms = stats.get("best_time")
            pos = stats.get("best_triton_pos")
            if pos == 0:
                a.winner_kind = "triton"
            elif isinstance(pos, int):
                a.winner_kind = "extern" if a.winner and not a.winner.startswith("triton_") else ""
                a.best_triton = str(stats.get("best_triton_kernel") or "")
                a.best_triton_ms = stats.get("best_triton_time")
            elif a.num_triton_choices == 0:
                a.winner_kind = "extern"
    return out


def _choices(payload: Any) -> list[AutotuneChoice]:
    rows = _json(payload) or []
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        t = r.get("time_ms")
        t = float(t) if isinstance(t, (int, float)) and math.isfinite(t) else (math.inf if r.get("failed") else None)
        out.append(AutotuneChoice(str(r.get("name", "")), str(r.get("kind", "")), t, str(r.get("description", ""))))
    return sorted(out, key=lambda c: (c.time_ms is None, c.time_ms if c.time_ms is not None else 0.0))


def merge_feedback(autotunes: list[Autotune], feedback: list[tuple[Optional[CompileId], dict, Optional[str]]]) -> list[Autotune]:
    """Complete the trace's ops with the feedback hook's events ``(compile id, body, payload)``:
    every candidate's time, the extern baseline, the runner-up. A feedback event with no
    matching span (a trace without chromium events) becomes an op of its own.

    Torch calls the hook at every site, cached or benchmarked, in the order of the spans;
    an event goes to the first site of its op and compile not yet completed whose input
    shapes are its own (or unknown: a cached site's span names no shapes)."""
    for cid, body, payload in feedback:
        op = str(body.get("op") or "")
        shape = str(body.get("shape") or "")
        choices = _choices(payload)
        a = next((x for x in autotunes if x.op == op and x.compile_id == cid and "feedback" not in x.source
                  and (not x.shape or not shape or x.shape == shape)), None)
        if a is None:
            a = Autotune(op=op, compile_id=cid, source="")
            autotunes.append(a)
        a.source = ",".join(s for s in (a.source, "feedback") if s)
        a.shape = a.shape or shape
        a.dtypes = a.dtypes or str(body.get("dtypes") or "")
        a.choices = choices
        timed = [c for c in choices if c.time_ms is not None and math.isfinite(c.time_ms)]
        a.num_choices = a.num_choices or len(choices)
        a.num_triton_choices = a.num_triton_choices if a.num_triton_choices is not None else sum(c.kind == "triton" for c in choices)
        if timed:
            best = timed[0]
            a.winner, a.winner_kind = a.winner or best.name, best.kind
            a.winner_desc = a.winner_desc or best.description
            a.winner_ms = a.winner_ms if a.winner_ms is not None else best.time_ms
            if len(timed) > 1:
                a.runner_up, a.runner_up_ms = timed[1].name, timed[1].time_ms
            extern = next((c for c in timed if c.kind == "extern"), None)
            if extern is not None:
                a.extern_ms = extern.time_ms
            if best.kind != "triton":
                tri = next((c for c in timed if c.kind == "triton"), None)
                if tri is not None:
                    a.best_triton, a.best_triton_ms = tri.name, tri.time_ms
        failed = [f"{c.name}: failed" for c in choices if c.time_ms is not None and math.isinf(c.time_ms)]
        a.failed = a.failed or failed
    return autotunes


def link_kernels(autotunes: list[Autotune], kernels: list[Kernel]) -> None:
    """Name the report kernel each op became, where that is unambiguous: the ops of a compile
    whose winner is Triton, in order, against that compile's template kernels, when the counts agree."""
    by_cid: dict[Optional[CompileId], list[Autotune]] = {}
    for a in autotunes:
        by_cid.setdefault(a.compile_id, []).append(a)
    for cid, ops in by_cid.items():
        triton_ops = [a for a in ops if a.winner_kind == "triton"]
        templates = [k for k in kernels if k.compile_id == cid and k.kind == "template"]
        if triton_ops and len(triton_ops) == len(templates):
            for a, k in zip(triton_ops, templates):
                a.kernel = k.name
