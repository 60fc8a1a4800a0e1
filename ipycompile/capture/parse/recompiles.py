"""Recompile reasons, the recompile limit, and a compile's status.

``recompile_reasons`` artifact (logged just before the recompile's
``dynamo_start``, under the *new* compile id).  Torch logs one reason per
earlier compile whose guards failed, newest first, each prefixed with that
compile's id.  One reason is logged as plain text, several as a JSON list::

    0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16

    [
    "0/1: tensor 'x' dtype mismatch. expected Double, actual Half",
    "0/0: tensor 'x' dtype mismatch. expected Float, actual Half"
    ]

A reason can span lines (a failed Python-value guard carries its source)::

    6/0: n == 2          # return x * n  # mp/probe/p1.py:21 in g
    User stack trace:
      File "/tmp/probe/p1.py", line 21, in g
        return x * n

What torch 2.13 emits for the statuses of :data:`~ipycompile.report.model.STATUSES`
(all seen with probes; see :func:`compile_status`):

* recompile limit: *no* ``dynamo_start`` for the compile; its
  ``recompile_reasons`` artifact is logged, then ``compilation_metrics`` with
  ``co_name`` and most fields ``None``, ``fail_type="Unsupported"`` and
  ``fail_reason`` = the ``Dynamo recompile limit exceeded`` graph-break text
  (GB0039, ``Developer debug context: Limit type: recompile_limit`` or
  ``accumulated_recompile_limit``).  With ``fullgraph=True`` (or
  ``config.fail_on_recompile_limit_hit``) it is ``fail_type=
  "FailOnRecompileLimitHit"``, ``fail_reason="Hard failure due to
  fullgraph=True"``.  The ``torch._dynamo hit config.recompile_limit (8)``
  warning goes to the ``torch._dynamo.convert_frame`` logger only.
* skipped: a frame Dynamo gives up on and runs eagerly logs a
  ``dynamo_graph_break_reason`` whose reason starts ``Failed to handle graph
  break gracefully. Skipping the function and falling back to eager.`` and
  ``compilation_metrics`` with ``fail_type="Unsupported"``,
  ``has_guarded_code=False`` and a ``fail_reason`` such as ``graph break in
  loop`` (GB7000, ``frame skipped: ...``) or ``torch._dynamo.skip_frame()``
  (GB4297, ``Skipping frame ...``).  A compiled function with no tensor ops
  logs ``compilation_metrics`` with ``graph_op_count=None`` (no FX graph was
  made) and ``has_guarded_code=True``.  Frames skipped before tracing (no
  tensors, skipfiles, ...) leave nothing in the trace at all.
* graph break: ``restart_reasons`` is non-empty when Dynamo restarted the
  analysis to compile up to the break (breaks in inlined calls, and most
  breaks in 2.13); a break at a jump in the frame itself (a data-dependent
  ``if``) has ``restart_reasons == []`` and is known only from the
  ``dynamo_graph_break_reason`` artifact with the same compile id, which is
  logged *before* the ``compilation_metrics`` record.
* failed: ``fail_type`` set otherwise (e.g. an ``Unsupported`` break under
  ``fullgraph=True``, a backend exception); a ``dynamo_error`` artifact with
  the traceback precedes the metrics.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ...report.model import CompileId
from ..records import loads
from .frames import resume_origin  # noqa: F401 - re-exported: the one parser of resume-function names

__all__ = [
    "parse_recompile_reasons",
    "reason_headline",
    "RecompileLimit",
    "is_recompile_limit",
    "is_recompile_limit_message",
    "recompile_limit_type",
    "recompile_limit_value",
    "parse_recompile_limit_warning",
    "is_skip_message",
    "resume_origin",
    "compile_status",
]

# "0/1: ...", "!2/0/1: ...", "0/1_1: ...", "None: ..."; TORCH_LOGS lists them as "- 0/1: ..."
_REASON_START = re.compile(r"^\s*(?:- )?(?P<cid>(?:!\d+/)?\d+/\d+(?:_\d+)?|None):\s?(?P<rest>.*)$")


def _payload_strings(payload: str) -> list[str]:
    """The artifact's strings: a JSON list, a JSON string, or plain text."""
    text = payload.strip()
    if text[:1] in ('[', '"'):
        try:
            data = loads(text)
        except ValueError:
            return [payload]
        if isinstance(data, str):
            return [data]
        if isinstance(data, list):
            return [x if isinstance(x, str) else json.dumps(x) for x in data]
    return [payload]


