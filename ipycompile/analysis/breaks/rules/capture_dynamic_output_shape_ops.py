"""`nonzero` and other ops whose output shape depends on the data:
`torch._dynamo.config.capture_dynamic_output_shape_ops = True`."""

from __future__ import annotations

import ast
from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion
from ..base import Context, Facts, Rule, explained, path, reset_note, statement_at


#: The ops torch 2.13 keeps in the graph with this setting (their meta kernels give a symbolic
#: size); another op (``linalg_lstsq``) only moves the break to its missing meta kernel.
SUPPORTED = {"nonzero", "argwhere", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
             "unique_consecutive", "repeat_interleave", "index", "nonzero_static", "bincount"}


#: Ops for which torch's hint (this setting) is known not to remove the break: it only moves it to
#: the op's missing meta kernel (GB0037).
MOVES_ONLY = {"linalg_lstsq"}
#: the fix: torch's hint
SETTING = Fix(settings=[Setting("dynamo", "capture_dynamic_output_shape_ops", "True")])


def applies(f: Facts) -> bool:
    return (f.code == "GB0036" or f.kind.startswith("Dynamic shape operator")) and "(no meta kernel)" not in f.kind


def _into_unchecked_call(f: Facts, ctx: Context) -> bool:
    """The line hands a value to a call whose code the doctor cannot see into (a module,
    ``self.norm(h[mask])``; a function of the user's or a library's), where a data-dependent size
    may break again (pytorch/pytorch#194166: BatchNorm on ``h[mask]`` breaks inside
    ``F.batch_norm`` with the setting). Torch's own functions and methods of tensors are not such calls."""
    _, stmt = statement_at(f.stop, ctx)
    if stmt is None:
        return False
    for n in ast.walk(stmt):
        if not isinstance(n, ast.Call) or not (n.args or n.keywords):
            continue
        fn = n.func
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "self":
            return True  # a submodule or a method of the user's class
        if isinstance(fn, ast.Name) and fn.id not in _BUILTINS:
            return True  # a function of the user's (or one imported by name)
    return False


_SIZE_METHODS = {"size", "numel", "nelement", "dim", "item", "any", "all", "tolist"}


