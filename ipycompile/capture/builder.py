"""``build_report(records)``: one pass over structured-trace records, one
handler per event family, all listed in :data:`HANDLERS`.

A handler that fails is counted in ``report.stats.parse_errors`` and its
record kept as a raw artifact; the build goes on. Kinds no handler knows are
kept as raw artifacts and counted in ``report.stats.unknown``.
"""

from __future__ import annotations

import re
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from ..report import (
    Compile,
    CompileId,
    CompileReport,
    DumpedFile,
    Graph,
    GraphBreak,
    GuardSet,
    RawArtifact,
    Recompile,
    ShapeGuard,
    SizeSymbol,
    UserFrame,
)
from ..report.owners import CodeLayout, Owner
from .parse.autotune import autotune_from_events, link_kernels, merge_feedback
from .parse.control_flow import count_ops, inlined_control_flow, parse_control_flow
from .parse.cudagraphs import cudagraphs_from_events
from .parse.dumped import dumped_file_name
from .parse.failures import parse_failure
from .parse.fx import collective_calls, graph_nodes, layer_inputs
from .parse.frames import parse_traceback, raising_frame, resume_origin, user_stack_text
from .parse.graph_breaks import names_collective, parse_graph_break
from .parse.kernels import parse_output_code
from .parse.provenance import attach_user_lines, graph_node_lines, kernel_stack_traces, user_lines_by_node
from .callsite import name_guarded_values
from .source_files import SourceFiles
from .parse.guards import guard_path, parse_guard_failure, parse_guard_tree
from .parse.shape_guards import SYMBOL, parse_shape_expr, parse_symbol_source, symbols_of
from .parse.warnings import parse_torch_warning
from .parse.recompiles import compile_status, is_skip_message, parse_recompile_reasons, recompile_limit_type, recompile_limit_value
from .phases import compile_time
from ..report.serialize import ReportFormatError, check_depth, check_value, describe, fast_loads
from .records import (AUTOTUNE_EVENT, CACHE_HIT_EVENT, CAPTURE_EVENT, CUDAGRAPH_EVENT, WARNING_EVENT, ChromiumBatch,
                      TraceRecord, compile_id_from_text, payload_json)

RawRecord = "tuple[dict[str, Any], Optional[str]] | TraceRecord"
_MAX_ERRORS = 20
_AOT_ID = re.compile(r"#\s*AOT ID:\s*\[?'?\"?\d*_?(forward|backward|inference)", re.I)


@dataclass
class _State:
    report: CompileReport = field(default_factory=CompileReport)
    strings: dict[int, str] = field(default_factory=dict)
    compiles: dict[CompileId, Compile] = field(default_factory=dict)
    breaks: dict[tuple, GraphBreak] = field(default_factory=dict)
    chromium: list[dict[str, Any]] = field(default_factory=list)
    #: the chromium events kept whole: max-autotune's spans (no other event's name is one of theirs)
    autotune_spans: list[dict[str, Any]] = field(default_factory=list)
    cache: dict[CompileId, dict[str, list[tuple[str, str]]]] = field(default_factory=dict)
    errors: dict[CompileId, str] = field(default_factory=dict)  # dynamo_error tracebacks
    broke: set[CompileId] = field(default_factory=set)  # compiles that logged a graph break
    gave_up: set[CompileId] = field(default_factory=set)  # compiles whose break made torch run the frame eagerly
    kernel_info: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # (compile id, kernel) -> info
    cudagraph_events: list[tuple] = field(default_factory=list)  # (compile id, body) from capture.hooks
    autotune_feedback: list[tuple] = field(default_factory=list)  # (compile id, body, payload) from capture.hooks
    provenance: dict = field(default_factory=dict)  # compile id -> kernel name -> user frames
    #: (report value, text field, the payload's place in the log): fields given their payload's
    #: place instead of its text once the build is done (the build itself reads the text)
    lazy: list[tuple[Any, str, Any]] = field(default_factory=list)

    def keep(self, obj: Any, name: str, rec: TraceRecord) -> Any:
        """``obj``, whose field ``name`` holds ``rec``'s payload: it keeps the payload's place in
        the log (when the reader gave one) once the report is built."""
        if rec.payload_ref is not None:
            self.lazy.append((obj, name, rec.payload_ref))
        return obj

    def raw(self, rec: TraceRecord) -> None:
        """Keep ``rec`` as a raw artifact of the report."""
        self.report.artifacts.append(self.keep(RawArtifact(rec.key, rec.compile_id, rec.metadata, rec.payload), "payload", rec))

    def problem(self, key: str, text: str) -> None:
        """Count a problem of one event of kind ``key`` (the first few are listed in ``stats.errors``)."""
        stats = self.report.stats
        stats.parse_errors[key] = stats.parse_errors.get(key, 0) + 1
        if len(stats.errors) < _MAX_ERRORS:
            stats.errors.append(f"{key}: {text}")

    def typed(self, rec: TraceRecord, field: str, tp: Any, value: Any, default: Any = None) -> Any:
        """``value`` of the event's ``field`` if it has the report's type ``tp``; else ``default``,
        and a counted problem of the event: the report only ever holds well-typed values."""
        if type(value) in _PLAIN_TYPES.get(tp, ()):  # nearly every value: what check_value gives back unchanged
            return value
        try:
            return check_value(tp, value, field)
        except ReportFormatError as exc:
            self.problem(rec.key, f"[{rec.compile_id or '-'}] {exc}")
            return default

    def compile(self, cid: Optional[CompileId]) -> Optional[Compile]:
        if cid is None:
            return None
        if cid not in self.compiles:
            self.compiles[cid] = Compile(compile_id=cid)
        return self.compiles[cid]

    def frames(self, rec: TraceRecord, stack: Any) -> list[UserFrame]:
        """Frames of a structured stack, filenames resolved through the string table."""
        out = []
        for fr in stack if isinstance(stack, list) else []:
            if not isinstance(fr, dict):
                continue
            fn = fr.get("filename")
            filename = self.strings.get(fn, f"<string {fn}>") if isinstance(fn, int) else str(fn or "")
            line = self.typed(rec, "stack line", Optional[int], fr.get("line"))
            out.append(UserFrame(filename, line, str(fr.get("name") or ""), str(fr.get("loc") or "")))
        return out


