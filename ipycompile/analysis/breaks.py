"""A fix for each graph break and failure, written against the user's own code.

:func:`suggest_break_fixes` is a doctor pass (see :mod:`.doctor`): it sets
``GraphBreak.suggestion`` and ``Failure.suggestion`` from what torch said (the break
kind, its developer context) and the user's source the report kept
(``CompileReport.source_context``). A suggestion fits where the break is: a rewrite
of the user's own lines when the break is in the user's code; a setting, or a named,
importable callable, when it is in a library the user cannot edit. A break the
doctor does not understand gets torch's own explanation and hints, and says that no
specific fix is known (``kind == "unknown"``).

The kinds (``Suggestion.kind``), each proven by a test that applies the fix and shows
the break gone with the same outputs (tests/test_doctor_breaks.py), are listed in
:data:`KINDS`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ..report.model import Failure, GraphBreak, Suggestion, UserFrame
from ..report.owners import Owner
from .source import Parsed, Sources

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["suggest_break_fixes", "suggest_for_break", "suggest_for_failure", "KINDS"]

#: Every kind of suggestion this pass makes, with what it means.
KINDS: dict[str, str] = {
    "torch.where": "a data-dependent `if` whose branches are elementwise expressions: one `torch.where`",
    "torch.cond": "a data-dependent `if` in the user's code: a `torch.cond` rewrite built from the condition and the names the branches assign",
    "branch_in_library": "a data-dependent branch inside a library: no rewrite of the user's code; torch's hints",
    "keep_tensor": "`.item()`, `int(t)`, `float(t)` or `.tolist()` whose value only feeds tensor code: keep it a tensor",
    "capture_scalar_outputs": "`.item()` / `int(t)` whose Python number is needed: `torch._dynamo.config.capture_scalar_outputs = True`",
    "capture_dynamic_output_shape_ops": "`nonzero` and other ops whose output shape depends on data: `torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    "reorderable_logging_functions": "`print` / `logging.<level>` of tensors and constants: `torch._dynamo.config.reorderable_logging_functions`",
    "remove_print": "`print` of values torch cannot reorder: remove it from the compiled code",
    "ignore_logging_functions": "a `logging.Logger` method (in the user's code or a library): the exact bound method for `torch._dynamo.config.ignore_logging_functions`",
    "tensor_clone": "`copy.deepcopy` of a tensor in the user's code: the tensor's own `.clone()`",
    "numpy_to_torch": "a NumPy function torch cannot trace that has a torch equivalent: the torch call",
    "custom_op": "a third-party or NumPy call on tensors torch cannot trace: `torch.library.custom_op` around the smallest piece of the user's code",
    "move_out": "a call that does not use the tensors (a timer, a process id): move it out of the compiled code",
    "with_outside": "an unsupported context manager in the user's code: run the `with` outside, compile its body",
    "trace_autograd_ops": "`loss.backward()` in compiled code: the normal end of the forward graph; what compiling the whole step takes",
    "hop_clone": "a scan/cond/map/while_loop body returning an input or one tensor twice: `.clone()` the alias",
    "hop_return_value": "a side effect inside a cond/scan/map body: return the value and apply the change outside",
    "hop_match_structure": "torch.cond branches returning different structures: make them match",
    "unknown": "a kind the doctor does not know: torch's own explanation and hints, no specific fix",
}

_TORCH_MODULES = {"torch", "F", "nn", "np", "numpy", "math", "functools", "operator", "logging", "os", "time", "sys"}
_ELEMENTWISE = {
    "abs", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sigmoid", "relu", "relu6",
    "gelu", "silu", "mish", "softplus", "elu", "selu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish", "clamp",
    "clip", "clamp_min", "clamp_max", "nan_to_num", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac",
    "reciprocal", "square", "pow", "maximum", "minimum", "fmax", "fmin", "lerp", "erf", "erfc", "erfinv", "add", "sub",
    "mul", "div", "true_divide", "float", "double", "half", "bfloat16", "logical_not", "isnan", "isinf", "isfinite",
}
#: Reductions that, called with no dimension, give a 0-dim tensor: they broadcast like a number.
_SCALAR_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "norm", "std", "var", "prod", "median", "abs"}
_HOPS = {"cond": (1, 2), "scan": (0,), "map": (0,), "while_loop": (1,), "associative_scan": (0,), "fori_loop": (2,)}
#: NumPy functions Dynamo cannot trace (torch 2.13) whose torch equivalent gives the same values and dtype.
#: ``{args}`` are the call's arguments with ``a.numpy()`` written as ``a``.
NUMPY_TO_TORCH: dict[str, Callable[[list[str], dict[str, str]], Optional[str]]] = {
    # np.digitize(x, bins) puts x in bin i with bins[i-1] <= x < bins[i]: torch.bucketize(..., right=True)
    "digitize": lambda a, kw: (f"torch.bucketize({a[0]}, {_as_tensor(a[1])}, right=True)"
                               if len(a) == 2 and not kw else None),
}


def _as_tensor(expr: str) -> str:
    return expr if expr.startswith("torch.") else f"torch.as_tensor({expr})"


# ---------------------------------------------------------------------------
# the pass


def suggest_break_fixes(report: "CompileReport") -> "CompileReport":
    """The doctor pass: ``report`` with a :class:`Suggestion` on every graph break and
    failure (a new report; ``report`` is unchanged)."""
    ctx = _Context(report, Sources(report))
    breaks = [dataclasses.replace(b, suggestion=_guarded(lambda b=b: suggest_for_break(b, ctx), _facts_of_break(b, ctx)))
              for b in report.graph_breaks]
    failures = []
    for f in report.failures:
        if _is_recompile_limit(f):  # recompiles are diagnosed by their own pass
            failures.append(dataclasses.replace(f))
            continue
        failures.append(dataclasses.replace(f, suggestion=_guarded(lambda f=f: suggest_for_failure(f, ctx),
                                                                   _facts_of_failure(f, ctx))))
    return dataclasses.replace(report, graph_breaks=breaks, failures=failures)


@dataclass
class _Context:
    report: "CompileReport"
    src: Sources

    def where(self, frame: UserFrame) -> str:
        return self.report.where(frame.filename, frame.lineno)

    def library(self, filename: str) -> bool:
        """Code the user cannot edit: torch, another installed package, the standard
        library, ipycompile, generated code (``report.owners`` decides)."""
        return self.report.owner(filename) not in (Owner.USER, Owner.UNKNOWN)

    def compiled_functions(self) -> set[tuple[str, str]]:
        """The functions torch compiled as frames, (file, function); a resume function
        (``torch_dynamo_resume_in_f_at_7``) counts as ``f``."""
        out = set()
        for c in self.report.compiles:
            m = re.match(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$", c.function or "")
            out.add((c.filename, m.group("fn") if m else c.function))
        return out


@dataclass
class _Facts:
    """What torch said about one break or failure, in one shape for both."""

    kind: str  # torch's break type ("Data-dependent branching"), else the first line of the reason
    code: str  # "GB0170" or ""
    explanation: str
    hints: list[str]
    context: str  # the developer debug context
    text: str  # everything torch said
    stop: UserFrame  # where Dynamo stopped
    user: UserFrame  # the user's own line that led there
    stack: list[UserFrame] = field(default_factory=list)  # outermost first
    in_library: bool = False  # Dynamo stopped in code the user cannot edit (torch, a library, generated code)


def _guarded(make: Callable[[], Suggestion], facts: Optional[_Facts]) -> Suggestion:
    try:
        s = make()
    except Exception:  # noqa: BLE001 - a fix we cannot build falls back to torch's words
        s = None
    return s if s is not None else _unknown(facts)


def suggest_for_break(b: GraphBreak, ctx: _Context) -> Suggestion:
    """The suggestion for one graph break."""
    return _suggest(_facts_of_break(b, ctx), ctx)


def suggest_for_failure(f: Failure, ctx: _Context) -> Suggestion:
    """The suggestion for one failed compile (e.g. a higher-order-op error, a break under fullgraph)."""
    return _suggest(_facts_of_failure(f, ctx), ctx)


def _suggest(facts: _Facts, ctx: _Context) -> Suggestion:
    for applies, fix in _RULES:
        if applies(facts):
            s = fix(facts, ctx)
            if s is not None:
                return s
    return _unknown(facts)


# ---------------------------------------------------------------------------
# what torch said

_CONTEXT = re.compile(r"Developer debug context:\s?(?P<ctx>.*?)(?:\n\s*\n|\n\s*For more details|\Z)", re.S)
_EXPLANATION = re.compile(r"^\s*Explanation:\s?(?P<text>.*)$", re.M)
_HINT = re.compile(r"^\s*Hint:\s?(?P<text>.*)$", re.M)
_GB = re.compile(r"/gb/(gb\d+)\.html", re.I)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n(?P<src>[^\n]*)', re.M)


def _context_of(text: str) -> str:
    m = _CONTEXT.search(text or "")
    return m.group("ctx").strip() if m else ""


def _facts_of_break(b: GraphBreak, ctx: _Context) -> _Facts:
    stop = b.break_frame if b.break_frame.filename else b.frame
    if not stop.source_line:
        stop = dataclasses.replace(stop, source_line=ctx.src.line(stop.filename, stop.lineno).strip())
    return _Facts(b.gb_type or b.reason, b.gb_code, b.explanation, list(b.hints), _context_of(b.detail), b.detail or b.reason,
                  stop, b.frame, list(b.user_stack), ctx.library(stop.filename))


def _facts_of_failure(f: Failure, ctx: _Context) -> _Facts:
    text = f.message or ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # torch's preambles end with a colon ("... Got graph break/error:"); the kind is the line after
    kind = next((ln.strip() for ln in lines if not ln.rstrip().endswith(":") and not ln.startswith(" ")), f.type)
    expl = _EXPLANATION.search(text)
    _, found, tail = (f.traceback or text).rpartition("from user code:")
    stack = [UserFrame(m.group("file"), int(m.group("line")), m.group("fn"), m.group("src").strip())
             for m in _FRAME.finditer(tail if found else "")]
    stop = stack[-1] if stack else f.frame
    return _Facts(kind, (_GB.search(text).group(1).upper() if _GB.search(text) else ""),
                  expl.group("text").strip() if expl else "", [m.group("text").strip() for m in _HINT.finditer(text)],
                  _context_of(text), text, stop, f.frame, stack, ctx.library(stop.filename))


def _is_recompile_limit(f: Failure) -> bool:
    return "RecompileLimit" in f.type or "CacheLimit" in f.type or bool(re.search(r"recompile limit|gb0039", f.message or "", re.I))


def _unknown(facts: Optional[_Facts]) -> Suggestion:
    if facts is None:
        return Suggestion("No specific fix is known for this", "", "", "low", "unknown")
    parts = []
    if facts.explanation:
        parts.append(f"torch says: {facts.explanation}")
    elif facts.kind:
        parts.append(f"torch says: {facts.kind}")
    if facts.hints:
        parts.append("torch's hints:\n" + "\n".join(f"- {h}" for h in facts.hints))
    parts.append("ipycompile knows no specific fix for this kind of break; the hints above are torch's own.")
    return Suggestion("No specific fix is known for this", "\n\n".join(parts), "", "low", "unknown")


# ---------------------------------------------------------------------------
# source helpers


def _walk_scope(nodes) -> "list[ast.AST]":
    """Every node under ``nodes``, not descending into nested functions, lambdas or classes."""
    out: list[ast.AST] = []
    todo = list(nodes)
    while todo:
        n = todo.pop(0)
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def _ordered(names) -> list[str]:
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def _stores(stmts) -> list[str]:
    nodes = sorted((n for n in _walk_scope(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)),
                   key=lambda n: (n.lineno, n.col_offset))
    return _ordered(n.id for n in nodes)


def _loads(stmts) -> list[str]:
    nodes = sorted((n for n in _walk_scope(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
                   key=lambda n: (n.lineno, n.col_offset))
    return _ordered(n.id for n in nodes)


def _scope_body(p: Parsed, node: ast.AST) -> tuple[ast.AST, list[ast.stmt]]:
    scope = p.scope_of(node)
    body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return scope, body


def _params(scope: ast.AST) -> list[str]:
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return []
    a = scope.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names


def _defined_before(p: Parsed, node: ast.stmt) -> list[str]:
    """Names bound in ``node``'s scope before it: parameters, assignments, imports, defs."""
    scope, body = _scope_body(p, node)
    names = _params(scope)
    for stmt in body:
        for n in _walk_scope([stmt]):
            if getattr(n, "lineno", 10**9) >= node.lineno:
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.append(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not scope:
                names.append(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names += [(a.asname or a.name).split(".")[0] for a in n.names]
    return _ordered(names)


def _uses_after(p: Parsed, node: ast.stmt, name: str) -> list[ast.Name]:
    _, body = _scope_body(p, node)
    end = node.end_lineno or node.lineno
    return [n for n in _walk_scope(body) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and n.lineno > end]


def _stmt_replacement(p: Parsed, stmt: ast.stmt, swaps: list[tuple[ast.AST, str]], keep_comment: bool = True) -> str:
    """The source of ``stmt`` (dedented) with each node of ``swaps`` replaced by its text;
    without its trailing comment when ``keep_comment`` is False (a comment about what changed)."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    text_lines = p.text.split("\n")[first - 1 : last]
    if not keep_comment:
        end = stmt.end_col_offset or 0
        text_lines[-1] = _char_slice(text_lines[-1], 0, end)
    for node, new in sorted(swaps, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True):
        i, j = node.lineno - first, (node.end_lineno or node.lineno) - first
        line_i, line_j = text_lines[i], text_lines[j]
        merged = _char_slice(line_i, 0, node.col_offset) + new + _char_slice(line_j, node.end_col_offset, None)
        text_lines[i : j + 1] = [merged]
    return textwrap.dedent("\n".join(text_lines)).strip("\n")


def _char_slice(line: str, start: Optional[int], end: Optional[int]) -> str:
    """``line`` sliced by ast's UTF-8 byte offsets."""
    raw = line.encode("utf-8")
    return raw[start:end].decode("utf-8")


def _parsed_at(frame: UserFrame, ctx: _Context) -> Optional[Parsed]:
    return ctx.src.parsed(frame.filename, frame.lineno, frame.source_line)


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


def _find_def(ctx: _Context, filename: str, name: str, before: Optional[int] = None) -> Optional[tuple[Parsed, ast.FunctionDef]]:
    """The ``def name`` of ``filename`` the report kept: the last one before line ``before``."""
    found = []
    for p in ctx.src.parsed_spans(filename):
        for d in p.functions(name):
            found.append((p, d))
    if not found:
        return None
    if before is not None:
        earlier = [fd for fd in found if fd[1].lineno <= before]
        found = earlier or found
    return max(found, key=lambda fd: fd[1].lineno)


def _where_line(ctx: _Context, frame: UserFrame) -> str:
    src = frame.source_line.strip() or ctx.src.line(frame.filename, frame.lineno).strip()
    return f"{ctx.where(frame)}" + (f" (`{src}`)" if src else "")


def _reset_note() -> str:
    return ("Set it before the first call of the compiled code (after torch._dynamo.reset() if that code was "
            "compiled already): torch reads it when it compiles.")


def _path(ctx: _Context, facts: _Facts) -> str:
    """``transformers/modeling_utils.py:4769 in loss_function, reached from In [3], line 2``."""
    stop = f"{ctx.where(facts.stop)}" + (f" in {facts.stop.function}" if facts.stop.function else "")
    if facts.user.filename and (facts.user.filename, facts.user.lineno) != (facts.stop.filename, facts.stop.lineno):
        return f"{stop}, reached from {ctx.where(facts.user)}"
    return stop


# ---------------------------------------------------------------------------
# data-dependent branches


def _is_branch(f: _Facts) -> bool:
    return f.code in ("GB0170", "GB0035") or f.kind.startswith("Data-dependent branching")


def _fix_branch(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    if f.in_library:
        return Suggestion(
            f"Data-dependent branch in library code ({ctx.where(f.stop)})",
            f"torch stopped at {_path(ctx, f)}: `{f.stop.source_line.strip()}` branches on a tensor's value, in "
            "code you cannot edit. torch compiles the code before and after it as separate graphs. ipycompile "
            "knows no fix from your own code for a branch inside a library.\n\n"
            + ("torch's hints:\n" + "\n".join(f"- {h}" for h in f.hints) if f.hints else ""),
            "", "low", "branch_in_library")
    p = _parsed_at(f.stop, ctx)
    node = None
    if p is not None:
        node = next((s for s in reversed(p.statements_at(f.stop.lineno)) if isinstance(s, ast.If) and s.test.lineno <= f.stop.lineno <= (s.test.end_lineno or s.test.lineno)), None)
    if node is None:
        return _cond_from_line(f, ctx)
    return _where_rewrite(f, ctx, p, node) or _cond_rewrite(f, ctx, p, node)


def _condition(p: Parsed, test: ast.expr) -> str:
    """The condition as a tensor expression: Python's ``and``/``or``/``not`` on tensors become ``&``/``|``/``~``."""
    if isinstance(test, ast.BoolOp):
        op = " & " if isinstance(test.op, ast.And) else " | "
        return op.join(f"({_condition(p, v)})" for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return f"~({_condition(p, test.operand)})"
    return p.segment(test)


def _is_elementwise(node: ast.AST) -> bool:
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):  # self.scale, cfg.eps: a value, not a shape change
        return isinstance(node.value, (ast.Name, ast.Attribute)) and node.attr not in ("T", "mT", "H", "shape")
    if isinstance(node, ast.BinOp):
        return not isinstance(node.op, ast.MatMult) and _is_elementwise(node.left) and _is_elementwise(node.right)
    if isinstance(node, ast.UnaryOp):
        return _is_elementwise(node.operand)
    if isinstance(node, ast.Compare):
        return _is_elementwise(node.left) and all(_is_elementwise(c) for c in node.comparators)
    if (isinstance(node, ast.Call) and _call_name(node) in _SCALAR_REDUCTIONS and isinstance(node.func, ast.Attribute)
            and not node.args and not node.keywords and _is_elementwise(node.func.value)):
        return True  # y.max(): a 0-dim tensor, which broadcasts like a number
    if isinstance(node, ast.Call) and _call_name(node) in _ELEMENTWISE:
        f = node.func
        target_ok = not isinstance(f, ast.Attribute) or _is_elementwise(f.value) or _dotted(f.value) in _TORCH_MODULES | {"torch.nn.functional", "torch.special"}
        return target_ok and all(_is_elementwise(a) for a in node.args) and all(_is_elementwise(k.value) for k in node.keywords)
    return False


def _tensor_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in _TORCH_MODULES}


def _single_assign(stmts) -> Optional[tuple[str, ast.expr]]:
    if len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and len(stmts[0].targets) == 1 and isinstance(stmts[0].targets[0], ast.Name):
        return stmts[0].targets[0].id, stmts[0].value
    return None


def _where_rewrite(f: _Facts, ctx: _Context, p: Parsed, node: ast.If) -> Optional[Suggestion]:
    cond = _condition(p, node.test)
    a = _single_assign(node.body)
    if a is not None:
        target, yes = a
        if node.orelse:
            b = _single_assign(node.orelse)
            if b is None or b[0] != target:
                return None
            no = b[1]
            no_src = p.segment(no)
        else:
            if target not in _defined_before(p, node):
                return None
            no, no_src = ast.Name(target, ast.Load()), target
        if not (_is_elementwise(yes) and _is_elementwise(no)):
            return None
        ny, nn_ = _tensor_names(yes), _tensor_names(no)
        if ny and nn_ and not (ny & nn_):  # different tensors: shapes may differ
            return None
        code = f"{target} = torch.where({cond}, {p.segment(yes)}, {no_src})"
    elif (len(node.body) == 1 and isinstance(node.body[0], ast.Return) and node.body[0].value is not None
          and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.Return) and node.orelse[0].value is not None):
        yes, no = node.body[0].value, node.orelse[0].value
        if not (_is_elementwise(yes) and _is_elementwise(no)) or isinstance(yes, ast.Tuple) or isinstance(no, ast.Tuple):
            return None
        code = f"return torch.where({cond}, {p.segment(yes)}, {p.segment(no)})"
    else:
        return None
    last = node.end_lineno or node.lineno
    return Suggestion(
        f"Replace the branch at {ctx.where(f.stop)} with torch.where",
        f"`if {p.segment(node.test)}:` decides on a tensor's value, which torch cannot know while it traces, so the "
        "graph breaks there. Both branches compute elementwise expressions of the same tensors: compute both and "
        "let torch.where pick, with no branch at all (lines "
        f"{node.lineno}-{last} become one line). Both sides are evaluated: an expression that is invalid for the "
        "values not picked (log of a negative number) gives inf/nan there, harmless in the output but not in "
        "gradients; torch.cond evaluates only one branch.",
        code, "high", "torch.where", f.stop.filename, node.lineno, last)


def _branch_returns(stmts) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _has_return(stmts) -> bool:
    return any(isinstance(n, ast.Return) for n in _walk_scope(stmts))


def _free_name(base: str, taken: set[str]) -> str:
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def _cond_rewrite(f: _Facts, ctx: _Context, p: Parsed, node: ast.If) -> Optional[Suggestion]:
    body, orelse = node.body, node.orelse
    if len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif: one cond per level would nest data-dependent ifs
        return _cond_from_line(f, ctx, note="The `elif` chain needs one torch.cond per level (nested in the false branch).")
    returns = _branch_returns(body) and _branch_returns(orelse)
    if not returns and (_has_return(body) or _has_return(orelse)):
        return _cond_from_line(f, ctx, note="A branch returns early: torch.cond needs both branches to return (or neither).")
    before = set(_defined_before(p, node))
    taken = {n.id for n in ast.walk(p.tree) if isinstance(n, ast.Name)} | {d.name for d in ast.walk(p.tree) if isinstance(d, ast.FunctionDef)}
    t_name, f_name = _free_name("true_fn", taken), _free_name("false_fn", taken)
    side_effects = [n for n in _walk_scope(body + orelse)
                    if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store)]
    side_effects += [s for s in _walk_scope(body + orelse) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
    if returns:
        outputs: list[str] = []
        operands = [n for n in _loads(body + orelse) if n in before and n != "self"]
    else:
        t_stores, f_stores = _stores(body), _stores(orelse)
        assigned = _ordered(t_stores + f_stores)
        used_after = [n for n in assigned if _uses_after(p, node, n)]
        outputs = used_after or assigned
        if not outputs:
            return None
        one_sided = [n for n in outputs if n not in t_stores or n not in f_stores]
        if any(n not in before for n in one_sided):
            return _cond_from_line(f, ctx, note=f"`{[n for n in one_sided if n not in before][0]}` is assigned in one branch only and has no value before the `if`.")
        operands = [n for n in _ordered(_loads(body + orelse) + one_sided) if n in before and n != "self"]

    def branch(name: str, stmts: list[ast.stmt], stores: list[str]) -> str:
        lines = [f"def {name}({', '.join(operands)}):"]
        inner = p.block_text(stmts) if stmts else ""
        if inner:
            lines += textwrap.indent(inner, "    ").split("\n")
        if not returns:
            outs = [n if n in stores else f"{n}.clone()" for n in outputs]  # an input returned as is would alias
            lines.append(f"    return {', '.join(outs)}")
        return "\n".join(lines)

    ops = "(" + ", ".join(operands) + ("," if len(operands) == 1 else "") + ")"
    call = f"torch.cond({_condition(p, node.test)}, {t_name}, {f_name}, {ops})"
    tail = f"return {call}" if returns else f"{', '.join(outputs)} = {call}"
    code = "\n".join([branch(t_name, body, _stores(body)), branch(f_name, orelse, _stores(orelse)), tail])
    last = node.end_lineno or node.lineno
    what = ("both branches return" if returns else
            f"the branches assign {', '.join(f'`{n}`' for n in outputs)}, which torch.cond returns")
    explanation = (
        f"`if {p.segment(node.test)}:` decides on a tensor's value, which torch cannot know while it traces, so "
        f"the graph breaks there. torch.cond puts both branches in the graph and picks one when it runs: {what}. "
        f"Lines {node.lineno}-{last} become the code below; the operands are the values the branches read "
        f"({', '.join(f'`{o}`' for o in operands) or 'none'}). Both branches must return tensors of the same "
        "shapes and dtypes.")
    confidence = "medium"
    if side_effects:
        confidence = "low"
        explanation += (" A branch changes state outside itself (an attribute, an item, a call for its effect): "
                        "torch.cond does not allow that; return the value instead and apply it after the call.")
    return Suggestion(f"Rewrite the branch at {ctx.where(f.stop)} with torch.cond", explanation, code, confidence,
                      "torch.cond", f.stop.filename, node.lineno, last)


_IF_LINE = re.compile(r"^\s*(?:el)?if\s+(?P<cond>.+?):\s*(?:#.*)?$")


def _cond_from_line(f: _Facts, ctx: _Context, note: str = "") -> Optional[Suggestion]:
    """Only the break's line is known (a trace file, a report without kept source): a skeleton."""
    m = _IF_LINE.match(f.stop.source_line or "")
    if not m:
        return None
    cond = m.group("cond")
    code = "\n".join([
        "def true_fn(...):   # the statements of the `if` branch, returning the values they assign",
        "    ...",
        "def false_fn(...):  # the statements of the `else` branch, returning the same values",
        "    ...",
        f"... = torch.cond({cond}, true_fn, false_fn, (...,))",
    ])
    return Suggestion(
        f"Rewrite the branch at {ctx.where(f.stop)} with torch.cond",
        f"`if {cond}:` decides on a tensor's value, which torch cannot know while it traces, so the graph breaks "
        "there. torch.cond puts both branches in the graph and picks one when it runs; the branches become "
        "functions of the tensors they read, returning tensors of the same shapes and dtypes. "
        + (note + " " if note else "")
        + "(The report kept only this line, so the branches are left for you to fill in.)",
        code, "low", "torch.cond")


# ---------------------------------------------------------------------------
# .item(), int(t), float(t), .tolist()


def _is_item(f: _Facts) -> bool:
    return f.code == "GB0124" or f.kind.startswith("Unsupported Tensor.item() call")


def _scalar_calls(stmt: ast.stmt, lineno: int) -> list[ast.Call]:
    calls = []
    for n in ast.walk(stmt):
        if not isinstance(n, ast.Call) or not (n.lineno <= lineno <= (n.end_lineno or n.lineno)):
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr == "item" and not n.args and not n.keywords:
            calls.append(n)
        elif (isinstance(n.func, ast.Name) and n.func.id in ("int", "float") and len(n.args) == 1 and not n.keywords
              and not isinstance(n.args[0], ast.Constant)):
            calls.append(n)
    # the outermost only: int(x.sum().item()) is one conversion
    return [c for c in calls if not any(c is not o and c in ast.walk(o) for o in calls)]


def _arith_use(p: Parsed, node: ast.AST) -> bool:
    """``node`` is an operand of arithmetic with something that is not a plain number
    (``x * n``, not ``0.1 * n``: that would turn a Python number into a tensor)."""
    parent = p.parents.get(node)
    if isinstance(parent, ast.UnaryOp):
        return _arith_use(p, parent)
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is node else parent.left
        return not isinstance(other, ast.Constant)
    return isinstance(parent, ast.AugAssign) and parent.value is node


def _tensor_form(p: Parsed, call: ast.Call) -> str:
    """``x.sum().item()`` -> ``x.sum()``; ``int(e)`` -> ``e.long()``; ``float(e)`` -> ``e.double()``."""
    if isinstance(call.func, ast.Attribute):  # .item()
        return p.segment(call.func.value)
    arg = call.args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "item":
        arg = arg.func.value
    src = p.segment(arg)
    if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
        src = f"({src})"
    return src + (".long()" if call.func.id == "int" else ".double()")


def _fix_item(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    config = "torch._dynamo.config.capture_scalar_outputs = True"
    if f.in_library:
        return Suggestion(
            "Let torch keep the library's .item() in the graph: capture_scalar_outputs",
            f"{_path(ctx, f)} turns a tensor into a Python number (`{f.stop.source_line.strip()}`), in code you "
            "cannot edit. With this setting torch traces it as a symbolic number and the graph goes on. "
            + _reset_note(), config, "medium", "capture_scalar_outputs")
    p = _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    calls = _scalar_calls(stmt, f.stop.lineno) if stmt is not None else []
    line = f.stop.source_line.strip()
    if calls:
        keep = False
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and len(calls) == 1 and stmt.value is calls[0]):
            uses = _uses_after(p, stmt, stmt.targets[0].id)
            keep = bool(uses) and all(_arith_use(p, u) for u in uses)
            what = f"`{stmt.targets[0].id}` is only used in arithmetic with tensors"
        else:
            keep = all(_arith_use(p, c) for c in calls)
            what = "the value is an operand of tensor arithmetic"
        if keep:
            code = _stmt_replacement(p, stmt, [(c, _tensor_form(p, c)) for c in calls], keep_comment=False)
            return Suggestion(
                f"Keep the value at {ctx.where(f.stop)} a tensor",
                f"`{line}` turns a tensor into a Python number, which torch cannot trace (the graph breaks and "
                f"the value goes to the CPU). {what[0].upper() + what[1:]}, where a 0-dim tensor gives the same "
                "result: drop the conversion and the graph goes on.",
                code, "high", "keep_tensor", f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)
    return Suggestion(
        "Let torch trace the Python number: capture_scalar_outputs",
        f"`{line}` at {ctx.where(f.stop)} turns a tensor into a Python number, and the code uses it as one (a size, an "
        "argument), not only in tensor arithmetic. With this setting torch traces the number symbolically and the "
        "graph goes on; code that branches on the number still breaks. " + _reset_note(),
        config, "medium", "capture_scalar_outputs")


def _is_tolist(f: _Facts) -> bool:
    return f.code == "GB0109" or f.kind.startswith("Tensor.tolist()")


def _fix_tolist(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    if f.in_library:
        return None
    p = _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr == "tolist" and not stmt.value.args):
        return None
    name = stmt.targets[0].id
    uses = _uses_after(p, stmt, name)

    def ok(u: ast.Name) -> bool:
        parent = p.parents.get(u)
        if isinstance(parent, ast.Call) and _call_name(parent) in ("len", "sum") and u in parent.args:
            return True
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is u:
            return True
        return isinstance(parent, ast.Subscript) and parent.value is u or _arith_use(p, u)

    if not uses or not all(ok(u) for u in uses):
        return None
    code = _stmt_replacement(p, stmt, [(stmt.value, p.segment(stmt.value.func.value))], keep_comment=False)
    return Suggestion(
        f"Keep `{name}` a tensor at {ctx.where(f.stop)}",
        f"`{f.stop.source_line.strip()}` copies a tensor into a Python list, which torch cannot trace. `{name}` is only "
        "measured, indexed, iterated or used in arithmetic, and a tensor does all of that: keep the tensor (its "
        "items are 0-dim tensors instead of Python numbers).",
        code, "high", "keep_tensor", f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)


# ---------------------------------------------------------------------------
# ops with data-dependent output shapes


def _is_dynamic_shape(f: _Facts) -> bool:
    return f.code in ("GB0036",) or f.kind.startswith("Dynamic shape operator")


def _fix_dynamic_shape(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    if "(no meta kernel)" in f.kind:
        return None
    op = re.search(r"aten\.(\w+)", f.context or f.explanation or "")
    name = op.group(1) if op else "this operator"
    where = "library code you cannot edit" if f.in_library else "your code"
    return Suggestion(
        "Let torch trace data-dependent output shapes: capture_dynamic_output_shape_ops",
        f"`{name}` at {_path(ctx, f)} (in {where}) returns a tensor whose size depends on the values of its input, "
        "so torch stops the graph there. With this setting torch keeps it in the graph with a symbolic size. Code "
        "that then branches on that size, or loops over its elements, still breaks. " + _reset_note(),
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True", "medium", "capture_dynamic_output_shape_ops")


# ---------------------------------------------------------------------------
# print and logging

_PRINT = re.compile(r"^builtin print \[(?P<types>.*?)\] (?P<kw>True|False)")
_REORDERABLE = {"TensorVariable", "ConstantVariable", "StringFormatVariable"}
_LOGGER = re.compile(r"method: <(?P<cls>\w*Logger) (?P<name>.+?) \((?P<level>\w+)\)>\.(?P<method>\w+), args: (?P<args>.*?), kwargs:", re.S)
_LOG_FN = re.compile(r"\blogging\.(?P<fn>debug|info|warning|warn|error|critical|exception|log)\s*\(")


def _is_print(f: _Facts) -> bool:
    return bool(_PRINT.match(f.context)) or (f.code == "GB0296" and "built-in function print" in f.context)


def _fix_print(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    m = _PRINT.match(f.context)
    types = re.findall(r"\.(\w+Variable)'", m.group("types")) if m else []
    reorderable = bool(m) and m.group("kw") == "False" and all(t in _REORDERABLE for t in types)
    if reorderable:
        return Suggestion(
            "Let torch print after the graph: reorderable_logging_functions",
            f"`{f.stop.source_line.strip()}` at {_path(ctx, f)} prints tensors and constants only; torch can move the "
            "print to after the graph, with the values it had, instead of breaking the graph. The line prints after "
            "the compiled code's other effects. Or remove the print from the compiled code. " + _reset_note(),
            "torch._dynamo.config.reorderable_logging_functions.add(print)", "high", "reorderable_logging_functions")
    if f.in_library:
        return None
    p = _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) == "print"):
        return None
    parent = p.parents.get(stmt)
    alone = any(getattr(parent, fld, None) == [stmt] for fld in ("body", "orelse", "finalbody"))
    text = p.segment(stmt).replace("\n", " ")
    code = ("pass  " if alone else "") + f"# {text}  (print this after the compiled code returns)"
    odd = [t for t in types if t not in _REORDERABLE]
    return Suggestion(
        f"Remove the print at {ctx.where(f.stop)} from the compiled code",
        f"`{text}` prints a value torch cannot hold back until after the graph"
        + (f" ({', '.join(odd)})" if odd else "") + ", so the graph breaks there. Print it outside the compiled "
        "code (after the call returns, from its result), or print only tensors and constants, which "
        "`torch._dynamo.config.reorderable_logging_functions.add(print)` lets torch move after the graph.",
        code, "high", "remove_print", f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)


def _is_logger_method(f: _Facts) -> bool:
    return f.code == "GB0291" or bool(_LOGGER.search(f.context))


def _fix_logger(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    m = _LOGGER.search(f.context)
    if not m:
        return None
    name, method = m.group("name"), m.group("method")
    logger = "logging.getLogger()" if m.group("cls") == "RootLogger" else f'logging.getLogger("{name}")'
    message = re.search(r"ConstantVariable\(str: (?P<q>['\"])(?P<msg>.*?)(?P=q)\)", m.group("args"), re.S)
    said = f" (“{message.group('msg')}”)" if message else ""
    code = f"import logging\nimport torch\ntorch._dynamo.config.ignore_logging_functions.add({logger}.{method})"
    if f.in_library:
        head = (f"{_path(ctx, f)} calls `{method}` on the logger '{name}'{said}: library code you cannot edit. "
                "torch cannot trace a logging call, so the graph breaks there.")
        title = f"Ignore the library's `{name}` logger call `{method}` in compiled code"
    else:
        head = (f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls `{method}` on the logger '{name}'{said}; "
                "torch cannot trace a logging call, so the graph breaks there. Or move the call out of the compiled code.")
        title = f"Ignore the `{name}` logger's `{method}` in compiled code"
    old_torch = ""
    if _torch_before(ctx.report.torch_version, (2, 13)):
        old_torch = (" On torch 2.11 (seen on 2.11.0) torch then fails to log its compile metrics while the set "
                     "holds a callable (its config logging cannot serialize it): the code compiles without the break, "
                     "but a report of it lacks those compiles' times and statuses.")
    return Suggestion(
        title,
        head + f" Adding `{logger}.{method}` (exactly this logger's method) to "
        "torch._dynamo.config.ignore_logging_functions makes the call a no-op in compiled code: the message is "
        "not logged from compiled code (it still is when the code runs uncompiled). " + _reset_note() + old_torch,
        code, "high", "ignore_logging_functions")


def _torch_before(version: str, limit: tuple[int, int]) -> bool:
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) < limit


def _logging_call_frame(f: _Facts) -> Optional[UserFrame]:
    """The frame whose line calls ``logging.<level>(...)``: where torch stopped, or the
    user's line when torch stopped inside the logging module itself."""
    for fr in (f.stop, f.user):
        if _LOG_FN.search(fr.source_line or ""):
            return fr
    return None


def _is_logging_function(f: _Facts) -> bool:
    return _logging_call_frame(f) is not None


def _fix_logging_function(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    fr = _logging_call_frame(f)
    fn = _LOG_FN.search(fr.source_line).group("fn")
    return Suggestion(
        f"Let torch log after the graph: reorderable_logging_functions.add(logging.{fn})",
        f"`{fr.source_line.strip()}` at {ctx.where(fr)} logs through the logging module, which torch cannot trace. "
        f"When its arguments are tensors and constants, torch can move the call to after the graph instead. Or "
        "remove it from the compiled code. " + _reset_note(),
        f"import logging\nimport torch\ntorch._dynamo.config.reorderable_logging_functions.add(logging.{fn})",
        "medium", "reorderable_logging_functions")


# ---------------------------------------------------------------------------
# backward


def _is_backward(f: _Facts) -> bool:
    return f.code == "GB0123" or f.kind.startswith("Unsupported Tensor.backward() call")


def _fix_backward(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    code = "torch._dynamo.config.trace_autograd_ops = True"
    keep = ""
    p = None if f.in_library else _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) == "backward"
            and isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name)):
        loss = stmt.value.func.value.id
        scope = p.scope_of(stmt)
        kept = isinstance(scope, ast.Module) or any(
            isinstance(p.parents.get(u), ast.Return) or isinstance(p.parents.get(u), ast.Tuple)
            for u in _uses_after(p, stmt, loss))
        if kept:  # a cell's names live on in the notebook: a loss whose graph backward consumed cannot
            keep = (f"\n# {ctx.where(f.stop)}: `{loss}` outlives the compiled code, so drop its graph after backward\n"
                    f"{p.segment(stmt)}\n{loss} = {loss}.detach()")
            code += keep
    return Suggestion(
        "loss.backward() ends the forward graph: the normal boundary of a training step",
        f"`{f.stop.source_line.strip()}` at {_path(ctx, f)} runs the backward pass. This break is expected: the "
        "forward before it is one graph, and torch already compiles its backward (AOTAutograd) when it runs; the "
        "optimizer step after it is another graph. Nothing here needs fixing unless you want the whole step in "
        "one graph. For that, torch 2.13 traces backward() itself when "
        "torch._dynamo.config.trace_autograd_ops is True (as autograd.grad and gradient accumulation)"
        + (", and a tensor that outlives the compiled code (a name a %%compile cell assigns is kept in the "
           "notebook; a returned one) must not hold the graph backward used: detach it after backward" if keep else "")
        + ". Compiled autograd (torch._dynamo.config.compiled_autograd = True) also compiles the backward pass "
        "with its hooks. " + _reset_note(),
        code, "medium", "trace_autograd_ops")


# ---------------------------------------------------------------------------
# copy.deepcopy of a tensor


def _is_deepcopy(f: _Facts) -> bool:
    return f.code in ("GB4198", "GB0179") or "deepcopy" in f.kind


def _fix_deepcopy(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    # torch stops inside the standard library's copy.py; the call to rewrite is the user's line
    at = f.user if f.in_library else f.stop
    if ctx.library(at.filename):
        return None
    p = _parsed_at(at, ctx)
    stmt = p.innermost_statement(at.lineno) if p is not None else None
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _call_name(n) == "deepcopy"
             and len(n.args) == 1 and not n.keywords] if stmt is not None else []
    if len(calls) != 1:
        return None
    arg = calls[0].args[0]
    src = p.segment(arg)
    if not isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        src = f"({src})"
    code = _stmt_replacement(p, stmt, [(calls[0], f"{src}.clone()")])
    return Suggestion(
        f"Copy the tensor with `.clone()` at {ctx.where(at)}",
        f"`{p.segment(stmt)}` deep-copies a tensor, which torch does not trace. `.clone()` makes the "
        "same copy as one op of the graph. (It stays connected to autograd, where a deep copy is a new leaf: "
        "write `.detach().clone()` if gradients must not flow through the copy.)",
        code, "high", "tensor_clone", at.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)


# ---------------------------------------------------------------------------
# NumPy, third-party and builtin calls, context managers

_NUMPY_FN = re.compile(r"numpy function: <function (?P<fn>\w+) at")
_SKIPPED = re.compile(r"module: (?P<module>[\w.]+), qualname: (?P<qualname>[\w.<>]+)")
_BUILTIN = re.compile(r"builtin operator `(?P<fn>\w+)`|^builtin (?P<fn2>\w+) \[")


def _is_numpy(f: _Facts) -> bool:
    return f.code == "GB0294" or f.kind.startswith("attempted to trace numpy function unsupported")


def _numpy_call(stmt: ast.stmt, fn: str) -> Optional[ast.Call]:
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == fn \
                and _dotted(n.func.value) in ("np", "numpy"):
            return n
    return None


def _strip_numpy(p: Parsed, node: ast.expr) -> str:
    """``a.numpy()`` -> ``a``; anything else as written."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" and not node.args:
        return p.segment(node.func.value)
    return p.segment(node)


def _fix_numpy(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    m = _NUMPY_FN.search(f.context)
    if not m or f.in_library:
        return None
    fn = m.group("fn")
    p = _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    call = _numpy_call(stmt, fn) if stmt is not None else None
    if call is None:
        return None
    make = NUMPY_TO_TORCH.get(fn)
    if make is not None:
        args = [_strip_numpy(p, a) for a in call.args]
        kw = {k.arg: _strip_numpy(p, k.value) for k in call.keywords if k.arg}
        torch_call = make(args, kw)
        if torch_call is not None:
            # torch.from_numpy(np.f(...)) / torch.as_tensor(np.f(...)): the wrapper goes too
            outer = p.parents.get(call)
            target = outer if (isinstance(outer, ast.Call) and _dotted(outer.func) in
                               ("torch.from_numpy", "torch.as_tensor", "torch.tensor") and len(outer.args) == 1) else call
            code = _stmt_replacement(p, stmt, [(target, torch_call)])
            return Suggestion(
                f"Use the torch equivalent of np.{fn} at {ctx.where(f.stop)}",
                f"torch traces most NumPy calls as torch code, but not `np.{fn}`, so the graph breaks there. "
                f"`{torch_call.split('(')[0]}` computes the same on tensors (same values and dtype) and stays in the graph.",
                code, "high", "numpy_to_torch", f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)
    return _custom_op(f, ctx, p, stmt, f"np.{fn}")


def _is_context_manager(f: _Facts) -> bool:
    return (f.code in ("GB0142", "GB0221", "GB0274") or f.kind.startswith("Unsupported context manager")
            or f.stop.function in ("__enter__", "__exit__"))


def _with_statement(f: _Facts, ctx: _Context) -> Optional[tuple[Parsed, ast.With, UserFrame]]:
    frames = [f.stop] + [fr for fr in reversed(f.stack) if fr is not f.stop]
    for fr in frames:
        if ctx.library(fr.filename):
            continue
        p = _parsed_at(fr, ctx)
        if p is None:
            continue
        for s in reversed(p.statements_at(fr.lineno)):
            if isinstance(s, ast.With) and s.lineno <= fr.lineno <= (s.items[-1].context_expr.end_lineno or s.lineno):
                return p, s, fr
    return None


def _fix_context_manager(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    found = _with_statement(f, ctx)
    if found is None:
        return None
    p, w, fr = found
    before = set(_defined_before(p, w))
    params = [n for n in _loads(w.body) if n in before and n != "self"]
    stores = _stores(w.body)
    used_after = [n for n in stores if _uses_after(p, w, n)]
    outputs = used_after or stores
    scope = p.scope_of(w)
    base = scope.name if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else "cell"
    name = _free_name(f"{base}_body", {n.id for n in ast.walk(p.tree) if isinstance(n, ast.Name)})
    items = ", ".join(p.segment(i) for i in w.items)
    body = textwrap.indent(p.block_text(w.body), "    ")
    lines = ["@torch.compile", f"def {name}({', '.join(params)}):", body]
    if outputs:
        lines.append(f"    return {', '.join(outputs)}")
    call = f"{name}({', '.join(params)})"
    lines += [f"with {items}:", f"    {', '.join(outputs) + ' = ' if outputs else ''}{call}"]
    return Suggestion(
        f"Run the `with` at {ctx.where(fr)} outside the compiled code; compile its body",
        f"`with {items}:` enters a context manager torch cannot trace ({f.kind}), so torch gives up on "
        "that code. Keep the `with` in plain Python (a cell without %%compile, or outside the function you "
        f"compile) and compile what its block computes, `{name}`.",
        "\n".join(lines), "medium", "with_outside")


def _is_unsupported_call(f: _Facts) -> bool:
    return (f.code in ("GB0007", "GB0008", "GB0009", "GB0059", "GB0213")
            or f.kind.startswith(("Attempted to call function marked as skipped", "Attempted to inline function marked as skipped",
                                  "Failed to trace builtin operator")))


def _callee(f: _Facts) -> str:
    m = _SKIPPED.search(f.context)
    if m:
        return m.group("qualname").split(".")[-1]
    m = _BUILTIN.search(f.explanation) or _BUILTIN.search(f.context)
    return (m.group("fn") or m.group("fn2")) if m else ""


def _fix_call(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    callee = _callee(f)
    m = _SKIPPED.search(f.context)
    full = f"{m.group('module')}.{m.group('qualname')}" if m else callee
    if f.in_library or not callee:
        return None
    p = _parsed_at(f.stop, ctx)
    stmt = p.innermost_statement(f.stop.lineno) if p is not None else None
    if stmt is None:
        return None
    call = next((n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _call_name(n) == callee), None)
    if call is None:
        return None
    if isinstance(stmt, ast.With) and any(call in ast.walk(i.context_expr) for i in stmt.items):
        return _fix_context_manager(f, ctx)  # `with open(...)`: the with is what to move
    uses_values = any(not isinstance(a, ast.Constant) for a in [*call.args, *(k.value for k in call.keywords)])
    if not uses_values:
        unused = isinstance(stmt, ast.Expr) or (
            isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) and not _uses_after(p, stmt, t.id) for t in stmt.targets))
        if not unused:
            return None
        text = p.segment(stmt).replace("\n", " ")
        return Suggestion(
            f"Move `{p.segment(call)}` out of the compiled code",
            f"`{text}` at {ctx.where(f.stop)} calls `{full}`, which torch cannot trace, and it does not use your "
            "tensors: call it before or after the compiled code instead of inside it.",
            f"# {text}  (moved: call it outside the compiled code)", "high", "move_out",
            f.stop.filename, stmt.lineno, stmt.end_lineno or stmt.lineno)
    return _custom_op(f, ctx, p, stmt, full)


_TENSOR_ATTRS = {"numpy", "cpu", "cuda", "detach", "tolist", "item", "dtype", "shape", "device", "size", "dim"}


def _tensor_like(expr: ast.AST, name: str) -> bool:
    """Whether ``expr`` uses ``name`` as a tensor (``name.numpy()``, ``name.dtype``): a notebook
    global the cell did not assign is an input of the op only then."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
               and n.attr in _TENSOR_ATTRS for n in ast.walk(expr))


