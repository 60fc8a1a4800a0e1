"""A printed FX graph's nodes and their places: the one reader of torch's ``# File:``
comments, and the one bracket scanner for the code torch prints.

Torch prints every readable graph (``print_readable``; the ``dynamo_output_graph``
payload, the AOT and post-grad graphs) one line per node, under a comment naming the
source place of the nodes that follow whenever it changes (the innermost frame of the
node's ``stack_trace``; torch 2.11 and 2.13 print the same form)::

    # File: /path/to/In [4], line 7 in forward, code: attn = q @ k.transpose(-2, -1)
    mm: "f16[8, 8][8, 1]cpu" = torch.ops.aten.mm.default(...);  x = None

:func:`place` reads one such comment into a :class:`~ipycompile.report.UserFrame`;
:func:`graph_nodes` reads the op nodes of a graph's outermost ``forward`` into
:class:`~ipycompile.report.FxNode` records (what the unrolled-loop doctor reads, with the
graph's places and the containers of its layer inputs). :func:`matching_close`,
:func:`split_top_level` and :func:`cut_top_level` scan brackets (skipping string
literals) for every parser of printed graphs.

Pure functions of text; they never raise on bad input.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from ...report.model import FxNode, UserFrame

__all__ = ["place", "graph_nodes", "layer_inputs", "children_read", "collective_calls", "matching_close", "split_top_level",
           "cut_top_level", "blank_strings", "identifiers"]

#: ``# File: PATH:LINE in FN, code: CODE`` (leading ``#`` and spaces optional: some callers strip them)
_FILE = re.compile(r"^\s*(?:#\s*)?File:\s*(?P<file>.+?):(?P<line>\d+)(?: in (?P<fn>[^,]+?))?, code: (?P<code>.*)$")
#: The same place as torch writes it in a break's explanation (a node's source info, the data a
#: branch condition is computed from): ``# File "PATH", line LINE, in FN, code: CODE``.
_FILE_QUOTED = re.compile(r'^\s*(?:#\s*)?File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<fn>[^,]+?))?, code: (?P<code>.*)$')
_NODE = re.compile(r'^(?P<name>[A-Za-z_]\w*)(?:\s*:\s*"(?P<type>[^"]*)")?\s*=\s*(?P<expr>.+)$')
_ALIAS = re.compile(r"^(?:self(?:\.[A-Za-z_]\w*)+|[A-Za-z_]\w*)$")  # ``l_x_ = L_x_``, ``w = self.w``: not ops
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d*)?(?:e[-+]?\d+)?(?![\w.])")
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
#: A graph input of a numbered child of a container: ``l_self_modules_layers_modules_3_...``.
_NUMBERED_CHILD = re.compile(r"^(?P<prefix>.*_modules_)(?P<index>\d+)_")
#: A graph input as Dynamo names it: ``l_``/``L_`` for a local of the compiled frame,
#: ``g_``/``G_`` for a global (a notebook's model called in a ``%%compile`` cell).
_INPUT = re.compile(r"^[lLgG]_\w+$")
#: A call of one of torch's collective ops as any stage prints it: Dynamo's graph
#: (``torch.ops._c10d_functional.all_reduce(y, 'sum', '0')``) and the AOT / post-grad graphs
#: (``torch.ops._c10d_functional.all_reduce_.default(...)``, ``...wait_tensor.default(...)``).
_COLLECTIVE_CALL = re.compile(
    r"(?<![\w.])torch\.ops\.(?P<op>(?:_c10d_functional_autograd|_c10d_functional|c10d)\.\w+)(?:\.(?P<overload>\w+))?\(")


# -- brackets ----------------------------------------------------------------------------
def _scan(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """``(index, char, depth before it)`` of every character of ``text`` from ``start`` that is
    not inside a string literal (quotes themselves are skipped too)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "'\"":
            quote = ch
        else:
            yield i, ch, depth
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
        i += 1


def matching_close(text: str, open_at: int) -> Optional[int]:
    """The index of the bracket that closes ``text[open_at]``; None if it never closes."""
    for i, ch, depth in _scan(text, open_at):
        if ch in ")]}" and depth == 1:
            return i
    return None


def split_top_level(args: str, sep: str = ",") -> list[str]:
    """``args`` split at its top-level ``sep`` (not inside brackets or strings), parts stripped, empty ones dropped."""
    cuts = [i for i, ch, depth in _scan(args) if ch == sep and depth == 0]
    parts, last = [], 0
    for c in cuts:
        parts.append(args[last:c].strip())
        last = c + 1
    parts.append(args[last:].strip())
    return [p for p in parts if p]


def cut_top_level(text: str, sep: str = ";") -> str:
    """``text`` up to its first top-level ``sep`` (``expr;  a = b = None`` -> ``expr``), stripped on the right."""
    for i, ch, depth in _scan(text):
        if ch == sep and depth == 0:
            return text[:i].rstrip()
    return text.rstrip()


def blank_strings(text: str) -> str:
    """``text`` with every string literal written ``''`` (so that names inside strings are not read)."""
    return _STRING.sub("''", text)


def identifiers(text: str) -> list[str]:
    """The identifiers of an expression, in order, outside strings (``a.b`` gives ``a``)."""
    return _IDENT.findall(blank_strings(text))