#: The scalar types the builder checks values against, with the types of the values that
#: ``check_value`` gives back as they are (a bool is no int or float there; the rest take its path).
_PLAIN_TYPES: dict[Any, tuple] = {int: (int,), float: (float, int), str: (str,), Optional[int]: (int, type(None)),
                                  Optional[float]: (float, int, type(None)), Optional[str]: (str, type(None))}

Handler = Callable[[_State, TraceRecord], None]


# -- handlers, one per event family ------------------------------------------
def _on_string(st: _State, rec: TraceRecord) -> None:
    body = rec.body
    if isinstance(body, (list, tuple)) and len(body) == 2:  # a tuple when captured live, a list from a file
        st.strings[int(body[1])] = str(body[0])


def _on_dynamo_start(st: _State, rec: TraceRecord) -> None:
    c = st.compile(rec.compile_id)
    if c is None:
        return
    c.attempt = max(c.attempt, rec.attempt)
    stack = st.frames(rec, (rec.body or {}).get("stack"))
    if stack and not c.stack:
        c.stack = stack
        top = stack[-1]
        c.function = c.function or top.function
        c.filename = c.filename or top.filename
        c.first_line = c.first_line or top.lineno


_GRAPH_STAGES = {
    "dynamo_output_graph": "dynamo",
    "aot_forward_graph": "aot_forward",
    "aot_backward_graph": "aot_backward",
    "aot_inference_graph": "aot_inference",
    "aot_joint_graph": "aot_joint",
    "artifact:after_pre_grad_graph": "pre_grad",
    "artifact:inductor_post_grad_graph": "post_grad",
    "inductor_post_grad_graph": "post_grad",
    "artifact:before_pre_grad_graph": "before_pre_grad",
    "artifact:before_post_grad_graph": "before_post_grad",
    "artifact:before_joint_graph": "before_joint",
    "artifact:after_joint_graph": "after_joint",
    # DDP's optimizer (torch/_dynamo/backends/distributed.py) splits a Dynamo graph at
    # gradient-bucket boundaries: the split graph, then one graph per bucket's submodule.
    "optimize_ddp_split_graph": "ddp_split",
    "optimize_ddp_split_child": "ddp_bucket",
}


def _on_graph(st: _State, rec: TraceRecord) -> None:
    stage = _GRAPH_STAGES[rec.key]
    # a DDP bucket's subgraph counts even unread (a summary pass): the event says it exists
    if rec.compile_id is None or (rec.payload is None and stage != "ddp_bucket"):
        return
    st.compile(rec.compile_id)
    code = rec.payload or ""
    name = rec.body.get("name") if stage == "ddp_bucket" and isinstance(rec.body, dict) else None  # submod_N
    parts = rec.prepared if type(rec.prepared) is _DynamoGraph else None  # parsed by a span's reader
    ops = parts.ops if parts is not None else _prepared(rec, _graph_ops)
    g = st.keep(Graph(rec.compile_id, stage, code, ops, str(name or "")), "code", rec)
    if "c10d" in code:
        g.collectives = parts.collectives if parts is not None else collective_calls(code)
    if stage == "dynamo" and code:
        if parts is not None:
            g.nodes, g.places, g.layer_inputs = parts.nodes, parts.places, parts.layer_inputs
        else:
            g.nodes, g.places = graph_nodes(code)
            g.layer_inputs = layer_inputs(g.nodes)
    st.report.graphs.append(g)
    if parts is not None:
        st.report.control_flow.extend(parts.control_flow)
    elif stage == "dynamo":
        st.report.control_flow.extend(parse_control_flow(rec.payload, rec.compile_id))
        st.report.control_flow.extend(inlined_control_flow(rec.payload, rec.compile_id))


def _graph_ops(rec: TraceRecord) -> int:
    return count_ops(rec.payload) if rec.payload else 0


class _DynamoGraph(typing.NamedTuple):
    """What :func:`_on_graph` reads of Dynamo's graph, parsed from its code alone (:func:`_dynamo_graph`)."""

    ops: int
    collectives: Optional[list]  # where the code names c10d
    nodes: Optional[list]  # None for a graph with no code
    places: Optional[list]
    layer_inputs: Any
    control_flow: list


