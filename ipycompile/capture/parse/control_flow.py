"""The control-flow tree of higher-order ops (HOPs) in a printed FX graph.

Input is the payload of torch's ``dynamo_output_graph`` trace event: the
readable print of an FX ``GraphModule``. Higher-order ops show up there as
calls such as::

    cond_true_0 = self.cond_true_0
    cond_false_0 = self.cond_false_0
    cond = torch.ops.higher_order.cond(gt, cond_true_0, cond_false_0, (l_xs_,))

and their subgraphs as classes nested (indented) inside the class of the graph
that calls them::

    class GraphModule(torch.nn.Module):
        def forward(self, ...):
            ...
        class cond_true_0(torch.nn.Module):
            def forward(self, ...):
                ...
            class cond_true_1(torch.nn.Module):   # a HOP inside cond_true_0
                ...

:func:`parse_control_flow` turns that into a tree of
:class:`~ipycompile.report.model.ControlFlowNode`: one node per HOP call in the
top-level ``forward``, each with its subgraphs and, as ``children``, the HOP
calls found inside those subgraphs, to any depth. Everything here is a pure
function of text: no torch import, and no exception escapes the public
functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ...report.model import CompileId, ControlFlowNode, Subgraph
from .fx import matching_close, place, split_top_level

__all__ = ["parse_control_flow", "inlined_control_flow", "count_ops", "split_subgraphs"]

# --------------------------------------------------------------------------- #
# Op names, roles and operand labels
# --------------------------------------------------------------------------- #

#: Torch's op name -> the name reported in ``ControlFlowNode.op``.
_OP_ALIASES: dict[str, str] = {
    "map_impl": "map",
    "tag_activation_checkpoint": "checkpoint",
    "autograd_function_apply": "autograd.Function",
}

#: Reported op -> roles of its subgraphs, in the order they appear in the call.
#: Subgraphs beyond the list (and those of any other op) get ``"body"``.
_ROLES: dict[str, tuple[str, ...]] = {
    "cond": ("true_fn", "false_fn"),
    "while_loop": ("cond_fn", "body_fn"),
    "while_loop_stack_output": ("cond_fn", "body_fn"),
    "scan": ("combine_fn",),
    "associative_scan": ("combine_fn",),
    "map": ("body_fn",),
    "autograd.Function": ("forward", "backward"),
    "flex_attention": ("score_mod", "mask_mod"),
}
_DEFAULT_ROLE = "body"

#: Reported op -> (labels of the non-subgraph positional arguments, label that
#: gathers any further positional arguments into one tuple, or None to list
#: them unlabelled).
_OPERAND_LABELS: dict[str, tuple[tuple[str, ...], Optional[str]]] = {
    "cond": (("pred", "operands"), None),
    "while_loop": (("carried_inputs", "additional_inputs"), None),
    "while_loop_stack_output": (("carried_inputs", "additional_inputs"), None),
    "scan": (("init", "xs", "additional_inputs"), None),
    "associative_scan": (("xs", "additional_inputs"), None),
    "map": (("xs", "args"), None),
    "invoke_subgraph": (("identifier",), "operands"),
    "checkpoint": ((), "operands"),
    "autograd.Function": ((), "operands"),
    "wrap": ((), "operands"),
    "wrap_with_set_grad_enabled": (("enable_grad",), "operands"),
    "wrap_with_autocast": ((), "operands"),
    "flex_attention": (
        (
            "query",
            "key",
            "value",
            "block_mask",
            "scale",
            "kernel_options",
            "score_mod_other_buffers",
            "mask_mod_other_buffers",
        ),
        None,
    ),
}

#: Longest text kept for one operand value, and for the whole summary.
_MAX_VALUE = 60
_MAX_SUMMARY = 240

# --------------------------------------------------------------------------- #
# Line patterns
# --------------------------------------------------------------------------- #

#: ``class name(torch.nn.Module):``; TORCH_LOGS=graph_code prefixes the
#: first one with the file it came from.
_CLASS_LINE = re.compile(r"^(?P<indent>[ \t]*)(?:\S+\.py[ \t]+)?class[ \t]+(?P<name>[A-Za-z_<][\w<>]*)[ \t]*(?:\([^)]*\))?[ \t]*:")
#: ``name[: "annotation"] = torch.ops.higher_order.op(`` and the spellings
#: older torch versions print (``torch._higher_order_ops.cond(``,
#: ``torch._higher_order_ops.wrap.wrap(``).
_HOP_CALL = re.compile(
    r"^[ \t]*(?P<lhs>[A-Za-z_]\w*)[ \t]*(?::[ \t]*(?:\"[^\"]*\"|'[^']*'|[^=]+?))?[ \t]*=[ \t]*"
    r"(?P<callee>torch\.(?:ops\.)?(?:higher_order|_higher_order_ops)(?:\.[A-Za-z_]\w*)+)[ \t]*\("
)
#: ``name[: "annotation"] = self.attr[.attr]`` (a get_attr node).
_GET_ATTR = re.compile(
    r"^[ \t]*(?P<lhs>[A-Za-z_]\w*)[ \t]*(?::[ \t]*\"[^\"]*\")?[ \t]*=[ \t]*self\.(?P<target>[A-Za-z_][\w.]*)[ \t]*(?:;.*)?$"
)
#: Statements that are not ops: a placeholder alias (``l_x_ = L_x_``) or a
#: get_attr (``w = self.w``), optionally followed by ``;  x = None`` clean-ups.
_NOT_AN_OP = re.compile(
    r"^(?P<lhs>[A-Za-z_]\w*)[ \t]*(?::[ \t]*(?:\"[^\"]*\"|'[^']*'))?[ \t]*=[ \t]*"
    r"(?:self(?:\.[A-Za-z_]\w*)+|[A-Za-z_]\w*)[ \t]*(?:;.*)?$"
)
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_IDENT = re.compile(r"(?<![\w.])(?:self\.)?[A-Za-z_][\w.]*")
_SELF_PREFIXES = ("l__self___", "L__self___", "self.")


# --------------------------------------------------------------------------- #
# Class blocks
# --------------------------------------------------------------------------- #


@dataclass
class _Block:
    """A ``class`` block of the print (or the pseudo-root of a bare body)."""

    name: str
    start: int  # index of the ``class`` line (or 0 for a pseudo-root)
    end: int  # exclusive
    indent: int
    children: list["_Block"] = field(default_factory=list)
    parent: Optional["_Block"] = None

    def own_line_indices(self) -> list[int]:
        """Indices of this block's lines, less those of nested class blocks."""
        skipped: set[int] = set()
        for child in self.children:
            skipped.update(range(child.start, child.end))
        return [i for i in range(self.start, self.end) if i not in skipped]

    def find_child(self, name: str) -> Optional["_Block"]:
        return next((c for c in self.children if c.name == name), None)

    def walk(self) -> Iterable["_Block"]:
        yield self
        for child in self.children:
            yield from child.walk()


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blocks(lines: list[str], start: int, end: int, parent: Optional[_Block]) -> list[_Block]:
    """The outermost class blocks among ``lines[start:end]``, with their nested
    blocks filled in. A block runs to the next non-blank line indented no
    deeper than its ``class`` line."""
    found: list[_Block] = []
    i = start
    while i < end:
        m = _CLASS_LINE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = _indent_of(lines[i])
        j = i + 1
        while j < end and (not lines[j].strip() or _indent_of(lines[j]) > indent):
            j += 1
        # trailing blank lines belong to whatever comes next
        k = j
        while k > i + 1 and not lines[k - 1].strip():
            k -= 1
        block = _Block(m.group("name"), i, k, indent, parent=parent)
        block.children = _blocks(lines, i + 1, k, block)
        found.append(block)
        i = j
    return found