# -- places and nodes -----------------------------------------------------------------------
def place(comment: str) -> Optional[UserFrame]:
    """The place a ``# File: PATH:LINE in FN, code: CODE`` comment names (or its form in torch's
    explanations, ``# File "PATH", line LINE, in FN, code: CODE``), or None for another line."""
    m = _FILE.match(comment or "") or _FILE_QUOTED.match(comment or "")
    if m is None:
        return None
    return UserFrame(m.group("file"), int(m.group("line")), (m.group("fn") or "").strip(), m.group("code").strip())


def _shape_key(expr: str, names: set[str]) -> str:
    """``expr`` with the graph's names as ``%`` and numbers as ``#``: what a loop's iterations share
    (strings kept)."""
    strings: list[str] = []

    def keep(m: "re.Match[str]") -> str:
        strings.append(m.group(0))
        return f"\x00{len(strings) - 1}\x00"

    s = _STRING.sub(keep, expr)
    s = _IDENT.sub(lambda m: "%" if m.group(0) in names else m.group(0), s)
    s = _NUMBER.sub("#", s)
    return re.sub(r"\x00(\d+)\x00", lambda m: strings[int(m.group(1))], s)


def collective_calls(code: str) -> list[str]:
    """The collective ops a printed graph calls, in order, as ``namespace.op`` with the
    overload where printed (``_c10d_functional.all_reduce_.default``,
    ``_c10d_functional.wait_tensor.default``); nested subgraphs included. Never raises."""
    try:
        out = []
        for line in (code or "").splitlines():
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            for m in _COLLECTIVE_CALL.finditer(blank_strings(stripped)):
                out.append(f"{m['op']}.{m['overload']}" if m["overload"] else m["op"])
        return out
    except Exception:  # noqa: BLE001 - a parser of torch's text must never break a capture
        return []


def graph_nodes(code: str) -> tuple[list[FxNode], list[UserFrame]]:
    """The op nodes of the outermost ``forward`` of a printed graph, in order (nested subgraph
    classes skipped; placeholder aliases and get_attr nodes are not ops), and the places they
    refer to (``FxNode.place`` is an index into that list). Never raises."""
    try:
        return _graph_nodes(code or "")
    except Exception:  # noqa: BLE001 - a parser of torch's text must never break a capture
        return [], []


def _graph_nodes(code: str) -> tuple[list[FxNode], list[UserFrame]]:
    lines = code.expandtabs(4).splitlines()
    has_class = any(ln.lstrip().startswith("class ") for ln in lines[:3])
    body_indent: Optional[int] = None
    in_forward = not has_class
    places: list[UserFrame] = []
    where: dict[tuple, int] = {}
    current = -1
    names: set[str] = set()
    out: list[FxNode] = []
    for raw in lines:
        stripped = raw.strip()
        if not stripped:
            continue
        indent = len(raw) - len(raw.lstrip())
        if has_class:
            if indent == 4 and stripped.startswith("def forward"):
                in_forward, body_indent = True, None
                names.update(re.findall(r"([A-Za-z_]\w*)\s*:", blank_strings(stripped.split("(", 1)[-1])))
                continue
            if indent <= 4 and (stripped.startswith("class ") or stripped.startswith("def ")):
                in_forward = False
                continue
        if not in_forward:
            continue
        if body_indent is None:
            body_indent = indent
        if indent != body_indent:
            continue  # a nested class's lines, or a wrapped statement
        if stripped.startswith("#"):
            p = place(stripped)
            if p is None:
                current = -1
                continue
            key = (p.filename, p.lineno, p.function, p.source_line)
            if key not in where:
                where[key] = len(places)
                places.append(p)
            current = where[key]
            continue
        m = _NODE.match(stripped)
        if m is None:
            continue
        name, expr = m.group("name"), cut_top_level(m.group("expr"))
        names.add(name)
        if _ALIAS.match(expr):
            continue  # a placeholder alias or a get_attr: not an op
        out.append(FxNode(name, m.group("type") or "", expr, current))
    for n in out:
        n.shape_key = _shape_key(n.expr, names)
        n.reads = identifiers(n.expr)
    return out, places


def children_read(inputs: dict[str, str]) -> dict[str, int]:
    """How many distinct numbered children of each container (``self.layers``) the graph inputs
    of :func:`layer_inputs` read: ``l_self_modules_layers_modules_0_...`` and ``..._3_...`` are two."""
    seen: dict[str, set[str]] = {}
    for name, container in inputs.items():
        m = _NUMBERED_CHILD.match(name) if container else None
        if m is not None:
            seen.setdefault(container, set()).add(m.group("index"))
    return {c: len(s) for c, s in seen.items()}


def layer_inputs(nodes: list[FxNode]) -> dict[str, str]:
    """Every graph input the nodes read (``l_x_``, ``l_self_modules_layers_modules_3_...``) -> the
    container of numbered children it belongs to, as the module's code spells it (``self.layers``;
    a method called through a wrapper, ``def wrapper(*args, **kwargs)``, sees self as ``args[0]``),
    or "" for an input that is no numbered child."""
    out: dict[str, str] = {}
    for n in nodes:
        for r in n.reads:
            if r in out or not _INPUT.match(r):
                continue
            m = _NUMBERED_CHILD.match(r)
            if m is None:
                out[r] = ""
                continue
            path = re.sub(r"^[lLgG]_", "", m.group("prefix")[: -len("_modules_")]).replace("_modules_", ".")
            out[r] = re.sub(r"^args_0(?=\.|$)", "self", path)
    return out