def _dynamo_graph(rec: TraceRecord) -> _DynamoGraph:
    """The pure parse of a ``dynamo_output_graph`` event's code (a span's reader runs it: ``PREPARE_SPAN``)."""
    code = rec.payload or ""
    nodes = places = inputs = None
    if code:
        nodes, places = graph_nodes(code)
        inputs = layer_inputs(nodes)
    flow = [*parse_control_flow(rec.payload, rec.compile_id), *inlined_control_flow(rec.payload, rec.compile_id)]
    return _DynamoGraph(_graph_ops(rec), collective_calls(code) if "c10d" in code else None, nodes, places, inputs, flow)


def _output_kernels(rec: TraceRecord) -> list:
    if rec.payload is None:
        return []
    m = _AOT_ID.search(rec.payload[:400])
    stage = m.group(1).lower() if m else ""
    return parse_output_code(rec.payload, rec.compile_id, stage)


def _on_output_code(st: _State, rec: TraceRecord) -> None:
    st.report.kernels.extend(_prepared(rec, _output_kernels))


_GUARD_ROW = re.compile(r"\+- (?!.*GuardManager)")


def _guard_tree(rec: TraceRecord) -> tuple:
    """(the tree's text, or None where it is the payload itself; its guard count; its guards)."""
    text = rec.payload or ""
    own = None
    if rec.kind == "dynamo_guards":  # older torch: a JSON list of guards
        data = rec.payload_json()
        if isinstance(data, list):
            text = own = "\n".join(str(g.get("code_list") or g) if isinstance(g, dict) else str(g) for g in data)
    count = sum(1 for line in text.splitlines() if _GUARD_ROW.search(line))
    return own, count, parse_guard_tree(text)


def _on_guards(st: _State, rec: TraceRecord) -> None:
    if rec.compile_id is None:
        return
    own, count, tree = _prepared(rec, _guard_tree)
    st.compile(rec.compile_id)
    guards = GuardSet(rec.compile_id, count, rec.payload or "" if own is None else own, tree)
    st.report.guards.append(st.keep(guards, "tree", rec) if own is None and rec.payload is not None else guards)


#: The types of a compile's fields, for the values read from torch's events.
_COMPILE_TYPES = typing.get_type_hints(Compile, vars(sys.modules[Compile.__module__]))
_METRIC_FIELDS = {
    "guard_count": "guard_count",
    "graph_op_count": "graph_op_count",
    "graph_node_count": "graph_node_count",
    "graph_input_count": "graph_input_count",
    "entire_frame_compile_time_s": "entire_frame_compile_s",
    "backend_compile_time_s": "backend_compile_s",
    "inductor_compile_time_s": "inductor_compile_s",
    "code_gen_time_s": "code_gen_s",
    "dynamo_time_before_restart_s": "dynamo_before_restart_s",
    "start_time": "start_time",
}


def _on_metrics(st: _State, rec: TraceRecord) -> None:
    m = rec.body if isinstance(rec.body, dict) else {}
    cid = compile_id_from_text(m.get("compile_id")) or rec.compile_id
    c = st.compile(cid)
    if c is None:
        return
    c.attempt = max(c.attempt, rec.attempt)
    hints = _COMPILE_TYPES
    for src, dst in (("co_name", "function"), ("co_filename", "filename"), ("co_firstlineno", "first_line")):
        if m.get(src):
            setattr(c, dst, st.typed(rec, src, hints[dst], m[src], getattr(c, dst)) or getattr(c, dst))
    for src, dst in _METRIC_FIELDS.items():
        if m.get(src) is not None:
            setattr(c, dst, st.typed(rec, src, hints[dst], m[src], getattr(c, dst)))
    reasons = m.get("restart_reasons") or []
    reasons = st.typed(rec, "restart_reasons", list, list(reasons) if isinstance(reasons, (set, tuple)) else reasons, [])
    c.restart_reasons = [str(r) for r in reasons]
    c.fail_type = str(m.get("fail_type") or "")
    c.fail_reason = str(m.get("fail_reason") or "")
    c.metrics = {k: v for k, v in m.items() if k not in _METRIC_FIELDS and v not in (None, [], {}, "")}
    c.status = compile_status(m, graph_break=cid in st.broke)
    if c.fail_type and c.status in ("failed", "recompile limit"):
        line = st.typed(rec, "fail_user_frame_lineno", Optional[int], m.get("fail_user_frame_lineno"))
        frame = UserFrame(str(m.get("fail_user_frame_filename") or ""), line, c.function)
        st.report.failures.append(parse_failure(cid, c.fail_type, c.fail_reason, frame, st.errors.get(cid, "")))


def _on_bwd_metrics(st: _State, rec: TraceRecord) -> None:
    m = rec.body if isinstance(rec.body, dict) else {}
    c = st.compile(compile_id_from_text(m.get("compile_id")) or rec.compile_id)
    if c is None:
        return
    for key in ("inductor_compile_time_s", "code_gen_time_s"):
        if m.get(key) is not None:
            c.metrics[f"bwd_{key}"] = m[key]
    if m.get("fail_type"):
        c.metrics["bwd_fail_type"] = m["fail_type"]
        c.metrics["bwd_fail_reason"] = m.get("fail_reason")