def _split_reasons(chunk: str) -> list[tuple[Optional[CompileId], str]]:
    """Split one string into reasons at lines that start with a compile id."""
    out: list[tuple[Optional[CompileId], str]] = []
    cid: Optional[CompileId] = None
    body: list[str] = []
    started = False
    for line in chunk.splitlines():
        m = _REASON_START.match(line)
        if m is None:
            body.append(line.rstrip())
            continue
        if started or any(b.strip() for b in body):
            out.append((cid, "\n".join(body).strip()))
        cid = None if m.group("cid") == "None" else CompileId.parse(m.group("cid"))
        body = [m.group("rest").rstrip()]
        started = True
    if started or any(b.strip() for b in body):
        out.append((cid, "\n".join(body).strip()))
    return out


def parse_recompile_reasons(payload: str) -> list[tuple[Optional[CompileId], str]]:
    """``(compile id whose guards failed, reason)`` for each reason in a
    ``recompile_reasons`` payload (or a ``recompile_reason`` metrics field).

    Accepts plain text or a JSON list/string; a line starting with
    ``frame/compile:`` begins a reason, other lines continue the previous
    one.  Text before any id gets ``None``.  Never raises.
    """
    if not isinstance(payload, str):
        payload = "" if payload is None else str(payload)
    try:
        return [pair for chunk in _payload_strings(payload) for pair in _split_reasons(chunk)]
    except Exception:  # defensive: keep whatever text there is
        text = payload.strip()
        return [(None, text)] if text else []


def reason_headline(reason: str) -> str:
    """The first line of a reason with runs of spaces collapsed
    (``n == 2   # return x * n  # p1.py:21 in g`` -> ``n == 2 # return ...``)."""
    first = next((ln for ln in reason.splitlines() if ln.strip()), "")
    return " ".join(first.split())


# ---------------------------------------------------------------------------
# the recompile limit

_LIMIT_PATTERNS = (
    re.compile(r"\bDynamo (recompile|cache) limit exceeded\b", re.IGNORECASE),
    re.compile(r"\bLimit type: (?P<type>\w*(recompile|cache_size)_limit)\b"),
    re.compile(r"\bhit config\.(?P<type>\w*(recompile|cache_size)_limit)\b"),
    re.compile(r"\b(?P<type>\w*(recompile|cache_size)_limit) reached\b"),  # torch <= 2.5
    re.compile(r"\bHard failure due to fail_on_recompile_limit_hit\b"),
    re.compile(r"/gb/gb0039\.html", re.IGNORECASE),
)
_LIMIT_FAIL_TYPES = frozenset({"FailOnRecompileLimitHit", "FailOnCacheLimitHit", "CacheLimitExceeded", "RecompileLimitExceeded"})


def is_recompile_limit(fail_type: Optional[str], text: Optional[str]) -> bool:
    """Whether a failed compile (its ``fail_type`` and ``fail_reason``) is the recompile limit:
    the one decision, read by ``Compile.status`` and ``Failure.limit_hit``."""
    fail_type = str(fail_type or "")
    return fail_type in _LIMIT_FAIL_TYPES or "RecompileLimit" in fail_type or "CacheLimit" in fail_type or (
        bool(fail_type) and is_recompile_limit_message(text))


def is_recompile_limit_message(text: Optional[str]) -> bool:
    """Whether ``text`` (a ``fail_reason``, graph-break payload, or the
    ``torch._dynamo hit config.recompile_limit`` warning) says Dynamo hit a
    recompile limit."""
    return bool(text) and any(p.search(text) for p in _LIMIT_PATTERNS)  # type: ignore[arg-type]


def recompile_limit_type(text: Optional[str]) -> Optional[str]:
    """``"recompile_limit"``, ``"accumulated_recompile_limit"`` (or the old
    ``"cache_size_limit"``) when ``text`` names one, else None."""
    if not text:
        return None
    for p in _LIMIT_PATTERNS:
        m = p.search(text)
        if m and "type" in p.groupindex and m.group("type"):
            return m.group("type")
    return None


_LIMIT_VALUES = (
    re.compile(r"\bcache size limit \(currently set to (?P<n>\d+)\)"),  # GB0039's explanation (2.6+)
    re.compile(r"\bhit config\.\w+ \((?P<n>\d+)\)"),  # the warning
)