def _custom_op(f: _Facts, ctx: _Context, p: Parsed, stmt: ast.stmt, what: str) -> Optional[Suggestion]:
    """Wrap the smallest piece of the user's code around an untraceable call in a custom op:
    the helper function that holds it when that function is not the compiled one, else the
    statement's value."""
    scope = p.scope_of(stmt)
    compiled = ctx.compiled_functions()
    called_from_compiled = any((fr.filename, fr.function) in compiled for fr in f.stack[:-1])
    helper = (isinstance(scope, ast.FunctionDef) and called_from_compiled and f.stop.function == scope.name
              and (not scope.args.args or scope.args.args[0].arg not in ("self", "cls"))
              and not scope.args.vararg and not scope.args.kwarg and scope.name != "cell")
    module = ctx.src.module(f.stop.filename)
    if helper:
        name = scope.name
        params = [a.arg for a in scope.args.args]
        body = p.block_text(scope.body)
        define = [f'@torch.library.custom_op("user::{name}", mutates_args=())',
                  f"def {name}({', '.join(f'{a}: torch.Tensor' for a in params)}) -> torch.Tensor:",
                  textwrap.indent(body, "    ")]
        use: list[str] = []
        piece = f"`{name}`" + (f" (in module `{module}`)" if module and module != "__main__" else "")
    else:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            value, target = stmt.value, p.segment(stmt.targets[0]) + " = "
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            value, target = stmt.value, "return "
        else:
            return None
        if not _dotted(value).startswith("torch."):  # e.g. a bare np.f(...): its value is no tensor
            return None
        before = set(_defined_before(p, stmt))
        params = [n for n in _loads([ast.Expr(value)]) if (n in before or _tensor_like(value, n)) and n != "self"]
        if not params:
            return None
        base = re.sub(r"\W", "_", what.split(".")[-1])
        name = _free_name(f"{base}_op", {n.id for n in ast.walk(p.tree) if isinstance(n, ast.Name)})
        define = [f'@torch.library.custom_op("user::{name}", mutates_args=())',
                  f"def {name}({', '.join(f'{a}: torch.Tensor' for a in params)}) -> torch.Tensor:",
                  f"    return {p.segment(value)}"]
        use = [f"# at {ctx.where(f.stop)}, instead of the line above:", f"{target}{name}({', '.join(params)})"]
        piece = f"the value of `{p.segment(stmt).strip()}`"
    fake = [f"@{name}.register_fake", f"def _({', '.join(params)}):",
            f"    return torch.empty_like({params[0]})  # a tensor of the result's shape and dtype"]
    code = "\n".join(["import torch", "", "# define once, outside the compiled code:", *define, *fake,
                      *([""] + use if use else [])])
    return Suggestion(
        f"Make {piece.strip('`') if helper else 'the call'} a custom op torch keeps in the graph",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls `{what}`, which torch cannot trace. "
        f"torch.library.custom_op turns {piece} into one opaque op of the graph: torch calls it as is, "
        "and its fake (`register_fake`) tells torch the shape and dtype of the result without running it. "
        "The code below assumes tensors in and one tensor out with the shape and dtype of the first input: "
        "adapt the types and the fake if yours differ. Define it outside the compiled code. "
        "(torch.compiler.disable on that function would only make the break explicit: the graph would still "
        "break at the call.)",
        code, "medium", "custom_op")


