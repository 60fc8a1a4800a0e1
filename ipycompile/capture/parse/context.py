"""What torch's words about a break or failure name, read into fields: the function it
skipped, the builtin, the NumPy function, what a ``print`` was given, the logger called,
the exception raised, the operator, the aliased nodes, the dimension marked dynamic, the
custom op without a fake. The one reader of torch's developer debug context (and of the
explanation and text where torch puts these there); the doctor's rules read the record
(:class:`~ipycompile.report.TorchDetail`), never the text.

Forms read (torch 2.11, 2.13 and 2.14)::

    module: torch.random, qualname: manual_seed, skip reason: ...     (a skipped function)
    builtin operator `getpid` / builtin print [<class '...TensorVariable'>] False
    numpy function: <function digitize at 0x7f...>
    method: <Logger transformers.x (WARNING)>.warning_once, args: [ConstantVariable(str: '...')], kwargs: {}
    raised exception TypeError("unsupported operand type(s) for %: 'int' and 'int'")
    aten.nonzero.default / aten::nonzero / mylib.op.default
    <function helper at 0x7f...>                                       (a disabled function)
    Input-to-output aliasing detected at nodes l_x_ and l_x_
    You marked L['x'].size()[0] as dynamic but your code specialized it to be a constant (4)
    call_function mylib.op(*(FakeTensor(..., size=(3,)),), **{}): got NotImplementedError(...)
    not implemented for list_iterator / next(list_iterator)
    name=__iter__, type=dict_items, attr=<slot wrapper '__iter__' of 'dict_items' objects>   (2.14, GB9493)
    Called `torch.compiler.disable()` with args `[]`, kwargs `{}`   (2.14, GB0376 / GB0377: the function called)
    qualname: set_grad_enabled.__enter__, name: __enter__, filename: `...`, skip reason: ...   (GB0008: inlining skipped)
    TypeError <built-in method cos of ...>: cos(): argument 'input' (position 1) must be Tensor, not int
    The branch condition involves a tensor computed as follows: ... random_value_0: graph input (random_value_0)
    Dynamo does not know how to enter a `lock` context manager.
    setattr(UserDefinedClassVariable(<class 'torch.utils.hooks.RemovableHandle'>), ConstantVariable(str: 'next_id'), ...)

Pure; never raises.
"""

from __future__ import annotations

import re

from ...report.model import TorchDetail, UserFrame
from .fx import place
from .guards import guard_path

__all__ = ["read_detail"]

_SKIPPED = re.compile(r"module: (?P<module>[\w.]+), qualname: (?P<qualname>[\w.<>]+)")
_BUILTIN = re.compile(r"builtin operator `(?P<fn>\w+)`|^builtin (?P<fn2>\w+) \[")
_NUMPY_FN = re.compile(r"numpy function: <function (?P<fn>\w+) at")
_PRINT = re.compile(r"^builtin print \[(?P<types>.*?)\] (?P<kw>True|False)")
_VARIABLE = re.compile(r"\.(\w+Variable)'")
_LOGGER = re.compile(r"method: <(?P<cls>\w*Logger) (?P<name>.+?) \((?P<level>\w+)\)>\.(?P<method>\w+), args: (?P<args>.*?), kwargs:", re.S)
_LOG_MESSAGE = re.compile(r"ConstantVariable\(str: (?P<q>['\"])(?P<msg>.*?)(?P=q)\)", re.S)
_RAISED = re.compile(r"raised exception (?P<exc>\w+)\((?P<args>.*)\)\s*$", re.S)
_ATEN = re.compile(r"aten\.(\w+)")
_OP = re.compile(r"`?(?P<op>aten\.[\w.]+|[\w]+::[\w.]+|[\w]+\.[\w]+\.\w+)`?")
_FUNCTION = re.compile(r"<function (?P<name>[\w.<>]+) at 0x")
_ALIAS = re.compile(r"(?P<how>Output-to-output|Input-to-output) aliasing detected at nodes (?P<a>\w+) and (?P<b>\w+)")
_MARKED = re.compile(r"You marked (?P<src>\S+?)\.size\(\)\[(?P<dim>\d+)\] as dynamic but your code specialized it "
                     r"to be a constant \((?P<value>[^)]*)\)")
