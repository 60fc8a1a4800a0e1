"""What each kernel launch in Inductor's wrapper code passes: its tensors' shapes and dtypes.

Inductor's output code declares every tensor it launches a kernel on before the
launch: the graph's inputs in ``get_args()`` (``arg0_1 = rand_strided((4096, 1024),
(1024, 1), device='cuda:0', dtype=torch.float16)``) and in ``assert_size_stride``,
its buffers with ``empty_strided_cuda((512, 4096), (4096, 1), torch.float16)`` (or
``empty_strided_cpu`` / ``empty_strided``), a buffer reused under another name
(``buf5 = buf1; del buf1  # reuse``), the first output of a fallback op (``buf1 =
buf0[0]`` after ``buf0 = torch.ops.aten...(arg0_1, ...)``: its shape from the
``assert_size_stride`` that follows, its dtype its first input's), and views with ``reinterpret_tensor(buf3, (8,
16), (16, 1), 0)``, inline in a launch's arguments or assigned to a name. A launch
(``triton_poi_fused_gelu_1.run(buf1, buf2, 33554432, stream=stream0)``,
``extern_kernels.mm(buf0, reinterpret_tensor(arg2_1, ...), out=buf1)``) is read
into a :class:`~ipycompile.report.KernelLaunch` of the same form the profiler's
``record_shapes`` gives (a tensor's shape and dtype; ``[]`` and ``Scalar`` for a
number, its value in ``concrete``), so :mod:`ipycompile.analysis.kernel_costs`
costs it the same way. This is what tells the bytes and FLOPs of launches the
profiler records no shapes for: kernels replayed from a CUDA graph (``mode=
"reduce-overhead"`` / ``"max-autotune"``), whose launches happen inside the
graph's replay, not in an op.

A launch with a tensor whose shape is a symbol (dynamic shapes: ``(s0, 512)``) or
not declared in the text is left out: its cost is not guessed. Pure text in,
plain records out; never raises.
"""

from __future__ import annotations

import re
from typing import Optional

from ...report.model import KernelLaunch

__all__ = ["TensorTable", "launch_of", "signature_dtypes", "extern_op_name", "EXTERN_ALIASES"]

_TUPLE = r"\((?P<{}>[^()]*)\)"
_RAND_STRIDED = re.compile(
    r"^\s*(?P<name>\w+)\s*=\s*rand_strided\(\s*" + _TUPLE.format("shape") + r"\s*,\s*" + _TUPLE.format("stride")
    + r"[^\n]*?dtype\s*=\s*torch\.(?P<dtype>\w+)", re.M)
_EMPTY = re.compile(
    r"^\s*(?P<name>\w+)\s*=\s*empty_strided(?:_\w+)?\(\s*" + _TUPLE.format("shape") + r"\s*,\s*"
    + _TUPLE.format("stride") + r"\s*,[^\n]*?torch\.(?P<dtype>\w+)")
_ASSERT = re.compile(r"^\s*assert_size_stride\(\s*(?P<name>\w+)\s*,\s*" + _TUPLE.format("shape"))
_ALIAS = re.compile(r"^\s*(?P<name>\w+)\s*=\s*(?P<src>[A-Za-z_]\w*)\s*;\s*del\s+\w+")
_NAMED_VIEW = re.compile(r"^\s*(?P<name>\w+)\s*=\s*(?P<view>reinterpret_tensor\(.*\))\s*(?:;.*)?(?:#.*)?$")
_VIEW = re.compile(r"^reinterpret_tensor\(\s*(?P<src>\w+)\s*,\s*" + _TUPLE.format("shape"))
_INT = re.compile(r"^-?\d+$")
# a fallback op's result (``buf0 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(arg0_1, ...)``)
# and its first output taken out of it (``buf1 = buf0[0]``, whose shape an ``assert_size_stride`` then gives)
_OP_RESULT = re.compile(r"^\s*(?P<name>\w+)\s*=\s*torch\.ops\.[\w.]+\((?P<args>.*)\)\s*$")
_FIRST_ITEM = re.compile(r"^\s*(?P<name>\w+)\s*=\s*(?P<src>\w+)\[0\]\s*$")

