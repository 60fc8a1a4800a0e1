"""A third-party or NumPy call on tensors that torch cannot trace: `torch.library.custom_op`
around the smallest piece of the user's code that holds it (a helper function, else the
statement's value), with a `register_fake` for its shape."""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ...rewrite import defined_before, dotted, free_name, loads, taken_names
from ...source import Parsed
from ..base import Context, Facts, Rule, statement_at
from ._calls import in_with_items, is_numpy, is_unsupported_call, numpy_call, numpy_function, user_call, uses_values

_TENSOR_ATTRS = {"numpy", "cpu", "cuda", "detach", "tolist", "item", "dtype", "shape", "device", "size", "dim"}


def applies(f: Facts) -> bool:
    return (is_numpy(f) or is_unsupported_call(f)) and not f.in_library


def _tensor_like(expr: ast.AST, name: str) -> bool:
    """Whether ``expr`` uses ``name`` as a tensor (``name.numpy()``, ``name.dtype``): a notebook
    global the cell did not assign is an input of the op only then."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
               and n.attr in _TENSOR_ATTRS for n in ast.walk(expr))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if is_numpy(f):
        fn = numpy_function(f)
        p, stmt = statement_at(f.stop, ctx)
        if not fn or stmt is None or numpy_call(stmt, fn) is None:
            return None
        return _custom_op(f, ctx, p, stmt, f"np.{fn}")
    found = user_call(f, ctx)
    if found is None:
        return None
    p, stmt, call, full = found
    if in_with_items(stmt, call) or not uses_values(call):
        return None
    return _custom_op(f, ctx, p, stmt, full)


def _custom_op(f: Facts, ctx: Context, p: Parsed, stmt: ast.stmt, what: str) -> Optional[Suggestion]:
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
        if not dotted(value).startswith("torch."):  # e.g. a bare np.f(...): its value is no tensor
            return None
        before = set(defined_before(p, stmt))
        params = [n for n in loads([ast.Expr(value)]) if (n in before or _tensor_like(value, n)) and n != "self"]
        if not params:
            return None
        base = re.sub(r"\W", "_", what.split(".")[-1])
        name = free_name(f"{base}_op", taken_names(p))
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
        code, Confidence.MEDIUM, Kind.CUSTOM_OP)


RULE = Rule(Kind.CUSTOM_OP, "a third-party or NumPy call on tensors torch cannot trace: `torch.library.custom_op` "
            "around the smallest piece of the user's code", applies, fix)