_FAKE = re.compile(r"call_function (?P<ns>\w+)\.(?P<op>\w+)(?:\.(?P<overload>\w+))?\(\*\((?P<args>.*?)\),? \*\*\{(?P<kw>.*?)\}\): got "
                   r"(?P<error>NotImplementedError|RuntimeError\('There was no fake impl registered)", re.S)
#: an operator torch has no fake kernel for at all (GB0090: a ``torch.library`` op with only a device kernel)
_UNSUPPORTED_OP = re.compile(r"unsupported operator: (?P<ns>\w+)\.(?P<op>\w+)(?:\.(?P<overload>\w+))?")
#: torch's own namespaces: an operator of these is not the user's to give a fake
_TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_c10d_functional", "c10d", "inductor"})
_FAKE_ARG = re.compile(r"FakeTensor\(\.\.\., size=\([^)]*\)\)|[^,]+")
_ITERATOR = re.compile(r"not implemented for (?P<type>\w+)|next\((?P<it>\w+)\)")
#: torch 2.14's "C-implemented special method without VariableTracker model" (GB9493): the method and its type
_C_METHOD = re.compile(r"^name=(?P<name>\w+), type=(?P<type>[\w.]+), attr=")
#: torch 2.14's call of one of its own APIs inside compiled code (GB0376 / GB0377): the function called
_API_CALL = re.compile(r"^Called `(?P<module>[\w.]+)\.(?P<qualname>\w+)\(\)` with args")
#: a function torch would have inlined but skips (GB0008)
_INLINE_SKIPPED = re.compile(r"^qualname: (?P<qualname>[\w.<>]+), name: (?P<name>[\w<>]+), filename: ")
#: the special methods that step through an iterable: a type torch cannot model them for is an iterator it cannot iterate
_ITERATION = ("__iter__", "__next__")
_TYPE_ERROR = re.compile(r"^TypeError .*?: (?P<fn>\w+)\(\)(?P<rest>.*)$", re.S)
_ARG_TYPE = re.compile(r"^: argument '(?P<arg>\w+)'(?: \(position \d+\))? must be (?P<expected>.+?), not (?P<given>\w+)\s*$",
                       re.S)
_BRANCH_INPUTS = "The branch condition involves a tensor computed as follows:"
_GRAPH_INPUT = re.compile(r"^\s*\w+: graph input \((?P<target>[^)]*)\)\s*$")
_CONTEXT_MANAGER = re.compile(r"does not know how to enter a `(?P<type>[^`]+)` context manager")
_SETATTR_CLASS = re.compile(r"^setattr\(UserDefinedClassVariable\(<class '(?P<cls>[\w.]+)'>\), "
                            r"ConstantVariable\(str: '(?P<name>\w+)'\)")


def read_detail(context: str, explanation: str = "", text: str = "") -> TorchDetail:
    """The fields torch's ``context`` (its developer debug context), ``explanation`` and whole
    ``text`` name. Never raises: what cannot be read stays empty."""
    d = TorchDetail()
    try:
        _read(d, context or "", explanation or "", text or "")
    except Exception:  # noqa: BLE001 - a report must survive any text
        pass
    return d