# ---------------------------------------------------------------------------
# higher-order ops: scan, cond, map, while_loop

_ALIAS = re.compile(r"(?P<how>Output-to-output|Input-to-output) aliasing detected at nodes (?P<a>\w+) and (?P<b>\w+)")


def _is_hop_alias(f: _Facts) -> bool:
    return f.code == "GB0040" or f.kind.startswith("Encountered aliasing during higher order op tracing")


def _is_hop_side_effect(f: _Facts) -> bool:
    return f.code in ("GB0067", "GB4413") or f.kind.startswith(("HOP: Unsafe side effect", "HOP: Non-nullified side effect"))


def _is_hop_structure(f: _Facts) -> bool:
    return "Unmatched output spec from torch.cond branches" in f.text or f.code == "GB0319"


def _hop_call(f: _Facts, ctx: _Context) -> Optional[tuple[Parsed, ast.Call, str, UserFrame]]:
    """The user's scan/cond/map call that failed: from the innermost user frame outwards."""
    frames = [fr for fr in reversed(f.stack or [f.user]) if not ctx.library(fr.filename)] or [f.user]
    for fr in frames:
        p = _parsed_at(fr, ctx)
        stmt = p.innermost_statement(fr.lineno) if p is not None else None
        if stmt is None:
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and _call_name(n) in _HOPS:
                return p, n, _call_name(n), fr
    return None


