"""A custom op torch cannot run on fake tensors (GB0087: its fake raises NotImplementedError;
GB4315: it has none; GB0090: a ``torch.library`` op with a device kernel only): a ``register_fake``
for that op written from its schema (capture read it from torch's registry: ``OpSchema``), with the
op's own argument names and one result per result the schema declares (a tensor, a list of
tensors, a tuple, a size); without a schema (a log read where the op is not registered) a
skeleton from the arguments torch printed, labelled as such."""

from __future__ import annotations

import ast
import keyword
from typing import Optional

from ....report.model import Confidence, Kind, OpArgument, OpSchema, Suggestion
from ..base import Context, Facts, Rule, statement_at

_TENSOR = ("Tensor", "Optional[Tensor]")
_TENSORS = "List[Tensor]"
_SIZE = ("int", "SymInt")


def applies(f: Facts) -> bool:
    return f.code in ("GB0087", "GB4315", "GB0090") and bool(f.said.fake_op)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    d = f.said
    schema = ctx.report.op_schema(d.fake_op, d.fake_overload)
    missing = ("has no fake implementation" if d.fake_missing
               else "has a fake implementation that raises NotImplementedError")
    at = f.user if f.in_library and f.user.filename else f.stop  # the user's call, not torch's wrapper around the op
    where = f"`{at.source_line.strip()}` at {ctx.where(at)}" if at.source_line else ctx.where(at)
    lead = (f"{where} calls the custom op `{d.fake_op}`, which {missing}. torch runs every op on fake tensors "
            "(shapes and dtypes, no data) while it traces, so it cannot go on. Register a fake: a function of the "
            "op's arguments that returns empty results of the right shapes and dtypes, computing nothing. ")
    replace = (" `register_fake` replaces the fake that raises." if not d.fake_missing else "")
    if schema is None:
        return _from_printed_args(f, lead, replace)
    made = _fake_from_schema(schema, _list_length(f, ctx, schema))
    if made is None:
        scalars = ", ".join(f"`{r}`" for r in schema.returns if not _is_tensorish(r) and r not in _SIZE)
        return Suggestion(
            f"The custom op `{d.fake_op}` returns {scalars}: no fake can give that value",
            lead + f"Its schema is `{schema.text}`: a fake computes nothing, so it cannot give a {scalars} result "
            "the code after it reads; return it as a tensor (a 0-d tensor) from the op, or call the op outside the "
            "compiled code.", "", Confidence.MEDIUM, Kind.REGISTER_FAKE)
    body, notes = made
    code = "\n".join(["import torch", "", f'@torch.library.register_fake("{schema.name}")  # once, after the op is defined',
                      f"def _({_params(schema.arguments)}):", *body])
    return Suggestion(
        f"Give the custom op `{d.fake_op}` a fake implementation",
        lead + f"The code below follows the op's schema, `{schema.text}`. " + " ".join(notes) + replace,
        code, Confidence.MEDIUM, Kind.REGISTER_FAKE)


def _is_tensorish(t: str) -> bool:
    return t in _TENSOR or t == _TENSORS


def _name(a: OpArgument) -> str:
    return a.name + "_" if keyword.iskeyword(a.name) else a.name


def _params(args: list[OpArgument]) -> str:
    """The fake's parameters: the schema's names, its defaults where they read as Python, ``*`` before
    its keyword-only ones."""
    defaults_ok = all(_python(a.default) for a in args if a.default is not None)
    out: list[str] = []
    for a in args:
        if a.kwarg_only and "*" not in out:
            out.append("*")
        out.append(_name(a) + (f"={a.default}" if a.default is not None and defaults_ok else ""))
    return ", ".join(out)


def _python(text: str) -> bool:
    try:
        ast.literal_eval(text)
        return True
    except (ValueError, SyntaxError):
        return False


