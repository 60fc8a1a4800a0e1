"""One record type for torch's structured-trace events.

Every event torch writes to the ``torch.__trace`` logger (and to TORCH_TRACE
files) is a metadata dict plus an optional payload string. The metadata holds
one key naming the event (``dynamo_start``, ``artifact``, ...) beside context
keys (``frame_id``, ``frame_compile_id``, ``attempt``, ...).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..report.model import CompileId, LazyText
from ..report.serialize import NestingError, loads  # the one bounded JSON parser, for trace JSON too

#: the kinds of the events ipycompile's hooks (:mod:`.hooks`) add to a capture's records
CUDAGRAPH_EVENT = "ipycompile_cudagraph"
AUTOTUNE_EVENT = "ipycompile_autotune"
WARNING_EVENT = "ipycompile_warning"
CACHE_HIT_EVENT = "ipycompile_cache_hit"
#: the capture's own first record: what Dynamo held when it opened (``{"graphs_before": bool | None}``)
CAPTURE_EVENT = "ipycompile_capture"

#: Keys torch adds beside the event key (see ``torch._logging.trace_structured``).
CONTEXT_KEYS = frozenset(
    {
        "rank",
        "compiled_autograd_id",
        "frame_id",
        "frame_compile_id",
        "attempt",
        "severity",
        "timestamp",
        "pathname",
        "thread",
        "subgraph_name",
        "has_payload",
        "stack",
    }
)

_CID_IN_TEXT = re.compile(r"(?:!\d+/)?\d+/\d+(?:_\d+)?")


@dataclass(frozen=True)
class TraceRecord:
    """One structured-trace event.

    ``kind`` is the event key (``"artifact"`` for artifacts), ``name`` the
    artifact name for artifacts and the kind otherwise; ``key`` is what
    handlers are looked up by: ``"artifact:<name>"`` or the kind.
    """

    kind: str
    name: str
    metadata: dict[str, Any]
    payload: Optional[str]
    compile_id: Optional[CompileId]
    attempt: int
    #: where the payload lies in the log it was read from (``iter_records(lazy=True)``), so that
    #: the report can keep its place instead of its text; None for live events and gzip logs
    payload_ref: Optional[LazyText] = None
    #: what the builder's pure preparation of this event gave (``builder.PREPARE``), where a reader
    #: process prepared it (``capture.readahead``); None: the builder prepares it itself
    prepared: Any = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"artifact:{self.name}" if self.kind == "artifact" else self.kind

    @property
    def body(self) -> Any:
        """The event's own metadata value (``metadata[kind]``)."""
        return self.metadata.get(self.kind)

    def payload_json(self, bounded: bool = True) -> Any:
        """The payload parsed as JSON, or None when it is not JSON. JSON nested too deeply
        raises :class:`NestingError` (the builder counts it as a problem of this event);
        ``bounded=False``: see :func:`~ipycompile.report.serialize.loads`."""
        return payload_json(self.payload, bounded)

    @classmethod
    def from_raw(cls, metadata: dict[str, Any], payload: Optional[str] = None,
                 payload_ref: Optional[LazyText] = None) -> "TraceRecord":
        if not isinstance(metadata, dict):
            raise TypeError(f"trace metadata must be a dict, got {type(metadata).__name__}")
        kind = ""
        for k in metadata:  # the event's own key, nearly always the first
            if k not in CONTEXT_KEYS:
                kind = k
                break
        if not kind and "stack" in metadata:  # a bare stack record
            kind = "stack"
        name = kind
        if kind == "artifact":
            body = metadata.get("artifact")
            name = str(body.get("name", "")) if isinstance(body, dict) else ""
        if payload is not None and not isinstance(payload, str):
            payload = json.dumps(payload)
        return cls(kind, name, metadata, payload, *event_ids(metadata), payload_ref)


def payload_json(payload: Optional[str], bounded: bool = True) -> Any:
    """:meth:`TraceRecord.payload_json` of a payload's text."""
    if not payload:
        return None
    try:
        return loads(payload, bounded=bounded)
    except NestingError:
        raise
    except ValueError:
        return None


def event_ids(metadata: dict[str, Any]) -> tuple[Optional[CompileId], int]:
    """``(compile id, attempt)`` of an event's metadata, as :meth:`TraceRecord.from_raw` reads them;
    ValueError where one is not a whole number >= 0."""
    frame, compile_, attempt = metadata.get("frame_id"), metadata.get("frame_compile_id"), metadata.get("attempt")
    if (type(frame) is int and type(compile_) is int and frame >= 0 and compile_ >= 0  # nearly every event
            and (attempt is None or type(attempt) is int and attempt >= 0) and "compiled_autograd_id" not in metadata):
        return _shared_id(frame, compile_, None), attempt or 0
    return _compile_id(metadata), 0 if attempt is None else _count(attempt, "attempt")


class ChromiumBatch(list):
    """The chromium events of a stretch of a log with no other event between them, as the builder
    keeps each (``builder.chromium_entry``): what a reader gives in place of a record per event
    (``iter_records(chromium_batches=True)``), counted by the builder as that many ``chromium_event``
    records. Most of a log's events are chromium events: a record each costs more than the event."""

    __slots__ = ()

    key = "chromium_event"


def _compile_id(metadata: dict[str, Any]) -> Optional[CompileId]:
    frame, compile_ = metadata.get("frame_id"), metadata.get("frame_compile_id")
    if frame is not None and compile_ is not None:
        ca = metadata.get("compiled_autograd_id")
        return _shared_id(_count(frame, "frame_id"), _count(compile_, "frame_compile_id"),
                          None if ca is None else _count(ca, "compiled_autograd_id"))
    return None


#: One CompileId (immutable) for the many events of a compile: made once, not per event.
_shared_id = functools.lru_cache(maxsize=1 << 12)(CompileId)


def _count(value: Any, key: str) -> int:
    """A non-negative integer of an event's context (``frame_id``, ``attempt``, ``rank``), or ValueError."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"{key} is {value!r:.40}, not a whole number >= 0")


def compile_id_from_text(text: Any) -> Optional[CompileId]:
    """A compile id written as text (``"0/1"``, ``"[0/1]"``), or None."""
    if not isinstance(text, str):
        return None
    m = _CID_IN_TEXT.search(text)
    if not m:
        return None
    try:
        return CompileId.parse(m.group(0))
    except ValueError:
        return None
