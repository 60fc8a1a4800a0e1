"""From a kernel to the user's source lines.

Torch records where each FX node came from (its ``stack_trace``) and prints it
above the nodes of every readable graph it logs::

    # File: /path/to/In [4], line 7 in forward, code: attn = q @ k.transpose(-2, -1)
    mm: "f16[...]" = torch.ops.aten.mm.default(...)

Inductor names a kernel's nodes in its output code (``Source Nodes: [...]``, kept
in ``Kernel.source_nodes``); with ``INDUCTOR_PROVENANCE`` (or ``TORCH_COMPILE_DEBUG``)
torch also logs each kernel's stack traces itself
(``inductor_provenance_tracking_kernel_stack_traces``). A kernel's user lines,
best first:

1. ``"provenance"``: torch's own kernel -> stack traces artifact (when it is logged and not empty);
2. ``"nodes"``: its source nodes, looked up in the graphs of its compile (forward
   kernels name Dynamo-level nodes, ``h``, ``linear``; backward kernels the backward
   graph's, ``mul_4``);
3. ``"ops"`` (approximate): for kernels whose nodes torch does not name (C++
   kernels of torch 2.13), the lines of the nodes of its graph that run one of
   the kernel's ATen ops.

Pure functions of text, like the other parsers.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from ...report.model import CompileId, Graph, Kernel, UserFrame
from ..records import loads
from .frames import parse_traceback
from .fx import place

__all__ = ["node_lines", "kernel_stack_traces", "attach_user_lines", "graph_node_lines", "user_lines_by_node"]

_NODE = re.compile(r"^\s+(?P<name>[A-Za-z_]\w*)(?:\s*:\s*\"[^\"]*\"|\s*:\s*[\w.\[\], ]+)?\s*=\s*(?P<rhs>.*)$")
_TARGET = re.compile(r"torch\.ops\.(?P<ns>\w+)\.(?P<op>\w+)")


def node_lines(graph_code: str) -> dict[str, tuple[UserFrame, str]]:
    """Each node of a readable graph -> (the user frame above it, its ATen op or "")."""
    out: dict[str, tuple[UserFrame, str]] = {}
    current: Optional[UserFrame] = None
    for line in graph_code.splitlines():
        p = place(line) if line.lstrip().startswith("#") else None
        if p is not None:
            current = p
            continue
        if not line.strip() or line.strip().startswith("#"):
            continue
        if line.strip().startswith(("return", "def ", "class ")):
            current = None if line.strip().startswith("def ") else current
            continue
        n = _NODE.match(line)
        if n and current is not None:
            t = _TARGET.search(n.group("rhs"))
            out.setdefault(n.group("name"), (current, f"{t.group('ns')}.{t.group('op')}" if t else ""))
    return out


def kernel_stack_traces(payload: Any) -> dict[str, list[UserFrame]]:
    """torch's kernel -> stack traces artifact: ``{"triton_poi_fused_gelu_0:2": ["  File ..."]}``
    -> kernel name -> the innermost frame of each trace (distinct, in order)."""
    data = payload
    if isinstance(payload, str):
        try:
            data = loads(payload)
        except ValueError:
            return {}
    out: dict[str, list[UserFrame]] = {}
    if not isinstance(data, dict):
        return out
    for key, traces in data.items():
        name = str(key).rsplit(":", 1)[0]
        frames = out.setdefault(name, [])
        for trace in traces if isinstance(traces, list) else [traces]:
            fs = parse_traceback(str(trace))
            if fs and fs[-1] not in frames:
                frames.append(fs[-1])
    return {k: v for k, v in out.items() if v}


def _is_backward(g: Graph) -> bool:
    return g.stage == "aot_backward" or (g.stage == "post_grad" and "tangents_" in g.code)


def graph_node_lines(graphs: Iterable[Graph]) -> dict[tuple[str, str], list[dict[str, tuple[UserFrame, str]]]]:
    """(compile id, "forward" | "backward") -> node maps of that compile's graphs, best first."""
    order = {"dynamo": 0, "post_grad": 1, "aot_forward": 2, "aot_inference": 2, "aot_backward": 2}
    found: dict[tuple[str, str], list[tuple[int, dict]]] = {}
    for g in graphs:
        if g.stage not in order:
            continue
        side = "backward" if _is_backward(g) else "forward"
        found.setdefault((str(g.compile_id), side), []).append((order[g.stage], node_lines(g.code)))
    return {key: [m for _, m in sorted(maps, key=lambda x: x[0])] for key, maps in found.items()}


def user_lines_by_node(maps: dict[tuple[str, str], list[dict[str, tuple[UserFrame, str]]]]) -> dict[str, UserFrame]:
    """Each node's user frame, by node name, over every compile's graphs (:func:`graph_node_lines`'s
    ``maps``; the first graph that names a node wins): ``CompileReport.node_lines``."""
    out: dict[str, UserFrame] = {}
    for found in maps.values():
        for m in found:
            for node, (frame, _) in m.items():
                out.setdefault(node, frame)
    return out


def _distinct(frames: Iterable[UserFrame]) -> list[UserFrame]:
    out: list[UserFrame] = []
    for f in frames:
        if all((f.filename, f.lineno) != (o.filename, o.lineno) for o in out):
            out.append(f)
    return sorted(out, key=lambda f: (f.filename, f.lineno or 0))


def attach_user_lines(kernels: Iterable[Kernel], graphs: list[Graph],
                      provenance: dict[Optional[CompileId], dict[str, list[UserFrame]]],
                      maps: Optional[dict[tuple[str, str], list[dict[str, tuple[UserFrame, str]]]]] = None) -> None:
    """Fill ``Kernel.user_lines`` / ``user_lines_from`` (see the module's doc); ``maps``: the graphs'
    :func:`graph_node_lines`, when already read."""
    maps = graph_node_lines(graphs) if maps is None else maps
    for k in kernels:
        traced = provenance.get(k.compile_id, {}).get(k.name)
        if traced:
            k.user_lines, k.user_lines_from = _distinct(traced), "provenance"
            continue
        side = "backward" if k.graph_stage == "backward" else "forward"
        candidates = maps.get((str(k.compile_id), side), [])
        frames = []
        for node in k.source_nodes:
            for m in candidates:
                if node in m:
                    frames.append(m[node][0])
                    break
        if frames:
            k.user_lines, k.user_lines_from = _distinct(frames), "nodes"
            continue
        ops = {op for op in k.aten_ops}
        if ops and candidates:
            m = next((mm for mm in candidates if any(o for _, o in mm.values())), {})
            frames = [frame for frame, op in m.values() if op in ops]
            if frames:
                k.user_lines, k.user_lines_from = _distinct(frames), "ops"
