"""The user's call that compiled a frame, and the guarded values under the user's own names.

Torch names a guarded value from inside the frame it compiled: ``L['args'][0]`` and
``fn._modules['1']`` inside its own wrapper ``inner`` (``torch.compile(model)`` on torch
2.13), ``L['self']`` inside a compiled ``forward``, ``___stack0`` inside the function that
resumes after a graph break. The user wrote ``out = cm(batch)``. :func:`name_guarded_values`
finds that call (the innermost frame of the compile's stack that is not torch's) and maps
each :class:`~ipycompile.report.FailedGuard` of a recompile onto it:

* an argument of the compiled call -> the expression the user's call passes
  (``args[0]`` of ``cm(batch)`` -> ``batch``; ``kwargs['mask']`` -> what ``mask=`` passes;
  a parameter ``x`` of ``def f(x)`` called as ``f(batch)`` -> ``batch``);
* the compiled module (``fn`` of torch's wrapper, ``self`` of a compiled ``forward``) -> the
  module the user's call names, through ``cm = torch.compile(model)`` to ``model``
  (``fn[1].training`` -> ``model[1].training``);
* a value torch carries across a graph break (``___stack0``, ``__resume_frame_values[3]``,
  a local the resumed function made) -> origin ``"carried"``, no name: no line of the
  user's can mark it;
* a call a library makes (a decoder layer inside ``generate()``) -> origin ``"library"``, no
  name; ``Recompile.caller`` is the library's line, ``Recompile.call_site`` the user's line
  that led there;
* a function of the user's that torch compiled as a frame of its own because code of another compiled
  function that ran outside the graph (after a break) calls it -> origin ``"carried"``, no name: its
  arguments are made inside that function, where no line before the user's call can mark them;
* a library's own function that torch compiled as a frame of its own, with no call of the
  user's seen (transformers' ``ForCausalLMLoss`` after a break in the model's code,
  ``_update_model_kwargs_for_generation`` inside a compiled ``generate()``) -> origin
  ``"library"``, no name: its parameters (``labels``, ``model_kwargs``) are the library's names,
  even where the user's code has a variable of the same name.

Reads source while the report is built (:class:`.source_files.SourceFiles`: the copies a log
carries, else ``linecache``, where notebook cells are); the names are stored on the report, so a
saved report answers the same. Never raises.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ..report.model import Compile, FailedGuard, UserFrame
from ..report.owners import Owner
from .parse.guards import CARRIED_ROOT, path_root, path_steps
from .parse.recompiles import resume_origin
from .source_files import SourceFiles

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["name_guarded_values", "user_call"]

#: torch's wrappers' names for what they call and what it is called with (``inner(*args, **kwargs)``
#: of ``_dynamo/external_utils.py`` calls ``fn``)
_WRAPPED = ("fn", "self", "mod", "module", "func", "f")
#: callees that are never the compiled object (``cm(torch.randn(2, 4))``: the call is ``cm``'s)
_NOT_COMPILED = ("torch", "np", "numpy", "F", "math", "nn", "print", "len", "range", "list", "tuple", "dict")


_TREES: dict[str, Optional[ast.Module]] = {}  # filled and emptied by one name_guarded_values call
_SOURCE = SourceFiles()  # the files that call reads (set by it)
#: every node under a node (``ast.walk``'s order), walked once per name_guarded_values call: a frame's
#: questions walk the same module's tree many times (a transformers model's file, for each of its frames).
#: Keyed by ``id``; the node is kept beside its list, so that no other node takes its id meanwhile.
_NODES: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
_MODULE_CALLS: set[int] = set()  # the compiles (by id) entered through nn.Module.__call__, for the same call


def _tree(filename: str) -> Optional[ast.Module]:
    if filename in _TREES:
        return _TREES[filename]
    lines = _SOURCE.lines(filename)
    tree = None
    if lines:
        from .kept_source import parseable

        try:
            tree = ast.parse(parseable([ln.rstrip("\n") for ln in lines]))
        except (SyntaxError, ValueError):
            tree = None
    _TREES[filename] = tree
    return tree


def _walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, kept until the name_guarded_values call ends."""
    hit = _NODES.get(id(node))
    if hit is None or hit[0] is not node:
        hit = _NODES[id(node)] = (node, list(ast.walk(node)))
    return hit[1]