#: What compile_time reads of a chromium event (the rest is dropped: a long log holds tens of
#: thousands of these events until the report is finished), except for max-autotune's own
#: spans, whose args (the choices, the winner) parse/autotune.py reads whole.
_CHROMIUM_KEYS = ("name", "ph", "ts", "dur", "pid", "tid")
_AUTOTUNE_SPANS = ("_template_autotuning", "_template_precompiling")


#: The types compile_time and the autotune parser rely on, for the chromium fields they read.
_CHROMIUM_TYPES = {"name": str, "ph": str, "ts": float, "dur": float}


def plain_chromium_entry(data: "bytes | str | None", cid: Optional[CompileId]) -> Optional[tuple]:
    """:func:`chromium_entry` of a payload (its bytes, or its text) where orjson reads it and what
    the report keeps of it is plain: strings, booleans, None and numbers below 2**63 (a longer integer
    is one orjson made a float), no autotune span. Nearly every event: read in one pass, from bytes
    never decoded to text (orjson checks that they are UTF-8). None where the exact reader decides."""
    try:
        ev = fast_loads(data)
    except (ValueError, TypeError):  # not JSON, NaN, a lone surrogate, no payload: the exact reader decides
        return None
    if type(ev) is not dict:
        return None
    args = ev.get("args")
    slim = {}
    problem = None
    for k in _CHROMIUM_KEYS_AND_ID:  # each kept value's test, and the types the report needs, in one pass
        if k in ev if k != "compile_id" else type(args) is dict and k in args:
            v = ev[k] if k != "compile_id" else args[k]
            t = type(v)
            if t is float:
                if not -_LONG < v < _LONG:
                    return None
            elif t is not str and t is not int and v is not None and t is not bool:
                return None
            if k == "compile_id":
                slim["args"] = {"compile_id": v}
                continue
            slim[k] = v
            tp = _CHROMIUM_TYPES.get(k)
            if tp is not None and t is not tp and not (tp is float and t is int) and problem is None and not _fits(tp, v):
                problem = k
    if str(ev.get("name", "")).endswith(_AUTOTUNE_SPANS):
        return None
    if problem is not None:
        return "problem", _type_problem(cid, problem, ev[problem])
    return "slim", slim


def _type_problem(cid: Optional[CompileId], key: str, value: Any) -> str:
    return f"[{cid or '-'}] {key}: expected {describe(_CHROMIUM_TYPES[key])}, got {value!r:.40}"


_LONG = float(2**63)
_CHROMIUM_KEYS_AND_ID = (*_CHROMIUM_KEYS, "compile_id")  # compile_id: the one of args


def _chromium_entry(rec: TraceRecord) -> tuple:
    """What the report keeps of a chromium event (:func:`chromium_entry`)."""
    return chromium_entry(rec.payload, rec.compile_id)


def chromium_entry(payload: Optional[str], cid: Optional[CompileId]) -> tuple:
    """What the report keeps of a chromium event with this ``payload`` of compile ``cid``: ("whole",
    the event) for an autotune span, ("slim", its compile-time fields), ("problem", why), or ("none",
    None) for a payload that is not an event. A plain event is read by orjson alone
    (:func:`plain_chromium_entry`); any other by the one bounded reader
    (:meth:`TraceRecord.payload_json`), whose check for long integers costs a pass over the text that
    tens of thousands of events mostly do not need."""
    entry = plain_chromium_entry(payload, cid)
    if entry is not None:
        return entry
    ev = payload_json(payload, bounded=False)  # the depth is checked on what is kept
    if not isinstance(ev, dict):
        return "none", None
    for key in _CHROMIUM_TYPES:  # the first of them (in _CHROMIUM_KEYS' order) of another type
        if key in ev and not _fits(_CHROMIUM_TYPES[key], ev[key]):
            return "problem", _type_problem(cid, key, ev[key])
    if str(ev.get("name", "")).endswith(_AUTOTUNE_SPANS):
        check_depth(ev, payload)
        return "whole", ev
    slim = {k: ev[k] for k in _CHROMIUM_KEYS if k in ev}
    args = ev.get("args")
    kept = list(slim.values())
    if isinstance(args, dict) and "compile_id" in args:
        slim["args"] = {"compile_id": args["compile_id"]}
        kept.append(args["compile_id"])
    if any(isinstance(v, (dict, list)) for v in kept):
        check_depth(ev, payload)  # a container kept: bounded as every kept value is
    return "slim", slim


def _on_chromium(st: _State, rec: TraceRecord) -> None:
    _keep_chromium(st, *_prepared(rec, _chromium_entry))


def _keep_chromium_batch(st: _State, batch: ChromiumBatch) -> None:
    """:func:`_keep_chromium` of each entry of ``batch``."""
    for kind, ev in batch:
        _keep_chromium(st, kind, ev)


def _keep_chromium(st: _State, kind: str, ev: Any) -> None:
    """One chromium event's entry (:func:`chromium_entry`) kept for compile time and autotuning."""
    if kind == "problem":
        st.problem("chromium_event", ev)
    elif kind == "whole":
        st.chromium.append(ev)
        st.autotune_spans.append(ev)
    elif kind == "slim":
        for key in ("name", "ph"):  # a few names over tens of thousands of events: one string each
            if type(ev.get(key)) is str:
                ev[key] = sys.intern(ev[key])
        args = ev.get("args")
        if args is not None and type(args["compile_id"]) is str:
            args["compile_id"] = sys.intern(args["compile_id"])
        st.chromium.append(ev)