#: Inductor's extern kernels that are its own Python functions around an ATen op (max-autotune's
#: ``bias_addmm``, torch/_inductor/kernel/mm.py, calls ``torch.addmm``): the op they run.
EXTERN_ALIASES = {"bias_addmm": "addmm"}
# aten::convolution's arguments after (input, weight), by keyword, at their positions
_CONV_KEYWORDS = ("bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")


def extern_op_name(kernel_name: str) -> str:
    """The op an extern kernel runs, as the profiler names it: ``extern_kernels.mm`` -> ``aten::mm``,
    ``extern_kernels.bias_addmm`` -> ``aten::addmm``, ``aten.index_put_.default`` ->
    ``aten::index_put_``; ``""`` for a name of no namespace."""
    if "." not in kernel_name:
        return ""
    namespace, op = kernel_name.split(".")[:2]
    return f"aten::{EXTERN_ALIASES.get(op, op)}" if namespace == "extern_kernels" else f"{namespace}::{op}"


def _shape(text: str) -> Optional[list[int]]:
    """``"512, 4096"`` -> ``[512, 4096]``; ``""`` -> ``[]``; None when a size is a symbol."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(_INT.match(p) for p in parts):
        return None
    return [int(p) for p in parts]


class TensorTable:
    """The tensors a wrapper module declares, by name: (shape or None when symbolic, dtype)."""

    def __init__(self, code: str) -> None:
        self.tensors: dict[str, tuple[Optional[list[int]], str]] = {}
        self.results: dict[str, str] = {}  # a fallback op's result: the dtype of its first tensor argument
        first = code.find("rand_strided(")  # the graph's inputs, at the module's end
        if first >= 0:
            for m in _RAND_STRIDED.finditer(code, code.rfind("\n", 0, first) + 1):
                self.tensors[m.group("name")] = (_shape(m.group("shape")), m.group("dtype"))

    def read(self, line: str) -> None:
        """Take in one wrapper line's declaration, if it is one (in order: a later one wins). Each
        pattern is tried only on a line holding its literal words (most lines hold none)."""
        if "=" not in line and "assert_size_stride" not in line:
            return
        m = _EMPTY.match(line) if "empty_strided" in line else None
        if m:
            self.tensors[m.group("name")] = (_shape(m.group("shape")), m.group("dtype"))
            return
        m = _ASSERT.match(line) if "assert_size_stride" in line else None
        if m:
            dtype = self.tensors.get(m.group("name"), (None, ""))[1]
            self.tensors[m.group("name")] = (_shape(m.group("shape")), dtype)
            return
        m = _NAMED_VIEW.match(line) if "reinterpret_tensor(" in line else None
        if m:
            viewed = self._arg(m.group("view"))
            if viewed is not None:
                self.tensors[m.group("name")] = viewed
            return
        m = _ALIAS.match(line) if "del" in line else None
        if m and m.group("src") in self.tensors:
            self.tensors[m.group("name")] = self.tensors[m.group("src")]
            return
        m = _OP_RESULT.match(line) if "torch.ops." in line else None
        if m:
            first = next((t for t in map(self._arg, _split_args(m.group("args"))) if t is not None), None)
            if first is not None and first[1]:
                self.results[m.group("name")] = first[1]
            return
        m = _FIRST_ITEM.match(line) if "[0]" in line else None
        if m and m.group("src") in self.results:
            # the first output of the fallback ops Inductor runs (attention's output, topk's and max's
            # values, a norm's output) has its first input's dtype; its shape comes from the assert after it
            self.tensors[m.group("name")] = (None, self.results[m.group("src")])

    def _arg(self, text: str) -> Optional[tuple[Optional[list[int]], str]]:
        """A tensor argument's (shape, dtype), or None when ``text`` names no declared tensor."""
        text = text.strip()
        if text in self.tensors:
            return self.tensors[text]
        m = _VIEW.match(text)
        if m and m.group("src") in self.tensors:
            return (_shape(m.group("shape")), self.tensors[m.group("src")][1])
        return None


def _split_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of a call's argument text."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [a.strip() for a in out if a.strip()]