def _body_defs(f: _Facts, ctx: _Context) -> list[tuple[Parsed, ast.FunctionDef, str]]:
    found = _hop_call(f, ctx)
    if found is None:
        return []
    p, call, op, fr = found
    out = []
    for i in _HOPS[op]:
        if i < len(call.args) and isinstance(call.args[i], ast.Name):
            d = _find_def(ctx, fr.filename, call.args[i].id, before=call.lineno)
            if d is not None:
                out.append((d[0], d[1], op))
    return out


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    return [n for n in _walk_scope(fn.body) if isinstance(n, ast.Return) and n.value is not None]


def _fix_hop_alias(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    changes: list[tuple[Parsed, ast.Return, str, str]] = []
    for p, fn, op in _body_defs(f, ctx):
        params = set(_params(fn)) - set(_stores(fn.body))  # a parameter assigned again is no longer the input
        for r in _returns(fn):
            elts = list(r.value.elts) if isinstance(r.value, ast.Tuple) else [r.value]
            seen: set[str] = set()
            swaps = []
            for e in elts:
                if isinstance(e, ast.Name) and (e.id in seen or e.id in params):
                    swaps.append((e, f"{e.id}.clone()"))
                if isinstance(e, ast.Name):
                    seen.add(e.id)
            if swaps:
                changes.append((p, r, _stmt_replacement(p, r, swaps), fn.name))
    if not changes:
        return None
    m = _ALIAS.search(f.context)
    how = (f"{m.group('how')} aliasing (`{m.group('a')}` and `{m.group('b')}`)" if m else "aliasing")
    op = _body_defs(f, ctx)[0][2]
    if len(changes) == 1:
        p, r, code, fn = changes[0]
        return Suggestion(
            f"Return a copy: `{code}` in `{fn}`",
            f"torch found {how} in the body of `{op}`: `{p.segment(r)}` (in `{fn}`, {ctx.report.where(p.filename, r.lineno)}) "
            "returns an input, or one tensor twice. The outputs of a higher-order op must be new tensors: "
            "`.clone()` the repeated or passed-through one (a cheap copy torch can often remove).",
            code, "high", "hop_clone", p.filename, r.lineno, r.end_lineno or r.lineno)
    lines = []
    for p, r, code, fn in changes:
        lines.append(f"# in {fn}, {ctx.report.where(p.filename, r.lineno)}:\n{code}")
    return Suggestion(
        f"Return copies in the bodies of `{op}`",
        f"torch found {how} in the body of `{op}`: these returns pass an input through, or return one tensor "
        "twice. The outputs of a higher-order op must be new tensors: `.clone()` the repeated or passed-through ones.",
        "\n".join(lines), "high", "hop_clone")


_MUTATION_CALLS = {"append", "extend", "add", "update", "insert", "add_", "copy_"}


def _fix_hop_side_effect(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    frames = [fr for fr in reversed(f.stack or [f.user]) if not ctx.library(fr.filename)]
    for fr in frames:
        p = _parsed_at(fr, ctx)
        stmt = p.innermost_statement(fr.lineno) if p is not None else None
        fn = p.scope_of(stmt) if stmt is not None else None
        if not isinstance(fn, ast.FunctionDef):
            continue
        value = None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) in _MUTATION_CALLS \
                and stmt.value.args:
            value = stmt.value.args[-1]
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)):
            value = stmt.value
        if value is None:
            continue
        rets = _returns(fn)
        if len(rets) != 1:
            continue
        ret = rets[0]
        kept = [s for s in fn.body if s is not stmt and s is not ret]
        ret_src = p.segment(ret.value)
        if isinstance(ret.value, ast.Tuple) and not ret_src.startswith("("):
            ret_src = f"({ret_src})"
        head = p.segment(fn).split("\n")[0]
        lines = [head] + [textwrap.indent(p.block_text([s]), "    ") for s in kept]
        lines.append(f"    return {ret_src}, {p.segment(value)}  # the value, returned instead of stored")
        effect = p.segment(stmt).replace("\n", " ")
        lines += ["# the other branch (or body) returns a value of the same shape and dtype in that place;",
                  "# after the call, apply the change outside:",
                  f"#     out, value = <the call>;  {effect.replace(p.segment(value), 'value')}"]
        return Suggestion(
            f"Return the value instead of changing `{_dotted(_target_of(stmt))}` inside `{fn.name}`",
            f"`{effect}` ({ctx.report.where(p.filename, stmt.lineno)}, in `{fn.name}`) changes something that "
            "lives outside the body of a higher-order op (cond, scan, map), which torch does not allow: the body "
            "must be a pure function of its inputs. Return the value as an extra output and apply the change "
            "after the call.",
            "\n".join(lines), "medium", "hop_return_value")
    return None