def _line_tree(line: str) -> Optional[ast.Module]:
    try:
        return ast.parse(line.strip())
    except SyntaxError:
        return None


def user_call(report: "CompileReport", c: Compile) -> tuple[UserFrame, UserFrame]:
    """``(call_site, caller)`` of a compile: the frame that called into torch (its ``caller``,
    skipping torch's and ipycompile's frames) and the user's innermost line on the stack
    (``call_site``, the same frame when the user's code made the call). Known only where the call
    went through torch's Python wrappers (a compiled module's ``__call__``, ``_wrapped_call_impl``):
    for a compiled function called directly, torch 2.13's ``dynamo_start`` stack skips the calling
    frame, and both are empty."""
    stack = list(c.stack)
    caller, site = UserFrame(), UserFrame()
    through_torch = False
    for f in reversed(stack[:-1]):
        if f.function in ("_call_impl", "_wrapped_call_impl"):
            _MODULE_CALLS.add(id(c))
        who = report.owner(f.filename)
        if who in (Owner.TORCH, Owner.IPYCOMPILE):
            through_torch = through_torch or who is Owner.TORCH
            continue
        if not through_torch:
            # a compiled function entered straight from its caller: torch's stack leaves out the calling
            # frame (this one is its caller's caller), so no call on this line is known to be the one
            return UserFrame(), UserFrame()
        if not caller.filename:
            caller = f
        if who is Owner.USER:
            site = f
            break
    return site, caller


def _calls_on(tree: ast.Module, lineno: int) -> list[ast.Call]:
    return [n for n in _walk(tree) if isinstance(n, ast.Call) and n.lineno <= lineno <= (n.end_lineno or n.lineno)]


def _root_name(expr: ast.AST) -> str:
    while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
        expr = expr.value if not isinstance(expr, ast.Call) else expr.func
    return expr.id if isinstance(expr, ast.Name) else ""


def _is_torch_compile(call: ast.AST) -> bool:
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "compile" and _root_name(f) == "torch") or (
        isinstance(f, ast.Name) and f.id == "compile")


def _compiled_names(tree: ast.Module, lineno: Optional[int] = None) -> dict[str, str]:
    """``{"cm": "model"}`` for ``cm = torch.compile(model, ...)``: in the innermost function around
    ``lineno`` (the last such assignment before it), else at the top level of the source."""
    defs = [n for n in _walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and lineno is not None and n.lineno <= lineno <= (n.end_lineno or n.lineno)]
    scopes = sorted(defs, key=lambda d: d.lineno) + [tree]
    out: dict[str, str] = {}
    for scope in scopes:  # outermost function first; the innermost's assignments win, then the top level's fill in
        found: dict[str, tuple[int, str]] = {}
        body = _walk(scope) if scope is not tree else iter(tree.body)
        for n in body:
            if isinstance(n, ast.Assign) and _is_torch_compile(n.value) and n.value.args:
                if scope is not tree and lineno is not None and n.lineno > lineno:
                    continue
                for t in n.targets:
                    if isinstance(t, (ast.Name, ast.Attribute)):
                        key = ast.unparse(t)
                        if key not in found or n.lineno > found[key][0]:
                            found[key] = (n.lineno, ast.unparse(n.value.args[0]))
        for key, (_, value) in found.items():
            if scope is tree:
                out.setdefault(key, value)
            else:
                out[key] = value
    return out


def _in_scope(tree: ast.Module, lineno: int, function: str) -> list[ast.AST]:
    """The code of ``function`` (the frame's name: a def's, ``<lambda>``, ``<module>``) around ``lineno``:
    the nodes whose calls can be the frame's."""
    if function == "<lambda>":
        return [n.body for n in _walk(tree) if isinstance(n, ast.Lambda) and n.lineno <= lineno <= (n.end_lineno or n.lineno)]
    if function and not function.startswith("<"):
        defs = [n for n in _walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function
                and n.lineno <= lineno <= (n.end_lineno or n.lineno)]
        if defs:
            return defs[-1:]
    return [tree]