def _fake_from_schema(schema: OpSchema, n_list: Optional[int]) -> Optional[tuple[list[str], list[str]]]:
    """The fake's body and what the text says about it; None where a result is a value no fake can give
    (a float, a bool, a string)."""
    if any(not _is_tensorish(r) and r not in _SIZE for r in schema.returns):
        return None
    like, notes = _shape_source(schema)
    results: list[str] = []
    body: list[str] = []
    for r in schema.returns:
        if r in _TENSOR:
            results.append(f"torch.empty_like({like})" if like else "torch.empty(0)")
        elif r == _TENSORS:
            lists = [a for a in schema.arguments if a.type == _TENSORS]
            if n_list is not None:
                results.append(f"[torch.empty_like({like}) for _ in range({n_list})]")
                notes.append(f"The op returns a list of tensors; your code reads {n_list} of them.")
            elif lists:
                results.append(f"[torch.empty_like(t) for t in {_name(lists[0])}]")
                notes.append(f"The op returns a list of tensors: one per tensor of `{lists[0].name}` is assumed.")
            else:
                results.append(f"[torch.empty_like({like})]  # one per tensor the op returns")
                notes.append("The op returns a list of tensors whose length the code does not show: give the fake "
                             "one element per tensor it returns.")
        else:  # a size computed from the data: a new symbol, not a number the fake makes up
            if not any(line.startswith("    ctx =") for line in body):
                body.append("    ctx = torch.library.get_ctx()")
            results.append("ctx.new_dynamic_size()")
            notes.append("Its integer result depends on the data: the fake gives a new symbolic size "
                         "(`ctx.new_dynamic_size()`), which code after the op may not branch on.")
    if not schema.returns:
        body.append("    return None  # the op returns nothing: it only writes its mutated arguments")
        return body, notes
    value = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    comment = "  # the shape and dtype of the result" + ("s" if len(results) > 1 else "") if like else ""
    body.append(f"    return {value}" + ("" if "#" in value else comment))
    return body, notes


def _shape_source(schema: OpSchema) -> tuple[str, list[str]]:
    """The argument each tensor result is shaped like: the first tensor argument (``xs[0]`` for a list)."""
    for a in schema.arguments:
        if a.type in _TENSOR and not a.mutated:
            return _name(a), [f"Each tensor result is assumed shaped and typed like `{a.name}`, the op's first "
                              "tensor argument: write `" + _name(a) + ".new_empty(...)` with the right shape and "
                              "dtype where one is not."]
        if a.type == _TENSORS:
            return f"{_name(a)}[0]", [f"Each tensor result is assumed shaped like `{a.name}[0]`: adapt where not."]
    return "", ["The op takes no tensor: its results' shapes must be written by hand (`torch.empty(...)`)."]


def _list_length(f: Facts, ctx: Context, schema: OpSchema) -> Optional[int]:
    """How many tensors the user's code reads from the op's one list result: the names it unpacks it into
    (``a, b, c = op(...)``), else the highest index it reads (``parts[2]``)."""
    if schema.returns != [_TENSORS]:
        return None
    for frame in (f.stop, f.user):
        p, stmt = statement_at(frame, ctx)
        if p is None or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
            return len(target.elts)
        if isinstance(target, ast.Name):
            scope = p.scope_of(stmt)
            read = [n.slice.value for n in ast.walk(scope) if isinstance(n, ast.Subscript)
                    and isinstance(n.value, ast.Name) and n.value.id == target.id
                    and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, int) and n.slice.value >= 0]
            unpacked = [len(n.targets[0].elts) for n in ast.walk(scope) if isinstance(n, ast.Assign)
                        and isinstance(n.value, ast.Name) and n.value.id == target.id
                        and isinstance(n.targets[0], (ast.Tuple, ast.List))]
            if read or unpacked:
                return max([i + 1 for i in read] + unpacked)
    return None


def _from_printed_args(f: Facts, lead: str, replace: str) -> Optional[Suggestion]:
    """No schema was kept (a log read where the op is not registered): a skeleton from the arguments torch
    printed, said to be one."""
    d = f.said
    args = list(d.fake_args)
    tensors = [i for i, a in enumerate(args) if a.startswith("FakeTensor")]
    if not tensors or d.fake_kwargs:
        return None
    names = [f"x{i}" if i in tensors else f"arg{i}" for i in range(len(args))]
    first = names[tensors[0]]
    code = "\n".join([
        "import torch",
        "",
        f'@torch.library.register_fake("{d.fake_op}")  # once, after the op is defined',
        f"def _({', '.join(names)}):",
        f"    return torch.empty_like({first})  # to try: one result shaped like {first}",
    ])
    return Suggestion(
        f"Give the custom op `{d.fake_op}` a fake implementation (a skeleton to adapt)",
        lead + "This report kept no schema of the op (it was not registered where the report was read), so the "
        f"skeleton below is to try: it takes the arguments torch printed and returns one tensor shaped like `{first}`; "
        "give it the op's own parameters and one result per result the op returns." + replace,
        code, Confidence.LOW, Kind.REGISTER_FAKE)


RULE = Rule(Kind.REGISTER_FAKE, "a custom op with no working fake implementation: a `register_fake` written from "
            "the op's schema (its arguments, one result per result it returns)", applies, fix)