def _target_of(stmt: ast.stmt) -> ast.AST:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        return stmt.value.func.value
    if isinstance(stmt, ast.Assign):
        return stmt.targets[0]
    if isinstance(stmt, ast.AugAssign):
        return stmt.target
    return stmt


def _fix_hop_structure(f: _Facts, ctx: _Context) -> Optional[Suggestion]:
    defs = _body_defs(f, ctx)
    if len(defs) < 2:
        return None
    shapes = []
    for p, fn, op in defs:
        rets = _returns(fn)
        if not rets:
            return None
        r = rets[-1]
        n = len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1
        shapes.append((p, fn, r, n))
    desc = "; ".join(f"`{fn.name}` returns {n} value{'s' if n != 1 else ''} (`{p.segment(r.value)}`)" for p, fn, r, n in shapes)
    code = "\n".join(f"# {fn.name}, {ctx.report.where(p.filename, r.lineno)}:\n{p.segment(r)}" for p, fn, r, n in shapes)
    return Suggestion(
        "Make both branches of torch.cond return the same structure",
        f"torch.cond needs its branches to return the same structure: the same number of tensors, nested the "
        f"same way, with the same shapes and dtypes. Here {desc}. Return the same outputs from both "
        "(compute the missing value in the other branch too, or drop the extra one).",
        code, "medium", "hop_match_structure")


# ---------------------------------------------------------------------------
# the rules, in order: the first that applies and builds a fix wins

_RULES: list[tuple[Callable[[_Facts], bool], Callable[[_Facts, _Context], Optional[Suggestion]]]] = [
    (_is_hop_alias, _fix_hop_alias),
    (_is_hop_side_effect, _fix_hop_side_effect),
    (_is_hop_structure, _fix_hop_structure),
    (_is_branch, _fix_branch),
    (_is_item, _fix_item),
    (_is_tolist, _fix_tolist),
    (_is_dynamic_shape, _fix_dynamic_shape),
    (_is_logger_method, _fix_logger),
    (_is_print, _fix_print),
    (_is_logging_function, _fix_logging_function),
    (_is_backward, _fix_backward),
    (_is_deepcopy, _fix_deepcopy),
    (_is_numpy, _fix_numpy),
    (_is_context_manager, _fix_context_manager),
    (_is_unsupported_call, _fix_call),
]