def _has_statements_outside(lines: list[str], blocks: list[_Block]) -> bool:
    """Whether the text has code (not comments) outside every class block."""
    inside: set[int] = set()
    for b in blocks:
        inside.update(range(b.start, b.end))
    for i, line in enumerate(lines):
        s = line.strip()
        if i not in inside and s and not s.startswith("#"):
            return True
    return False


@dataclass
class _Tree:
    """The parsed print.

    ``top`` holds the outermost class blocks (``GraphModule``); ``roots`` the
    bodies HOP calls are looked for in: the text outside every class when it
    has code of its own (a bare ``forward`` body), then each of ``top``.
    """

    lines: list[str]
    top: list[_Block]
    roots: list[_Block]
    by_name: dict[str, _Block]

    def own_code(self, block: _Block) -> str:
        """The block's text without its nested classes, dedented, with runs of
        blank lines (left where nested classes were cut) squeezed to one."""
        out: list[str] = []
        for i in block.own_line_indices():
            line = self.lines[i]
            if not line.strip():
                if out and out[-1]:
                    out.append("")
                continue
            cut = min(block.indent, _indent_of(line))
            out.append(line[cut:].rstrip())
        while out and not out[-1]:
            out.pop()
        return "\n".join(out)

    def main_code(self) -> str:
        """The code of the outermost graph: the first root with a ``def``."""
        codes = [self.own_code(root) for root in self.roots]
        for code in codes:
            if any(stmt.startswith("def ") for stmt in _logical_lines(code)):
                return code
        return codes[0] if codes else ""


