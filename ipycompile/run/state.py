"""The state a cell changes in place, kept after its first call and put back after the calls
that only measure it.

``%%compile`` calls the cell more than once: the first call (compile and run, as a plain cell
would), then warm-up, timed calls, the eager comparison. A training step (``loss.backward();
opt.step()``) run that way trains the model once per call: the user would continue with weights,
gradients and optimizer state a plain run of the cell never gives. After the first call,
:func:`keep` copies what the cell can reach and change in place, and the function it returns
puts it back once the measuring is done:

* modules: parameters, buffers and tensors held as plain attributes (values copied back in place, so
  compiled code that guards on them stays valid) and gradients;
* optimizers: each parameter's state (tensors copied back in place, other values set back) and
  the parameter groups' settings (``lr``, ``betas``, ...);
* learning-rate schedulers: their ``state_dict``;
* tensors: values and gradients, in place;
* the random number generators (torch's CPU and CUDA ones, Python's, NumPy's).

The objects are those named by the cell's code, by the functions it calls (their globals and
closures, a few levels down) and held in lists, tuples and dicts among them. What cannot be put
back is said (:attr:`Kept.not_restored`): a list, dict or other object the cell changes in place
(``log.append(loss)``, ``stats["n"] += 1``), a file it writes. Names the cell assigns are
:func:`ipycompile.run.cell.namespace_state`'s.
"""

from __future__ import annotations

import ast
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .accuracy import referenced_names

__all__ = ["RandomState", "Kept", "Watch", "keep", "reachable", "unrestorable"]

#: how deep :func:`reachable` follows functions, containers and attributes
DEPTH = 3
#: methods that change a list, dict, set or file in place
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "popleft", "appendleft", "remove", "clear", "update",
                       "add", "discard", "setdefault", "sort", "reverse", "write", "writelines", "put"})
#: calls that write files
_WRITERS = frozenset({"save", "to_csv", "to_json", "to_parquet", "savefig", "write_text", "write_bytes", "savez",
                      "dump"})


@dataclass
class RandomState:
    """The random number generators' state: torch's CPU and CUDA ones, Python's, NumPy's."""

    torch_cpu: Any
    cuda: Any
    python: Any
    numpy: Any

    @classmethod
    def save(cls) -> "RandomState":
        import torch

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        np = sys.modules.get("numpy")
        return cls(torch.get_rng_state(), cuda, random.getstate(), np.random.get_state() if np is not None else None)

    def restore(self) -> None:
        import torch

        torch.set_rng_state(self.torch_cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.python)
        np = sys.modules.get("numpy")
        if np is not None and self.numpy is not None:
            np.random.set_state(self.numpy)


@dataclass
class Kept:
    """What :func:`keep` copied: ``restored`` names what :meth:`restore` puts back (``model``,
    ``opt``), ``not_restored`` what the cell may change that nothing puts back, each with why."""

    restore: Callable[[], None]
    restored: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)


def _function_code(value: Any) -> Optional[types.CodeType]:
    fn = getattr(value, "__func__", value)  # a bound method's function
    return getattr(fn, "__code__", None) if isinstance(fn, types.FunctionType) else None


def reachable(code: types.CodeType, scope: dict, depth: int = DEPTH) -> dict[str, Any]:
    """``{name: object}`` for what ``code`` can reach by name in ``scope`` (its globals): the
    values it names, and, ``depth`` levels down, the globals and closures of the Python functions
    among them and the items of lists, tuples and dicts. The name is how the user knows the object
    (``model``, ``train_step.opt``, ``models[1]``)."""
    out: dict[str, Any] = {}
    seen: set[int] = set()

    def visit(name: str, value: Any, level: int) -> None:
        if id(value) in seen or isinstance(value, (types.ModuleType, type)) or value is None:
            return
        seen.add(id(value))
        out[name] = value
        if level <= 0:
            return
        inner = _function_code(value)
        if inner is not None:
            fn = getattr(value, "__func__", value)
            g = getattr(fn, "__globals__", {})
            for n in sorted(referenced_names(inner)):
                if n in g:
                    visit(n, g[n], level - 1)
            for n, c in zip(inner.co_freevars, getattr(fn, "__closure__", None) or ()):
                try:
                    visit(f"{name}.{n}", c.cell_contents, level - 1)
                except ValueError:
                    continue
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value[:64]):
                visit(f"{name}[{i}]", v, level - 1)
        elif isinstance(value, dict):
            for k, v in list(value.items())[:64]:
                visit(f"{name}[{k!r}]", v, level - 1)

    for n in sorted(referenced_names(code)):
        if n in scope:
            visit(n, scope[n], depth)
    return out