def _fits(tp: Any, value: Any) -> bool:
    if type(value) is tp or tp is float and type(value) is int:  # nearly every value: no walk of the type
        return True
    try:
        check_value(tp, value, "")
        return True
    except ReportFormatError:
        return False


def _on_graph_break(st: _State, rec: TraceRecord) -> None:
    gb = parse_graph_break(rec.payload or "", user_files=lambda f: st.report.owner(f) is Owner.USER)
    gb.compile_id = rec.compile_id
    gb.compile_ids = [rec.compile_id] if rec.compile_id else []
    c = st.compile(rec.compile_id)
    if c is not None:
        st.broke.add(c.compile_id)
        if c.status == "ok":
            c.status = "graph break"
        if is_skip_message(rec.payload):
            st.gave_up.add(c.compile_id)
    caller = gb.user_stack[-2] if len(gb.user_stack) >= 2 else None
    gb.callers = [caller] if caller is not None else []
    seen = st.breaks.get(gb.site)
    if seen is None:
        st.breaks[gb.site] = gb
        return
    seen.count += 1
    if caller is not None and all((c.filename, c.lineno) != (caller.filename, caller.lineno) for c in seen.callers):
        seen.callers.append(caller)
    if rec.compile_id and rec.compile_id not in seen.compile_ids:
        seen.compile_ids.append(rec.compile_id)


def _on_recompile(st: _State, rec: TraceRecord) -> None:
    if rec.compile_id is None:
        return
    data = rec.payload_json()
    text = "\n".join(map(str, data)) if isinstance(data, list) else (rec.payload or "")
    pairs = parse_recompile_reasons(text)
    c = st.compile(rec.compile_id)
    c.is_recompile = True
    failed = []
    for cid, _ in pairs:
        if cid is not None and cid not in failed:
            failed.append(cid)
    st.report.recompiles.append(Recompile(rec.compile_id, reasons=[r for _, r in pairs], failed_compile_ids=failed,
                                          guards=[parse_guard_failure(r, cid) for cid, r in pairs]))


def _on_cache(st: _State, rec: TraceRecord) -> None:
    cid = rec.compile_id
    if cid is None:
        return
    layer, _, status = rec.name.rpartition("_cache_")
    st.cache.setdefault(cid, {}).setdefault(layer, []).append((status, _prepared(rec, _cache_reason)))


def _cache_reason(rec: TraceRecord) -> str:
    """Why a cache event missed or was bypassed ("" where its payload does not say)."""
    data = rec.payload_json() if rec.payload else None
    if isinstance(data, dict):
        return str(data.get("cache_bypass_reason") or data.get("reason") or "")
    return ""


#: The cache events' kinds (each a layer's hit, miss or bypass).
_CACHE_KINDS = tuple(f"artifact:{layer}_cache_{status}" for layer in ("fx_graph", "aotautograd")
                     for status in ("hit", "miss", "bypass"))


def _on_kernel_info(st: _State, rec: TraceRecord) -> None:
    data = rec.payload_json()
    if isinstance(data, dict):
        for name, info in data.items():
            if isinstance(info, dict):
                st.kernel_info[(rec.compile_id, name)] = info


def _on_symbol(st: _State, rec: TraceRecord) -> None:
    """``create_symbol``: a size or a Python number torch made symbolic, with the value it saw
    (the doctor reads what a changed input became in a recompile)."""
    body = rec.body if isinstance(rec.body, dict) else {}
    source, val = body.get("source"), body.get("val")
    c = st.compile(rec.compile_id)
    if c is not None and source and val is not None:
        c.symbols.setdefault(str(source), str(val))
    symbol = body.get("symbol")
    if c is not None and isinstance(symbol, str) and SYMBOL.match(symbol):
        kind, path, dim = parse_symbol_source(source)
        value = int(val) if isinstance(val, (int, str)) and str(val).lstrip("-").isdigit() else None
        c.size_symbols.append(SizeSymbol(symbol, kind, path, dim, value))


def _on_shape_guard(st: _State, rec: TraceRecord) -> None:
    """``guard_added_fast``: a guard torch added on symbolic sizes while compiling, and the line of the
    traced code that asked it (the symbols it reads are named at the end, from the compile's symbols)."""
    body = rec.body if isinstance(rec.body, dict) else {}
    expr = body.get("expr")
    if rec.compile_id is None or not isinstance(expr, str):
        return
    stack = st.frames(rec, body.get("user_stack"))
    st.report.shape_guards.append(ShapeGuard(rec.compile_id, expr, parse_shape_expr(expr),
                                             stack[-1] if stack else UserFrame()))


def _on_cache_hit(st: _State, rec: TraceRecord) -> None:
    st.report.ran_cached_code = True


def _on_capture(st: _State, rec: TraceRecord) -> None:
    before = rec.body.get("graphs_before") if isinstance(rec.body, dict) else None
    st.report.graphs_before = before if isinstance(before, bool) else None


