"""Unrolled loops: runs of structurally identical segments in a Dynamo graph.

Dynamo traces a Python loop by running it: a loop of N iterations leaves N copies of
its body in the graph, so compile time (and, for the loop's own recompiles, the
number of versions) grows with the trip count. :func:`find_unrolled_loops` (a doctor
pass) reads the op nodes capture read from each Dynamo graph (``Graph.nodes``, stage
``"dynamo"``: each node's annotation, expression with names and numbers blanked, the
names it reads, and the place of the ``# File:`` comment torch printed above it;
``capture/parse/fx.py`` is the one reader of that text) and looks for a
segment of nodes repeated back to back, where two nodes are alike when they come
from the same source line and do the same thing to values of the same type and
shape, whatever the names and numbers involved (the loop variable). Distinct layers
written out by hand come from different lines, and a network's stages of different
shapes differ in their shapes: neither is reported.

Each run becomes an :class:`~ipycompile.report.UnrolledLoop`, placed at the loop's
line: for a stack of layers (each copy reads other weights, ``self.layers[0]``,
``self.layers[1]``, ...), the ``for`` over that container (``for layer in self.layers:``)
in the source the report kept: the innermost frame the copies share that differs per
iteration only by the loop variable. Torch prints only each node's innermost frame
(``print_readable`` writes the last frame of the node's ``stack_trace``; neither 2.11 nor
2.13 logs the full stack in the trace), so the copies' printed places are the layer's own
lines (an activation function's ``return``, in a library); capture/kept_source.py keeps the
functions that loop over such a container. A loop whose place is in code the user does
not own gets no ``scan``/``map`` rewrite: the loop is the library's to change. Otherwise: the ``for`` line where Dynamo
unpacked the loop's items (``for x in xs:``), else the body's first line in the compiled
function, else the first line of the segment outside torch. Its suggestion is

* ``scan`` when an iteration reads what the previous one computed (a carry), ``map``
  when iterations are independent;
* ``nested_compile_region`` (or regional compilation) when each copy reads other
  weights (a loop over an ``nn.ModuleList`` of identical layers): the layers are
  different parameters run through the same code, which ``scan`` would need stacked.

Segments of item unpacking alone (``x[0]``, ``x[1]``, ...), of calls to one
``invoke_subgraph`` (code already compiled once and reused) and of constants made from
nothing the graph holds (a cache's ``torch.tensor(4096)`` for each layer) are not loops to report.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Optional

from ..report.model import MIN_REPEATS, Graph, Suggestion, UnrolledLoop
from ..report.owners import Owner
from .source import Sources

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["find_unrolled_loops", "graph_nodes", "unrolled_loops_in", "MIN_REPEATS"]

#: Candidate periods tried at each node (the next occurrences of the same node).
_MAX_CANDIDATES = 32

@dataclasses.dataclass
class Node:
    """One op node of a Dynamo graph with its place: capture's :class:`~ipycompile.report.FxNode`
    record and the place torch printed above it (``Graph.place_of``)."""

    name: str
    type: str
    expr: str
    file: str = ""
    line: Optional[int] = None
    function: str = ""
    code: str = ""  # the user's line, as torch printed it
    shape_key: str = ""
    reads: list = dataclasses.field(default_factory=list)


def graph_nodes(graph: Graph) -> list[Node]:
    """The op nodes capture read from ``graph`` (``Graph.nodes``), each with its place."""
    out = []
    for n in graph.nodes:
        p = graph.place_of(n)
        out.append(Node(n.name, n.type, n.expr, p.filename, p.lineno, p.function, p.source_line, n.shape_key,
                        list(n.reads)))
    return out


_SUBSCRIPT_KEY = ("%[", "]")


# -- finding runs -----------------------------------------------------------------
@dataclasses.dataclass
class _Run:
    start: int
    period: int
    repeats: int

    @property
    def end(self) -> int:
        return self.start + self.period * self.repeats


_MOD = (1 << 61) - 1
_BASE = 1_000_003


def _runs(seq: list[int]) -> list[_Run]:
    """Maximal back-to-back repeats of a segment (greedy, left to right; at each position
    the period that covers the most nodes, fewer nodes per copy on a tie). Segments are
    compared by prefix hashes (then checked for real), so a graph of many thousand nodes
    takes milliseconds."""
    n = len(seq)
    prefix, power = [0] * (n + 1), [1] * (n + 1)
    for i, s in enumerate(seq):
        prefix[i + 1] = (prefix[i] * _BASE + s + 1) % _MOD
        power[i + 1] = power[i] * _BASE % _MOD

    def h(a: int, b: int) -> int:
        return (prefix[b] - prefix[a] * power[b - a]) % _MOD

    where: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(seq):
        where[s].append(i)
    i, out = 0, []
    while i < n:
        best: Optional[_Run] = None
        occ = where[seq[i]]
        k0 = bisect.bisect_right(occ, i)
        for j in occ[k0:k0 + _MAX_CANDIDATES]:
            p = j - i
            if i + 2 * p > n:
                break
            if seq[j + p - 1] != seq[j - 1] or seq[j + p // 2] != seq[i + p // 2]:
                continue  # the copies' last or middle nodes differ: no repeat at this period
            first = h(i, j)
            if h(j, j + p) != first:
                continue
            k = 2
            while i + (k + 1) * p <= n and h(i + k * p, i + (k + 1) * p) == first:
                k += 1
            if (best is None or (p * k, k) > (best.period * best.repeats, best.repeats)) and all(
                seq[i + m * p:i + (m + 1) * p] == seq[i:j] for m in range(1, k)
            ):
                best = _Run(i, p, k)
        if best is not None and best.repeats >= MIN_REPEATS:
            out.append(best)
            i = best.end
        else:
            i += 1
    return out


def _is_subscript(key: str) -> bool:
    """``%[#]``: an item of a graph value (unpacking), not an op."""
    return key.startswith(_SUBSCRIPT_KEY[0]) and key.endswith(_SUBSCRIPT_KEY[1])


def _trivial(nodes: list[Node], values: frozenset = frozenset()) -> bool:
    """Item unpacking only, calls of code compiled once and reused, or constants made from
    nothing the graph computed or was given (``torch.tensor(4096)`` once per layer of a cache
    built in a list comprehension): not a loop to report. ``values``: the names of the graph's
    nodes and inputs."""
    ops = [n for n in nodes if not _is_subscript(n.shape_key)]
    if not ops or all("invoke_subgraph" in n.expr for n in ops):
        return True
    return bool(values) and not any(r in values for n in ops for r in n.reads)


def _internal(report: "CompileReport", file: str) -> bool:
    """torch's, ipycompile's or generated code (or no file): not where a loop is written."""
    return report.owner(file) not in (Owner.USER, Owner.LIBRARY)


def _loop_place(nodes: list[Node], run: _Run, unpacks: list[tuple[_Run, Node]], function: str, filename: str,
                report: "CompileReport") -> Optional[Node]:
    """The node whose source line stands for the loop (see the module docstring)."""

    seg = nodes[run.start:run.start + run.period]
    before = [(u, n) for u, n in unpacks if u.end <= run.start and u.repeats == run.repeats and not _internal(report, n.file)]
    if before:
        return before[-1][1]
    own = [n for n in seg if n.line is not None and n.function == function and (not filename or n.file == filename)]
    if own:
        return min(own, key=lambda n: n.line)
    user = [n for n in seg if n.line is not None and not _internal(report, n.file)]
    if user:
        return min(user, key=lambda n: (n.file, n.line))
    return next((n for n in seg if n.line is not None), None)


def _carried(nodes: list[Node], run: _Run) -> bool:
    """Whether an iteration reads a value the previous iteration computed."""
    p = run.period
    first = {n.name for n in nodes[run.start:run.start + p]}
    return any(first & set(n.reads) for n in nodes[run.start + p:run.start + 2 * p])


def _layer_container(nodes: list[Node], run: _Run, graph_inputs: dict[str, str]) -> Optional[str]:
    """When each copy reads its own graph inputs (weights) where the copy before read others:
    the container they share (``s.layers`` for ``l_s_modules_layers_modules_0_...`` /
    ``..._1_...``: capture's ``Graph.layer_inputs``), or "" when it has no such name; None
    when the copies read the same inputs (a loop). Copies 1 and 2 are compared where there
    are three (copy 0 reads the loop's initial values, often graph inputs themselves)."""
    p = run.period
    k = 1 if run.repeats >= 3 else 0
    pairs = []
    for a, b in zip(nodes[run.start + k * p:run.start + (k + 1) * p], nodes[run.start + (k + 1) * p:run.start + (k + 2) * p]):
        if len(a.reads) != len(b.reads):
            continue
        pairs += [(x, y) for x, y in zip(a.reads, b.reads) if x != y and x in graph_inputs and y in graph_inputs]
    if not pairs:
        return None
    for x, y in pairs:
        if graph_inputs[x] and graph_inputs[x] == graph_inputs[y]:
            return graph_inputs[x]
    return ""


def _for_over_layers(report: "CompileReport", nodes: list[Node], run: _Run, container: str) -> Optional[Node]:
    """The ``for`` statement that runs the layers of ``container`` (``for layer in self.layers:``,
    also sliced or in ``enumerate``), from the source the report kept for the graph's files
    (capture/kept_source.py keeps the functions that hold such a loop). The layers' own lines are
    the same in every copy; the loop's frame is the one that differs per iteration only by the
    loop variable, and the graph's printed places do not reach it: torch prints each node's
    innermost frame only. Prefers a function that runs ops of this graph itself; None when no
    such loop was kept, or when it is ambiguous."""
    attr = container.rsplit(".", 1)[-1]
    if not attr:
        return None
    src = Sources(report)
    files = list(dict.fromkeys(n.file for n in nodes if n.file and not _internal(report, n.file)))
    seen_lines = {(n.file, n.line) for n in nodes}
    found = []
    for f in files:
        for p in src.parsed_spans(f):
            for fn in ast.walk(p.tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for loop in ast.walk(fn):
                    if isinstance(loop, ast.For) and any(
                        isinstance(a, ast.Attribute) and a.attr == attr and isinstance(a.value, ast.Name) and a.value.id == "self"
                        for a in ast.walk(loop.iter)
                    ):
                        own = sum((f, line) in seen_lines for line in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
                        found.append((own, f, loop.lineno, p.line(loop.lineno).strip(), fn))
    found = list({(f, ln): (own, f, ln, code) for own, f, ln, code, _ in found}.values())
    if not found:
        return None
    best = max(own for own, *_ in found)
    top = [x for x in found if x[0] == best]
    if len(top) != 1:
        return None
    _, f, ln, code = top[0]
    return Node("", "", "", f, ln, "", code)


def _suggestion(kind: str, code_line: str, repeats: int, ops_in: int, ops_total: int, container: str) -> Suggestion:
    """The fix for one run. Its text names no place: views put the place (``In [4], line 6``,
    known only once the notebook's cells are named) beside it."""
    grows = (f"this graph holds {repeats} copies of it ({ops_in} of {ops_total} ops). Compile time and memory "
             "grow with the trip count, and each new count is a new graph (a recompile).")
    measure = ("Measure how compile time grows with the count: `%%compile --sweep n=8,32,128` (or "
               "`ipycompile.sweep`) with the count as `n`.")
    line = f"  # one iteration of the loop: {code_line}" if code_line else "  # one iteration of the loop"
    if kind == "layers":
        of = f" of `{container}`" if container else ""
        return Suggestion(
            f"nested_compile_region: {repeats} identical layers{of} are traced {repeats} times",
            f"Each layer{of} runs the same code on its own weights, and Dynamo traces every one: " + grows
            + " Mark the layer's forward as a nested compile region: torch traces and compiles it once and reuses "
            "it for every layer (or compile the layers one by one: regional compilation). " + measure,
            "@torch.compiler.nested_compile_region  # on the repeated layer's forward\n"
            "def forward(self, x):\n    ...\n\n"
            "# or regional compilation: compile each layer instead of the whole model\n"
            f"for layer in {container or 'model.layers'}:\n    layer.compile()",
            "medium",
        )
    if kind == "library":
        return Suggestion(
            f"loop unrolled {repeats} times, in code you do not own",
            "Dynamo unrolled a loop of library code: " + grows + " The loop is written in that library, not in "
            "your code: a `scan` or `map` rewrite of it would be a change to the library. What you can change is "
            "what you pass it (a smaller count, where the count is yours) or what you compile (compile the code "
            "around the call, or each repeated part on its own: regional compilation). " + measure,
            "", "low",
        )
    if kind == "map":
        return Suggestion(
            f"map: loop unrolled {repeats} times (its iterations are independent)",
            "Dynamo unrolled this loop: " + grows + " No iteration reads what the one before computed, so "
            "`map` can trace the body once and apply it to every item (or batch the items: `torch.vmap`). "
            + measure,
            "from torch._higher_order_ops.map import map as map_fn\n\n"
            f"def body(x):{line}\n    ...\n    return y\n\n"
            "ys = map_fn(body, xs)  # xs: the items stacked on dim 0",
            "medium",
        )
    return Suggestion(
        f"scan: loop unrolled {repeats} times",
        "Dynamo unrolled this loop: " + grows + " `scan` traces the body once, whatever the count (see "
        "tutorials/04_scan_vs_loop.ipynb). " + measure,
        "from torch._higher_order_ops.scan import scan\n\n"
        f"def body(carry, x):{line}\n    ...\n    return new_carry, y  # y: a fresh tensor, not the carry itself\n\n"
        "carry, ys = scan(body, init, xs)  # xs: the per-iteration inputs stacked on dim 0",
        "medium",
    )


def unrolled_loops_in(report: "CompileReport", graph: Graph) -> list[UnrolledLoop]:
    """The unrolled loops of one Dynamo graph, most ops first."""
    nodes = graph_nodes(graph)
    if len(nodes) < 2 * MIN_REPEATS:
        return []
    keys: dict[tuple, int] = {}
    seq = [keys.setdefault((n.file, n.line, n.shape_key, n.type), len(keys)) for n in nodes]
    c = report.compile(graph.compile_id)
    function, filename = (c.function, c.filename) if c is not None else ("", "")
    inputs = graph.layer_inputs
    runs = _runs(seq)
    values = frozenset(n.name for n in nodes) | frozenset(inputs)
    unpacks = [(r, nodes[r.start]) for r in runs if _trivial(nodes[r.start:r.start + r.period])]
    total = max(graph.op_count, len(nodes))
    out = []
    for run in runs:
        if _trivial(nodes[run.start:run.start + run.period], values):
            continue
        place = _loop_place(nodes, run, unpacks, function, filename, report)
        container = _layer_container(nodes, run, inputs)
        if container:
            place = _for_over_layers(report, nodes, run, container) or place
        kind = "layers" if container is not None else ("scan" if _carried(nodes, run) else "map")
        ops_in = run.period * run.repeats
        code = place.code if place is not None else ""
        if kind != "layers" and place is not None and report.owner(place.file) is not Owner.USER:
            kind = "library"  # a loop written in code the user does not own: no rewrite of it is theirs to make
        out.append(UnrolledLoop(
            filename=place.file if place is not None else "",
            lineno=place.line if place is not None else None,
            repeats=run.repeats,
            ops_in_loop=ops_in,
            ops_total=total,
            compile_id=graph.compile_id,
            source_line=code,
            suggestion=_suggestion(kind, code, run.repeats, ops_in, total, container or ""),
        ))
    return sorted(out, key=lambda u: -u.ops_in_loop)


def find_unrolled_loops(report: "CompileReport") -> "CompileReport":
    """Doctor pass: ``report.unrolled_loops`` from every Dynamo graph. Returns a new report."""
    found: list[UnrolledLoop] = []
    for g in report.graphs:
        if g.stage == "dynamo" and g.nodes:
            found.extend(unrolled_loops_in(report, g))
    if not found and not report.unrolled_loops:
        return report
    return dataclasses.replace(report, unrolled_loops=found)