def _call_args(line: str, at: int) -> Optional[str]:
    """The argument text of the call whose ``(`` is at ``line[at]``; None when it does not close on the line."""
    depth = 0
    for i in range(at, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            depth -= 1
            if depth == 0:
                return line[at + 1: i]
    return None


_SIGNATURE = re.compile(r"""['"]signature['"]\s*:\s*\{(?P<body>[^{}]*)\}""")
_SIGNATURE_ITEM = re.compile(r"""['"](?P<name>\w+)['"]\s*:\s*['"](?P<type>[^'"]*)['"]""")
#: Triton's pointer types (``*bf16``) as torch names the dtype
_TRITON_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "i64": "int64",
                  "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "bool",
                  "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}


def signature_dtypes(source: str) -> list[str]:
    """A Triton kernel's argument dtypes in order, from the ``signature`` of its ``triton_meta``
    (``'*bf16'`` -> ``bfloat16``; ``""`` for a number or an unknown type)."""
    m = _SIGNATURE.search(source or "")
    if not m:
        return []
    return [_TRITON_DTYPES.get(t.group("type").lstrip("*"), "") if t.group("type").startswith("*") else ""
            for t in _SIGNATURE_ITEM.finditer(m.group("body"))]


def launch_of(kernel_name: str, backend: str, line: str, open_paren: int, table: TensorTable,
              dtypes_hint: Optional[list[str]] = None) -> Optional[KernelLaunch]:
    """The launch of ``kernel_name`` whose argument list opens at ``line[open_paren]``, as a
    :class:`KernelLaunch` (``count`` 0: the caller counts), or None when an argument's shape
    is not known (a symbol, or not declared in the text) or the call is not whole on the line.
    ``dtypes_hint``: per positional argument, the dtype the kernel declares for it (a Triton
    kernel's signature), for a tensor whose shape the wrapper asserts but whose dtype it does
    not say (the output of a fallback op, taken out of its result: ``buf8 = buf7[0]``)."""
    args = _call_args(line, open_paren)
    if args is None:
        return None
    extern = backend == "extern"
    op = extern_op_name(kernel_name) if extern else kernel_name
    shapes: list = []
    dtypes: list[str] = []
    concrete: list = []
    keywords: dict[str, str] = {}
    hint = dtypes_hint or []
    for arg in _split_args(args):
        kw = re.match(r"^(\w+)\s*=(?!=)\s*(.*)$", arg, re.S)
        if kw:
            keywords[kw.group(1)] = kw.group(2).strip()
            continue
        at = len(shapes)
        if not _add(arg, table, shapes, dtypes, concrete, hint[at] if at < len(hint) else ""):
            return None
    if extern:
        if op == "aten::convolution":  # its keywords at their positions: (input, weight, bias, stride, ...)
            for name in _CONV_KEYWORDS:
                value = keywords.get(name)
                if name == "bias" and value not in (None, "None"):
                    if not _add(value, table, shapes, dtypes, concrete):
                        return None
                    continue
                shapes.append([])
                dtypes.append("Scalar" if value not in (None, "None") else "")
                concrete.append(_literal(value))
        if "out" in keywords and not _add(keywords["out"], table, shapes, dtypes, concrete):
            return None
    if not any(dtype not in ("Scalar", "") for dtype in dtypes):
        return None
    return KernelLaunch(op, shapes, dtypes, concrete, 0)


def _add(arg: str, table: TensorTable, shapes: list, dtypes: list, concrete: list, hint: str = "") -> bool:
    """Append one positional argument; False when it is a tensor of unknown shape (or dtype)."""
    tensor = table._arg(arg)
    if tensor is not None:
        shape, dtype = tensor
        dtype = dtype or hint
        if shape is None or not dtype:
            return False
        shapes.append(shape)
        dtypes.append(dtype)
        concrete.append(None)
        return True
    if re.match(r"^(?:buf|arg|primals_|tangents_)\w*$", arg) or arg.startswith("reinterpret_tensor("):
        return False  # a tensor the text does not declare (a subgraph's argument)
    shapes.append([])
    dtypes.append("Scalar")
    concrete.append(_literal(arg))
    return True


def _literal(text: Optional[str]):
    """A number, a tuple of ints as a list, True/False, or the text itself."""
    if text is None:
        return None
    text = text.strip()
    if _INT.match(text):
        return int(text)
    if text in ("True", "False"):
        return text
    m = re.fullmatch(r"[(\[]([\d,\s-]*)[)\]]", text)
    if m:
        return [int(v) for v in re.findall(r"-?\d+", m.group(1))]
    return text
