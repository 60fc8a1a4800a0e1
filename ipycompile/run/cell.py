"""A notebook cell as one function, for ``torch.compile``.

``%%compile`` runs a cell's code as the body of a single zero-argument
function, so that ``torch.compile`` sees the whole cell as one frame.
:func:`make_cell_function` builds that function and keeps what a user expects
of a cell:

* **Names live in the notebook namespace.** Every name the cell binds at its
  top level is declared ``global`` in the function, and the namespace dict is
  the function's ``__globals__``: stores go straight into it, reads come from
  it, and nested ``def``s, lambdas and comprehensions see those names exactly
  as they would in a plain cell. Nothing else is added to the namespace (the
  function itself is not stored there), except ``__builtins__`` where it is
  missing, as ``exec`` does: ``torch.compile`` needs it.
* **The final expression is the result.** When the last top-level statement is
  an expression, the function returns its value (the cell's ``Out[n]``).
* **Line numbers are the editor's.** The header (``%%compile ...``) is line 1
  and the body starts on the line after it, in tracebacks, in ``linecache`` /
  ``inspect`` and in torch's graph-break messages.
* **What cannot be a function body is refused up front.** A top-level
  ``return``, ``yield``, ``yield from``, ``await``, ``async for``/``async with``,
  ``nonlocal`` or ``from m import *`` raises :class:`CellError` naming the
  line; so does any syntax error, with the editor's line number.

Other decisions:

* A ``global`` statement in the cell is kept: it is redundant for names the
  cell binds, and lets nested ``def``s assign notebook names as usual.
* ``from __future__ import ...`` statements at the start of the cell apply to
  the whole cell (they are compiled at module level, ahead of the function);
  they bind no name. Anywhere else they are a :class:`CellError`, as in Python.
* Annotated assignments at the cell's top level lose their annotation
  (``x: int = 1`` runs as ``x = 1``; a bare ``x: int`` does nothing): a
  ``global`` name cannot be annotated, and a function has no
  ``__annotations__`` to record them in. Annotations inside nested ``def``s and
  classes are untouched.
* Decorators, default values and annotations of nested ``def``s, and the bases
  and keywords of nested classes, run in the cell's scope: they are checked
  like any top-level code, and a walrus in them binds a notebook name.
"""

from __future__ import annotations

import ast
import contextlib
import builtins
import io
import keyword
import linecache
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["CellError", "CellFunction", "check_name", "make_cell_function", "plain_cell", "register_source"]

_ONE_FUNCTION = "a %%compile cell is the body of one function"
_NOT_ASYNC = f"{_ONE_FUNCTION}, which is not async; run async code in a plain cell"
_PROBLEMS: dict[type[ast.AST], str] = {
    ast.Return: f"'return' outside a function: {_ONE_FUNCTION}; end the cell with an expression to make it the result",
    ast.Yield: f"'yield' outside a function: {_ONE_FUNCTION}, which cannot be a generator; "
    "put the generator in a 'def' inside the cell",
    ast.YieldFrom: f"'yield from' outside a function: {_ONE_FUNCTION}, which cannot be a generator; "
    "put the generator in a 'def' inside the cell",
    ast.Await: f"'await' outside a function: {_NOT_ASYNC}",
    ast.AsyncFor: f"'async for' outside a function: {_NOT_ASYNC}",
    ast.AsyncWith: f"'async with' outside a function: {_NOT_ASYNC}",
    ast.Nonlocal: f"'nonlocal' outside a function: {_ONE_FUNCTION}, with no enclosing function; "
    "its top-level names are the notebook's globals: assign them directly, or use 'global' in a nested def",
}
_IMPORT_STAR = (
    f"'from ... import *' in a function: {_ONE_FUNCTION}, which cannot import *; "
    "import the names explicitly, or run this import in a plain cell"
)


class CellError(SyntaxError):
    """A cell that does not parse, or cannot be the body of a function.

    The message starts with ``line N:``; ``lineno`` (and ``end_lineno``) are
    editor lines (the header is line 1), ``filename`` is the cell's filename
    and ``text`` the offending line, so IPython shows it like any
    ``SyntaxError``.
    """


