"""Fixes verified on the user's own cell: ``%%compile --verify-fixes``, ``run_cell(..., verify_fixes=True)``.

After a cell's report is built and diagnosed, each suggested fix that can be applied
mechanically is tried in a **scratch compile of the same cell on copies of the same
inputs**, and the result is recorded beside the fix (``Suggestion.check``, a
:class:`~ipycompile.report.FixCheck`): "verified on your cell: the break is gone, outputs equal
(max abs diff 0)", or "did not remove it: ..." with torch's own words (the views then
show the fix as withdrawn), or "not verified: ..." with the reason. What the whole
verification covered is ``CompileReport.fix_verification``.

What is applied (:func:`plan_fixes`):

* a setting (``torch._dynamo.config.NAME = VALUE``, ``...NAME.add(VALUE)``, the same for
  ``torch._inductor.config``), inside the config's own ``patch`` context manager, so the
  user's config is never changed; several settings suggested for one cell are tried one by
  one and all together (two settings that each work alone can fail together);
* a rewrite of the cell's own lines (``Suggestion.first_line``..``last_line`` in the
  cell's file), applied to the cell's text (:func:`ipycompile.analysis.source.apply_suggestion`);
  a statement moved out of the compiled code runs before each call, uncompiled;
* ``torch._dynamo.mark_dynamic(x, d)`` / ``mark_unbacked`` / ``maybe_mark_dynamic`` on an input
  ``x`` of the notebook's namespace: on the scratch copy of ``x``;
* a compile option the fix passes (``torch.compile(..., dynamic=True)``): on the scratch compile;
* ``DDP(torch.compile(model))`` where ``torch.compile(DDP(model))`` compiled nothing (the doctor's
  ``eager_run``, :data:`ipycompile.analysis.eager_run.DDP_FIX`): on the scratch copy of each
  ``DistributedDataParallel`` the cell reads (or ``torch.compile`` of one), the module it wraps is
  replaced by ``torch.compile`` of it, with the cell's compile options (the module compiled, then
  wrapped; the copy's reducer keeps the same parameters, so no new process-group collective is
  made), and put back before the state is compared. Judged on the graphs: the fixed cell must
  compile a graph where the unfixed one compiled none (DDP's own wrapper breaks stay: by design).

What a fix does is read from its record (``Suggestion.fix``, :class:`~ipycompile.report.Fix`, filled by
the doctor's rule; its ``code`` is that record rendered), never from its text: :func:`read_fix_code` turns
the record into what is applied, the one reading of it (the doctor corpus's harness applies the same
reading to its cases). Code with no record (words, a template, code of another form, or a fix in a report
saved before fixes were records) is not tried.

A rewrite of a file other than the cell, or of library code the user does not own, is
never "verified" (only settings are, there); code of any other form is "not verified".

Every scratch run starts from the names the cell reads **as the user's first call found them**
(:func:`before_first_call`, taken by the run layer before that call: a deep copy whose tensors are
held, not copied), so that a break of the first call only (a flag the cell sets, a module's attribute
made on its first call, an optimizer's state made by its first step) is there again; without it, from
the namespace as it is now.

Each trial is judged against two runs of the unfixed cell on their own copies of the
inputs: compiled (the problem must be there, else the trial proves nothing) and eager (the
fixed cell's outputs must equal it: its value, the names it assigns, and the state of every
module (its buffers outside the ``state_dict`` and tensors held as plain attributes too), optimizer,
scheduler, tensor and other object it reads, compared with the dtype's tolerances and
the largest absolute difference recorded; a tensor the unfixed cell changes in place and the fixed
one leaves is named: "it drops the in-place change of `m.count`"). A fix is verified when its break,
recompile or failure is gone, nothing new breaks or fails (a new break is named in torch's words),
and the outputs equal eager's.

What stays as it was, afterwards (tests prove each):

* **the namespace**: the scratch cell runs in a copy of the namespace dict, the values it
  reads deep-copied together (one memo: an optimizer's copy holds the model copy's
  parameters); functions of the notebook are re-bound to the copy. Where a value cannot be
  copied (a generator, a file), or the cell assigns an attribute of a module, nothing is
  verified and the report says why;
* **random state**: torch's CPU and CUDA generators, Python's ``random`` and NumPy's are
  set to the same state before each scratch run (the same draws each time) and put back;
* **torch's config**: changed only inside ``patch`` blocks;
* **the user's compiled code**: the scratch cell is a new function with its own code
  object, so Dynamo caches its compiles apart from the user's cell. Frames torch compiles on
  their own beside the cell (a function the cell calls, where a break inside it stopped the
  cell's graph) belong to the user: on a torch whose ``torch.compile`` takes
  ``isolate_recompiles`` each scratch compile gets its own bucket of compiled code on them,
  which the user's calls never see; on an older torch the cell's fixes are not verified when
  its report shows such frames. The number of compiled versions of every code object torch
  had compiled before is checked afterwards (``FixVerification.isolation``);
* the cell's printed output is not shown (stdout is captured during scratch runs);
* nothing is kept: at the end the scratch cells' own compiled code is let go
  (``torch._dynamo.reset_code`` on their code objects and the resume functions made from
  them, never the user's) and the copies leave their namespaces.

What differs between two uncompiled runs of the unfixed cell from the same state (a clock,
a process id) is not compared, and the check says so.

A time budget (``verify_budget_s``, :data:`DEFAULT_BUDGET_S`) bounds the whole: it is checked
before each scratch compile (a compile under way is not interrupted), and fixes not reached
are "not verified" with the budget named.

Not on by default: verifying runs the cell's code again (twice plus once per fix: any effect
outside Python's memory, a file written, a message sent, happens again), holds a copy of
everything the cell reads at once (a second copy of a model's weights and optimizer state)
and costs compiles; it is asked for, and a report whose fixes were not verified says how.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import inspect
import ast
import linecache
import re
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..analysis.eager_run import DDP_FIX, compiled_compile_ids
from ..analysis.source import apply_suggestion
from ..report import CompileReport, Fix, FixCheck, FixStatus, FixVerification, Suggestion
from .accuracy import check_outputs, referenced_names
from .state import RandomState as _RandomState
from .cell import CellFunction, make_cell_function, placeholders
from .observe import capture
from .session import SESSION
from .settings import CompileSettings

__all__ = ["DEFAULT_BUDGET_S", "NOTEBOOK_BUDGET_S", "verify_fixes", "plan_fixes", "has_fix_to_try", "PlannedFix",
           "read_fix_code", "FixCode", "FirstState", "before_first_call"]

#: seconds of scratch compiles and calls, over all fixes of one cell (asked for: ``--verify-fixes``)
DEFAULT_BUDGET_S = 20.0
#: ... where a notebook verifies by default, after the report is shown (``%%compile --verify-budget``)
NOTEBOOK_BUDGET_S = 5.0
#: the most calls of the cell per scratch run (a recompile needs the calls that changed its inputs)
MAX_CALLS = 10

#: why code with no record (:class:`~ipycompile.report.Fix`) is not tried
NO_RECORD = ("not tried: the code is words, a template or code of a form that is not applied automatically "
             "(or the report was saved before fixes were records)")


# -- what each fix applies ------------------------------------------------------------------
@dataclass
class PlannedFix:
    """One distinct fix of a report, as it will be applied: the items it answers (``targets``:
    the report's breaks, recompiles and failures, by list and index), the settings, the
    cell's rewritten text, the marks; ``why_not`` when it cannot be applied here."""

    suggestion: Suggestion
    targets: list[tuple[str, int]] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # "dynamo"/"inductor" -> {name: value}
    rewrite: Optional[str] = None  # the cell's body with the fix applied
    before_call: str = ""  # a statement moved out of the compiled code
    marks: list[tuple[str, str, int]] = field(default_factory=list)  # (function, name, dim)
    compile_kwargs: dict[str, Any] = field(default_factory=dict)  # torch.compile(..., dynamic=True)
    applied: list[str] = field(default_factory=list)
    why_not: str = ""
    #: names of the namespace holding a DistributedDataParallel (or torch.compile of one) whose module is
    #: compiled on the scratch copy: DDP(torch.compile(model))
    wrapped: list[str] = field(default_factory=list)

    @property
    def is_setting(self) -> bool:
        return (bool(self.settings) and self.rewrite is None and not self.marks and not self.compile_kwargs
                and not self.why_not and not self.wrapped)


def _answered(report: CompileReport) -> list[tuple[str, int, Any]]:
    """Every break, recompile and failure with a suggestion, as ``(list, index, item)``; the
    recompile limit's own failure is left out where a recompile carries the limit's answer."""
    limit = any(rc.limit_hit for rc in report.recompiles)
    out = [("graph_breaks", i, b) for i, b in enumerate(report.graph_breaks)]
    out += [("recompiles", i, rc) for i, rc in enumerate(report.recompiles)]
    out += [("failures", i, f) for i, f in enumerate(report.failures)
            if not (limit and (f.message or "").startswith("Dynamo recompile limit exceeded"))]
    run = report.eager_run  # its own fix only (DDP's): another is a break's answer, tried there
    if run is not None and run.suggestion is not None and run.suggestion.code.strip() == DDP_FIX.strip():
        out.append(("eager_run", 0, run))
    return [(kind, i, x) for kind, i, x in out if x.suggestion is not None]


def plan_fixes(report: CompileReport, cell: CellFunction, body: str, namespace: dict) -> list[PlannedFix]:
    """The distinct fixes of ``report`` with code (one per suggestion's code and place), each
    with what it applies to the cell ``cell`` (its ``body`` as the user wrote it), or why not."""
    import torch

    plans: dict[tuple, PlannedFix] = {}
    for kind, i, item in _answered(report):
        s = item.suggestion
        if not (s.code or s.unproven_code or "").strip() or s.kind == "unknown":
            continue
        key = (s.code or s.unproven_code, s.filename, s.first_line, s.last_line)
        if key not in plans:
            plans[key] = _plan(s, report, cell, body, namespace, torch)
        plans[key].targets.append((kind, i))
    return list(plans.values())


def has_fix_to_try(report: CompileReport) -> bool:
    """Whether ``report`` has a suggestion with code to try on the cell (what :func:`plan_fixes` plans)."""
    return any((item.suggestion.code or item.suggestion.unproven_code or "").strip()
               and item.suggestion.kind != "unknown" for _, _, item in _answered(report))


def _ddp_of(value: Any) -> Any:
    """The DistributedDataParallel ``value`` is, or that ``torch.compile`` of it wraps; else None."""
    import torch

    ddp = getattr(value, "_orig_mod", value)
    return ddp if isinstance(ddp, torch.nn.parallel.DistributedDataParallel) else None


def _plan(s: Suggestion, report: CompileReport, cell: CellFunction, body: str, namespace: dict, torch: Any) -> PlannedFix:
    fix = PlannedFix(s)
    code = (s.code or s.unproven_code).strip()
    if code == DDP_FIX.strip():
        fix.wrapped = sorted(n for n in _read_names(cell, namespace) if _ddp_of(namespace[n]) is not None)
        if not fix.wrapped:
            fix.why_not = "the cell reads no DistributedDataParallel of the notebook's namespace to wrap anew"
        fix.applied += [f"`{n}`'s module replaced by `torch.compile` of it, on a copy of `{n}`: "
                        "DDP(torch.compile(model))" for n in fix.wrapped]
        return fix
    if s.fix is None:
        fix.why_not = NO_RECORD
        return fix
    rw = s.fix.rewrite
    if rw is not None:
        if rw.filename != cell.filename:
            who = report.owner(rw.filename).value
            where = report.where(rw.filename, rw.first_line)
            fix.why_not = (f"it rewrites {where}, library code you do not own: only settings are verified there"
                           if who not in ("user", "unknown") else
                           f"it rewrites {where}, outside this cell: only the cell's own code is rewritten in a "
                           "scratch compile")
            return fix
        header_lines = cell.source.count("\n") - body.count("\n")  # editor lines above the body
        text = cell.source
        new = apply_suggestion(text, rw)
        if new == text:
            fix.why_not = "the rewrite changes nothing"
            return fix
        fix.rewrite = "\n".join(new.split("\n")[header_lines:])
        fix.before_call = s.fix.moved
        span = f"line {rw.first_line}" if rw.first_line == rw.last_line else f"lines {rw.first_line}-{rw.last_line}"
        fix.applied.append(f"{span} of the cell rewritten as suggested"
                           + (f"; `{fix.before_call}` run before each call" if fix.before_call else ""))
        return fix
    read = read_fix_code(s.fix, namespace)
    fix.settings, fix.applied = read.settings, list(read.applied)
    if read.why_not or read.rebinds:  # `x = x.contiguous()`: a statement of the user's, not applied to a copy here
        fix.why_not = read.why_not or ("code of a form that is not applied automatically "
                                       f"(`{read.before_call[0][:80]}`)")
        return fix
    fix.compile_kwargs = dict(read.compile_kwargs)
    for (mark_fn, name, dim), ln in zip(read.marks, read.before_call[len(read.rebinds):]):
        if not name.isidentifier() or not isinstance(namespace.get(name), torch.Tensor):
            fix.why_not = (f"`{name}` is not a tensor of the notebook's namespace (a local of the cell, or made "
                           "inside a library): it cannot be marked before the call")
            return fix
        fix.marks.append((mark_fn, name, dim))
        fix.applied.append(f"{ln} on a copy of `{name}`")
    return fix


@dataclass
class FixCode:
    """What a fix (one that writes no lines of the user's) applies, read from its record by
    :func:`read_fix_code`: the one reading of a fix's settings, marks and compile options, shared by
    ``--verify-fixes`` and the doctor corpus's harness, which apply them each to its own runs."""

    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # "dynamo"/"inductor" -> {name: value}
    marks: list[tuple[str, str, int]] = field(default_factory=list)  # (mark_dynamic|mark_unbacked|..., expression, dim)
    rebinds: list[tuple[str, str]] = field(default_factory=list)  # (name, "contiguous"|"tensor")
    #: statements the user runs on an input before calling the compiled code, as the fix's code writes them:
    #: ``x = x.contiguous()``, ``i = torch.tensor(i)`` (the rebinds, first), then each mark
    before_call: list[str] = field(default_factory=list)
    compile_kwargs: dict[str, Any] = field(default_factory=dict)  # torch.compile(..., dynamic=True)
    applied: list[str] = field(default_factory=list)  # the settings, as written
    why_not: str = ""  # no record, or one that cannot be applied here: why


def read_fix_code(fix: Optional[Fix], namespace: Optional[dict] = None) -> FixCode:
    """``fix`` (a suggestion's record, :class:`~ipycompile.report.Fix`, that rewrites no lines), read: each setting's
    value evaluated in ``namespace`` with the fix's own imports (``NAME.add(VALUE)``: the config's set with the value
    added); each mark and rebind kept as a statement to run before the call; each compile option as a keyword of
    ``torch.compile``. No record, a rewrite, or a rebind of something other than a name: ``why_not`` says so."""
    import torch

    out = FixCode()
    if fix is None:
        out.why_not = NO_RECORD
        return out
    if fix.rewrite is not None:
        out.why_not = "it rewrites lines of code: applied as a rewrite, not before the call"
        return out
    rebinds, marks = fix.all_rebinds, fix.all_marks
    odd = next((r for r in rebinds if not r.target.isidentifier()), None)
    if odd is not None:
        out.why_not = f"code of a form that is not applied automatically (`{odd.statement[:80]}`)"
        return out
    ns = {**(namespace or {}), "torch": torch}
    imports = fix.all_imports
    for setting in fix.all_settings:
        config = torch._dynamo.config if setting.module == "dynamo" else torch._inductor.config
        try:
            if imports:
                exec("\n".join(imports), ns)  # noqa: S102 - the fix's own imports
            value = eval(setting.value, ns)  # noqa: S307 - the doctor's own code
            if setting.op == "add":
                current = out.settings.get(setting.module, {}).get(setting.name, _get(config, setting.name))
                value = set(current) | {value}
            else:
                _get(config, setting.name)  # a name the config has
        except Exception as exc:  # noqa: BLE001
            out.why_not = f"`{setting.statement}` cannot be applied here ({type(exc).__name__}: {exc})"
            return out
        out.settings.setdefault(setting.module, {})[setting.name] = value
        out.applied.append(setting.statement)
    out.rebinds = [(r.target, r.how) for r in rebinds]
    out.marks = [(m.function, m.target, m.dim) for m in marks]
    out.before_call = [r.statement for r in rebinds] + [m.statement for m in marks]
    for name, value in fix.all_compile_options.items():
        out.compile_kwargs[name] = ast.literal_eval(value)
        out.applied.append(f"torch.compile(..., {name}={value})")
    return out


def _get(config: Any, name: str) -> Any:
    value = config
    for part in name.split("."):
        value = getattr(value, part)
    return value


# -- copies of the cell's inputs -------------------------------------------------------------
class NotCopyable(Exception):
    """The cell's state cannot be copied (so it cannot run apart from the user's); says why."""


def _read_names(cell: CellFunction, namespace: dict) -> set[str]:
    """The namespace names the cell may read, through the notebook's own functions it calls."""
    names, todo, seen = set(), [cell.fn.__code__], set()
    while todo:
        code = todo.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        for name in referenced_names(code):
            if name in namespace and name not in names:
                names.add(name)
                value = namespace[name]
                if isinstance(value, types.FunctionType) and value.__globals__ is namespace:
                    todo.append(value.__code__)
    return names


def _written_first(body: str) -> set[str]:
    """Names the cell assigns at its top level, unconditionally, before anything reads them: their
    values in the namespace are never read by the cell (what an earlier run left there), so they
    are not copied."""
    import ast

    try:
        tree = ast.parse(body)
    except SyntaxError:
        return set()
    read: set[str] = set()
    out: set[str] = set()
    for stmt in tree.body:
        loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            loads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        loads.add(n.id)  # `a[i] = ...` reads a and i
            read |= loads
            for target in targets:
                names = [target] if isinstance(target, ast.Name) else \
                    list(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else []
                out |= {n.id for n in names if isinstance(n, ast.Name) and n.id not in read}
        else:
            read |= loads | {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return out


def _module_attribute_writes(body: str, namespace: dict) -> list[str]:
    """``mod.attr = ...`` in the cell where ``mod`` is a module of the namespace: state a copy cannot hold."""
    import ast

    try:
        tree = ast.parse(body)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            base = t
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if t is not base and isinstance(base, ast.Name) and isinstance(namespace.get(base.id), types.ModuleType):
                out.append(ast.unparse(t))
    return out


def _copy_inputs(namespace: dict, names: set[str]) -> dict:
    """Deep copies of ``namespace[names]``, made together (one memo: shared objects stay shared
    among the copies); modules, classes and functions are not copied (functions of the notebook
    are re-bound to the copy's namespace by :func:`_scratch_namespace`)."""
    values = {n: namespace[n] for n in sorted(names)}
    memo: dict[int, Any] = {}
    for v in values.values():  # modules are shared, never copied
        if isinstance(v, types.ModuleType):
            memo[id(v)] = v
    try:
        return copy.deepcopy(values, memo)
    except Exception as exc:  # noqa: BLE001 - which value, and why
        for n, v in values.items():
            try:
                copy.deepcopy(v, dict(memo))
            except Exception as e:  # noqa: BLE001
                raise NotCopyable(f"`{n}` ({type(v).__name__}) cannot be copied ({type(e).__name__}: {e}"[:200] + ")") \
                    from None
        raise NotCopyable(f"the cell's inputs cannot be copied together ({type(exc).__name__}: {exc})"[:200]) from None


@dataclass
class FirstState:
    """The names the cell reads, as its first call found them (:func:`before_first_call`): the scratch
    runs start from these, so that a break of the first call only (a flag the cell sets, a module's
    attribute made on its first call, an optimizer's state made by its first step) is there again.
    ``absent``: the names the cell assigns that did not exist yet; ``why_not``: why no copy could be made."""

    values: dict[str, Any] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    why_not: str = ""


def before_first_call(cell: CellFunction, body: str, namespace: dict) -> FirstState:
    """The cell's inputs before its first call, for :func:`verify_fixes`: the values of the names it reads,
    deep-copied together (one memo), except their tensors, which are held, not copied (the values the first
    call leaves in them are those the scratch runs copy: a second copy of every weight is not kept while
    the cell runs); the Python state around them (flags, attributes, dicts, an optimizer's state entries)
    is as it was."""
    names = _read_names(cell, namespace) - _written_first(body)
    absent = tuple(n for n in cell.assigned if n not in namespace)
    values = {n: namespace[n] for n in sorted(names)}
    memo: dict[int, Any] = {id(v): v for v in _tensors_in(list(values.values()))}
    try:
        return FirstState(copy.deepcopy(values, memo), absent)
    except Exception as exc:  # noqa: BLE001 - the runs then start from the state the first call left
        return FirstState({}, absent, f"{type(exc).__name__}: {exc}"[:200])


def _tensors_in(values: list, depth: int = 64) -> list[Any]:
    """The tensors inside ``values`` (containers, objects' attributes, modules' parameters and buffers, an
    optimizer's state), and the notebook's modules and classes they hold (never copied): what a first-state
    copy holds rather than copies."""
    import torch

    out: list[Any] = []
    seen: set[int] = set()
    todo = [(v, depth) for v in values]
    while todo:
        v, d = todo.pop()
        if id(v) in seen or d < 0 or v is None or isinstance(v, (str, bytes, int, float, complex, bool)):
            continue
        seen.add(id(v))
        if isinstance(v, (torch.Tensor, types.ModuleType, type)):
            out.append(v)
        elif isinstance(v, dict):
            todo += [(x, d - 1) for kv in list(v.items()) for x in kv]
        elif isinstance(v, (list, tuple, set, frozenset)):
            todo += [(x, d - 1) for x in list(v)]
        elif not callable(v) or isinstance(v, torch.nn.Module):
            attrs = getattr(v, "__dict__", None)
            if isinstance(attrs, dict):
                todo.append((attrs, d - 1))
    return out


def _scratch_namespace(namespace: dict, copies: dict) -> dict:
    ns = dict(namespace)
    ns.update(copies)
    for name, value in list(ns.items()):  # the notebook's functions read the copy's globals (not Dynamo's "__...")
        if isinstance(value, types.FunctionType) and value.__globals__ is namespace and not name.startswith("__"):
            fn = types.FunctionType(value.__code__, ns, value.__name__, value.__defaults__, value.__closure__)
            fn.__kwdefaults__, fn.__dict__ = value.__kwdefaults__, dict(value.__dict__)
            fn.__qualname__ = value.__qualname__
            ns[name] = fn
    return ns


def _closure_state(namespace: dict, names: set[str]) -> list[str]:
    """Functions the cell calls whose closures hold tensors or modules (a copy cannot reach them)."""
    import torch

    out = []
    for n in sorted(names):
        v = namespace.get(n)
        for c in getattr(v, "__closure__", None) or () if isinstance(v, types.FunctionType) else ():
            try:
                inner = c.cell_contents
            except ValueError:
                continue
            if isinstance(inner, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, list, dict, set)):
                out.append(n)
                break
    return out


def _state(value: Any, depth: int = 0) -> Any:
    """What to compare of a value the cell made or changed: tensors, modules' parameters, buffers (those
    left out of the ``state_dict`` too) and gradients, and the tensors a module holds as plain attributes,
    optimizers' and schedulers' state, containers of them, plain values, and the attributes of other
    objects (a config, a ``SimpleNamespace``): every tensor a cell can change in place through what it
    reads is compared, so a fix that drops a change (``print(y.add_(1))`` taken out) is seen."""
    import torch

    if depth > 6:
        return None
    if isinstance(value, torch.Tensor):
        t = value.detach()
        grad = value.grad if value.is_leaf else None
        return {"value": t, "grad": grad.detach()} if grad is not None else t
    if isinstance(value, torch.nn.Module):
        out = {f"state[{k}]": v.detach() for k, v in value.state_dict(keep_vars=True).items()}
        out.update({f"buffer[{k}]": b.detach() for k, b in value.named_buffers() if f"state[{k}]" not in out})
        for prefix, sub in value.named_modules():  # tensors held as plain attributes (`self.count = torch.zeros(1)`)
            for k, v in vars(sub).items():
                if isinstance(v, torch.Tensor) and not k.startswith("__"):
                    out[f"attr[{prefix + '.' if prefix else ''}{k}]"] = v.detach()
        out.update({f"grad[{k}]": p.grad.detach() for k, p in value.named_parameters() if p.grad is not None})
        return out
    if isinstance(value, torch.optim.Optimizer) or isinstance(value, getattr(torch.optim.lr_scheduler, "LRScheduler", ())):
        return _state(value.state_dict(), depth + 1)
    if isinstance(value, dict):
        return {str(k): _state(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_state(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, float, str, complex)):
        return value
    attrs = getattr(value, "__dict__", None)  # another object: its attributes (a class, a function: not compared)
    if isinstance(attrs, dict) and not callable(value) and not isinstance(value, (type, types.ModuleType)):
        return {f"attr[{k}]": _state(v, depth + 1) for k, v in attrs.items() if not k.startswith("__")}
    return None


def _snapshot(cf: CellFunction, value: Any, copies: dict, assigned: tuple[str, ...]) -> dict:
    """What a scratch run left, flat (``"name z"``, ``"input model[state[0.weight]]"``): its value, the names
    the user's cell assigns (``assigned``: a statement moved out of the compiled code still assigns its
    name), and the state of what it read."""
    ns = cf.fn.__globals__
    out: dict[str, Any] = {}
    if cf.has_result:
        _flatten(_state(value), "value", out)
    for name in assigned:
        if name in ns:
            _flatten(_state(ns[name]), f"name {name}", out)
    for name in copies:  # what the cell read (and may have changed in place)
        if name not in assigned:
            _flatten(_state(ns.get(name)), f"input {name}", out)
    return out


def _expression(path: str) -> str:
    """A snapshot path as the user's expression: ``input m[attr[k]]`` -> ``m.k``, ``input m[state[0.weight]]``
    -> ``m.0.weight`` (the state_dict's name)."""
    return re.sub(r"\[(?:attr|buffer|state)\[([^\]]+)\]\]", r".\1", path.split(" ", 1)[-1])


def _versions(copies: dict) -> dict[str, int]:
    """The version counter of each tensor of the cell's inputs, by snapshot path: a tensor changed in
    place counts up."""
    import torch

    flat: dict[str, Any] = {}
    for name, value in copies.items():
        _flatten(_state(value), f"input {name}", flat)
    return {p: t._version for p, t in flat.items() if isinstance(t, torch.Tensor)}


def _flatten(tree: Any, path: str, out: dict) -> None:
    if isinstance(tree, dict):
        for k, v in tree.items():
            _flatten(v, f"{path}[{k}]", out)
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            _flatten(v, f"{path}[{i}]", out)
    else:
        out[path] = tree


def _unstable(a: dict, b: dict) -> set[str]:
    """What differs between two eager runs of the unfixed cell from the same state (a clock, an id): not compared."""
    out = {p for p in set(a) ^ set(b)}
    for p in set(a) & set(b):
        check = check_outputs(a[p], b[p])
        if not check.match or check.method != "equal":
            out.add(p)
    return out


# -- the user's compiled code, kept apart ----------------------------------------------------------
def _isolates() -> bool:
    """Whether this torch's ``torch.compile`` takes ``isolate_recompiles`` (its own bucket of compiled code)."""
    import torch

    try:
        return "isolate_recompiles" in inspect.signature(torch.compile).parameters
    except (TypeError, ValueError):
        return False


def _census() -> dict[int, tuple[Any, int]]:
    """For every code object torch has compiled: how many compiled versions the user's calls look up
    (the default bucket, where torch keeps isolated compiles apart)."""
    try:
        from torch._dynamo import convert_frame, eval_frame
    except ImportError:
        return {}
    region = getattr(eval_frame, "_get_cache_entries_for_region", None)  # the default bucket, where torch has buckets
    entries = (lambda code: region(code, -1)) if region is not None else eval_frame._debug_get_cache_entry_list
    out = {}
    for ref in list(convert_frame.input_codes.seen):
        code = ref()
        if code is not None:
            try:
                out[id(code)] = (ref, len(entries(code)))
            except Exception:  # noqa: BLE001
                continue
    return out


def _grown(before: dict[int, tuple[Any, int]]) -> list[str]:
    """Code objects compiled before whose compiled versions changed since ``before``."""
    after = _census()
    out = []
    for key, (ref, n) in before.items():
        code = ref()
        if code is not None and key in after and after[key][1] != n:
            out.append(f"{code.co_name} ({n} -> {after[key][1]})")
    return out


def _own_frames(report: CompileReport, cell: CellFunction) -> list[str]:
    """Functions the report shows torch compiling beside the cell and its resume functions."""
    out = []
    for c in report.compiles:
        fn = getattr(c, "function", "") or ""
        # the cell's own frames: the cell, and the code after its breaks (capture read Compile.resumes)
        if fn and fn != cell.name and c.resumes != cell.name and fn not in out:
            out.append(fn)
    return out


# -- one scratch run ----------------------------------------------------------------------------
@dataclass
class _Run:
    report: Optional[CompileReport]
    snapshot: Any
    error: str
    cell: CellFunction
    seconds: float
    calls: int
    unstable: set = field(default_factory=set)  # eager's: what differs between two runs of it
    changed: set = field(default_factory=set)  # the inputs' tensors the calls changed in place (snapshot paths)


class _Scratch:
    """Scratch runs of one cell: each a new cell function on fresh copies of the inputs."""

    def __init__(self, cell: CellFunction, body: str, header: Optional[str], namespace: dict, names: set[str],
                 settings: CompileSettings, calls: int, rng: _RandomState, first: Optional[FirstState] = None) -> None:
        self.cell, self.body, self.header, self.namespace, self.names = cell, body, header, namespace, names
        self.settings, self.calls, self.rng = settings, calls, rng
        # where each run's copies come from: the names as the first call found them, where they were kept
        self.first = first if first is not None and not first.why_not else None
        self.source = {**{n: namespace[n] for n in names}, **(self.first.values if self.first else {})}
        self.names = names | (set(self.first.values) if self.first else set())
        self.compiles = 0
        self.filenames: list[str] = []  # the scratch cells' sources in linecache, let go at the end
        self.made: list[tuple[types.CodeType, dict]] = []  # each scratch cell's code and namespace

    def release(self) -> None:
        """Let torch let go of the scratch cells' compiled code (theirs alone: each code object and the
        resume functions Dynamo made from it, installed in its namespace), and empty their namespaces of
        the copies of the user's state, so that those are freed now (Dynamo's cleanup hooks keep a
        namespace as long as the code compiled in it lives)."""
        import torch

        reset_code = getattr(torch._dynamo, "reset_code", None)
        users = {id(v.__code__) for v in self.namespace.values() if isinstance(v, types.FunctionType)}
        for code, ns in self.made:
            codes = [code] + [v.__code__ for k, v in list(ns.items())  # the scratch's own, never the user's
                              if k.startswith("__resume_at_") and isinstance(v, types.FunctionType)
                              and id(v.__code__) not in users]
            for c in codes:
                try:
                    reset_code(c) if reset_code is not None else None
                except Exception:  # noqa: BLE001 - a torch without it lets go at torch._dynamo.reset()
                    pass
            # Dynamo's cleanup hooks hold the namespace until its compiled code dies, which may be late: the
            # copies of the user's state leave it now (the names Dynamo installed, "__...", stay for the hooks)
            for name in [k for k in ns if not k.startswith("__")]:
                del ns[name]
        self.made.clear()

    def run(self, fix: Optional[PlannedFix] = None, settings: Optional[dict] = None, compiled: bool = True) -> _Run:
        import torch

        t0 = time.perf_counter()
        body = fix.rewrite if fix is not None and fix.rewrite is not None else self.body
        copies = _copy_inputs(self.source, self.names)
        ns = _scratch_namespace(self.namespace, copies)
        for name in self.first.absent if self.first else ():  # not there yet when the first call started
            ns.pop(name, None)
        cf = make_cell_function(body, ns, filename=f"<ipycompile-verify-{next(SESSION.counter)}>",
                                header=self.header, name=self.cell.name)
        self.filenames.append(cf.filename)
        self.made.append((cf.fn.__code__, ns))
        fn: Callable[[], Any] = cf.fn
        kwargs = self.settings.compile_kwargs()
        if fix is not None:
            kwargs.update(fix.compile_kwargs)  # a compile option the fix passes (dynamic=True)
        if compiled:
            if _isolates():
                kwargs["isolate_recompiles"] = True
            fn = torch.compile(cf.fn, **kwargs)
            self.compiles += 1
        for name in fix.wrapped if fix is not None else ():  # DDP(torch.compile(model)), on the copy
            if name not in copies:  # never the user's own model
                raise RuntimeError(f"`{name}` is not read by the cell, so it has no copy to compile")
            ddp = _ddp_of(copies[name])
            wrap = self.settings.compile_kwargs()
            if _isolates():  # its compiled code kept apart from the user's calls, as the scratch cell's is
                wrap["isolate_recompiles"] = True
            ddp._modules["module"] = torch.compile(ddp.module, **wrap)
            ns[name] = ddp
        for mark_fn, name, dim in fix.marks if fix is not None else ():
            if name not in copies:  # never the user's own tensor
                raise RuntimeError(f"`{name}` is not read by the cell, so it has no copy to mark")
            getattr(torch._dynamo, mark_fn)(ns[name], dim)
        before = fix.before_call if fix is not None else ""
        settings = settings if settings is not None else (fix.settings if fix is not None else {})
        value, error, report = None, "", None
        versions = _versions(copies)  # what the calls then change in place
        self.rng.restore()
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch._dynamo.config.patch(**settings.get("dynamo", {})))
            inductor = dict(settings.get("inductor", {}))
            if compiled and self.settings.uses_inductor:
                inductor.setdefault("fallback_random", True)  # random ops draw as eager's do
            stack.enter_context(torch._inductor.config.patch(inductor))
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            stack.enter_context(placeholders(cf))
            cap = stack.enter_context(capture()) if compiled else None
            try:
                for _ in range(self.calls):
                    if before:
                        exec(before, ns)  # noqa: S102 - the user's own statement, moved out of the compiled code
                    value = fn()
            except Exception as exc:  # noqa: BLE001 - a cell that raises is data
                error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
        if cap is not None:
            report = cap.report
        for name in fix.wrapped if fix is not None else ():  # compared as the user's model: its module put back
            ddp = _ddp_of(copies[name])
            ddp._modules["module"] = getattr(ddp.module, "_orig_mod", ddp.module)
            ns[name] = copies[name]
        snap = _snapshot(cf, value, copies, self.cell.assigned)
        changed = {p for p, v in _versions(copies).items() if versions.get(p, v) != v}
        return _Run(report, snap, error, cf, time.perf_counter() - t0, self.calls, changed=changed)


# -- judging a trial -----------------------------------------------------------------------------
def _break_key(b: Any) -> str:
    return b.gb_code or (b.gb_type or b.reason)[:60]


def _line_map(fix: Optional[PlannedFix]) -> Callable[[int], int]:
    """A scratch cell's line as the user's cell numbers it (a rewrite moves the lines after it)."""
    if fix is None or fix.rewrite is None:
        return lambda n: n
    s = fix.suggestion
    first, last = s.first_line, s.last_line or s.first_line
    new_last = first + len(s.code.split("\n")) - 1
    delta = new_last - last

    def back(n: int) -> int:
        if n > new_last:
            return n - delta
        return first if n >= first else n

    return back


def _site(run: _Run, fix: Optional[PlannedFix], b: Any) -> tuple:
    """A break of a scratch run, keyed as the user's cell and files number it."""
    in_cell = b.frame.filename == run.cell.filename
    return (_break_key(b), "cell" if in_cell else b.frame.filename, _line_map(fix)(b.frame.lineno or 0) if in_cell
            else b.frame.lineno)


def _sites(run: _Run, fix: Optional[PlannedFix]) -> dict[tuple, int]:
    """Break sites of a scratch run (:func:`_site`): hits."""
    out: dict[tuple, int] = {}
    for b in run.report.graph_breaks:
        key = _site(run, fix, b)
        out[key] = out.get(key, 0) + b.count
    return out


def _user_site(report: CompileReport, cell: CellFunction, b: Any) -> tuple:
    in_cell = b.frame.filename == cell.filename
    return (_break_key(b), "cell" if in_cell else b.frame.filename, b.frame.lineno)


def _recompiled(run: _Run, function: str) -> int:
    return sum(1 for rc in run.report.recompiles if rc.function == function)


def _torch_words(run: _Run, fix: Optional[PlannedFix] = None, named: Sequence[tuple] = (), failures: int = 0) -> str:
    """What torch said of the trial's breaks and failures: those at the sites ``named`` (the breaks the fix
    added, then those it left), in that order, and the failures after the first ``failures`` (those the
    unfixed cell had too); with nothing named, the first breaks and failure the trial had."""
    def said(breaks: Sequence[Any], fails: Sequence[Any]) -> list[str]:
        parts = [f"{b.reason}" + (f" ({b.gb_code})" if b.gb_code else "") + (f": {b.explanation}" if b.explanation else "")
                 for b in list(breaks)[:2]]
        for f in list(fails)[:1]:
            first = (f.message or "").strip().splitlines()
            parts.append(f"{f.type}: {first[0] if first else ''}")
        return parts

    order = {k: i for i, k in enumerate(dict.fromkeys(named))}
    chosen = sorted((b for b in run.report.graph_breaks if _site(run, fix, b) in order),
                    key=lambda b: order[_site(run, fix, b)])
    parts = said(chosen, run.report.failures[failures:]) or said(run.report.graph_breaks, run.report.failures)
    return "; ".join(parts)[:600]


def _judge(targets: list[tuple[str, int]], report: CompileReport, cell: CellFunction, base: _Run, eager: _Run,
           tried: _Run, fix: Optional[PlannedFix]) -> tuple[FixStatus, str, Optional[float], str]:
    """(status, reason, max abs diff, torch's words) of one trial against the unfixed runs."""
    problems: list[str] = []
    gone: list[str] = []
    stayed: list[str] = []  # the problems that are still there
    still: list[tuple] = []  # the sites of the breaks that are still there
    base_sites, tried_sites = _sites(base, None), _sites(tried, fix)
    if fix is not None and fix.wrapped:  # judged on the graphs: DDP's own wrapper breaks stay, by design
        targets = [t for t in targets if t[0] == "eager_run"] or [("eager_run", 0)]
    for kind, i in targets:
        if kind == "eager_run":
            if compiled_compile_ids(base.report):
                return FixStatus.NOT_VERIFIED, ("the unfixed cell, compiled again on the same inputs, compiled a "
                                                "graph: nothing to compare"), None, ""
            graphs = len(compiled_compile_ids(tried.report))
            if not graphs:
                stayed.append("still no graph compiled")
                problems.append(stayed[-1])
            else:
                gone.append(f"{graphs} graph(s) compiled where the unfixed cell compiled none")
            continue
        item = getattr(report, kind)[i]
        if kind == "graph_breaks":
            site = _user_site(report, cell, item)
            if fix is not None and fix.rewrite is not None and site[1] == "cell":
                s = fix.suggestion
                inside = lambda k: k[:2] == site[:2] and s.first_line <= (k[2] or 0) <= (s.last_line or s.first_line)  # noqa: E731
            else:
                inside = lambda k: k == site  # noqa: E731
            if not any(inside(k) for k in base_sites):
                return FixStatus.NOT_VERIFIED, ("the unfixed cell, compiled again on the same inputs, did not break "
                                                "there: nothing to compare"), None, ""
            left = sum(n for k, n in tried_sites.items() if inside(k))
            still += [k for k in tried_sites if inside(k)]
            if left:
                stayed.append(f"the break at {report.where(item.frame.filename, item.frame.lineno)} is still there "
                              f"({left}x)")
                problems.append(stayed[-1])
            else:
                gone.append("the break is gone")
        elif kind == "recompiles":
            before, after = _recompiled(base, item.function), _recompiled(tried, item.function)
            limit_before = any(rc.limit_hit for rc in base.report.recompiles)
            if not before:
                return FixStatus.NOT_VERIFIED, (f"the unfixed cell, compiled again and called {base.calls} time(s) "
                                                "on copies of the same inputs, did not recompile: nothing to compare"
                                                ), None, ""
            if item.limit_hit:
                if any(rc.limit_hit for rc in tried.report.recompiles):
                    stayed.append("the recompile limit is still hit")
                    problems.append(stayed[-1])
                elif limit_before:
                    gone.append("the recompile limit is no longer hit")
            if after >= before:
                stayed.append(f"still {after} recompile(s) of `{item.function}`")
                problems.append(stayed[-1])
            else:
                gone.append("the recompile is gone" if after == 0 else f"recompiles went {before} -> {after}")
        else:
            same = [f for f in base.report.failures if f.type == item.type]
            if not same:
                return FixStatus.NOT_VERIFIED, "the unfixed cell, compiled again, did not fail so: nothing to compare", None, ""
            if any(f.type == item.type for f in tried.report.failures):
                stayed.append(f"it still fails ({item.type})")
                problems.append(stayed[-1])
            else:
                gone.append("the failure is gone")
    new = [k for k in tried_sites if k not in base_sites and not (
        fix is not None and fix.rewrite is not None and k[1] == "cell"
        and fix.suggestion.first_line <= (k[2] or 0) <= (fix.suggestion.last_line or fix.suggestion.first_line)
        and any(b[:2] == k[:2] for b in base_sites))]
    if new:
        problems.append("a new break: " + ", ".join(f"{k[0]} at {'cell line' if k[1] == 'cell' else k[1]} {k[2]}"
                                                    for k in new[:3]))
    unfixed = max(len(base.report.recompiles), len(report.recompiles))  # compiled again, or in your own run
    if not any(kind == "recompiles" for kind, _ in targets) and len(tried.report.recompiles) > unfixed:
        problems.append(f"it recompiles ({len(tried.report.recompiles)}x) where the unfixed cell recompiled {unfixed}x")
    if len(tried.report.failures) > len(base.report.failures):
        problems.append(f"a new failure: {tried.report.failures[-1].type}")
    if len(tried.report.ran_without_compiling) > len(base.report.ran_without_compiling):
        problems.append("a frame now runs without compiling")
    if tried.error and not eager.error:
        problems.append(f"the fixed cell raises {tried.error}")
    diff, not_compared = None, ""
    if not tried.error and not eager.error:
        unstable = eager.unstable
        mine = {p: v for p, v in tried.snapshot.items() if p not in unstable}
        theirs = {p: v for p, v in eager.snapshot.items() if p not in unstable}
        check = check_outputs(mine, theirs)
        diff = check.max_abs_diff if check.max_abs_diff is not None else 0.0
        if not check.match:
            dropped = sorted(p for p in eager.changed - tried.changed if p in theirs and p in mine)
            if dropped:  # the effect a fix took away, named first: `print(y.add_(1))` commented out
                shown = ", ".join(f"`{_expression(p)}`" for p in dropped[:3])
                problems.append(f"it drops the in-place change of {shown} that the cell makes uncompiled")
            problems.append(f"the outputs differ from the unfixed cell's run eagerly ({check.message})")
        elif unstable:
            varies = sorted({p.split("[")[0].split(" ", 1)[-1] for p in unstable})
            not_compared = (f"; not compared: {', '.join(f'`{v}`' for v in varies[:3])}, which differ"
                            f"{'s' if len(varies) == 1 else ''} from one uncompiled run to the next")
    elif tried.error and eager.error and tried.error.split(":")[0] != eager.error.split(":")[0]:
        problems.append(f"the fixed cell raises {tried.error}, the unfixed one (eager) {eager.error}")
    if problems:
        remaining = [p for p in problems if p in stayed]
        others = [p for p in problems if p not in stayed]
        reason = (f"did not remove it: {'; '.join(remaining + others)}" if remaining
                  else f"{', '.join(dict.fromkeys(gone)) or 'the problem is gone'}, but {'; '.join(others)}")
        return FixStatus.FAILED, reason, diff, _torch_words(tried, fix, [*new, *still], len(base.report.failures))
    what = ", ".join(dict.fromkeys(gone)) or "the problem is gone"
    outputs = f"outputs equal (max abs diff {diff:.3g})" if diff is not None else \
        "the cell raises as it does uncompiled"
    return FixStatus.VERIFIED, f"{what}, {outputs}{not_compared}", diff, ""


# -- the whole verification --------------------------------------------------------------------------
def _calls_needed(report: CompileReport) -> int:
    """Calls of the cell per scratch run: one, or as many as the recompiles needed (at most MAX_CALLS)."""
    return min(MAX_CALLS, 1 + len(report.recompiles)) if report.recompiles else 1


def _with_checks(report: CompileReport, checks: dict[tuple[str, int], FixCheck], verification: FixVerification
                 ) -> CompileReport:
    """A new report: each answered item's suggestion with its check; the verification record. A setting the
    doctor withheld as unproven with the others (``Suggestion.unproven_code``) is given as code once the
    settings were verified together here."""
    together_ok = bool(verification.together) and all(t.status == FixStatus.VERIFIED for t in verification.together)
    lists = {}
    for kind in ("graph_breaks", "recompiles", "failures"):
        items = list(getattr(report, kind))
        for i, item in enumerate(items):
            check = checks.get((kind, i))
            if check is not None and item.suggestion is not None:
                s = dataclasses.replace(item.suggestion, check=check)
                if s.unproven_code and check.status == FixStatus.VERIFIED and together_ok:
                    s = dataclasses.replace(s, code=s.unproven_code, unproven_code="")  # proven with the others
                items[i] = dataclasses.replace(item, suggestion=s)
        lists[kind] = items
    run = report.eager_run
    check = checks.get(("eager_run", 0))
    if check is None and run is not None and run.suggestion is not None and run.suggestion.code:
        check = next((c for (kind, i), c in checks.items() if kind == "graph_breaks"  # the break's answer, tried there
                      and report.graph_breaks[i].suggestion is not None
                      and report.graph_breaks[i].suggestion.code == run.suggestion.code), None)
    if run is not None and run.suggestion is not None and check is not None:
        lists["eager_run"] = dataclasses.replace(run, suggestion=dataclasses.replace(run.suggestion, check=check))
    return dataclasses.replace(report, fix_verification=verification, **lists)


def verify_fixes(report: CompileReport, cell: CellFunction, body: str, header: Optional[str], namespace: dict,
                 settings: CompileSettings, *, budget_s: float = DEFAULT_BUDGET_S,
                 first: Optional[FirstState] = None) -> CompileReport:
    """``report`` with each suggested fix tried on the cell (see the module's documentation): a new
    report whose suggestions carry their :class:`FixCheck` and whose ``fix_verification`` says what
    was covered. ``cell`` is the user's cell function (its ``body`` as the user wrote it, under
    ``header``), ``namespace`` its notebook namespace; nothing of theirs is changed. ``first``: the
    names the cell reads as its first call found them (:func:`before_first_call`, taken before that
    call); the scratch runs start from them, else from the namespace as it is now."""
    t0 = time.perf_counter()
    verification = FixVerification(budget_s=float(budget_s))
    try:
        plans = plan_fixes(report, cell, body, namespace)
    except Exception as exc:  # noqa: BLE001 - verifying must never cost the user the report
        verification.not_verified = f"the fixes could not be read ({type(exc).__name__}: {exc})"
        return dataclasses.replace(report, fix_verification=verification)
    verification.fixes = len(plans)
    checks: dict[tuple[str, int], FixCheck] = {}

    def record(plan: PlannedFix, check: FixCheck) -> None:
        for target in plan.targets:
            checks[target] = check

    todo = [p for p in plans if not p.why_not]
    for p in plans:
        if p.why_not:
            record(p, FixCheck(FixStatus.NOT_VERIFIED, p.why_not, list(p.applied)))
    why_not = _why_not_here(report, cell, body, namespace, bool(todo))
    if why_not:
        verification.not_verified = why_not
        for p in todo:
            record(p, FixCheck(FixStatus.NOT_VERIFIED, why_not, list(p.applied)))
        verification.spent_s = time.perf_counter() - t0
        return _with_checks(report, checks, verification)
    if not todo:
        verification.spent_s = time.perf_counter() - t0
        return _with_checks(report, checks, verification)

    names = _read_names(cell, namespace) - _written_first(body)
    rng = _RandomState.save()
    census = _census()
    scratch = _Scratch(cell, body, header, namespace, names, settings, _calls_needed(report), rng, first)
    verification.calls = scratch.calls
    verification.isolation = ("each scratch compile is a new cell function (its own code object)"
                              + ("; frames torch compiles beside it keep the scratch versions in their own bucket "
                                 "(torch.compile(isolate_recompiles=True)), which your calls never look up (they stay "
                                 "until torch lets go of that code, and count toward accumulated_recompile_limit)"
                                 if _isolates() else ""))
    try:
        try:
            eager = scratch.run(compiled=False)
            eager.unstable = _unstable(eager.snapshot, scratch.run(compiled=False).snapshot)  # a clock, an id
            base = scratch.run()
            base.snapshot = None  # judged on its report; its copy of the state is let go
        except NotCopyable as exc:
            verification.not_verified = f"the cell's state cannot be copied: {exc}"
            for p in todo:
                record(p, FixCheck(FixStatus.NOT_VERIFIED, verification.not_verified, list(p.applied)))
            return _with_checks(report, checks, verification)
        if base.error and not eager.error:
            why = f"the unfixed cell, compiled again on copies of its inputs, raised {base.error}"
            for p in todo:
                record(p, FixCheck(FixStatus.NOT_VERIFIED, why, list(p.applied)))
            todo = []
        settings_ok: list[PlannedFix] = []
        for n, p in enumerate(todo):
            spent = time.perf_counter() - t0
            if spent >= budget_s:
                record(p, FixCheck(FixStatus.NOT_VERIFIED, f"the time budget ({budget_s:g} s) was spent before it was "
                                   f"tried ({n} of {len(todo)} fixes tried in {spent:.1f} s; raise it with "
                                   "--verify-budget)", list(p.applied)))
                continue
            t1 = time.perf_counter()
            try:
                tried = scratch.run(p)
            except Exception as exc:  # noqa: BLE001 - a fix that cannot even run is a failed fix
                record(p, FixCheck(FixStatus.FAILED, f"applying it raised {type(exc).__name__}: {exc}"[:300],
                                   list(p.applied), seconds=time.perf_counter() - t1))
                continue
            status, reason, diff, words = _judge(p.targets, report, cell, base, eager, tried, p)
            if status == FixStatus.NOT_VERIFIED and first is not None and first.why_not:
                reason += f"; the state before the cell's first call could not be kept ({first.why_not})"
            record(p, FixCheck(status, reason, list(p.applied), diff, words, time.perf_counter() - t1))
            verification.tried += 1
            if status == FixStatus.VERIFIED and p.is_setting:
                settings_ok.append(p)
        if len(settings_ok) > 1:
            together = _together(settings_ok, report, cell, scratch, base, eager, budget_s, t0)
            verification.together.append(together)
            if together.status == FixStatus.FAILED:  # said beside each: it holds alone, not with the others
                for p in settings_ok:
                    others = [k for q in settings_ok if q is not p for k in q.applied]
                    check = checks[p.targets[0]]
                    record(p, dataclasses.replace(check, reason=(
                        f"{check.reason}; alone only: applied together with {', '.join(others)} it fails "
                        f"({together.reason.split(': ', 1)[-1]})")))
    finally:
        rng.restore()
        scratch.release()
        for filename in scratch.filenames:
            linecache.cache.pop(filename, None)
        grown = _grown(census)
        if grown:  # never expected: say so rather than hide it
            verification.isolation += "; BUT the compiled versions of " + ", ".join(grown) + " changed"
        verification.compiles = scratch.compiles
        verification.spent_s = time.perf_counter() - t0
    return _with_checks(report, checks, verification)


def _together(plans: list[PlannedFix], report: CompileReport, cell: CellFunction, scratch: _Scratch, base: _Run,
              eager: _Run, budget_s: float, t0: float) -> FixCheck:
    """The settings that each worked alone, applied together."""
    merged: dict[str, dict[str, Any]] = {}
    applied, targets = [], []
    for p in plans:
        for mod, values in p.settings.items():
            for name, value in values.items():
                current = merged.setdefault(mod, {}).get(name)
                merged[mod][name] = (set(current) | set(value)) if isinstance(value, set) and current else value
        applied += p.applied
        targets += p.targets
    keys = [f"{mod}.{name}" for mod, values in merged.items() for name in values]
    spent = time.perf_counter() - t0
    if spent >= budget_s:
        return FixCheck(FixStatus.NOT_VERIFIED, f"the time budget ({budget_s:g} s) was spent before the settings were "
                        "tried together", applied, together=keys)
    t1 = time.perf_counter()
    try:
        tried = scratch.run(None, settings=merged)
    except Exception as exc:  # noqa: BLE001
        return FixCheck(FixStatus.FAILED, f"applied together they raised {type(exc).__name__}: {exc}"[:300], applied,
                        together=keys)
    status, reason, diff, words = _judge(targets, report, cell, base, eager, tried, None)
    if status == FixStatus.FAILED:
        reason = "each works alone, together they fail: " + reason
    return FixCheck(status, reason, applied, diff, words, time.perf_counter() - t1, together=keys)


def _why_not_here(report: CompileReport, cell: CellFunction, body: str, namespace: dict, any_fix: bool) -> str:
    """Why this cell's fixes cannot be tried at all (empty when they can)."""
    if not any_fix:
        return ""
    writes = _module_attribute_writes(body, namespace)
    if writes:
        return (f"the cell changes {', '.join(f'`{w}`' for w in writes[:3])}, state of a module that a copy cannot "
                "hold, so it cannot run apart from yours")
    names = _read_names(cell, namespace)
    closures = _closure_state(namespace, names)
    if closures:
        return (f"{', '.join(f'`{n}`' for n in closures)} closes over tensors or modules that a copy cannot reach, "
                "so the cell cannot run apart from your state")
    import torch

    nested = _own_frames(report, cell)
    if nested and not _isolates():
        return (f"torch compiles {', '.join(f'`{n}`' for n in nested[:3])} as frame(s) of their own beside the cell; "
                f"a scratch compile would add versions to their compiled code, and torch {torch.__version__} cannot "
                "keep a scratch compile apart (torch.compile's isolate_recompiles comes with a newer torch)")
    return ""