def _on_cudagraph(st: _State, rec: TraceRecord) -> None:
    if isinstance(rec.body, dict):
        st.cudagraph_events.append((rec.compile_id, rec.body))


def _on_autotune(st: _State, rec: TraceRecord) -> None:
    if isinstance(rec.body, dict):
        st.autotune_feedback.append((rec.compile_id, rec.body, rec.payload))


def _on_warning(st: _State, rec: TraceRecord) -> None:
    w = parse_torch_warning(rec.body, rec.compile_id)
    if w is None:
        return
    same = next((x for x in st.report.torch_warnings if x.message == w.message), None)
    if same is not None:
        same.count += 1
    else:
        st.report.torch_warnings.append(w)


def _on_kernel_stack_traces(st: _State, rec: TraceRecord) -> None:
    st.raw(rec)
    traces = kernel_stack_traces(rec.payload_json())
    if traces:
        st.provenance.setdefault(rec.compile_id, {}).update(traces)


def _on_dump_file(st: _State, rec: TraceRecord) -> None:
    """A file of generated code torch wrote whole (an FX GraphModule's ``<eval_with_key>.N``):
    kept with its name and text; an event that names no file is kept raw and counted as a problem."""
    name = dumped_file_name(rec.body)
    if name is None:
        raise ValueError("a dump_file event without a file name")
    st.report.dumped_files.append(st.keep(DumpedFile(name, rec.payload or "", rec.compile_id), "code", rec))


def _on_dynamo_error(st: _State, rec: TraceRecord) -> None:
    if rec.compile_id is not None:
        st.errors[rec.compile_id] = rec.payload or ""


HANDLERS: dict[str, Handler] = {
    "str": _on_string,
    "dynamo_start": _on_dynamo_start,
    **{key: _on_graph for key in _GRAPH_STAGES},
    "inductor_output_code": _on_output_code,
    "dynamo_cpp_guards_str": _on_guards,
    "dynamo_guards": _on_guards,
    "compilation_metrics": _on_metrics,
    "bwd_compilation_metrics": _on_bwd_metrics,
    "chromium_event": _on_chromium,
    "artifact:dynamo_graph_break_reason": _on_graph_break,
    "artifact:recompile_reasons": _on_recompile,
    "artifact:dynamo_error": _on_dynamo_error,
    "dump_file": _on_dump_file,
    "create_symbol": _on_symbol,
    "guard_added_fast": _on_shape_guard,
    "artifact:triton_kernel_info": _on_kernel_info,
    "artifact:inductor_provenance_tracking_kernel_stack_traces": _on_kernel_stack_traces,
    CUDAGRAPH_EVENT: _on_cudagraph,
    AUTOTUNE_EVENT: _on_autotune,
    WARNING_EVENT: _on_warning,
    CACHE_HIT_EVENT: _on_cache_hit,
    CAPTURE_EVENT: _on_capture,
    **{key: _on_cache for key in _CACHE_KINDS},
}

#: The pure part of a handler (a function of the record alone: parsing its payload), which a
#: reader process runs ahead of the builder (``capture.readahead``); the handler uses its result
#: (``TraceRecord.prepared``) or, where there is none, runs it itself.
#: Which parts a reader runs is a balance: it reads and sends every record besides, so the
#: parse of generated code and of chromium events stays here (on a 300 MB log, with either
#: the reader was the slower of the two processes, and the pass slower than with neither).
PREPARE: dict[str, Callable[[TraceRecord], Any]] = {
    **{key: _graph_ops for key in _GRAPH_STAGES},
    "dynamo_cpp_guards_str": _guard_tree,
    "dynamo_guards": _guard_tree,
}


#: What a reader of one span of a log (``capture.chunks``) prepares: there the builder is the
#: slower process (it builds the records of every span), so the readers parse the chromium events
#: (outside batches: a read's chromium events come in batches, prepared as read), Dynamo's graphs,
#: and, in a full read, Inductor's generated code (the builder's largest part there: a fifth of its
#: CPU for the page of the 100 MB benchmark log when it parsed it itself) and the caches' reasons.
PREPARE_SPAN: dict[str, Callable[[TraceRecord], Any]] = {
    **PREPARE, "chromium_event": _chromium_entry, "dynamo_output_graph": _dynamo_graph,
    "inductor_output_code": _output_kernels, **{key: _cache_reason for key in _CACHE_KINDS},
}
#: The kinds whose handler reads only the prepared value where there is one (never None): a reader
#: process need not send their payload back (the caches' JSON payloads are half of what the readers
#: of a full read would send, and hold until this process takes it).
PREPARED_ALONE = frozenset({"chromium_event", "inductor_output_code", *_CACHE_KINDS})


def prepare_record(rec: TraceRecord, table: Optional[dict[str, Callable[[TraceRecord], Any]]] = None) -> Any:
    """What :data:`PREPARE` (or ``table``) gives for ``rec`` (None for a kind it has no part for)."""
    fn = (PREPARE if table is None else table).get(rec.key)
    return None if fn is None else fn(rec)


def prepare_span_record(rec: TraceRecord) -> Any:
    """What :data:`PREPARE_SPAN` gives for ``rec``."""
    return prepare_record(rec, PREPARE_SPAN)


def _prepared(rec: TraceRecord, fn: Callable[[TraceRecord], Any]) -> Any:
    return rec.prepared if rec.prepared is not None else fn(rec)