def _the_calls(tree: ast.Module, lineno: int, function: str, compiled: dict[str, str], fits) -> list[ast.Call]:
    """The calls on ``lineno`` that can have entered the compiled code, in ``function``'s code: those of a
    name compiled there (``cm = torch.compile(...)``), else the outermost calls not of torch's or a builtin
    that ``fits`` the compiled function's parameters; empty when no call on the line does (torch's stack
    can leave out the frame that made the call). Several where the line holds several (two lambdas)."""
    scopes = _in_scope(tree, lineno, function)
    nodes = {id(n) for sc in scopes for n in _walk(sc)}
    calls = [c for c in _calls_on(tree, lineno) if id(c) in nodes and _root_name(c.func) not in _NOT_COMPILED
             and not _is_torch_compile(c) and fits(c)]
    named = [c for c in calls if ast.unparse(c.func) in compiled]
    if named:
        return named
    # a call of a name or attribute (`m(ids)`), not of a call's result (`m(ids).logits.float()`)
    plain = [c for c in calls if not any(isinstance(x, ast.Call) for x in ast.walk(c.func))] or calls
    inner = {id(x) for c in plain for x in ast.walk(c) if x is not c}
    return [c for c in plain if id(c) not in inner] or plain[:1]


def _def_of(tree: ast.Module, name: str, lineno: Optional[int]):
    """The ``def name`` at ``lineno`` (its ``def`` line or its first decorator's), else one around it;
    the first ``lambda`` on ``lineno`` for ``<lambda>``."""
    if name == "<lambda>":
        return next((n for n in _walk(tree) if isinstance(n, ast.Lambda) and n.lineno == lineno), None)
    defs = [n for n in _walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    for d in defs:
        firsts = {d.lineno, *(x.lineno for x in d.decorator_list)}
        if lineno in firsts:
            return d
    for d in defs:
        if lineno is not None and d.lineno <= lineno <= (d.end_lineno or d.lineno):
            return d
    return defs[0] if len(defs) == 1 else None


def _params(d: ast.FunctionDef) -> list[str]:
    a = d.args
    return [p.arg for p in (*a.posonlyargs, *a.args)]


def _loop_over(tree: Optional[ast.Module], lineno: Optional[int]) -> str:
    """The container a ``for`` loops over when the call on ``lineno`` calls the loop's own variable
    (``for layer in self.layers: x = layer(x)`` -> ``self.layers``); "" otherwise."""
    if tree is None or lineno is None:
        return ""
    for loop in _walk(tree):
        if not (isinstance(loop, ast.For) and loop.lineno < lineno <= (loop.end_lineno or loop.lineno)):
            continue
        it = loop.iter
        targets = [loop.target]
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args
                and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2):
            it, targets = it.args[0], [loop.target.elts[1]]  # `for i, layer in enumerate(self.layers)`
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        for c in _calls_on(loop, lineno):
            if isinstance(c.func, ast.Name) and c.func.id in names:
                return ast.unparse(it)
    return ""


def _render(base: str, steps: list) -> str:
    out = base
    for kind, v in steps:
        out += f".{v}" if kind == "attr" else f"[{v}]" if kind == "index" else f"[{v!r}]"
    return out