def _read(d: TorchDetail, context: str, explanation: str, text: str) -> None:
    m = _SKIPPED.search(context) or _API_CALL.match(context.strip())
    if m:
        d.callee_module, d.callee_qualname = m.group("module"), m.group("qualname")
    m = _BUILTIN.search(explanation) or _BUILTIN.search(context)
    if m:
        d.builtin = m.group("fn") or m.group("fn2")
    m = _NUMPY_FN.search(context)
    if m:
        d.numpy_function = m.group("fn")
    m = _PRINT.match(context)
    if m:
        d.print_types = _VARIABLE.findall(m.group("types"))
        d.print_kwargs = m.group("kw") == "True"
    d.prints = bool(m) or "built-in function print" in context
    m = _LOGGER.search(context)
    if m:
        d.logger_class, d.logger_name, d.logger_level, d.logger_method = (
            m.group("cls"), m.group("name"), m.group("level"), m.group("method"))
        msg = _LOG_MESSAGE.search(m.group("args"))
        d.logger_message = msg.group("msg") if msg else ""
    m = _RAISED.search(context.strip())
    if m:
        d.raised_type, d.raised_args = m.group("exc"), m.group("args")
    m = _ATEN.search(context or explanation)
    if m:
        d.aten_op = m.group(1)
    m = _OP.search(context) or _OP.search(explanation)
    if m:
        d.operator = m.group("op")
    m = _FUNCTION.search(context)
    if m:
        d.function = m.group("name")
    m = _ALIAS.search(context)
    if m:
        d.aliasing, d.aliased_nodes = m.group("how"), [m.group("a"), m.group("b")]
    m = _MARKED.search(text)
    if m:
        # the marked tensor as the user's code names it (``L['x']`` -> ``x``)
        d.marked_source, d.marked_dim, d.marked_value = guard_path(m.group("src")), int(m.group("dim")), m.group("value")
    m = _FAKE.search(explanation or text)
    if m:
        d.fake_op = f"{m.group('ns')}::{m.group('op')}"
        d.fake_args = [a.strip() for a in _FAKE_ARG.findall(m.group("args")) if a.strip()]
        d.fake_kwargs = m.group("kw").strip()
        d.fake_missing = "no fake impl" in m.group("error")
        d.fake_overload = m.group("overload") or ""
    m = _UNSUPPORTED_OP.search(context)
    if m and not d.fake_op and m.group("ns") not in _TORCH_NAMESPACES:
        d.fake_op, d.fake_overload, d.fake_missing = f"{m.group('ns')}::{m.group('op')}", m.group("overload") or "", True
    m = _ITERATOR.search(context)
    if m:
        d.iterator_type = m.group("type") or m.group("it")
    m = _INLINE_SKIPPED.match(context.strip())
    if m:
        d.inline_skipped_qualname, d.inline_skipped_name = m.group("qualname"), m.group("name")
    m = _C_METHOD.match(context.strip())
    if m:
        d.c_method, d.c_method_type = m.group("name"), m.group("type")
        if d.c_method in _ITERATION and not d.iterator_type:
            d.iterator_type = d.c_method_type
    m = _TYPE_ERROR.match(context.strip())
    if m:
        d.type_error_function = m.group("fn")
        d.type_error_message = (m.group("fn") + "()" + m.group("rest")).strip()
        a = _ARG_TYPE.match(m.group("rest"))
        if a:
            d.type_error_argument, d.type_error_expected, d.type_error_given = (
                a.group("arg"), a.group("expected"), a.group("given"))
    if _BRANCH_INPUTS in explanation:
        d.branch_random = _random_inputs(explanation.split(_BRANCH_INPUTS, 1)[1])
    m = _CONTEXT_MANAGER.search(explanation)
    if m:
        d.context_manager = m.group("type")
    m = _SETATTR_CLASS.match(context.strip())
    if m:
        d.setattr_type, d.setattr_name = m.group("cls"), m.group("name")


def _random_inputs(trace: str) -> list[UserFrame]:
    """The places of the Python ``random`` values among the graph inputs torch lists under "The
    branch condition involves a tensor computed as follows" (``random_value_0: graph input
    (random_value_0)``, below the ``# File "...", line N, in f, code: ...`` line that drew it)."""
    out, at = [], None
    for line in trace.splitlines():
        p = place(line.strip())
        if p is not None:
            at = p
            continue
        m = _GRAPH_INPUT.match(line)
        if m and m.group("target").startswith("random_value_"):
            out.append(at if at is not None else UserFrame())  # a value torch gives no source line for
        if m:
            at = None
    return out