@dataclass
class CellFunction:
    """A cell compiled into one function; see :func:`make_cell_function`."""

    fn: types.FunctionType
    """Zero-argument function running the cell; ``fn.__globals__`` is the namespace dict itself."""
    filename: str
    """The filename of the cell's code, registered in ``linecache``."""
    source: str
    """The text registered for ``filename``: header, newline, body."""
    has_result: bool
    """True when the last top-level statement is an expression, whose value ``fn`` returns."""
    assigned: tuple[str, ...]
    """Names bound (or deleted) at the cell's top level, sorted: the names it may change in the namespace."""
    name: str
    """The function's ``__name__``."""
    read_first: tuple[str, ...] = ()
    """The names of ``assigned`` the cell may read (or delete) before it stores them (``n += 1``,
    ``del x``): a second call does not start where the first did unless they are put back."""
    seedable: tuple[str, ...] = ()
    """The names of ``assigned`` that :func:`placeholders` may seed: those the cell stores before it
    reads them, in a cell that does not look at its namespace (``globals()``, ``locals()``,
    ``vars()``, ``dir()``): for them a stand-in cannot be seen (see :func:`seedable_names`)."""


def make_cell_function(
    body: str,
    namespace: dict[str, Any],
    *,
    filename: str,
    header: Optional[str] = "%%compile",
    name: str = "cell",
) -> CellFunction:
    """Compile a cell's ``body`` into a zero-argument function over ``namespace``.

    ``header`` is the text above the body in the editor (the magic's line): the
    body's first line is editor line ``header.count("\\n") + 2``, and
    ``header + "\\n" + body`` is registered in ``linecache`` under
    ``filename``; with ``header=None`` the body starts at line 1 (plain
    Python use). ``name`` is the function's name; it is not stored anywhere,
    so it cannot clobber a notebook name.

    Raises :class:`CellError` (a ``SyntaxError``) for a syntax error or a
    construct that cannot be a function body, naming the editor line.
    """
    source = body if header is None else f"{header}\n{body}"
    register_source(filename, source)
    lines = _source_lines(source)
    header_lines = 0 if header is None else header.count("\n") + 1

    # Blank lines in place of the header give every node its editor line number.
    try:
        tree = ast.parse("\n" * header_lines + body, filename)
    except SyntaxError as e:
        raise _from_syntax_error(e, filename, lines) from None

    _AnnotationDropper().visit(tree)
    n_future = next((i for i, s in enumerate(tree.body) if not _is_future_import(s)), len(tree.body))
    future, stmts = tree.body[:n_future], tree.body[n_future:]

    scope = list(_cell_scope(stmts))
    problems = [
        (node, message)
        for node in scope
        if isinstance(node, (ast.stmt, ast.expr)) and (message := _problem(node))
    ]
    if problems:
        node, message = min(problems, key=lambda p: (p[0].lineno, p[0].col_offset))
        raise _node_error(message, node, filename, lines)
    assigned = tuple(sorted(_bound_names(scope, stmts)))
    stored_first, probes = _stored_first(stmts)
    read_first = tuple(name for name in assigned if name not in stored_first)
    seedable = () if probes else tuple(name for name in assigned if name in stored_first)
    _ModuleScopeCalls(set(assigned)).visit(ast.Module(body=stmts, type_ignores=[]))

    has_result = bool(stmts) and isinstance(stmts[-1], ast.Expr)
    if has_result:
        stmts[-1] = ast.copy_location(ast.Return(value=stmts[-1].value), stmts[-1])

    # A parsed template has the FunctionDef fields of any Python version; its
    # `def` is on line 1, the header's, the line the function's prologue reports.
    func = ast.parse("def cell():\n    pass").body[0]
    assert isinstance(func, ast.FunctionDef)
    func.name = name
    func.body = ([ast.Global(names=list(assigned))] if assigned else []) + (stmts or [ast.Pass()])
    module = ast.fix_missing_locations(ast.Module(body=[*future, func], type_ignores=[]))
    try:
        # dont_inherit: this module's own `from __future__ import annotations` must not leak into the cell.
        code = compile(module, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise _from_syntax_error(e, filename, lines) from None
    fn_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    fn_code = _unqualified(fn_code, f"{name}.<locals>.")
    # As exec() does; torch.compile needs it (IPython's namespace has it already).
    namespace.setdefault("__builtins__", builtins)
    fn = types.FunctionType(fn_code, namespace, name)
    return CellFunction(fn=fn, filename=filename, source=source, has_result=has_result, assigned=assigned, name=name,
                        read_first=read_first, seedable=seedable)


def plain_cell(
    body: str,
    namespace: dict[str, Any],
    *,
    filename: str,
    header: Optional[str] = "%%compile",
) -> Callable[[], Any]:
    """The cell as ordinary code (``--observe``): a zero-argument call that runs its statements
    at module level in ``namespace``, as IPython runs a plain cell, and returns the value of its
    final expression (None when the last statement is not an expression).

    ``header`` and line numbers as in :func:`make_cell_function` (the source is registered in
    ``linecache`` under ``filename``); a syntax error raises :class:`CellError` naming the editor
    line. Nothing else is checked: any code a plain cell may hold runs."""
    source = body if header is None else f"{header}\n{body}"
    register_source(filename, source)
    header_lines = 0 if header is None else header.count("\n") + 1
    try:
        tree = ast.parse("\n" * header_lines + body, filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        # dont_inherit: this module's own `from __future__ import annotations` must not leak into the cell.
        statements = compile(tree, filename, "exec", dont_inherit=True)
        result = compile(ast.Expression(last.value), filename, "eval", dont_inherit=True) if last is not None else None
    except SyntaxError as e:
        raise _from_syntax_error(e, filename, _source_lines(source)) from None

    def run() -> Any:
        exec(statements, namespace)
        return eval(result, namespace) if result is not None else None

    return run


def _unqualified(code: types.CodeType, prefix: str) -> types.CodeType:
    """``code`` with the qualified names of the functions and classes it defines as at a module's
    top level (``f``, ``K.method``, not ``cell.<locals>.f``), as a plain cell has them: ``pickle``
    and ``repr`` see the same names. The names are constants of the code objects (``co_qualname``,
    a class body's ``__qualname__``; before Python 3.11 the strings ``MAKE_FUNCTION`` takes)."""
    consts = tuple(
        _unqualified(c, prefix) if isinstance(c, types.CodeType)
        else c[len(prefix):] if isinstance(c, str) and c.startswith(prefix) else c
        for c in code.co_consts
    )
    changes: dict[str, Any] = {"co_consts": consts}
    qualname = getattr(code, "co_qualname", None)
    if qualname is not None and qualname.startswith(prefix):
        changes["co_qualname"] = qualname[len(prefix):]
    return code.replace(**changes)


def namespace_state(cf: CellFunction, copy: Optional[Any] = None) -> Any:
    """What the cell's names hold now, and a function that puts them back so.

    ``%%compile`` calls the cell more than once (warm-up, timing, eager); the namespace the
    user is left with is the first call's, as after a plain cell: ``n += 1`` counts once.
    Objects changed in place (``xs.append(1)``) cannot be put back. ``copy`` copies each
    value kept (for CUDA-graph outputs, which later replays overwrite)."""
    ns = cf.fn.__globals__
    missing = object()
    kept = {name: ns.get(name, missing) for name in cf.assigned}
    if copy is not None:
        kept = {name: v if v is missing else copy(v) for name, v in kept.items()}

    def restore() -> None:
        for name, value in kept.items():
            if value is missing:
                ns.pop(name, None)
            else:
                ns[name] = value

    return restore


def check_name(option: str, text: str, example: str) -> str:
    """``text`` when the user can name it in a cell (a Python identifier, not a keyword):
    what ``-o NAME`` stores and what ``--sweep NAME=...`` binds. Otherwise a one-line
    ``ValueError`` naming the option, the value and what is allowed."""
    if text.isidentifier() and not keyword.iskeyword(text):
        return text
    why = "a Python keyword" if keyword.iskeyword(text) else "not a Python name"
    raise ValueError(f"{option}: {text!r} is not allowed ({why}); give a Python name (letters, digits and _, "
                     f"not starting with a digit) that is not a keyword, e.g. {example}")


def register_source(filename: str, text: str) -> None:
    """Put ``text`` in ``linecache`` as the source of ``filename``.

    Tracebacks, ``inspect`` and torch's messages then show the cell's lines.
    The entry has no modification time, so ``linecache.checkcache`` keeps it.
    """
    linecache.cache[filename] = (len(text), None, _source_lines(text), filename)


def _source_lines(text: str) -> list[str]:
    """``text`` split into lines as Python numbers them (``\\n``, ``\\r\\n``, ``\\r``), each ending in ``\\n``."""
    lines = io.StringIO(text, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def _is_future_import(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" and stmt.level == 0


class _AnnotationDropper(ast.NodeTransformer):
    """Rewrites the cell scope's ``x: T = v`` to ``x = v`` and ``x: T`` to ``pass``; nested scopes are kept."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        plain: ast.stmt = ast.Pass() if node.value is None else ast.Assign(targets=[node.target], value=node.value)
        return ast.copy_location(plain, node)

    def visit_FunctionDef(self, node: ast.stmt) -> ast.stmt:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def _cell_scope(stmts: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of ``stmts`` that runs in the cell function's own scope, in source order.

    Bodies of nested ``def``s, lambdas and classes are skipped, but not their
    parts evaluated in the cell's scope (see :func:`_children`). Comprehensions
    are included, a walrus in them binding in the cell's scope, except their
    ``for`` targets, which are the comprehension's own.
    """
    stack = list(stmts)[::-1]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


def _children(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        params = [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]
        annotations = [p.annotation for p in params if p is not None and p.annotation is not None]
        parts: list[Optional[ast.AST]] = [*a.defaults, *a.kw_defaults]
        if not isinstance(node, ast.Lambda):
            parts = [*node.decorator_list, *parts, *annotations, node.returns]
        return [p for p in parts if p is not None]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, ast.comprehension):
        return [node.iter, *node.ifs]
    return list(ast.iter_child_nodes(node))


def _problem(node: ast.AST) -> Optional[str]:
    """Why ``node``, found in the cell's own scope, cannot be in a function body (None when it can)."""
    if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
        return _IMPORT_STAR
    return _PROBLEMS.get(type(node))


def _bound_names(scope: Iterable[ast.AST], stmts: Iterable[ast.stmt] = ()) -> set[str]:
    """Names that the nodes of the cell's own scope bind or delete, and those declared ``global``
    anywhere in ``stmts`` (a nested ``def`` may assign them)."""
    names: set[str] = {n for s in stmts for node in ast.walk(s) if isinstance(node, ast.Global) for n in node.names}
    for node in scope:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):  # `import *` was refused before
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _error(
    message: str,
    filename: str,
    lines: list[str],
    lineno: int,
    offset: Optional[int] = None,
    end_lineno: Optional[int] = None,
    end_offset: Optional[int] = None,
) -> CellError:
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else None
    return CellError(f"line {lineno}: {message}", (filename, lineno, offset, text, end_lineno, end_offset))


def _from_syntax_error(e: SyntaxError, filename: str, lines: list[str]) -> CellError:
    """A ``SyntaxError`` raised on the cell's code (whose line numbers are the editor's) as a :class:`CellError`."""
    return _error(e.msg, filename, lines, e.lineno or 1, e.offset, e.end_lineno, e.end_offset)


def _node_error(message: str, node: ast.stmt | ast.expr, filename: str, lines: list[str]) -> CellError:
    """A :class:`CellError` pointing at ``node`` (its columns turned from UTF-8 bytes into 1-based characters)."""

    def column(lineno: int, byte_offset: int) -> int:
        line = lines[lineno - 1].encode() if 0 < lineno <= len(lines) else b""
        return len(line[:byte_offset].decode(errors="replace")) + 1

    end_lineno, end_col = node.end_lineno, node.end_col_offset
    return _error(
        message,
        filename,
        lines,
        node.lineno,
        column(node.lineno, node.col_offset),
        end_lineno,
        None if end_lineno is None or end_col is None else column(end_lineno, end_col),
    )


_NAMESPACE_PROBES = frozenset({"globals", "locals", "vars", "dir"})


def _stored_first(stmts: list[ast.stmt]) -> tuple[set[str], bool]:
    """The names whose first use, in the order the cell evaluates them, is a store; and whether
    the cell looks at its namespace (``globals()``, ``locals()``, ``vars()``, ``dir()``, anywhere).

    A stand-in (:class:`Unassigned`) for a name stored first is replaced before anything can read
    it, so the cell behaves as a plain cell. A name the cell may read first (``try: n`` /
    ``except NameError: n = 0``, ``n += 1``, a nested ``def`` reading it) is not seeded: the
    plain cell's ``NameError`` must come. When the cell looks at its namespace nothing is
    seeded: a stand-in would be seen.
    """
    first: dict[str, bool] = {}  # name -> its first use was a store
    probes = False
    for name, store in _uses_in_order(stmts):
        probes = probes or (name in _NAMESPACE_PROBES and not store)
        first.setdefault(name, store)
    return {name for name, store in first.items() if store}, probes


def _uses_in_order(nodes: Iterable[ast.AST]) -> Iterator[tuple[str, bool]]:
    """``(name, is_store)`` for every name the nodes use, in evaluation order where it differs from
    the text's (an assignment's value before its targets; ``x += 1`` reads ``x``; a loop's iterable
    before its target). Bodies of nested ``def``s, lambdas and classes count where they are defined
    (they may run at once), and their own local names count too (conservative: never seeds too much)."""
    for node in nodes:
        if isinstance(node, ast.Name):
            yield node.id, isinstance(node.ctx, ast.Store)
        elif isinstance(node, ast.Assign):
            yield from _uses_in_order([node.value, *node.targets])
        elif isinstance(node, ast.AugAssign):
            yield from _uses_in_order([node.value])
            if isinstance(node.target, ast.Name):
                yield node.target.id, False  # read, then written
            else:
                yield from _uses_in_order([node.target])
        elif isinstance(node, ast.NamedExpr):
            yield from _uses_in_order([node.value, node.target])
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            yield from _uses_in_order([node.iter, node.target, *node.body, *node.orelse])
        elif isinstance(node, ast.comprehension):
            yield from _uses_in_order([node.iter, node.target, *node.ifs])
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            yield from _uses_in_order([*node.generators, node.elt])
        elif isinstance(node, ast.DictComp):
            yield from _uses_in_order([*node.generators, node.key, node.value])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _uses_in_order([n for n in ast.iter_child_nodes(node)])
            yield node.name, True
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name.split(".")[0]), True
        elif isinstance(node, ast.ExceptHandler):
            yield from _uses_in_order([node.type] if node.type is not None else [])
            if node.name:
                yield node.name, True
            yield from _uses_in_order(node.body)
        else:
            yield from _uses_in_order(ast.iter_child_nodes(node))


class _ModuleScopeCalls(ast.NodeTransformer):
    """In the cell's own scope, ``locals()`` and ``vars()`` mean the namespace, as at a plain
    cell's top level: they become ``globals()`` (unless the cell binds those names itself).
    Nested ``def``s, lambdas and classes keep their own ``locals()``."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if (not isinstance(f, ast.Name) or f.id not in ("locals", "vars", "dir") or node.args or node.keywords
                or {f.id, "globals", "sorted"} & self.bound):
            return node
        namespace = ast.Call(func=ast.Name(id="globals", ctx=ast.Load()), args=[], keywords=[])
        if f.id == "dir":  # a module's dir() is its sorted names
            namespace = ast.Call(func=ast.Name(id="sorted", ctx=ast.Load()), args=[namespace], keywords=[])
        return ast.copy_location(namespace, node)

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_ListComp(self, node: ast.AST) -> ast.AST:
        # only the first iterable is evaluated in the cell's scope; the rest is the comprehension's
        first = node.generators[0]  # type: ignore[attr-defined]
        first.iter = self.visit(first.iter)
        return node

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp


class Unassigned:
    """Stands in for a name the cell assigns but the namespace does not have yet.

    torch 2.13's Dynamo cannot read back a global that the traced frame itself
    created (it looks the name up in the frame's globals first and gives up on
    the whole frame); with a placeholder present the name is found and the
    stored value is used. Any use of the placeholder itself means the cell read
    the name before assigning it, and raises the NameError Python would.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise NameError(f"name {object.__getattribute__(self, '_name')!r} is not defined")

    __getattr__ = __call__ = __bool__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __matmul__ = _fail

    def __repr__(self) -> str:
        return f"<not yet assigned: {object.__getattribute__(self, '_name')}>"


@contextlib.contextmanager
def placeholders(cf: CellFunction) -> Iterator[None]:
    """Seed :class:`Unassigned` for the cell's missing names that it stores before reading
    (:attr:`CellFunction.seedable`); remove those still unassigned after."""
    ns = cf.fn.__globals__
    seeded = {name: Unassigned(name) for name in cf.seedable if name not in ns}
    ns.update(seeded)
    try:
        yield
    finally:
        for name, holder in seeded.items():
            if ns.get(name) is holder:
                del ns[name]