def recompile_limit_value(text: Optional[str], dynamo_config: Any = None, limit_type: str = "recompile_limit") -> Optional[int]:
    """The value of the limit torch hit, as it was in effect for the function (a
    ``torch.compile(recompile_limit=...)`` overrides the global setting while its frames
    compile): from the limit's text (``... (currently set to 2)``), else from the
    ``dynamo_config`` that ``compilation_metrics`` logs (a JSON string); None when neither says."""
    for p in _LIMIT_VALUES:
        m = p.search(text or "")
        if m:
            return int(m.group("n"))
    config = dynamo_config
    if isinstance(config, str):
        try:
            config = loads(config)
        except ValueError:
            return None
    value = config.get(limit_type) if isinstance(config, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RecompileLimit:
    """What torch's recompile-limit warning says."""

    limit_type: str  # "recompile_limit" | "accumulated_recompile_limit" | ...
    limit: Optional[int] = None
    function: str = ""
    filename: str = ""
    first_line: Optional[int] = None
    last_reason: str = ""
    message: str = ""


_WARN_HEAD = re.compile(r"torch\._dynamo hit config\.(?P<type>\w+) \((?P<limit>\d+)\)")
_WARN_FUNC = re.compile(r"function: '(?P<func>[^']*)' \((?P<file>.*):(?P<line>\d+)\)")
_WARN_LAST = re.compile(r"last reason: (?P<reason>.*)")


def parse_recompile_limit_warning(text: str) -> Optional[RecompileLimit]:
    """Parse the ``log.warning`` torch emits on the ``torch._dynamo.convert_frame``
    logger when a frame hits the limit; None when ``text`` is not that warning::

        torch._dynamo hit config.recompile_limit (8)
           function: 'f' (/tmp/x.py:13)
           last reason: 0/7: tensor 'x' dtype mismatch. expected Char, actual Byte
        To log all recompilation reasons, use TORCH_LOGS="recompiles".
    """
    if not isinstance(text, str):
        return None
    head = _WARN_HEAD.search(text)
    if head is None:
        return None
    func = _WARN_FUNC.search(text)
    last = _WARN_LAST.search(text)
    return RecompileLimit(
        limit_type=head.group("type"),
        limit=int(head.group("limit")),
        function=func.group("func") if func else "",
        filename=func.group("file") if func else "",
        first_line=int(func.group("line")) if func else None,
        last_reason=last.group("reason").strip() if last else "",
        message=text.strip(),
    )


# ---------------------------------------------------------------------------
# skipped frames and statuses

_SKIP_PATTERNS = (
    re.compile(r"Skipping the function and falling back to eager"),
    re.compile(r"Skipping the frame and falling back to eager"),
    re.compile(r"\bframe skipped: "),
    re.compile(r"\bSkipping frame\b"),
    re.compile(r"Call to `torch\._dynamo\.skip_frame\(\)`"),
    re.compile(r"^\s*graph break in loop\s*$", re.MULTILINE),
    re.compile(r"^\s*Attempt to trace generator\s*$", re.MULTILINE),
    re.compile(r"/gb/gb(4297|7000)\.html", re.IGNORECASE),
    re.compile(r"\bSkipFrame\b"),
)


def is_skip_message(text: Optional[str]) -> bool:
    """Whether ``text`` (a ``fail_reason`` or graph-break payload) says Dynamo
    skipped the frame and ran it eagerly instead of failing."""
    return bool(text) and any(p.search(text) for p in _SKIP_PATTERNS)  # type: ignore[arg-type]


def compile_status(metrics: Mapping[str, Any], *, graph_break: bool = False) -> str:
    """One of ``"ok"``, ``"failed"``, ``"graph break"``, ``"skipped"``,
    ``"recompile limit"`` for a ``compilation_metrics`` dict.

    ``graph_break`` says a ``dynamo_graph_break_reason`` artifact was logged
    for this compile id: a break at a jump in the frame itself leaves
    ``restart_reasons`` empty, so the metrics alone cannot tell.

    Rules, in order:

    1. recompile limit: ``fail_type`` is ``FailOnRecompileLimitHit`` (or an
       older limit exception) or ``fail_reason`` is the GB0039 limit text;
    2. skipped: a failure whose reason says the frame was skipped (graph
       break in a loop, ``skip_frame()``, ...), or no failure but no guarded
       code either (Dynamo's ``SkipFrame`` path);
    3. failed: any other ``fail_type``;
    4. graph break: ``restart_reasons`` non-empty, or ``graph_break``;
    5. skipped: no FX graph at all (``graph_op_count`` is None: nothing to
       compile, e.g. no tensor ops), counted only when torch reported it
       (``graph_op_count`` present as a key);
    6. ok.
    """
    if not isinstance(metrics, Mapping):
        return "graph break" if graph_break else "ok"
    fail_type = str(metrics.get("fail_type") or "")
    fail_reason = str(metrics.get("fail_reason") or "")
    if is_recompile_limit(fail_type, fail_reason):
        return "recompile limit"
    if fail_type:
        return "skipped" if is_skip_message(fail_reason) else "failed"
    if metrics.get("has_guarded_code") is False:
        return "skipped"
    if metrics.get("restart_reasons") or graph_break:
        return "graph break"
    if "graph_op_count" in metrics and metrics.get("graph_op_count") is None and metrics.get("co_name"):
        return "skipped"
    return "ok"