class _Frame:
    """What the compiled frame's names mean at the user's call."""

    def _frame_place(self) -> str:
        """Where the compiled frame is, in words: its first line, or, for the code after a graph break
        that torch compiled as a frame of its own, the line of that break."""
        if self.resumed:
            return f"the code after its graph break at {_place(UserFrame(self.c.filename, self.resumed[1]))}"
        return _place(UserFrame(self.c.filename, self.c.first_line))

    def __init__(self, report: "CompileReport", c: Compile) -> None:
        self.report, self.c = report, c
        self.site, self.caller = user_call(report, c)
        self.library_call = bool(self.caller.filename) and self.caller is not self.site and (
            report.owner(self.caller.filename) is not Owner.USER)
        self.call: Optional[ast.Call] = None
        self.calls: list[ast.Call] = []
        self.led_from = ""  # the call on the user's line that led to this frame without calling it (`m` of `m(x)`)
        self.compiled: dict[str, str] = {}
        # the compiled function's parameters, and whether it is a method (its first one the module)
        self.params: list[str] = []
        self.required, self.varargs = 0, True
        self.vararg, self.kwarg = "", ""
        self.method = False
        self.resumed = resume_origin(c.function)
        self.assigned: set[str] = set()
        self.wrapper = report.owner(c.filename) is Owner.TORCH
        # a library's own function (not torch's wrapper) compiled as a frame of its own: its names are the library's
        self.library_frame = bool(c.filename) and report.owner(c.filename) is Owner.LIBRARY
        name, line = (self.resumed if self.resumed else (c.function, c.first_line))
        self.source_known = False
        if c.filename and not self.wrapper:
            tree = _tree(c.filename)
            self.source_known = tree is not None
            d = _def_of(tree, name, line) if tree is not None else None
            if d is not None:
                self.params = _params(d)
                self.required = len(self.params) - len(d.args.defaults)
                self.varargs = d.args.vararg is not None or d.args.kwarg is not None
                self.vararg = d.args.vararg.arg if d.args.vararg is not None else ""
                self.kwarg = d.args.kwarg.arg if d.args.kwarg is not None else ""
                self.method = bool(self.params) and self.params[0] in ("self", "cls") or any(
                    isinstance(n, ast.ClassDef) and d in n.body for n in _walk(tree))
                if self.resumed:  # a local assigned before the break is the function's own, not the argument
                    self.assigned = {t.id for n in ast.walk(d) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                                     and n.lineno <= self.resumed[1]
                                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                                     for t in ast.walk(t) if isinstance(t, ast.Name)}
        # the line that made the call: the user's, or the library's (read for words only, never for a name)
        calling = self.caller if self.library_call else self.site
        if calling.filename and calling.lineno is not None:
            tree, line = _tree(calling.filename), calling.lineno
            if tree is None and calling.source_line.strip():  # the file is gone: the line torch recorded
                tree, line = _line_tree(calling.source_line), 1
            if tree is not None:
                self.compiled = _compiled_names(tree, line)
                self.calls = _the_calls(tree, line, calling.function, self.compiled, self._fits)
                self.call = self.calls[0] if self.calls else None
                if not self.calls and not self.library_call:
                    # the line calls something else (a module, `m(x, edge_index)`) that led to this function: its
                    # arguments are what that code passes on, never the user's call's by position
                    other = _the_calls(tree, line, calling.function, self.compiled, lambda call: True)
                    self.led_from = ast.unparse(other[0].func) if len(other) == 1 else ""
        self.library_words = ""  # a library's call: what its line passes, for describe()
        self.where_function = ""  # the function torch's guard names as where it read the value (`step`), for _module()
        # no call of the user's seen: the function torch compiled before this one whose own code calls it (torch
        # compiled it as a frame of its own because that code ran outside the graph, after a break): its
        # arguments are made inside the compiled function, where no line before the user's call can mark them
        self.called_by = "" if self.calls or self.site.filename or self.wrapper or self.resumed else self._compiled_caller()
        if not self.called_by and self.led_from and not self.wrapper and not self.resumed:
            self.called_by = self.led_from

    def _compiled_caller(self) -> str:
        """The name of a function of the same file that torch compiled earlier in this report (a lower frame
        id) and whose body calls this frame's function by name; "" if none."""
        c = self.c
        if not c.filename or not c.function.isidentifier():
            return ""
        tree = _tree(c.filename)
        if tree is None:
            return ""
        for other in self.report.compiles:
            if other.filename != c.filename or other.compile_id.frame_id >= c.compile_id.frame_id \
                    or other.function == c.function or not other.function.isidentifier():
                continue
            d = _def_of(tree, other.function, other.first_line)
            if d is not None and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == c.function
                                     for n in ast.walk(d)):
                return other.function
        return ""

    def _fits(self, call: ast.Call) -> bool:
        """``call`` can be the call of the compiled function: it passes as many arguments as the
        function takes (any number to torch's ``inner(*args, **kwargs)``, or where unknown)."""
        if self.wrapper or not self.params or self.resumed:
            return True
        if not self._calls_this(call):
            return False
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return True
        skip = 1 if self.method else 0
        given = len(call.args) + len(call.keywords)
        return given >= self.required - skip and (self.varargs or len(call.args) <= len(self.params) - skip)

    def _calls_this(self, call: ast.Call) -> bool:
        """``call`` can call the compiled function itself, not a function it leads to: a module's call
        (``m(x, edge_index)``) enters its ``forward``, never the library's ``remove_self_loops(edge_index)``
        that torch compiled as a frame of its own once ``forward`` broke; a call by another name calls it
        only where the name is a compile of something (``cf = torch.compile(f)``) or a parameter or other
        variable (unknown: accepted)."""
        name = self.c.function
        if not name.isidentifier():  # `<lambda>` and the like: called by whatever name holds it
            return True
        func = call.func
        text = ast.unparse(func)
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if last == name or text in self.compiled:
            return True
        if name in ("forward", "__call__") or self.varargs:
            # a module's call, `model(x)`, enters its forward, or the decorator around it that passes its
            # arguments on (transformers' `def wrapper(self, *args, **kwargs)`)
            return True
        # another function of the compiled frame's own file or a library's, by a name that is not its own: a call
        # of a module (through nn.Module.__call__) or of a function that only leads to this frame
        return not (id(self.c) in _MODULE_CALLS or self.library_frame)

    # -- the pieces of the user's call (one answer where the line holds several candidate calls that agree)
    def _agreed(self, part) -> Optional[str]:
        values = {part(c) for c in self.calls}
        return values.pop() if len(values) == 1 else None

    def callee(self, first_step_is_index: bool) -> str:
        text = self._agreed(lambda c: ast.unparse(c.func))
        if text is None:
            return ""
        if text in self.compiled:  # cm = torch.compile(model): the module is `model`
            return self.compiled[text]
        if text.endswith(".forward"):
            return text[: -len(".forward")]  # model.forward(x): the module is `model`
        # a compiled module indexes through the module it wraps (`cm[1]` is no item of an OptimizedModule)
        return f"{text}._orig_mod" if first_step_is_index and self.wrapper else text

    def positional(self, i: int) -> Optional[str]:
        def one(call: ast.Call) -> Optional[str]:
            args = call.args
            if any(isinstance(a, ast.Starred) for a in args[: i + 1]) or i >= len(args):
                return None
            return ast.unparse(args[i])

        return self._agreed(one) if self.calls else None

    def keyword(self, k: str) -> Optional[str]:
        return self._agreed(lambda c: next((ast.unparse(kw.value) for kw in c.keywords if kw.arg == k), None)) if self.calls else None

    # -- one guarded value
    def name(self, g: FailedGuard) -> tuple[str, str]:
        """``(name, origin)`` of ``g``'s value."""
        if g.origin in ("closure", "global", "state"):
            return g.name, g.origin
        root, steps = path_root(g.path), path_steps(g.path)
        if CARRIED_ROOT.match(g.source) or CARRIED_ROOT.match(g.path) or root.startswith("___"):
            return "", "carried"
        if steps is None or any(kind == "attr" and str(v).startswith("__") for kind, v in steps):
            return "", ""
        if self.resumed and (root not in self.params or root in self.assigned):
            return "", "carried"  # a local of the function torch resumes after a break, made inside it
        vararg, kwarg = ("args", "kwargs") if self.wrapper else (self.vararg, self.kwarg)
        skip = 0 if self.wrapper else len(self.params) - (1 if self.method else 0)
        if vararg and root == vararg and steps and steps[0][0] == "index":
            i = int(steps[0][1])
            if not self.wrapper and not self.params and id(self.c) in _MODULE_CALLS:
                # a module's forward under a library's `def wrapped(*args, **kwargs)` decorator: args[0] is the module
                if i == 0:
                    return self._module(steps[1:])
                i -= 1
            return self._argument(self.positional(skip + i), steps[1:])
        if kwarg and root == kwarg and steps and steps[0][0] == "key":
            return self._argument(self.keyword(str(steps[0][1])), steps[1:])
        if kwarg and root == kwarg and not steps:  # the keyword arguments as a whole (`not kwargs`)
            if g.kind == "length":
                g.kind = "keywords"
            return "", "library" if self.library_call else "argument"
        if self.wrapper:
            return self._module(steps) if root in _WRAPPED else ("", "")
        if not self.source_known and not self.resumed and self.report.owner(self.c.filename) is Owner.USER:
            # the user's function, whose source is not at hand: its own parameter's name
            return _render(root, steps), "argument"
        if root in self.params:
            i = self.params.index(root)
            if self.method and i == 0:
                return self._module(steps)
            pos = i - 1 if self.method else i
            value = self.positional(pos)
            value = value if value is not None else self.keyword(root)
            if value is None and self.call is None and self.called_by:
                return "", "carried"  # made inside the compiled function that calls this one
            if value is None and self.call is None:  # no call to read: the function's own parameter
                if self.library_frame:  # a library's function torch compiled on its own (the loss transformers'
                    self.library_words = _render(root, steps)  # model calls): its parameter is the library's name
                    return "", "library"
                return _render(root, steps), "argument"
            return self._argument(value, steps)
        return "", ""

    def _argument(self, value: Optional[str], steps: list) -> tuple[str, str]:
        if self.library_call:
            self.library_words = _render(value, steps) if value is not None else ""
            return "", "library"
        if value is None and self.call is None and self.library_frame:  # a library's function, no call of the user's seen
            return "", "library"
        return (_render(value, steps) if value is not None else ""), "argument"

    def _module(self, steps: list) -> tuple[str, str]:
        base = self.callee(bool(steps) and steps[0][0] == "index")
        fns = [f for f in (self.c.function, self.where_function) if f.isidentifier() and f != "forward"]
        if fn := next((f for f in fns if base.endswith(f".{f}")), ""):
            # a bound method compiled or called (`torch.compile(opt.step)`, `opt.step()`): torch's `self` is the
            # object the method is bound to (`opt`), never the method (`opt.step.param_groups` names nothing)
            base = base[: -len(f".{fn}")]
        if self.library_call:
            self.library_words = _render(base, steps) if base else ""
            return "", "library"
        return (_render(base, steps) if base else ""), "module"


    def describe(self, g: FailedGuard) -> str:
        """Words for a guarded value no name of the user's code holds ("" where nothing better than
        torch's path is known)."""
        root, steps = path_root(g.path), path_steps(g.path) or []
        ordinal = ("first", "second", "third", "fourth", "fifth")
        callee = self._agreed(lambda c: ast.unparse(c.func)) if self.calls else None
        call = f"`{callee}(...)`" if callee else "the compiled call"
        at = f" at {_place(self.site)}" if self.site.filename else ""
        if g.origin == "carried":
            # the user's own name where torch's path is one (a local the code before the break made, `img_y`; a
            # variable the function closes over, `y_holder['tensor']`); none for torch's stack slots (`___stack0`)
            # or frame values (`__resume_frame_values[3]`), whose place in the user's line no record gives
            text = _render(root, steps) if root and not root.startswith("_") and root.isidentifier() else ""
            local = f"`{text}`, " if text and "__" not in text else ""
            if self.called_by and not self.resumed:
                return f"{local}which the compiled `{self.called_by}` makes and passes to `{self.c.function}`"
            if self.resumed:
                fn, line = self.resumed
                code = _SOURCE.line(self.c.filename, line).strip() if self.c.filename else ""
                made = f" (`{code}`)" if code else ""
                return (f"{local}a value torch carries across the graph break at line {line} of `{fn}`{made} into "
                        "the code after it")
            return f"{local}a value torch carries across a graph break into the code after it"
        if g.origin == "module" and root == "self" and not g.name:
            # the object whose method torch compiled as a frame of its own (an optimizer's `step` after a graph
            # break), with no call of the user's seen: its own code reads the value from `self`, no name of the user's
            whose = "torch's" if self.wrapper else "the library's" if self.library_frame else "the"
            fn = _named(self.where_function or self.c.function)
            place = self._frame_place()
            return f"a value that {whose} method `{fn}` ({place}) reads from the object it is called on"
        if g.origin == "library" and not self.caller.filename:  # no call seen: the library's function compiled on its own
            place = self._frame_place()
            if self.vararg and self.kwarg:  # `def wrapped(*args, **kwargs)`: a decorator's, its name means nothing
                return f"a value library code passes on through one of its decorators ({place}), which torch compiled on its own"
            fn = f"`{_named(self.c.function)}` ({place})"
            if self.library_words and path_root(self.library_words) not in ("args", "kwargs"):
                return f"`{self.library_words}`, an argument of the library's function {fn}, which torch compiled on its own"
            return f"an argument of the library's function {fn}, which torch compiled on its own"
        if g.origin == "library":
            who = _place(self.caller)
            if self.library_words:
                return f"`{self.library_words}`, which library code passes to the compiled code ({who})"
            return f"a value library code passes to the compiled code ({who})"
        vararg, kwarg = ("args", "kwargs") if self.wrapper else (self.vararg, self.kwarg)
        if g.origin == "argument" and vararg and root == vararg and steps and steps[0][0] == "index":
            i = int(steps[0][1])
            nth = ordinal[i] if i < len(ordinal) else f"#{i + 1}"
            return f"the {nth} argument of {call}{at}"
        if g.origin == "argument" and kwarg and root == kwarg and not steps:
            return f"the keyword arguments of {call}{at}"
        if g.origin == "argument" and kwarg and root == kwarg and steps and steps[0][0] == "key":
            return f"the `{steps[0][1]}=` argument of {call}{at}"
        if g.origin == "argument" and root in self.params:
            return f"the argument passed as `{root}` to {call}{at}"
        return ""