def unrestorable(source: str, scope: dict) -> list[str]:
    """What the cell's own code changes in place that :func:`keep` cannot put back: a global list,
    dict, set or other object it mutates (``log.append(x)``, ``stats["n"] = 1``, ``obj.count += 1``)
    and files it writes (``open(..., "w")``, ``torch.save``, ``df.to_csv``), each as the user wrote
    it, with what it does."""
    import torch

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[str] = []

    def kept_kind(value: Any) -> bool:
        return isinstance(value, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer)) or isinstance(
            value, getattr(torch.optim.lr_scheduler, "LRScheduler", ()))

    def base(node: ast.AST) -> Optional[str]:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                name = base(f.value)
                if f.attr in _WRITERS and name is not None:
                    out.append(f"{ast.unparse(node)[:60]} writes a file")
                elif f.attr in _MUTATORS and name in scope and not kept_kind(scope[name]):
                    out.append(f"`{ast.unparse(f.value)[:40]}` ({type(scope[name]).__name__}, .{f.attr})")
            elif isinstance(f, ast.Name) and f.id == "open" and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax+")
                    for a in [*node.args[1:2], *[k.value for k in node.keywords if k.arg == "mode"]]):
                out.append(f"{ast.unparse(node)[:60]} writes a file")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                name = base(t)
                if name in scope and not kept_kind(scope[name]) and not callable(scope[name]):
                    out.append(f"`{ast.unparse(t)[:40]}` ({type(scope[name]).__name__}, assigned in place)")
    return list(dict.fromkeys(out))


def _tensor(t: Any) -> Callable[[], None]:
    import torch

    value = t.detach().clone()
    grad = t.grad.detach().clone() if t.is_leaf and t.grad is not None else None
    had_grad = t.is_leaf and t.grad is not None

    def restore() -> None:
        with torch.no_grad():
            if t.shape == value.shape:
                t.copy_(value)
        if t.is_leaf:
            if not had_grad:
                t.grad = None
            elif t.grad is not None and t.grad.shape == grad.shape:
                with torch.no_grad():
                    t.grad.copy_(grad)
            else:
                t.grad = grad.clone()

    return restore


def _attribute_tensors(m: Any) -> list:
    """Tensors ``m`` and its submodules hold as plain attributes (``self.calls = torch.zeros(())``:
    neither parameter nor buffer), which a forward may change in place as well."""
    import torch

    return [v for x in m.modules() for v in vars(x).values() if isinstance(v, torch.Tensor)]


def _module(m: Any) -> Callable[[], None]:
    parts = [_tensor(p) for p in m.parameters()] + [_tensor(b) for b in m.buffers()]
    parts += [_tensor(t) for t in _attribute_tensors(m)]
    training = [(x, x.training) for x in m.modules()]

    def restore() -> None:
        for r in parts:
            r()
        for x, was in training:
            x.training = was

    return restore


def _optimizer(opt: Any) -> Callable[[], None]:
    import torch

    def copy(v: Any) -> Any:
        return v.detach().clone() if isinstance(v, torch.Tensor) else v

    state = {p: {k: copy(v) for k, v in s.items()} for p, s in opt.state.items()}
    groups = [{k: copy(v) for k, v in g.items() if k != "params"} for g in opt.param_groups]

    def restore() -> None:
        for p in list(opt.state):
            if p not in state:
                del opt.state[p]
        for p, saved in state.items():
            now = opt.state[p]
            for k in list(now):
                if k not in saved:
                    del now[k]
            _put_back(now, saved, copy)
        for g, saved in zip(opt.param_groups, groups):
            _put_back(g, saved, copy)

    return restore


def _put_back(now: dict, saved: dict, copy: Callable[[Any], Any]) -> None:
    """``now``'s entries set back to ``saved``'s: tensors copied in place where the shape allows (compiled
    code that guards on them stays valid), other values replaced."""
    import torch

    for k, v in saved.items():
        cur = now.get(k)
        if isinstance(v, torch.Tensor) and isinstance(cur, torch.Tensor) and cur.shape == v.shape:
            with torch.no_grad():
                cur.copy_(v)
        else:
            now[k] = copy(v)