def _parse_tree(code: str) -> _Tree:
    lines = code.expandtabs(4).splitlines()
    top = _blocks(lines, 0, len(lines), None)
    roots = list(top)
    if not top or _has_statements_outside(lines, top):
        # code outside every class (a bare body, or a header line): its own root
        indent = min((_indent_of(x) for x in lines if x.strip()), default=0)
        outside = _Block("", 0, len(lines), indent, children=list(top))
        for block in top:
            block.parent = outside
        roots.insert(0, outside)
    by_name: dict[str, _Block] = {}
    for block in top:
        for b in block.walk():
            by_name.setdefault(b.name, b)
    return _Tree(lines, top, roots, by_name)


# --------------------------------------------------------------------------- #
# Call arguments
# --------------------------------------------------------------------------- #


def _call_args(text: str, open_paren: int) -> Optional[str]:
    """The text between ``text[open_paren]`` (a ``(``) and its matching ``)``, or None if it never closes."""
    end = matching_close(text, open_paren)
    return text[open_paren + 1 : end] if end is not None else None


_split_top_level = split_top_level


_KWARG = re.compile(r"^(?P<key>[A-Za-z_]\w*)[ \t]*=(?!=)[ \t]*(?P<value>.*)$", re.S)


def _short(value: str, limit: int = _MAX_VALUE) -> str:
    value = re.sub(r"\s+", " ", value).strip()
    value = re.sub(r"(\w) = ", r"\1=", value)  # FX prints kwargs as ``k = v``
    return value if len(value) <= limit else value[: limit - 3].rstrip() + "..."


# --------------------------------------------------------------------------- #
# HOP nodes
# --------------------------------------------------------------------------- #


def _op_name(callee: str) -> str:
    """``torch.ops.higher_order.map_impl`` -> ``map``."""
    raw = callee.rsplit(".", 1)[-1]
    return _OP_ALIASES.get(raw, raw)


def _name_candidates(name: str) -> list[str]:
    """Names a subgraph class may have, given how the graph refers to it."""
    out = [name]
    for prefix in _SELF_PREFIXES:
        if name.startswith(prefix):
            out.append(name[len(prefix) :])
    out.extend(n.rsplit(".", 1)[-1] for n in list(out) if "." in n)
    return list(dict.fromkeys(out))


def _source_of(comment: str) -> str:
    """The user code in a ``# File: ..., code: ...`` comment, else ``""``."""
    p = place(comment)
    return p.source_line if p is not None else ""