def _named(function: str) -> str:
    """A frame's function as the source names it: ``scatter`` for torch's resume function
    ``torch_dynamo_resume_in_scatter_at_48`` (the code after a graph break in ``scatter``)."""
    origin = resume_origin(function)
    return origin[0] if origin else function


def _place(f: UserFrame) -> str:
    name = f.filename.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{name}:{f.lineno}" if f.lineno is not None else name


def name_guarded_values(report: "CompileReport", files: Optional[SourceFiles] = None) -> None:
    """Fill ``Recompile.call_site`` / ``caller``, each failed guard's ``name`` and ``origin``, and
    the ``name`` of the tensor guards of the compiles of a recompiling frame (in place, while
    the report is built), reading source through ``files`` (a fresh :class:`SourceFiles`: this
    machine's files). Never raises."""
    global _SOURCE
    _TREES.clear()
    _NODES.clear()
    _MODULE_CALLS.clear()
    _SOURCE = files if files is not None else SourceFiles()
    try:
        frames: dict = {}

        def frame_of(cid):
            if cid not in frames:
                c = report.compile(cid)
                if c is not None and not c.stack:  # the recompile limit's compile never started: an earlier one's
                    c = next((x for x in reversed(report.compiles) if x.stack and x.compile_id.frame_id == cid.frame_id
                              and x.compile_id.compiled_autograd_id == cid.compiled_autograd_id), c)
                try:
                    frames[cid] = _Frame(report, c) if c is not None and c.stack else None
                except Exception:  # noqa: BLE001 - names are a nicety; never cost the report
                    frames[cid] = None
            return frames[cid]

        recompiling = {(rc.compile_id.frame_id, rc.compile_id.compiled_autograd_id) for rc in report.recompiles}
        for rc in report.recompiles:
            frame = frame_of(rc.compile_id)
            if frame is None:
                continue
            rc.call_site, rc.caller = frame.site, frame.caller
            if frame.wrapper and not frame.library_call:
                rc.target = frame.callee(False)
            elif frame.resumed:  # torch's function for the code after a break: the user's function it resumes
                rc.target = frame.resumed[0]
            if frame.caller.filename:
                rc.loop_over = _loop_over(_tree(frame.caller.filename), frame.caller.lineno)
            for g in rc.guards:
                try:
                    frame.library_words = ""
                    frame.where_function = g.where.rsplit(" in ", 1)[-1] if " in " in g.where else ""
                    g.name, g.origin = frame.name(g)
                    g.described = "" if g.name else frame.describe(g)
                    if g.origin == "carried" and frame.resumed and frame.c.filename:
                        g.carried_from = _SOURCE.line(frame.c.filename, frame.resumed[1]).strip()
                except Exception:  # noqa: BLE001
                    continue
        for gs in report.guards:
            if (gs.compile_id.frame_id, gs.compile_id.compiled_autograd_id) not in recompiling:
                continue
            frame = frame_of(gs.compile_id)
            if frame is None:
                continue
            for e in gs.entries:
                if e.type == "TENSOR_MATCH" and e.path:
                    try:
                        e.name, _ = frame.name(FailedGuard("size", source=e.path, path=e.path))
                    except Exception:  # noqa: BLE001
                        continue
    finally:
        _TREES.clear()
        _NODES.clear()
        _SOURCE = SourceFiles()