#: Kinds understood and deliberately not kept (counted in stats.by_kind): bulky
#: or internal detail that no view shows.
IGNORED = frozenset(
    {
        "describe_storage",
        "describe_tensor",
        "describe_source",
        "create_unbacked_symbol",
        "guard_added",
        "symbolic_shape_specialization",
        "propagate_real_tensors_provenance",
        "compilation_metrics_runtime",
        "bwd_compilation_metrics_runtime",
        "artifact:fx_graph_runnable",
        "artifact:aot_forward_graph_fw_metadata",
        "artifact:torch._functorch.config",
        "artifact:runtime_wrapper_orchestration",
        "artifact:torch_version",
        "artifact:backward_prologue",
        "artifact:backward_epilogue",
        "artifact:compiled_function_forward",
        "artifact:compiled_function_backward",
        "artifact:compiled_fn_wrapper",
    }
)
#: Kinds understood and kept as raw artifacts for later use (not "unknown").
KEPT_RAW = frozenset(
    {
        "artifact:inductor_provenance_tracking_node_mappings",
        "artifact:dynamo_side_effects",
    }
)
_IGNORED_PATTERNS = (re.compile(r"^artifact:torch_dynamo_resume_in_.*_BYTECODE$"),)


def _is_ignored(key: str) -> bool:
    return key in IGNORED or any(p.match(key) for p in _IGNORED_PATTERNS)


def counted_only(key: str) -> bool:
    """Whether the builder only counts the events of kind ``key`` (no handler, ignored): a reader
    process sends them without their metadata or payload (torch's compile metrics at run time are
    a few large dicts a compile)."""
    return key not in HANDLERS and _is_ignored(key)


def _finish(st: _State, files: Optional[SourceFiles] = None) -> CompileReport:
    r = st.report
    for cid, layers in st.cache.items():
        c = st.compile(cid)
        for layer, events in layers.items():
            statuses = sorted({s for s, _ in events})
            status = statuses[0] if len(statuses) == 1 else "mixed (" + ", ".join(statuses) + ")"
            reason = next((why for _, why in events if why), "")
            if layer == "fx_graph":
                c.cache.fx_graph, c.cache.fx_graph_bypass_reason = status, reason
            else:
                c.cache.aot_autograd, c.cache.aot_autograd_bypass_reason = status, reason
    r.compiles = sorted(st.compiles.values(), key=lambda c: (c.start_time or float("inf"), c.compile_id))
    _ran_eagerly(r, st.gave_up)
    _share_frame_names(r)
    for c in r.compiles:
        origin = resume_origin(c.function)
        c.resumes = origin[0] if origin else ""
    for rc in r.recompiles:
        c = st.compiles.get(rc.compile_id)
        if c is not None:
            rc.function, rc.filename, rc.resumes = c.function, c.filename, c.resumes
    for rc in r.recompiles:  # the value a guarded input had when the new compile made it a symbol
        c = st.compiles.get(rc.compile_id)
        paths = {guard_path(k): v for k, v in (c.symbols if c is not None else {}).items()}
        for g in rc.guards:
            g.symbol = paths.get(g.path, "") if g.path and g.kind in ("value", "global", "length", "training") else ""
    for g in r.shape_guards:  # each guard's symbols, as the compile that asked it made them
        c = st.compiles.get(g.compile_id)
        used = symbols_of(g.tree)
        g.symbols = [x for x in (c.size_symbols if c is not None else []) if x.symbol in used]
    name_guarded_values(r, files)
    for c in r.compiles:
        if c.status == "recompile limit":
            rc = next((x for x in r.recompiles if x.compile_id == c.compile_id), None)
            if rc is None:
                rc = Recompile(c.compile_id, c.function, c.filename)
                r.recompiles.append(rc)
            rc.limit_hit, rc.limit_message = True, c.fail_reason
            rc.limit_type = recompile_limit_type(c.fail_reason) or "recompile_limit"
            rc.limit = recompile_limit_value(c.fail_reason, c.metrics.get("dynamo_config"), rc.limit_type)
    for k in r.kernels:
        info = st.kernel_info.get((k.compile_id, k.name))
        if info:
            k.info = info
    r.graph_breaks = list(st.breaks.values())
    for b in r.graph_breaks:
        b.names_collective = names_collective(b)
    r.compile_time = compile_time(st.chromium, r.compiles)
    node_maps = graph_node_lines(r.graphs)
    attach_user_lines(r.kernels, r.graphs, st.provenance, node_maps)
    r.node_lines = user_lines_by_node(node_maps)
    r.autotuning = merge_feedback(autotune_from_events(st.autotune_spans), st.autotune_feedback)
    link_kernels(r.autotuning, r.kernels)
    skip_reasons = {c.compile_id: str(c.metrics["cudagraph_skip_reason"]) for c in r.compiles
                    if c.metrics.get("cudagraph_skip_reason")}
    r.cudagraphs = cudagraphs_from_events(st.cudagraph_events, skip_reasons, r.code_layout)
    return r


