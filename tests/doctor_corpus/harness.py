"""Run a corpus case under ``ipycompile.capture()`` and judge the doctor against torch.

For one :class:`~doctor_corpus.Case`, :func:`run_case` compiles the case's function,
makes its calls under ``ipycompile.capture()`` while torch's own ``graph_breaks`` and
``recompiles`` log records (``TORCH_LOGS=graph_breaks,recompiles``) are collected, and
returns a :class:`Result`:

* **captured**: the report's graph breaks (hits) and recompiles equal torch's own count
  of the same run (one ``graph_breaks`` record per break hit: "Graph break in user
  code", its duplicate form, and the "skip" form for a frame torch could not resume;
  one ``recompiles`` record per recompile);
* **located**: each break's line in the report (``GraphBreak.frame``, or the user's lines
  the report shows it reached from when it is inside a function they share) is a line of
  the case marked ``# BREAK``, and every marked line is reported (without markers: the
  case's own line in torch's record, the innermost frame of the corpus file in its
  user traceback); each recompile names the function and file torch's record names;
* the answer's **kind** (``Suggestion.kind``; for a recompile whose suggestion has no
  kind, the word its title starts with; ``none`` without a suggestion); **specific**
  when it is not ``unknown`` / ``none``;
* the **fix**: applied as the user would apply it, the fix's record (``Suggestion.fix``) read by
  ``ipycompile.run.verify.read_fix_code`` (the reading ``--verify-fixes`` uses): a rewrite
  of the case's lines with ``analysis.source.apply_suggestion``; ``torch._dynamo.config`` /
  ``torch._inductor.config`` settings patched around the compile and calls; a compile
  option (``torch.compile(..., dynamic=True)``); a statement to run before the call
  (``mark_dynamic`` / ``mark_unbacked`` / ``x = x.contiguous()`` / ``i = torch.tensor(i)``)
  written into the case's source before the line that made the call (the recompile's
  ``call_site``) and applied as a rewrite, else on the argument passed by position, else on
  the case's own variable before the first call. The case runs again with it (once per
  distinct fix of the case): ``proven`` when that break or recompile is gone, nothing
  new breaks or fails, and the outputs equal eager's; ``wrong`` otherwise (with why; a
  name the user's code lacks at that line is wrong); ``unchecked`` when the code is not of a
  form applied here (counted apart, never as proven); ``inapplicable`` when no line of the
  case makes the call the statement must precede. A rewrite that keeps the file's lines in place is judged at its own break's
  line (several `graph_break()` lines each have their own fix); a break at a new line is
  accepted only where the fix let code that ran uncompiled before compile now (the
  break hidden behind it, answered on its own). The rewritten module keeps the data
  the unfixed run saw (module-level tensors are not drawn again), and a statement
  moved out of the compiled code keeps the names it used.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import logging
import re
import sys
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import torch

import ipycompile
from ipycompile.analysis.doctor import doctor_errors
from ipycompile.analysis.source import apply_suggestion, indent_of
from ipycompile.report.model import Failure, Mark, Rebind, Suggestion
from ipycompile.run.verify import read_fix_code

from . import Case, cases_in, checks

__all__ = ["TorchLog", "Result", "Item", "run_case", "expected_lines"]

_BREAK_RECORD = ("Graph break in user code", "Graph break (user stack suppressed", "Graph break: torch.compile cannot properly resume")
_RECOMPILE = re.compile(r"^Recompiling function (?P<fn>\S+) in (?P<file>.+):(?P<line>\d+)$", re.M)
_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


class TorchLog(logging.Handler):
    """torch's own ``graph_breaks`` / ``recompiles`` records while the ``with`` block runs.

    Turns the two artifacts on with ``torch._logging.set_logs`` and puts the logging
    state back afterwards (torch's own stderr handler is quietened meanwhile)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.breaks: list[str] = []
        self.recompiles: list[str] = []
        self.suppressed = 0  # duplicate break records without a user stack (see break_sites)
        self._quiet: list[tuple[logging.Handler, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        name = record.name
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001
            return
        if name.endswith("__graph_breaks") and msg.startswith(_BREAK_RECORD):
            self.breaks.append(msg)
        elif name.endswith("__recompiles") and msg.startswith("Recompiling function"):
            self.recompiles.append(msg)

    def __enter__(self) -> "TorchLog":
        state = torch._logging._internal.log_state
        self._saved = (dict(state.log_qname_to_level), set(state.artifact_names))
        torch._logging.set_logs(graph_breaks=True, recompiles=True)
        dyn = logging.getLogger("torch._dynamo")
        for h in dyn.handlers:
            self._quiet.append((h, h.level))
            h.setLevel(logging.CRITICAL + 1)
        dyn.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        logging.getLogger("torch._dynamo").removeHandler(self)
        for h, level in self._quiet:
            h.setLevel(level)
        # torch's logging as it was: the same settings, applied again (what set_logs does)
        internal = torch._logging._internal
        internal.log_state.log_qname_to_level, internal.log_state.artifact_names = self._saved
        internal._init_logs()

    def recompiled(self) -> list[tuple[str, str]]:
        """(function, file) of each recompile torch logged."""
        out = []
        for msg in self.recompiles:
            m = _RECOMPILE.search(msg)
            if m:
                out.append((m.group("fn"), m.group("file")))
        return out

    def break_sites(self, filename: str) -> list[tuple[str, int]]:
        """For each break record: (file, line) of the innermost frame of ``filename`` in its user
        traceback, else (for a break wholly inside a library the user compiled: ``torch.compile(model)``)
        the line torch's record names ("Graph break in user code at FILE:LINE", else the innermost frame)."""
        out = []
        self.suppressed = 0
        seen: dict = {}  # torch's "in user code at" place -> the site its full record gave
        for msg in self.breaks:
            frames = [(m.group("file"), int(m.group("line"))) for m in _FILE_LINE.finditer(msg)]
            mine = [f for f in frames if f[0] == filename]
            m = re.search(r"in user code at (.+):(\d+)", msg)
            at = (m.group(1), int(m.group(2))) if m else None
            if mine:
                site = mine[-1]
            elif at is not None and at in seen and "user stack suppressed" in msg:
                self.suppressed += 1  # a duplicate of a break in a library: which user line reached it, torch does not say
                continue
            else:
                site = at or (frames[-1] if frames else None)
            if site is None:
                continue
            if at is not None:
                seen.setdefault(at, site)
            out.append(site)
        return out

    def break_lines(self, filename: str) -> list[int]:
        """For each break record: the innermost line of ``filename`` in its user traceback."""
        out = []
        for msg in self.breaks:
            lines = [int(m.group("line")) for m in _FILE_LINE.finditer(msg) if m.group("file") == filename]
            if not lines:
                m = re.search(r"in user code at (.+):(\d+)", msg)
                if m and m.group(1) == filename:
                    lines = [int(m.group(2))]
            if lines:
                out.append(lines[-1])
        return out


@dataclass
class Item:
    """One break site or recompile of a case, as the doctor answered it."""

    what: str  # "break" | "recompile" | "failure"
    code: str  # the GB code ("GB0170"), or the recompile's change kind ("size", "value", ...)
    kind: str  # the answer's kind
    specific: bool
    line: Optional[int] = None  # the case line the report shows (breaks)
    title: str = ""
    fix: str = "none"  # "none" | "proven" | "wrong" | "inapplicable" | "unchecked"
    fix_detail: str = ""
    limit_hit: bool = False  # a recompile past which torch stopped compiling (its fix is judged on that)
    wrong_class: str = ""  # with fix "wrong": the class of wrong answer (doctor_corpus.checks.CLASSES)
    settings: dict = field(default_factory=dict)  # the torch._dynamo.config settings its fix applies


@dataclass
class Result:
    case: str
    source: str
    module: str
    torch_breaks: int = 0
    torch_recompiles: int = 0
    torch_errors: int = 0  # a compile error torch raised into the user's call (eager ran)
    report_breaks: int = 0
    report_recompiles: int = 0
    report_failures: int = 0
    captured: bool = False
    located: bool = False
    located_detail: str = ""
    expected_lines: list[int] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    error: str = ""  # the case could not run at all
    skipped: str = ""  # the case was not run: why (a library it needs is not installed)
    doctor_errors: list[str] = field(default_factory=list)  # exceptions raised inside the doctor (each a missing answer)
    user_error: str = ""  # the case's calls raised (compiled)
    same_as_eager: Optional[bool] = None
    seconds: float = 0.0

    @property
    def breaks_or_recompiles(self) -> bool:
        """Whether the case has something to answer: a break, a recompile, a compile error, or compiled
        outputs that differ from eager's (a silent change, answered or not)."""
        return bool(self.torch_breaks or self.torch_recompiles or self.torch_errors or self.silent_change) and not self.skipped

    @property
    def silent_change(self) -> bool:
        return any(it.what == "semantics" for it in self.items)

    def to_json(self) -> dict:
        return asdict(self)


# -- running a case ---------------------------------------------------------------------------
def _call(fn: Callable, call: Any) -> Any:
    if callable(call) and not isinstance(call, tuple):
        return call(fn)
    return fn(*call)


def _run_calls(fn: Callable, calls: list) -> tuple[list, str]:
    outs: list = []
    for call in calls:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # a case that prints (the user's print()) stays quiet
                outs.append(_call(fn, call))
        except Exception as exc:  # noqa: BLE001 - a case that raises is data
            module = type(exc).__module__
            origin = "torch: " if module.startswith("torch._dynamo") else "torch-other: " if module.startswith("torch.") else ""
            return outs, origin + f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return outs, ""


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        try:
            torch.testing.assert_close(a, b, equal_nan=True)
            return True
        except AssertionError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, torch.nn.Module) or callable(a) or inspect.isgenerator(a):
        return type(a) is type(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return type(a) is type(b)


def _build(c: Case) -> tuple[Callable, list]:
    torch.manual_seed(0)
    return c.make()


def _build_with_locals(c: Case) -> tuple[Callable, list, dict]:
    """:func:`_build`, and the names the case's code made (``make``'s locals: the user's variables,
    which a fix such as ``mark_dynamic(batch, 0)`` names)."""
    names: dict = {}
    code = c.make.__code__

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            names.update(frame.f_locals)

    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn, calls = _build(c)
    finally:
        sys.setprofile(old)
    return fn, calls, names


def _eager(c: Case) -> tuple[list, str]:
    fn, calls = _build(c)
    torch.manual_seed(1)
    return _run_calls(fn, calls)


@dataclass
class _Run:
    report: Any
    log: TorchLog
    outs: list
    error: str


def _compiled_run(c: Case, config: Optional[dict] = None, arg_fix: Optional[Callable] = None,
                  before_call: str = "", names: Optional[dict] = None, compile_kwargs: Optional[dict] = None,
                  local_marks: Optional[list] = None, inductor: Optional[dict] = None) -> _Run:
    torch._dynamo.reset()
    if local_marks:  # `mark_dynamic(batch, 0)` on the case's own variable `batch`, before the first call
        fn, calls, made = _build_with_locals(c)
        for name, mark, dim in local_marks:
            value = made.get(name)
            if not isinstance(value, torch.Tensor):
                raise _Unchecked(f"`{name}` is not a tensor the case's code made")
            _mark_function(mark)(value, dim)
    else:
        fn, calls = _build(c)
    if arg_fix is not None:
        calls = [arg_fix(fn, call) for call in calls]
    if before_call:  # a statement moved out of the compiled code runs before each call, in its namespace:
        # the names the function sees, and those the unfixed function saw (``names``), which the moved
        # statement took with it (`warnings` in `warnings.warn("test")`, a closed-over module)
        ns = {**(names or {}), **_names_of(fn)}
        calls = [_preceded(call, before_call, ns) for call in calls]
    compiled = torch.compile(fn, backend=c.backend, **{**c.compile_kwargs, **(compile_kwargs or {})})
    settings = {**c.config, **(config or {})}
    patch = torch._dynamo.config.patch(**settings) if settings else contextlib.nullcontext()
    patch_inductor = torch._inductor.config.patch(inductor) if inductor else contextlib.nullcontext()
    with patch, patch_inductor, TorchLog() as log, ipycompile.capture() as cap:
        torch.manual_seed(1)
        outs, err = _run_calls(compiled, calls)
    torch._dynamo.reset()
    return _Run(cap.report, log, outs, err)


def _preceded(call: Any, stmt: str, ns: dict) -> Callable:
    def run(f: Callable) -> Any:
        exec(stmt, ns)  # noqa: S102 - the user's own statement, moved
        return _call(f, call)

    return run


# -- where the case says breaks are --------------------------------------------------------------
def case_file(c: Case) -> str:
    return inspect.getsourcefile(c.make) or ""


def expected_lines(c: Case) -> list[int]:
    """The lines of the case marked ``# BREAK`` (file line numbers)."""
    lines, first = inspect.getsourcelines(c.make)
    return [first + i for i, ln in enumerate(lines) if re.search(r"#\s*BREAK\b", ln)]


# -- the answers --------------------------------------------------------------------------------
def _kind(s) -> str:
    if s is None:
        return "none"
    if s.kind:
        return s.kind
    m = re.match(r"^([\w.]+):", s.title or "")
    return m.group(1) if m else "none"


def _specific(kind: str) -> bool:
    return kind not in ("", "none", "unknown")


def _is_limit_failure(f) -> bool:
    return (f.message or "").startswith("Dynamo recompile limit exceeded")


def _answered(report) -> list:
    """What the doctor answers: every break site, every recompile, every failure except the
    recompile limit's own (the recompile that hit the limit carries that answer)."""
    limit = any(rc.limit_hit for rc in report.recompiles)
    return [*report.graph_breaks, *report.recompiles, *(f for f in report.failures if not (limit and _is_limit_failure(f)))]


def _items(report, filename: str) -> list[Item]:
    out = []
    for b in report.graph_breaks:
        k = _kind(b.suggestion)
        line = b.frame.lineno if b.frame.filename == filename else None
        out.append(Item("break", b.gb_code or (b.gb_type or b.reason)[:40], k, _specific(k), line, b.suggestion.title if b.suggestion else ""))
    for rc in report.recompiles:
        k = _kind(rc.suggestion)
        codes = sorted({ch.kind for ch in rc.changes}) or ["?"]
        out.append(Item("recompile", "+".join(codes), k, _specific(k), None, rc.suggestion.title if rc.suggestion else "",
                        limit_hit=rc.limit_hit))
    limit = any(rc.limit_hit for rc in report.recompiles)
    for f in report.failures:
        if limit and _is_limit_failure(f):
            continue
        k = _kind(f.suggestion)
        out.append(Item("failure", f.type, k, _specific(k), f.frame.lineno if f.frame.filename == filename else None, f.suggestion.title if f.suggestion else ""))
    return out


# -- applying a fix -------------------------------------------------------------------------------
def _before_call(fix: Any) -> list:
    """The statements a fix runs before the call, as records: its rebinds (``x = x.contiguous()``), then its marks
    (the order its code writes them in)."""
    return [*fix.all_rebinds, *fix.all_marks]


def _mark_function(mark: Mark) -> Callable:
    """torch's function a mark calls: ``torch._dynamo.mark_dynamic``, ``torch._dynamo.decorators.mark_unbacked``."""
    return getattr(torch._dynamo.decorators if mark.function == "mark_unbacked" else torch._dynamo, mark.function)


def _statement_at(tree: ast.Module, lines: list[str], lineno: int) -> Optional[ast.stmt]:
    """The innermost statement of ``tree`` that starts a line and holds line ``lineno``."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= lineno <= (node.end_lineno or node.lineno) \
                and not lines[node.lineno - 1][:node.col_offset].strip():
            if best is None or node.lineno > best.lineno or (node.lineno == best.lineno and node.col_offset > best.col_offset):
                best = node
    return best


def _placed_before_call(c: Case, x: Any, statements: list[str]) -> Optional[Suggestion]:
    """``statements`` written before the statement of the case's source whose call compiled again
    (the recompile's ``call_site``: ``out = cm(batch)``), as a rewrite of that statement: what a user
    does with "mark it before the call". None where the call is not a line of the case's file."""
    site = getattr(x, "call_site", None)
    filename = case_file(c)
    if site is None or site.filename != filename or not site.lineno:
        return None
    text = Path(filename).read_text()
    lines = text.split("\n")
    stmt = _statement_at(ast.parse(text), lines, site.lineno)
    if stmt is None:
        return None
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    pad = indent_of(lines[first - 1])
    body = [ln[len(pad):] if ln.startswith(pad) else ln for ln in lines[first - 1:last]]
    return Suggestion("before the call", code="\n".join([*statements, *body]), filename=filename,
                      first_line=first, last_line=last)


def _on_arguments(c: Case, fn: Callable, statements: list[str], filename: str) -> tuple[Optional[Callable], list, Any]:
    """Where no line of the case makes the call (the harness calls ``fn(*args)``): each statement on the
    argument it names, by position, or on the case's own variable (``make``'s local) before the first call.
    ``(arg_fix, local_marks, None)``, or ``(None, [], (verdict, why))`` where a name is neither."""
    fixers, local_marks, made = [], [], None
    for st in statements:
        fx = _arg_fixer(fn, st)
        if fx is not None:
            fixers.append(fx)
            continue
        name, ln = st.target.strip(), st.statement
        if made is None:
            made = _build_with_locals(c)[2]
        if isinstance(st, Mark) and isinstance(made.get(name), torch.Tensor):
            local_marks.append((name, st, st.dim))  # the case's own variable
            continue
        root = re.match(r"\w+", name)
        if not root or not re.search(rf"\b{re.escape(root.group())}\b", Path(filename).read_text()):
            return None, [], ("wrong", f"`{name}` is not a name in the user's code ({ln})")
        return None, [], ("inapplicable", f"`{name}` is not an input of the compiled function, and no line of the "
                                          "case calls it: the fix cannot be written before the call")

    def arg_fix(fn_: Callable, call: Any) -> Any:
        for fx in fixers:
            call = fx(fn_, call)
        return call

    return (arg_fix if fixers else None), local_marks, None


def _arg_fixer(fn: Callable, st: "Mark | Rebind") -> Optional[Callable]:
    """A function applying ``mark_dynamic(x, d)`` / ``x = x.contiguous()`` / ``x = torch.tensor(x)`` to the argument ``x``."""
    name = st.target.strip()
    try:
        params = list(inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn).parameters)
    except (TypeError, ValueError):
        return None
    root = re.match(r"\w+", name).group()  # `box_lists[0].tensor`: a tensor reached from the argument `box_lists`
    if root not in params or (root != name and not isinstance(st, Mark)):
        return None
    i = params.index(root)

    def fix(fn_: Callable, call: Any) -> Any:
        as_tensor = isinstance(st, Rebind) and st.how == "tensor"
        if root != name:  # a mark on a tensor the argument holds
            if not isinstance(call, tuple) or i >= len(call):
                raise _Unchecked(f"`{root}` is not passed by position")
            target = eval(name, {root: call[i]})  # noqa: S307 - the doctor's own expression, on the argument
            if not isinstance(target, torch.Tensor):
                raise _Unchecked(f"`{name}` is not a tensor")
            _mark_function(st)(target, st.dim)
            return call
        if not isinstance(call, tuple) or i >= len(call) or isinstance(call[i], torch.Tensor) == as_tensor:
            raise _Unchecked(f"`{name}` is not a {'number' if as_tensor else 'tensor'} passed by position")
        args = list(call)
        if as_tensor:
            args[i] = torch.tensor(args[i])
        elif isinstance(st, Rebind):
            args[i] = args[i].contiguous()
        else:
            _mark_function(st)(args[i], st.dim)
        return tuple(args)

    return fix


def _names_of(fn: Callable) -> dict:
    """The names the compiled function sees: its globals and closed-over values (for the fix's code)."""
    fn = getattr(fn, "forward", fn)
    ns = dict(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), getattr(fn, "__closure__", None) or ()):
        try:
            ns[name] = cell.cell_contents
        except ValueError:
            pass
    ns.setdefault("torch", torch)
    return ns


class _Unchecked(Exception):
    pass


_DYNAMIC = ("torch.compile(..., dynamic=True)",)  # the key of the case's run compiled with dynamic=True alone
_BUILT = ("built",)  # the key of the case's function as built for reading its fixes (its names, its parameters)


def _rewritten_case(c: Case, s) -> Case:
    """The case with the suggestion's rewrite applied to its module's text, re-executed."""
    path = case_file(c)
    text = Path(path).read_text()
    new = apply_suggestion(text, s)
    if new == text:
        raise _Unchecked("the rewrite changes nothing")
    mod = types.ModuleType(f"doctor_corpus._fixed_{c.module}")
    mod.__file__ = path
    mod.__package__ = "doctor_corpus"
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(new, path, "exec"), vars(mod))
    finally:
        sys.modules.pop(mod.__name__, None)
    # the module's data as the unfixed run saw them (re-executing it redraws `global_var = torch.randn(3)`)
    original = sys.modules.get(c.make.__module__)
    for name, value in vars(original).items() if original is not None else ():
        if not name.startswith("__") and name in vars(mod) and not isinstance(value, (types.FunctionType, type, types.ModuleType, Case)):
            setattr(mod, name, value)
    found = [x for x in cases_in(vars(mod)) if x.name == c.name]
    if not found:
        raise _Unchecked("the rewritten module has no such case")
    fixed = found[0]
    fixed.module = c.module
    return fixed


def _try_fix(c: Case, item: Item, s, before: _Run, eager_outs: list, eager_err: str, before_same: bool = True,
             x: Any = None, runs: Optional[dict] = None) -> None:
    """Apply ``s`` to ``c`` and judge it; sets ``item.fix`` / ``item.fix_detail``. The outputs
    are compared with eager's; where the compiled case already differs from eager
    (``before_same`` False: code that asks ``torch.compiler.is_compiling()``), a rewrite's
    outputs with the compiled run's before the fix, and a setting's not at all (a setting
    changes what is compiled, so such code answers differently by design). ``x`` is the report's item the
    fix answers (a recompile's ``call_site`` is where statements to run before the call are written).
    ``runs``: the fixed runs of this case so far, by the fix applied (several recompiles of one case often
    get the same fix: it runs once, and each is judged on that run)."""
    code = (s.code or "").strip() if s else ""
    if not code:
        return
    filename = case_file(c)
    case2, config, arg_fix, before_call, names = c, None, None, "", None
    inductor = compile_kwargs = None
    local_marks: list = []
    applied = s  # the rewrite applied to the case's source (the doctor's, or its statements placed before the call)
    try:
        if s.first_line is not None and s.filename == filename:
            text = Path(filename).read_text()
            replaced = "\n".join(text.splitlines()[s.first_line - 1:(s.last_line or s.first_line)])
            gone = checks.removes_work(apply_suggestion(text, s), s.first_line, replaced)
            if gone:
                item.fix, item.fix_detail, item.wrong_class = "wrong", gone, "removes_work"
                return
            case2 = _rewritten_case(c, s)
            before_call = s.fix.moved if s.fix is not None else ""
            if before_call:
                names = _names_of(_build(c)[0])
        else:
            built = runs.get(_BUILT) if runs is not None else None
            fn = built if built is not None else _build(c)[0]  # the case's function, built once per case
            if runs is not None:
                runs[_BUILT] = fn
            read = read_fix_code(s.fix, _names_of(fn))  # the one reading of a fix's record (--verify-fixes reads it so)
            if read.why_not:
                raise _Unchecked(read.why_not)
            config = dict(read.settings.get("dynamo", {})) or None
            inductor = dict(read.settings.get("inductor", {})) or None
            compile_kwargs = dict(read.compile_kwargs) or None
            if read.before_call:
                # statements the user runs before calling the compiled code (a mark, `x = x.contiguous()`):
                # written into the case's own source before the line that made the call, as the user would
                placed = _placed_before_call(c, x, read.before_call)  # the statements as the fix's code writes them
                if placed is not None:
                    applied = placed
                    case2 = _rewritten_case(c, placed)
                else:
                    arg_fix, local_marks, why = _on_arguments(c, fn, _before_call(s.fix), filename)
                    if why:
                        item.fix, item.fix_detail = why
                        if item.fix == "wrong":
                            item.wrong_class = "guard_names"
                        return
        if config:
            item.settings = dict(config)
        key = (code, applied.filename, applied.first_line, applied.last_line, applied.code) if applied is not None else (code,)
        after = runs.get(key) if runs is not None else None
        if after is None:
            after = _compiled_run(case2, config, arg_fix, before_call, names, compile_kwargs=compile_kwargs,
                                  local_marks=local_marks, inductor=inductor)
            if runs is not None:
                runs[key] = after
                if compile_kwargs == {"dynamic": True} and not (config or inductor or arg_fix or local_marks) and case2 is c:
                    runs[_DYNAMIC] = after  # the run judge_answers makes for a `dynamic=True` offered
    except _Unchecked as exc:
        item.fix, item.fix_detail = "unchecked", str(exc)
        return
    except NameError as exc:
        item.fix, item.fix_detail = "wrong", f"the fix names what the user's code lacks: {exc}"
        item.wrong_class = "guard_names"
        return
    except Exception as exc:  # noqa: BLE001 - a fix that raises is a wrong fix
        item.fix, item.fix_detail = "wrong", f"applying it raised {type(exc).__name__}: {exc}".splitlines()[0][:300]
        item.wrong_class = "rewrite" if s.first_line is not None else "fix"
        return
    problems = []
    if after.error and not eager_err:
        problems.append(f"the fixed code raises: {after.error}")
    elif before_same and not _same(after.outs, eager_outs):
        problems.append("outputs differ from eager")
    elif not before_same and case2 is not c and not _same(after.outs, before.outs):
        problems.append("outputs differ from the compiled run before the fix")
    elif not before_same and case2 is c:
        item.fix_detail = "outputs not compared: the case's compiled outputs differ from eager by design"
    if item.what == "recompile" and item.limit_hit:
        if any(rc.limit_hit for rc in after.report.recompiles):
            problems.append("the recompile limit is still hit")
    elif item.what == "break":
        # judged at its own site where the rewrite kept the case's lines where they were (each of
        # several `graph_break()` lines has its own fix), else over every break of its code
        site = item.line if case2 is not c and item.line is not None and _same_lines(c, applied) else None

        def hits(r) -> int:
            return sum(b.count for b in r.graph_breaks if (b.gb_code or (b.gb_type or b.reason)[:40]) == item.code
                       and (site is None or (b.frame.filename == filename and b.frame.lineno == site)))

        sites = {(b.frame.filename, b.frame.lineno) for b in before.report.graph_breaks}
        new_sites = sorted(b.frame.lineno or 0 for b in after.report.graph_breaks if (b.frame.filename, b.frame.lineno) not in sites)
        # code that ran uncompiled before the fix (a break torch could not resume after) compiles now
        uncovered = len(after.report.ran_without_compiling) < len(before.report.ran_without_compiling)
        if hits(after.report) >= hits(before.report):
            problems.append(f"{item.code} still breaks ({hits(after.report)}x)" + (f" at line {site}" if site else ""))
        elif after.report.graph_break_count >= before.report.graph_break_count:
            if site is not None and uncovered and new_sites and not any(
                    s.first_line <= n <= (s.last_line or s.first_line) for n in new_sites):
                item.fix_detail = (f"the break at line {site} is gone; the code after it, which ran uncompiled before, "
                                   f"compiles now and reaches the break(s) at line(s) {', '.join(map(str, new_sites))}, "
                                   "each answered on its own")
            else:
                new_codes = sorted({b.gb_code for b in after.report.graph_breaks} - {b.gb_code for b in before.report.graph_breaks})
                problems.append(f"the break moved, not removed ({', '.join(new_codes) or 'as many breaks as before'})")
    elif item.what == "recompile":
        if len(after.report.recompiles) >= len(before.report.recompiles):
            problems.append(f"still {len(after.report.recompiles)} recompile(s)")
        # a recompile traded for a graph break on every call (an unbacked size compared in the code) is no fix
        if after.report.graph_break_count > before.report.graph_break_count:
            problems.append(f"a new graph break ({before.report.graph_break_count} before, "
                            f"{after.report.graph_break_count} after)")
    if len(_answered(after.report)) - len(after.report.graph_breaks) - len(after.report.recompiles) > \
            len(_answered(before.report)) - len(before.report.graph_breaks) - len(before.report.recompiles):
        problems.append(f"new failure: {after.report.failures[-1].type}")
    if len(after.report.ran_without_compiling) > len(before.report.ran_without_compiling):
        problems.append("a frame now runs without compiling")
    item.fix = "wrong" if problems else "proven"
    item.fix_detail = "; ".join(problems) or item.fix_detail
    if problems:
        item.wrong_class = "rewrite" if case2 is not c and applied is s else "fix"


def _same_lines(c: Case, s) -> bool:
    """Whether the rewrite ``s`` keeps the lines of ``c``'s file where they were (a line rewritten in place)."""
    text = Path(case_file(c)).read_text()
    return len(apply_suggestion(text, s).splitlines()) == len(text.splitlines())


# -- one case ---------------------------------------------------------------------------------------
def run_case(c: Case, fixes: bool = True) -> Result:
    import time

    t0 = time.perf_counter()
    res = Result(c.id, c.source, c.module)
    if c.missing:
        res.skipped = f"needs {', '.join(c.missing)}, not installed (pip install -e .[corpus])"
        return res
    try:
        eager_outs, eager_err = _eager(c)
        run = _compiled_run(c)
    except Exception as exc:  # noqa: BLE001
        res.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
        res.seconds = time.perf_counter() - t0
        return res
    report, log = run.report, run.log
    filename = case_file(c)
    res.user_error = run.error
    res.same_as_eager = _same(run.outs, eager_outs) and bool(run.error) == bool(eager_err)
    res.torch_breaks = len(log.breaks)
    res.torch_recompiles = len(log.recompiles)
    # a compile error raised into the call: Dynamo's own (eager may raise it too: a HOP compiles
    # its body in eager), or another torch error (a violated constraint) that eager did not raise
    res.torch_errors = int(run.error.startswith("torch: ") or (run.error.startswith("torch-other: ") and not eager_err))
    res.report_breaks = report.graph_break_count
    res.doctor_errors = doctor_errors(report)
    res.report_recompiles = len(report.recompiles)
    failures = [f for f in _answered(report) if isinstance(f, Failure)]
    res.report_failures = len(failures)
    res.captured = (res.torch_breaks == res.report_breaks and res.torch_recompiles == res.report_recompiles
                    and bool(res.torch_errors) == any(run.error.split(": ", 2)[1] in (f.type, f.raised_as) for f in failures)
                    if res.torch_errors else res.torch_breaks == res.report_breaks and res.torch_recompiles == res.report_recompiles)

    # located
    marked = expected_lines(c)
    torch_sites = set(log.break_sites(filename))
    outside = {site for site in torch_sites if site[0] != filename}  # breaks torch places in a library's code
    expected = set(marked) if marked else {line for f, line in torch_sites if f == filename}
    res.expected_lines = sorted(expected)
    located_items = [*report.graph_breaks, *failures]
    shown: set = set()
    shown_outside: set = set()
    elsewhere = []
    for b in located_items:
        # a break in a function the user's code calls from several lines is shown "reached from" those
        # lines (CompileReport.shared_callers): they are its place when the case marks them
        callers = [c.lineno for c in report.shared_callers(b)] if hasattr(b, "callers") else []
        if callers and all(c.filename == filename for c in b.callers) and set(callers) <= expected \
                and b.frame.lineno not in expected:
            shown.update(callers)
        elif b.frame.filename == filename:
            shown.add(b.frame.lineno)
        elif (b.frame.filename, b.frame.lineno) in outside:
            shown_outside.add((b.frame.filename, b.frame.lineno))
        elif b.frame.filename == __file__ and getattr(b, "stop", None) is not None \
                and (b.stop.filename, b.stop.lineno) in outside:
            # the case compiles a library's function or module that the harness calls itself (`fn(*call)`): the
            # harness's line is the user's call, and the library's line is where the report says torch stopped
            shown_outside.add((b.stop.filename, b.stop.lineno))
        else:
            elsewhere.append(f"{b.frame.filename}:{b.frame.lineno}")
    problems = []
    if shown_outside != outside:
        problems.append(f"library lines shown {sorted(shown_outside)}, torch's {sorted(outside)}")
    if log.suppressed and not marked and expected <= shown and len(shown - expected) <= log.suppressed:
        expected = shown  # a repeated library break whose user line torch did not print: the report's line stands
    if elsewhere:
        problems.append(f"shown outside the case: {', '.join(elsewhere)}")
    if shown != expected:
        problems.append(f"lines shown {sorted(shown)}, expected {sorted(expected)}" + (" (# BREAK)" if marked else " (torch's record)"))
    torch_rc = sorted(log.recompiled())
    ours_rc = sorted((rc.function, rc.filename) for rc in report.recompiles)
    if torch_rc != ours_rc:
        problems.append(f"recompiles named {ours_rc}, torch {torch_rc}")
    res.located = not problems
    res.located_detail = "; ".join(problems)

    # answers, and fixes
    res.items = _items(report, filename)
    runs: dict = {}  # one fixed run per distinct fix
    if fixes:
        for item, x in zip(res.items, _answered(report)):
            if item.specific and x.suggestion is not None:
                _try_fix(c, item, x.suggestion, run, eager_outs, eager_err, bool(res.same_as_eager), x, runs)
    judge_answers(c, res, run, eager_outs, eager_err, rerun=fixes, runs=runs if fixes else None)
    res.seconds = time.perf_counter() - t0
    return res


def _deterministic(c: Case, eager_outs: list) -> bool:
    """Whether eager gives the same outputs on a second run (a case seeded from the clock or the OS,
    `torch.seed()`, differs from itself: its compiled outputs cannot be compared with eager's)."""
    try:
        again, err = _eager(c)
    except Exception:  # noqa: BLE001
        return False
    return not err and _same(again, eager_outs)


def _wrong(item: Item, cls: str, why: str) -> None:
    """Count ``item``'s answer wrong for ``why`` (a class of :data:`checks.CLASSES`), keeping an earlier verdict's words."""
    if item.fix == "wrong" and item.wrong_class:
        item.fix_detail = f"{item.fix_detail}; {why}"
        if item.wrong_class == "fix":  # the class that explains it (a fix that failed for a reason a check names)
            item.wrong_class = cls
        return
    item.fix, item.wrong_class = "wrong", cls
    item.fix_detail = why + (f" (its fix: {item.fix_detail})" if item.fix_detail else "")


def judge_answers(c: Case, res: Result, run: _Run, eager_outs: list, eager_err: str, rerun: bool = True,
                  runs: Optional[dict] = None) -> None:
    """The checks of :mod:`doctor_corpus.checks` on every answer of the case; compiled outputs that differ
    from eager's while no answer says so; and (``rerun``) those that compile the case again: a
    ``dynamic=True`` the answer offers for a recompile (the fixed run of ``runs`` where a fix was that alone),
    the settings of several answers applied together."""
    filename = case_file(c)
    user_source = Path(filename).read_text()
    report = run.report
    answered = _answered(report)
    for item, x in zip(res.items, answered):
        s = x.suggestion
        for cls, why in (("guard_names", checks.guard_names(s, x, user_source)),
                         ("library_code", checks.library_code(s, x, item.kind, filename, user_source)),
                         ("eager_claim", checks.eager_claim(s, x, eager_err)),
                         ("seed_order", checks.seed_order(s, x))):
            if why:
                _wrong(item, cls, why)
    # dynamic=True offered for a recompile: it must remove it (a size that goes 1 -> 2 stays specialised)
    offered = [item for item, x in zip(res.items, answered) if rerun
               and item.what == "recompile" and x.suggestion is not None and "dynamic=True" in (x.suggestion.code or "")]
    if offered:
        try:
            dyn = (runs or {}).get(_DYNAMIC) or _compiled_run(c, compile_kwargs={"dynamic": True})
            left = len(dyn.report.recompiles)
            if left >= len(report.recompiles) or (dyn.error and not eager_err):
                for item in offered:
                    _wrong(item, "sizes_0_1", f"torch.compile(..., dynamic=True), which it offers, leaves {left} recompile(s)"
                           + (f" and raises {dyn.error}" if dyn.error and not eager_err else ""))
        except Exception as exc:  # noqa: BLE001
            for item in offered:
                _wrong(item, "sizes_0_1", f"torch.compile(..., dynamic=True), which it offers, raises {type(exc).__name__}: {exc}"[:300])
    # settings suggested for one case, proven together
    setting_items = [it for it in res.items if it.settings and it.fix == "proven"]
    together: dict = {}
    for it in setting_items:
        together.update(it.settings)
    if rerun and len(setting_items) > 1 and len({tuple(sorted(map(str, it.settings.items()))) for it in setting_items}) > 1:
        why = ""
        try:
            after = _compiled_run(c, together)
            if after.error and not eager_err:
                why = f"raises {after.error}"
            elif res.same_as_eager and not _same(after.outs, eager_outs):
                why = "the outputs differ from eager"
            elif len(after.report.failures) > len(report.failures):
                why = f"a new failure: {after.report.failures[-1].type}"
            else:  # a break of a kind the case did not have: the settings together moved a break, not removed it
                before = {b.gb_code or b.reason for b in report.graph_breaks}
                new = sorted({b.gb_code or b.reason for b in after.report.graph_breaks} - before)
                if new:
                    why = "break again: " + ", ".join(new)
        except Exception as exc:  # noqa: BLE001
            why = f"raises {type(exc).__name__}: {exc}"[:300]
        if why:
            names = ", ".join(sorted(together))
            for it in setting_items:
                _wrong(it, "settings_together", f"its setting works alone, but the case's settings together ({names}) {why}")
    # compiled results that differ from eager's: said first by the report (its eager_differences: an item of
    # their own, answered by their kind), or by an answer, else silently (a wrong answer)
    if res.same_as_eager is False and not run.error and not eager_err and _deterministic(c, eager_outs):
        said = [d for d in getattr(report, "eager_differences", []) if checks.says_outputs_differ([d])]
        if said:
            d = said[0]
            res.items.append(Item("semantics", "outputs differ from eager", str(d.kind), True,
                                  d.frame.lineno if d.frame.filename == filename else None, d.title))
        elif not checks.says_outputs_differ(answered):
            res.items.append(Item("semantics", "outputs differ from eager", "none", False, fix="wrong",
                                  wrong_class="silent_change",
                                  fix_detail="the compiled outputs differ from eager's and no answer says so"))