class _Parser:
    """Walks the block tree, building one ControlFlowNode per HOP call."""

    def __init__(self, tree: _Tree, compile_id: Optional[CompileId]) -> None:
        self.tree = tree
        self.compile_id = compile_id
        self.referenced: set[str] = set()

    def find_class(self, scope: _Block, name: str) -> Optional[_Block]:
        """The class a body in ``scope`` means by ``name``: its own nested
        classes first, then those of enclosing classes, then any of that name."""
        for cand in _name_candidates(name):
            block: Optional[_Block] = scope
            while block is not None:
                hit = block.find_child(cand)
                if hit is not None:
                    return hit
                block = block.parent
        for cand in _name_candidates(name):
            hit = self.tree.by_name.get(cand)
            if hit is not None:
                return hit
        return None

    def nodes_in(self, block: _Block, path: tuple[int, ...]) -> list[ControlFlowNode]:
        """The HOP calls in ``block``'s own body, with their subtrees."""
        if id(block) in path:  # a subgraph that (somehow) contains itself
            return []
        path = path + (id(block),)
        attrs: dict[str, str] = {}  # local name -> get_attr target
        comment = ""
        nodes: list[ControlFlowNode] = []
        for i in block.own_line_indices():
            line = self.tree.lines[i]
            stripped = line.strip()
            if stripped.startswith("#"):
                comment = stripped.lstrip("#").strip()
                continue
            m = _GET_ATTR.match(line)
            if m:
                attrs[m.group("lhs")] = m.group("target")
                continue
            m = _HOP_CALL.match(line)
            if not m:
                continue
            args = _call_args(line, m.end() - 1)
            if args is None:  # a cut-off line: not a call we can read
                continue
            node = self.node(block, m.group("lhs"), _op_name(m.group("callee")), args, attrs, path)
            node.source_line = _source_of(comment)
            nodes.append(node)
        return nodes

    def resolve(self, scope: _Block, token: str, attrs: dict[str, str]) -> Optional[_Block]:
        """The subgraph class an argument token names, if it names one."""
        target = attrs.get(token)
        if target is not None:
            return self.find_class(scope, target)
        if token.startswith("self."):
            return self.find_class(scope, token[len("self.") :])
        if token.startswith(("l__self___", "L__self___")):
            return self.find_class(scope, token)
        return None

    def node(
        self,
        scope: _Block,
        node_name: str,
        op: str,
        args_text: str,
        attrs: dict[str, str],
        path: tuple[int, ...],
    ) -> ControlFlowNode:
        node = ControlFlowNode(op=op, compile_id=self.compile_id, node_name=node_name)
        args = _split_top_level(args_text)
        positional: list[str] = []
        keywords: list[tuple[str, str]] = []
        found: list[_Block] = []
        for arg in args:
            kw = _KWARG.match(arg)
            whole = self.resolve(scope, arg, attrs) if _IDENT.fullmatch(arg) else None
            if whole is not None:
                found.append(whole)
                continue
            # subgraphs nested in a tuple argument (flex_attention's block mask)
            for token in _IDENT.findall(_STRING.sub("''", arg)):
                hit = self.resolve(scope, token, attrs)
                if hit is not None:
                    found.append(hit)
            if kw:
                keywords.append((kw.group("key"), kw.group("value")))
            else:
                positional.append(arg)
        roles = _ROLES.get(op, ())
        for k, block in enumerate(found):
            self.referenced.add(block.name)
            code = self.tree.own_code(block)
            node.subgraphs.append(
                Subgraph(
                    name=block.name,
                    code=code,
                    op_count=_count_op_lines(code),
                    role=roles[k] if k < len(roles) else _DEFAULT_ROLE,
                )
            )
            node.children.extend(self.nodes_in(block, path))
        node.operands = _summarise(op, positional, keywords)
        return node


def _summarise(op: str, positional: list[str], keywords: list[tuple[str, str]]) -> str:
    labels, rest_label = _OPERAND_LABELS.get(op, ((), None))
    parts = [f"{label}={_short(value)}" for label, value in zip(labels, positional)]
    rest = positional[len(labels) :]
    if rest and rest_label:
        inner = ", ".join(_short(v) for v in rest)
        parts.append(f"{rest_label}=({inner}{',' if len(rest) == 1 else ''})")
    else:
        parts.extend(_short(v) for v in rest)
    parts.extend(f"{key}={_short(value)}" for key, value in keywords)
    return _short(", ".join(parts), _MAX_SUMMARY)


def _logical_lines(code: str) -> Iterable[str]:
    """The statements of ``code``, one string each: comments dropped, and a
    statement that spans lines (AOT prints ``def forward(`` and ``return (``
    one argument a line) joined into one. String contents are blanked."""
    pending: list[str] = []
    depth = 0
    for line in code.splitlines():
        bare = _STRING.sub("''", line) if "'" in line or '"' in line else line  # no quote: no string to blank
        hash_at = bare.find("#")
        if hash_at >= 0:
            bare = bare[:hash_at]
        bare = bare.strip()
        if not bare:
            continue
        pending.append(bare)
        depth += (bare.count("(") + bare.count("[") + bare.count("{")
                  - bare.count(")") - bare.count("]") - bare.count("}"))
        if depth <= 0:
            yield " ".join(pending)
            pending = []
            depth = 0
    if pending:
        yield " ".join(pending)


def _count_op_lines(code: str) -> int:
    """Op lines (call_function / call_method / call_module nodes) of one body
    with no nested classes in it. Placeholders (in the ``def`` line, or
    aliased as ``l_x_ = L_x_``), ``get_attr`` nodes (``w = self.w``) and the
    ``return`` are not ops."""
    count = 0
    for stmt in _logical_lines(code):
        if stmt.startswith(("class ", "def ", "return ", "return(", "@")) or stmt in ("return", "pass"):
            continue
        if _NOT_AN_OP.match(stmt):
            continue
        if "=" in stmt:  # ``name = f(...)``, ``a[idx] = b;  setitem = a``
            count += 1
    return count


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #


def parse_control_flow(graph_code: str, compile_id: CompileId | None = None) -> list[ControlFlowNode]:
    """The tree of higher-order ops in a printed Dynamo output graph.

    Returns one :class:`ControlFlowNode` per HOP call in the top-level
    ``forward`` (in graph order). Each carries its subgraphs (name, code
    without nested classes, op count, role) and, as ``children``, the HOP
    calls inside those subgraphs, recursively. ``compile_id`` is set on every
    node. Never raises: text with no HOPs, or that is not a graph, gives ``[]``.
    """
    try:
        if not isinstance(graph_code, str) or "higher_order" not in graph_code:
            return []
        tree = _parse_tree(graph_code)
        parser = _Parser(tree, compile_id)
        per_root = [(root, parser.nodes_in(root, ())) for root in tree.roots]
        # A top-level class that another graph calls as a subgraph (a print
        # with odd indentation) is not a graph of its own.
        out: list[ControlFlowNode] = []
        for root, nodes in per_root:
            if not (root.name and root.name in parser.referenced):
                out.extend(nodes)
        return out
    except Exception:  # a parser of untrusted text must never break a capture
        return []


#: A call of a control-flow operator in a line of user code.
_CF_CALL = re.compile(r"(?<![\w])(?:[A-Za-z_][\w.]*\.)?(?P<op>associative_scan|scan|cond|while_loop)\s*\(")


def inlined_control_flow(graph_code: str, compile_id: CompileId | None = None) -> list[ControlFlowNode]:
    """Control-flow operators the user called that torch traced into plain ops.

    ``associative_scan(..., combine_mode="generic")`` (and ``cond`` on a Python
    constant) leave no higher-order op in the graph: its ops stand in the graph
    under the call's source line, with the combine function's and torch's own frames
    in between. For each call line that names an operator (``associative_scan``,
    ``scan``, ``cond``, ``while_loop``), has ops recorded at the line itself, and
    has no higher-order op of that name at that line, one node with ``inlined_ops``:
    the ops from the first to the last op recorded at that line. Never raises.
    """
    try:
        if not isinstance(graph_code, str) or "# File:" not in graph_code:
            return []
        tree = _parse_tree(graph_code)
        ops: list[Optional[tuple[str, int, str, str]]] = []  # the stack comment of each op, in order
        current: Optional[tuple[str, int, str, str]] = None
        for raw in tree.main_code().splitlines():
            line = raw.strip()
            if line.startswith("#"):
                p = place(line)
                current = (p.filename, p.lineno, p.function, p.source_line) if p is not None else None
                continue
            if line and _count_op_lines(line):
                ops.append(current)
        hop_lines = {(n.op, n.source_line.strip()) for n in parse_control_flow(graph_code, compile_id)}
        out: list[ControlFlowNode] = []
        seen: set[tuple[str, int]] = set()
        for i, c in enumerate(ops):
            if c is None or (c[0], c[1]) in seen:
                continue
            m = _CF_CALL.search(_STRING.sub("''", c[3]))
            if m is None or (m["op"], c[3]) in hop_lines:
                continue
            seen.add((c[0], c[1]))
            last = max(j for j, d in enumerate(ops) if d is not None and (d[0], d[1]) == (c[0], c[1]))
            out.append(ControlFlowNode(op=m["op"], compile_id=compile_id, source_line=c[3],
                                       inlined_ops=last - i + 1, filename=c[0], lineno=c[1]))
        return out
    except Exception:  # a parser of untrusted text must never break a capture
        return []


def count_ops(code: str) -> int:
    """The FX op count of one graph body: its ``call_function``,
    ``call_method`` and ``call_module`` lines (placeholders, ``get_attr`` and
    ``return`` excluded), not counting the bodies of nested subgraph classes.

    Accepts a whole ``GraphModule`` print (counts its own ``forward``), one
    subgraph class, or a bare ``forward`` body. Never raises; 0 on garbage.
    """
    try:
        if not isinstance(code, str):
            return 0
        return _count_op_lines(_parse_tree(code).main_code())
    except Exception:
        return 0


def split_subgraphs(graph_code: str) -> dict[str, str]:
    """Every nested subgraph class of a printed graph, at any depth: class
    name -> its code without its own nested classes (dedented).

    The outermost class (``GraphModule``) is not included. Should two nested
    classes share a name, the later one is keyed ``"parent.name"``. Never
    raises; ``{}`` on garbage.
    """
    try:
        if not isinstance(graph_code, str):
            return {}
        tree = _parse_tree(graph_code)
        out: dict[str, str] = {}
        for graph in tree.top:
            for block in graph.walk():
                if block is graph:
                    continue
                key = block.name
                if key in out and block.parent is not None:
                    key = f"{block.parent.name}.{block.name}"
                out.setdefault(key, tree.own_code(block))
        return out
    except Exception:
        return {}