def _ran_eagerly(r: CompileReport, gave_up: set) -> None:
    """A frame whose graph break torch could not handle ("Skipping the function and falling
    back to eager") ran without compiling: its compile is "skipped", not a failure, even
    when its ``fail_reason`` (e.g. a data-dependent guard) does not say so. torch and
    tlparse count every such frame (``fail_type`` set); the user's code ran fine."""
    for c in r.compiles:
        if c.status == "failed" and c.compile_id in gave_up:
            c.status = "skipped"
    skipped = {c.compile_id for c in r.compiles if c.status == "skipped"}
    r.failures = [f for f in r.failures if f.compile_id not in skipped]


def _share_frame_names(r: CompileReport) -> None:
    """A compile that torch logged no frame for (e.g. one refused at the recompile limit)
    takes its function and file from another compile of the same frame id; a failure
    with no user frame is placed at that function."""
    by_frame: dict[tuple, Compile] = {}
    for c in r.compiles:
        if c.function:
            by_frame.setdefault((c.compile_id.frame_id, c.compile_id.compiled_autograd_id), c)
    for c in r.compiles:
        twin = by_frame.get((c.compile_id.frame_id, c.compile_id.compiled_autograd_id))
        if twin is not None and not c.function:
            c.function, c.filename, c.first_line = twin.function, twin.filename, c.first_line or twin.first_line
    compiles = {c.compile_id: c for c in r.compiles}
    for f in r.failures:
        raiser = raising_frame(f.traceback)
        f.raised_by_torch = raiser is not None and r.owner(raiser.filename) is Owner.TORCH
        named = _frame_at(f.traceback or f.message, f.frame.filename, f.frame.lineno) if f.frame.filename else None
        if named is not None:  # torch gave the line; its stack names the function that holds it
            f.frame = named
        if not f.frame.filename or r.owner(f.frame.filename) is Owner.TORCH:
            user = _last_user_frame(f.traceback or f.message, r)
            if user is not None:
                f.frame = user
                continue
        c = compiles.get(f.compile_id) if f.compile_id is not None else None
        if c is not None and not f.frame.filename and c.filename:
            f.frame = UserFrame(c.filename, c.first_line, c.function, f.frame.source_line)


def _frame_at(text: str, filename: str, lineno: Optional[int]) -> Optional[UserFrame]:
    """The frame of torch's user stack ("from user code:", "User stack:") at ``filename:lineno``, with its function and line."""
    stack = user_stack_text(text or "")
    if not stack or lineno is None:
        return None
    return next((fr for fr in parse_traceback(stack) if (fr.filename, fr.lineno) == (filename, lineno)), None)


def _last_user_frame(text: str, r: CompileReport) -> Optional[UserFrame]:
    """The innermost frame of torch's user stack ("from user code:", "User stack:") that is not torch's own
    (a failure inside ``scan`` is the user's ``scan(...)`` call, not scan.py)."""
    stack = user_stack_text(text or "")
    if not stack:
        return None
    frames = [fr for fr in parse_traceback(stack) if r.owner(fr.filename) is not Owner.TORCH]
    return frames[-1] if frames else None


def build_report(records: Iterable[RawRecord], layout: Optional[CodeLayout] = None,
                 files: Optional[SourceFiles] = None) -> CompileReport:
    """Build a :class:`CompileReport` from structured-trace records.

    ``records`` are ``(metadata, payload)`` pairs as torch logs them (or
    :class:`TraceRecord` objects, or a reader's :class:`~ipycompile.capture.records.ChromiumBatch`
    of chromium events), in the order they were emitted. ``layout`` is
    where code lived in the process that logged them (``capture.layout.current_layout()``
    for a live capture); None (a trace file from elsewhere) judges files by path shape.
    ``files``: where the source files the build reads come from (:class:`.source_files.SourceFiles`:
    a log's own copies, then this machine's files; by default this machine's files).
    """
    st = _State()
    st.report.code_layout = layout
    stats = st.report.stats
    for raw in records:
        if type(raw) is ChromiumBatch:  # a reader's chromium events, each already prepared
            if raw:
                stats.records += len(raw)
                stats.by_kind["chromium_event"] = stats.by_kind.get("chromium_event", 0) + len(raw)
                _keep_chromium_batch(st, raw)
            continue
        try:
            rec = raw if isinstance(raw, TraceRecord) else TraceRecord.from_raw(*raw)
        except Exception as exc:  # a malformed record is counted, never fatal
            stats.parse_errors["<malformed>"] = stats.parse_errors.get("<malformed>", 0) + 1
            if len(stats.errors) < _MAX_ERRORS:
                stats.errors.append(f"<malformed>: {exc!r}")
            continue
        key = rec.key
        stats.records += 1
        stats.by_kind[key] = stats.by_kind.get(key, 0) + 1
        handler = HANDLERS.get(key)
        if handler is None:
            if not _is_ignored(key):
                if key not in KEPT_RAW:
                    stats.unknown[key] = stats.unknown.get(key, 0) + 1
                st.raw(rec)
            continue
        try:
            handler(st, rec)
        except Exception as exc:  # one bad payload must not lose the report
            st.problem(key, repr(exc) if not isinstance(exc, ValueError) else f"[{rec.compile_id or '-'}] {exc}")
            st.raw(rec)
    report = _finish(st, files)
    for obj, name, ref in st.lazy:  # the payloads' text goes back to the log, their places kept
        setattr(obj, name, ref)
    return report