def _branch_on_size(f: Facts, ctx: Context) -> tuple[int, str, str]:
    """``(line, code, how)`` of the first use, after the break's line in its function, that needs a Python
    value of what the line makes, ``how`` saying which:

    * ``"branch"``: a condition on its size (``x = x[mask]`` then ``if not x.shape[0]:``; ``idx =
      torch.nonzero(m)`` then ``if idx.numel() == 0:``);
    * ``"loop"``: a Python loop over its elements or its size (``for v in sel:``, ``for v in u.tolist():``,
      ``for i in range(n)`` with ``n = pos.numel()``);
    * ``"number"``: its values as Python numbers (``u.tolist()``, ``idx[0].item()``).

    ``(0, "", "")`` where there is none. With the setting that size is an unbacked symbol (``u0``) with no value
    while tracing: each such use breaks there or raises ``GuardOnDataDependentSymNode``: the break moves, or
    becomes a failure. ``(-1, "", "")`` where the function's code after the line is not at hand."""
    p, stmt = statement_at(f.stop, ctx)
    if p is None or stmt is None:
        return -1, "", ""
    made = {t.id for t in ast.walk(stmt) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    if not made:
        return 0, "", ""  # an expression whose result is used at once (returned, passed on): nothing branches on it later
    fn = next((a for a in p.ancestors(stmt) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    scope = fn if fn is not None else p.tree  # code at the top level (a notebook cell): the kept span is all of it
    after = stmt.end_lineno or stmt.lineno
    loop = next((a for a in p.ancestors(stmt) if isinstance(a, (ast.For, ast.While))), None)

    def later(n: ast.AST) -> bool:
        line = getattr(n, "lineno", 0)
        return line > after or (loop is not None and loop.lineno <= line <= (loop.end_lineno or loop.lineno))

    def size_of(node: ast.AST) -> bool:
        """Whether ``node`` reads the size of what the line made (``x.shape[0]``, ``len(x)``, ``x.numel()``)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in made:
                parent = p.parents.get(n)
                if isinstance(parent, ast.Attribute) and parent.attr in ("shape", *_SIZE_METHODS):
                    return True
                if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("len", "bool", "int"):
                    return True
                if parent is node or isinstance(parent, (ast.UnaryOp, ast.BoolOp)):  # `if x:` / `if not x:`
                    return True
        return False

    # names given the made value's size, one step on (``n = pos.numel()``): a loop over range(n) needs it too
    sizes = {t.id for n in ast.walk(scope) if isinstance(n, ast.Assign) and later(n) and size_of(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    found: list[tuple[int, str, str]] = []
    for n in ast.walk(scope):
        test = n.test if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) else None
        if test is not None and later(n) and size_of(test):
            found.append((n.lineno, p.segment(test), "branch"))
        if isinstance(n, (ast.For, ast.comprehension)) and later(n.iter if isinstance(n, ast.comprehension) else n):
            used = {m.id for m in ast.walk(n.iter) if isinstance(m, ast.Name)}
            if used & (made | sizes):
                found.append((getattr(n.iter, "lineno", 0), p.segment(n.iter), "loop"))
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("tolist", "item")
                and later(n) and any(isinstance(m, ast.Name) and m.id in made for m in ast.walk(n.func.value))):
            found.append((n.lineno, p.segment(n), "number"))
    return min(found) if found else (0, "", "")


#: Builtins that take a tensor and need nothing of its size beyond what torch traces.
_BUILTINS = {"len", "int", "float", "bool", "print", "isinstance", "tuple", "list", "range", "abs", "max", "min", "sum"}


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    op = f.said.aten_op
    if op in MOVES_ONLY:
        return explained(
            Kind.NO_META_KERNEL, f"`{op}`'s data-dependent output shape: torch's hint does not remove this break",
            f"`{op}` at {path(ctx, f)} returns a tensor whose size depends on the values of its input, so torch "
            "stops the graph there. torch's hint, `capture_dynamic_output_shape_ops`, does not help here: with it the "
            "break moves to the op's missing meta kernel (torch works out shapes with it while it traces, and this op "
            "has none that can). Nothing to fix if the break is affordable; otherwise compute it outside the "
            "compiled function, or with an operator that has one (for a square, well-conditioned system: "
            "`torch.linalg.solve`).", f)
    if op not in SUPPORTED:
        return None
    if not f.in_library and _into_unchecked_call(f, ctx):
        return None  # torch's hint stays torch's words (torch_hint): unverified here
    if not f.in_library:
        line, cond, how = _branch_on_size(f, ctx)
        if line < 0:
            return None  # the code after the line is not at hand: torch's words (torch_hint)
        if cond:
            use = {"branch": f"branches on that size (`{cond}`, line {line})",
                   "loop": f"loops over it in Python (`{cond}`, line {line}): the loop needs the number of elements",
                   "number": f"reads its values as Python numbers (`{cond}`, line {line})"}[how]
            title = {"branch": "a branch on it", "loop": "a Python loop over it", "number": "its values as Python numbers"}[how]
            return explained(
                Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS,
                f"`{op}`'s data-dependent size, then {title} at line {line}: torch's hint would only move the break",
                f"`{op}` at {path(ctx, f)} returns a tensor whose size depends on the values of its input, so torch "
                f"stops the graph there. Its hint, `capture_dynamic_output_shape_ops`, would keep it in the graph "
                f"with a symbolic size that has no value while tracing; but the code then {use}, and torch cannot "
                "know a size it has not computed: with the setting the break moves to that "
                + {"branch": "branch", "loop": "loop", "number": "conversion"}[how] + ", or the compiled call "
                "raises (GuardOnDataDependentSymNode) instead of breaking. So the setting is not the fix here. "
                "Nothing to fix if the break is affordable (the code after it is compiled on its own). To keep the "
                "op in the graph, the code after it must not need that number in Python: tensor operations over "
                "the whole result (a sum, a comparison against all of it at once) instead of the "
                + {"branch": "test", "loop": "loop", "number": "Python values"}[how]
                + ", then the setting; check that the break is gone and the outputs unchanged.", f)
    if f.in_library:  # the library's code after the op is not read here: the setting is to try, said so
        return Suggestion.of(
            "capture_dynamic_output_shape_ops (unverified: the library's code after the op is not read)",
            f"`{op}` at {path(ctx, f)} (in library code you cannot edit) returns a tensor whose size depends on the "
            "values of its input, so torch stops the graph there. With this setting torch keeps it in the graph with "
            "a symbolic size; whether that removes the break depends on what the library does next, which ipycompile "
            "did not read: if it branches on that size, loops over the result in Python or reads its values as "
            "numbers, the break moves there, or the compiled call raises (GuardOnDataDependentSymNode) instead of "
            "breaking. Try it, and compare the breaks and the outputs. " + reset_note(),
            SETTING, Confidence.LOW,
            Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)
    return Suggestion.of(
        "Let torch trace data-dependent output shapes: capture_dynamic_output_shape_ops",
        f"`{op}` at {path(ctx, f)} (in your code) returns a tensor whose size depends on the values of its input, "
        "so torch stops the graph there. With this setting torch keeps it in the graph with a symbolic size; the "
        "code after it in the function neither branches on that size nor loops over the result in Python nor reads "
        "its values as numbers, which would move the break (or make the compiled call raise). " + reset_note(),
        SETTING, Confidence.MEDIUM,
        Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)


RULE = Rule(Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, "`nonzero` and other ops whose output shape depends on data: "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`", applies, fix)
