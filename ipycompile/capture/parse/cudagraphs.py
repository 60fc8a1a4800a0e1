"""CUDA graphs per compile: recorded or skipped, why, and how often recorded.

Inputs, all torch's own words (see :mod:`ipycompile.capture.hooks`):

- the ``cudagraphs`` loggers' messages: skips ("skipping cudagraphs due to
  mutated inputs (1 instances). Found from : File ..., line 3, in cell ...",
  "skipping cudagraphs due to cpu device (arg0_1)", "skipping cudagraph due to
  function 0 exceeding max re-recording limit ..."), and at DEBUG level the
  recordings ("[0/0] Recording function=0, mode=FORWARD, cuda_graph_id=0, ...";
  torch 2.11 writes no mode) and re-recordings ("[0/0] Re-recording
  function=0, mode=..., reason=...");
- Dynamo's ``CUDAGRAPH_RECORDING`` callbacks, one per recording, with the compile id;
- ``compilation_metrics.cudagraph_skip_reason`` (set when torch decides during
  the compile; torch 2.11 leaves it empty for a skip decided on the first call).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from ...report.model import CompileId, CudaGraphs, UserFrame
from ...report.owners import CodeLayout, Owner, owner
from .frames import parse_traceback

__all__ = ["cudagraphs_from_events", "parse_skip"]

_SKIP = re.compile(r"^\s*skipping cudagraphs?\b", re.I)
_RECORDING = re.compile(r"^\[(?P<cid>[^\]]*)\] Recording function=(?P<fn>[^,]+)(?:, mode=(?P<mode>\w+))?")
_RERECORD = re.compile(r"^\[(?P<cid>[^\]]*)\] Re-recording function=(?P<fn>[^,]+)(?:, mode=(?P<mode>\w+))?, reason=(?P<why>.*)$", re.S)
_PAREN = re.compile(r"\((?P<what>[A-Za-z_][\w.]*)\)")


def parse_skip(message: str, layout: Optional[CodeLayout] = None) -> tuple[str, str, UserFrame]:
    """A skip message -> (reason, culprit, the innermost frame torch points at that is not
    torch's own; ``layout`` says whose code a file is, see ``report.owners``)."""
    parts = re.split(r"\.?\s*Found from\s*:", message, maxsplit=1)
    head, found = (parts[0], parts[1]) if len(parts) == 2 else (message, "")
    reason = " ".join(head.strip().splitlines()[0].split()) if head.strip() else message.strip()
    culprit = ""
    m = _PAREN.search(reason)
    if m and not m.group("what").isdigit():
        culprit = m.group("what")
    frames = [f for f in parse_traceback(found) if owner(f.filename, layout) is not Owner.TORCH]
    frame = frames[-1] if frames else UserFrame()
    if frame.filename and not culprit:
        culprit = frame.source_line
    return reason, culprit, frame


def cudagraphs_from_events(events: Iterable[tuple[Optional[CompileId], dict[str, Any]]],
                           metrics_reasons: dict[CompileId, str], layout: Optional[CodeLayout] = None) -> list[CudaGraphs]:
    """One :class:`CudaGraphs` per compile with any CUDA-graph event, in first-seen order."""
    by: dict[Optional[CompileId], CudaGraphs] = {}

    def entry(cid: Optional[CompileId]) -> CudaGraphs:
        if cid not in by:
            by[cid] = CudaGraphs(compile_id=cid)
        return by[cid]

    callback_counts: dict[Optional[CompileId], int] = {}
    for cid, body in events:
        kind = body.get("event")
        if kind == "recorded":
            e = entry(cid)
            callback_counts[cid] = callback_counts.get(cid, 0) + 1
            if isinstance(body.get("seconds"), (int, float)):
                e.recording_s += float(body["seconds"])
            continue
        if kind != "log":
            continue
        message = str(body.get("message") or "")
        rec = _RECORDING.match(message)
        if rec:
            e = entry(_text_cid(rec.group("cid")) or cid)
            fn = _function(rec.group("fn"), rec.group("mode"))
            e.functions[fn] = e.functions.get(fn, 0) + 1
            continue
        rr = _RERECORD.match(message)
        if rr:
            e = entry(_text_cid(rr.group("cid")) or cid)
            why = " ".join(rr.group("why").split())
            if why not in e.rerecord_reasons:
                e.rerecord_reasons.append(why)
            continue
        if _SKIP.match(message):
            e = entry(cid)
            if not e.reason:
                e.reason, e.culprit, e.culprit_frame = parse_skip(message, layout)
                e.detail = message.strip()
            continue
        if str(body.get("level")) in ("WARNING", "ERROR", "CRITICAL"):
            e = entry(cid)
            e.notes.append(" ".join(message.split())[:300])
    for cid, why in metrics_reasons.items():
        e = entry(cid)
        if not e.reason:
            e.reason, e.culprit, e.culprit_frame = parse_skip(why, layout)
            e.detail = why
    for cid, e in by.items():
        logged = sum(e.functions.values())
        e.recordings = max(callback_counts.get(cid, 0), logged)
        e.rerecordings = sum(n - 1 for n in e.functions.values() if n > 1) if e.functions else 0
        e.status = "skipped" if e.reason and not e.recordings else "recorded" if e.recordings else "not recorded"
        if e.reason and e.recordings:
            e.status = "partly skipped"  # some graphs of the compile recorded, one was skipped
    return list(by.values())


def _text_cid(text: str) -> Optional[CompileId]:
    try:
        return CompileId.parse(text)
    except ValueError:
        return None


def _function(fn: str, mode: Optional[str]) -> str:
    return f"{fn.strip()} ({mode.lower()})" if mode else fn.strip()