def _scheduler(s: Any) -> Callable[[], None]:
    import copy

    saved = copy.deepcopy(s.state_dict())
    last = list(getattr(s, "_last_lr", []) or [])

    def restore() -> None:
        s.load_state_dict(copy.deepcopy(saved))
        if last:
            s._last_lr = list(last)

    return restore


def _tensor_mark(t: Any) -> tuple:
    g = t.grad if t.is_leaf else None
    return (id(t), t._version, None if g is None else (id(g), g._version))


def _mark(value: Any) -> Any:
    """What changes when ``value`` is changed in place: tensors' version counters, gradients,
    optimizer and scheduler state; cheap (no copy)."""
    import torch

    if isinstance(value, torch.Tensor):
        return _tensor_mark(value)
    if isinstance(value, torch.nn.Module):
        return (tuple(_tensor_mark(t) for t in value.parameters()), tuple(_tensor_mark(t) for t in value.buffers()),
                tuple(_tensor_mark(t) for t in _attribute_tensors(value)), tuple(x.training for x in value.modules()))
    if isinstance(value, torch.optim.Optimizer):
        state = tuple((id(p), tuple((k, _tensor_mark(v) if isinstance(v, torch.Tensor) else repr(v))
                                    for k, v in sorted(s.items()))) for p, s in value.state.items())
        groups = tuple(tuple((k, _tensor_mark(v) if isinstance(v, torch.Tensor) else repr(v))
                             for k, v in sorted(g.items()) if k != "params") for g in value.param_groups)
        return state, groups
    sched = getattr(torch.optim.lr_scheduler, "LRScheduler", ())
    if sched and isinstance(value, sched):
        return repr(value.state_dict())
    return None


class Watch:
    """The state a cell can change in place, watched from before its first call: :meth:`keep`,
    after it, copies what that call changed (a training step's model, optimizer, scheduler; an
    inference cell changes nothing, and nothing is copied) and returns what puts it back."""

    def __init__(self, code: types.CodeType, scope: dict, source: str = "") -> None:
        self.objects = {n: v for n, v in reachable(code, scope).items() if _mark(v) is not None}
        self.marks = {n: _mark(v) for n, v in self.objects.items()}
        self.source, self.scope = source, scope

    def keep(self) -> Kept:
        changed = {n: v for n, v in self.objects.items() if _mark(v) != self.marks[n]}
        kept = _keep(changed)
        kept.not_restored = unrestorable(self.source, self.scope) if self.source else []
        return kept


def keep(code: types.CodeType, scope: dict, source: str = "") -> Kept:
    """Copy every object's state :func:`reachable` from ``code`` finds now, changed or not (see
    :class:`Watch` for copying only what a call changed); the returned :class:`Kept` puts it back."""
    kept = _keep(reachable(code, scope))
    kept.not_restored = unrestorable(source, scope) if source else []
    return kept


def _keep(objects: dict[str, Any]) -> Kept:
    import torch

    restores: list[Callable[[], None]] = []
    restored: list[str] = []
    done: set[int] = set()
    sched_kind = getattr(torch.optim.lr_scheduler, "LRScheduler", ())
    # modules first: an optimizer's parameters are a module's, copied once
    order = sorted(objects.items(), key=lambda kv: not isinstance(kv[1], torch.nn.Module))
    for name, value in order:
        try:
            if isinstance(value, torch.nn.Module):
                restores.append(_module(value))
                done.update(id(p) for p in value.parameters())
                done.update(id(b) for b in value.buffers())
            elif isinstance(value, torch.optim.Optimizer):
                restores.append(_optimizer(value))
                for g in value.param_groups:  # parameters no module named: copied with the optimizer
                    for p in g["params"]:
                        if id(p) not in done:
                            done.add(id(p))
                            restores.append(_tensor(p))
            elif sched_kind and isinstance(value, sched_kind):
                restores.append(_scheduler(value))
            elif isinstance(value, torch.Tensor) and id(value) not in done:
                done.add(id(value))
                restores.append(_tensor(value))
            else:
                continue
        except Exception:  # noqa: BLE001 - an object that cannot be copied: said, never in the way of the run
            continue
        restored.append(name)
    rng = RandomState.save()

    def restore() -> None:
        for r in restores:
            r()
        rng.restore()

    return Kept(restore, restored)
