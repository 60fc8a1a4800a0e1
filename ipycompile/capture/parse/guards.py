"""Guards: torch's guard-failure reasons and guard trees, read into records.

The one home of torch's guard text. :func:`parse_guard_failure` reads one reason of a
``recompile_reasons`` artifact into a :class:`~ipycompile.report.FailedGuard` (what was
guarded, how it changed); :func:`parse_guard_tree` reads a ``dynamo_cpp_guards_str``
tree into :class:`~ipycompile.report.GuardEntry` s; :func:`guard_path` writes a guard
source in the one readable form both share. Naming a guarded value as the user's code
does (``batch`` for ``L['args'][0]``) is :mod:`ipycompile.capture.callsite`'s.

The reasons torch 2.11, 2.13 and 2.14 write (C++ tensor checks in ``torch/csrc/dynamo/guards.cpp``,
Python guards with the source line they came from)::

    tensor 'x' size mismatch at index 0. expected 8, actual 16
    tensor 'x' stride mismatch at index 0. expected 4, actual 1
    tensor 'x' rank mismatch. expected 1, actual 2
    tensor 'x' dtype mismatch. expected Float, actual Half
    tensor 'x' requires_grad mismatch. expected requires_grad=0
    tensor 'x' Tensor device index mismatch. Expected device index to be 0, actual 1
    tensor 'x' dispatch key set mismatch. expected DispatchKeySet(...), actual DispatchKeySet(...)
    expected type of 'x' to be a tensor type, ' but found <class 'int'>
    expected type of 'x' to be <class 'torch.nn.parameter.Parameter'>, but found <class 'torch.Tensor'>   (2.14)
    GLOBAL_STATE changed: grad_mode
    k == 2                          # return x * k  # file.py:23 in g
    G['SCALE'] == 2                 # return x * SCALE  # file.py:32 in gl
    fn._modules['1'].training == True  # return F.dropout(...)  # nn/modules/dropout.py:73 in forward
    len(xs) == 2                    # ...
    ___check_obj_id(fn, 140260801360608), type=<class 'builtin_function_or_method'>  # ...
    2 <= x.size()[0]  # ... (user code shown is first use of this value--... 0/1 specialization ...)

and in the guard trees, besides each tensor's check, the shape guards on dynamic sizes::

    2 <= L['idx'].size()[1] <= 16   # a range: the code compared the size with 16 (an assert, a slice)
    L['idx'].size()[1] != 16        # any other relation the code's comparisons left
    ___stack0 == 3.0                # return x * s  # x.py:39 in torch_dynamo_resume_in_g_at_38

Pure functions of text; never raise.
"""

from __future__ import annotations

import re
from typing import Optional

from ...report.model import CompileId, FailedGuard, GuardEntry

__all__ = ["parse_guard_failure", "parse_guard_tree", "guard_path", "torch_dtype", "path_root", "path_steps",
           "CARRIED_ROOT", "is_numpy"]


_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexFloat": "complex64", "ComplexDouble": "complex128", "ComplexHalf": "complex32",
    "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
    "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2",
    "Float8_e4m3fnuz": "float8_e4m3fnuz", "Float8_e5m2fnuz": "float8_e5m2fnuz",
}


def torch_dtype(name: str) -> str:
    """``"float32"`` for torch's C++ name ``"Float"``; unknown names unchanged."""
    return _DTYPES.get(name, name)


# -- guard sources --------------------------------------------------------------------
_FRAME_DICT = re.compile(r"""\b[LG]\[['"]([^'"]+)['"]\]""")
_CHILD = re.compile(r"""\._(?:modules|parameters|buffers)\[['"]([^'"]+)['"]\]""")
_MEMBER = re.compile(r"""\.__dict__\[['"]([A-Za-z_]\w*)['"]\]""")
#: the locals through which torch carries values across a graph break into the resume function
CARRIED_ROOT = re.compile(r"^(?:___stack\d+|__resume_frame_values|___as_tensor\(|___from_numpy\(___stack|___tuple_iterator)")


#: torch's name for a module whose globals an inlined function reads (``G['__import___main__'].z``: the global
#: ``z`` of ``__main__``; ``__import_torch_dot_nn_dot_functional``: ``torch.nn.functional``)
_IMPORTED = re.compile(r"^__import_(?P<module>\w+?)(?=\.|\[|$)")
#: torch's name for a globals dict that is no module's (a function made by ``eval``/``exec`` in a dict of the
#: user's): ``G['___unnamed_scope_139910186543104_c200']['x']`` (torch 2.11) is that dict's global ``x``
_UNNAMED_SCOPE = re.compile(r"""^___unnamed_scope_\d+_c\d+\[(?P<q>['"])(?P<key>[A-Za-z_]\w*)(?P=q)\]""")
#: a NumPy array torch reads as a tensor (``___from_numpy(L['a'])``): the array is the user's value, no carried one
_FROM_NUMPY = re.compile(r"^___from_numpy\((?P<inner>.+)\)$")


def _module_of(m: "re.Match[str]") -> str:
    module = m.group("module").replace("_dot_", ".")
    return "" if module == "__main__" else module


def guard_path(src: str) -> str:
    """A guard source in one readable form: ``L['x']`` -> ``x``, ``G['SCALE']`` -> ``SCALE``,
    ``L['self']._modules['body']._modules['0']._parameters['weight']`` -> ``self.body[0].weight``,
    ``___as_tensor(L['___stack2']).item()`` -> ``___stack2`` (a value carried across a break),
    ``G['__import___main__'].z`` -> ``z`` (a global of ``__main__``, the notebook's or script's namespace, that a
    function torch inlined reads), ``G['__import_helpers'].w`` -> ``helpers.w``,
    ``___from_numpy(L['a'])`` -> ``a`` (a NumPy array; :func:`is_numpy` says so),
    ``G['___unnamed_scope_1399_c200']['x']`` -> ``x`` (a global of a dict that is no module's)."""
    s = (src or "").strip()
    m = re.fullmatch(r"___as_tensor\((?P<inner>.+)\)\.item\(\)", s)
    if m:
        s = m.group("inner")
    if (m := _FROM_NUMPY.match(s)) is not None:
        s = m.group("inner")
    s = _FRAME_DICT.sub(r"\1", s)
    if (m := _UNNAMED_SCOPE.match(s)) is not None:
        s = m.group("key") + s[m.end():]
    if (m := _IMPORTED.match(s)) is not None:
        module = _module_of(m)
        rest = s[m.end():]
        s = f"{module}{rest}" if module else rest.lstrip(".")
    s = _MEMBER.sub(r".\1", s)

    def part(m: "re.Match[str]") -> str:
        name = m.group(1)
        return f"[{name}]" if name.isdigit() else f".{name}"

    return _CHILD.sub(part, s)


_STEP = re.compile(r"""\.(?P<attr>[A-Za-z_]\w*)|\[(?P<index>-?\d+)\]|\[(?P<q>['"])(?P<key>[^'"]*)(?P=q)\]""")


def is_numpy(src: str) -> bool:
    """The guard source is a NumPy array torch reads as a tensor (``___from_numpy(...)``)."""
    return bool(_FROM_NUMPY.match((src or "").strip()))


def path_root(path: str) -> str:
    """The name a readable guard path starts from (``args`` of ``args[0].x``); "" when it starts otherwise."""
    m = re.match(r"[A-Za-z_]\w*", path or "")
    return m.group(0) if m else ""


def path_steps(path: str) -> Optional[list[tuple[str, object]]]:
    """The steps after the root of a readable path, ``[("index", 0), ("attr", "layers"), ("key", "cache")]``;
    None when the path is not only names, constant indices and keys."""
    root = path_root(path)
    rest, out, pos = path[len(root):], [], 0
    while pos < len(rest):
        m = _STEP.match(rest, pos)
        if m is None:
            return None
        if m.group("attr") is not None:
            out.append(("attr", m.group("attr")))
        elif m.group("index") is not None:
            out.append(("index", int(m.group("index"))))
        else:
            out.append(("key", m.group("key")))
        pos = m.end()
    return out


# -- one reason -----------------------------------------------------------------------
_TENSOR = re.compile(r"^tensor '(?P<name>.+?)' (?P<rest>.*)$")
_SIZE = re.compile(r"^(?P<what>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<before>\S+), actual (?P<after>\S+)")
_RANK = re.compile(r"^rank mismatch\. expected (?P<before>\d+), actual (?P<after>\d+)")
_DTYPE = re.compile(r"^dtype mismatch\. expected (?P<before>\w+), actual (?P<after>\w+)")
_GRAD = re.compile(r"^requires_grad mismatch\. expected requires_grad=(?P<before>\d)")
_DEVICE = re.compile(r"device index mismatch\. Expected device index to be (?P<before>\S+), actual (?P<after>\S+)", re.I)
_KEYS = re.compile(r"^dispatch key set mismatch\. expected (?P<before>.+?), actual (?P<after>.+)$")
_TYPE = re.compile(r"^expected type of '(?P<name>.+?)' to be a tensor type, ' but found (?P<after>.+)$")
#: torch 2.14 names the type the compiled version took (a Parameter, a Tensor), not "a tensor type"
_TYPE_EXACT = re.compile(r"^expected type of '(?P<name>.+?)' to be (?P<before><class '[^']+'>), but found (?P<after>.+)$")
_STATE_RE = re.compile(r"^GLOBAL_STATE changed: (?P<what>.+)$")
# ``guard  # code  # file.py:12 in fn (note)``: the guard, the user's code, where torch saw it
_COMMENTED = re.compile(r"^(?P<guard>.+?)\s+#\s(?P<code>.*)\s+#\s(?P<where>\S+:\d+ in \S+?)(?P<note>\s.*)?$")
_EQ = re.compile(r"^(?P<src>.+?) == (?P<value>.+)$")
_IS_NONE = re.compile(r"^(?P<src>.+?) is None$")
_EMPTY = re.compile(r"^not (?P<src>[A-Za-z_][\w.\[\]'\"]*)$")
#: a guard that could not even be checked: the keyword argument it reads is not passed (``KeyError on kwargs['input_ids']``)
_KEY_ERROR = re.compile(r"^KeyError on (?P<src>[A-Za-z_][\w.\[\]'\"]*?)\[(?P<q>['\"])(?P<key>\w+)(?P=q)\]$")
_LEN = re.compile(r"^len\((?P<src>.+)\)$")
_OBJ_ID = re.compile(r"^___check_obj_id\((?P<src>.+?), \d+\)")
_TYPE_ID = re.compile(r"^___check_type_id\((?P<src>.+?), \d+\)")
_LOW_SIZE = re.compile(r"^(?P<low>\d+) <= (?P<src>.+?)\.size\(\)\[(?P<dim>\d+)\](?: <= (?P<high>\d+))?$")
#: a size inside a shape guard's expression (``L['idx'].size()[1]``, ``L['self']._buffers['b'].size()[0]``)
_SIZE_IN = re.compile(r"(?P<src>(?:[LG]\[[^\]]*\]|[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*|\[[^\]]*\])*)\.size\(\)\[(?P<dim>\d+)\]")
_PARAMETER = "Guard failed on a parameter"
_HINT_NAME = re.compile(r'HINT: guard on "(?P<name>[A-Za-z_]\w*)"')
_HASATTR = re.compile(r"^(?P<neg>not )?hasattr\((?P<src>.+), '(?P<name>\w+)'\)$")
#: torch's check that an attribute is (or is not) the object's own, in its ``__dict__``, rather than its class's
_DICT_CONTAINS = re.compile(r"^(?P<neg>not )?___dict_contains\('(?P<name>\w+)', (?P<src>.+)\.__dict__\)$")
_DUPLICATES = re.compile(r"^Duplicate tensors found: \[(?P<names>.*)\]")
_SYMBOL = re.compile(r"\bs\d+\b")


def _type_name(text: str) -> str:
    m = re.search(r"<class '(?:builtins\.)?([\w.]+)'>", text)
    return m.group(1) if m else text.strip()


def _set_source(g: FailedGuard, src: str) -> None:
    g.source, g.path, g.numpy = src.strip(), guard_path(src), is_numpy(src)
    bare = _FROM_NUMPY.sub(r"\g<inner>", g.source)
    if bare.startswith(("G['", 'G["')) and not g.origin:  # a global: its name is the user's
        g.origin, g.name = "global", g.path


def parse_guard_failure(reason: str, failed: Optional[CompileId] = None) -> FailedGuard:
    """One guard-failure reason, read: what was guarded and how it changed (``kind`` ``"other"``
    with torch's words for a reason of no known form). Never raises."""
    try:
        return _parse(reason or "", failed)
    except Exception:  # noqa: BLE001 - a report must survive any text
        first = next((ln for ln in (reason or "").splitlines() if ln.strip()), "")
        return FailedGuard("other", failed_compile_id=failed, reason=" ".join(first.split()))


def _parse(reason: str, failed: Optional[CompileId]) -> FailedGuard:
    first = next((ln for ln in reason.splitlines() if ln.strip()), "").strip()
    g = FailedGuard("other", failed_compile_id=failed, reason=" ".join(first.split()))
    m = _TENSOR.match(first)
    if m:
        rest = m.group("rest")
        _set_source(g, m.group("name"))
        if (s := _SIZE.match(rest)) is not None:
            g.kind = s.group("what")
            g.dim, g.before, g.after = int(s.group("dim")), s.group("before"), s.group("after").rstrip(".")
            g.parameter = _PARAMETER in rest
            if g.kind == "size" and (g.after in ("0", "1") or g.before in ("0", "1")):
                g.kind = "size_0_1"
        elif (s := _RANK.match(rest)) is not None:
            g.kind, g.before, g.after = "rank", s.group("before"), s.group("after")
        elif (s := _DTYPE.match(rest)) is not None:
            g.kind, g.before, g.after = "dtype", torch_dtype(s.group("before")), torch_dtype(s.group("after"))
        elif (s := _GRAD.match(rest)) is not None:
            before = s.group("before") == "1"
            g.kind, g.before, g.after = "requires_grad", str(before), str(not before)
        elif (s := _DEVICE.search(rest)) is not None:
            g.kind, g.before, g.after = "device", s.group("before"), s.group("after")
        elif (s := _KEYS.match(rest)) is not None:
            g.kind, g.before, g.after = "dispatch_keys", s.group("before"), s.group("after")
        return g
    if (m := _TYPE.match(first)) is not None:
        _set_source(g, m.group("name"))
        g.kind, g.before, g.after = "type", "Tensor", _type_name(m.group("after"))
        return g
    if (m := _TYPE_EXACT.match(first)) is not None:
        _set_source(g, m.group("name"))
        g.kind, g.before, g.after = "type", _type_name(m.group("before")), _type_name(m.group("after"))
        return g
    if (m := _STATE_RE.match(first)) is not None:
        g.kind, g.path, g.origin = "global_state", m.group("what").strip(), "state"
        return g
    if (m := _DUPLICATES.match(first)) is not None:
        g.kind, g.path = "aliasing", ", ".join(guard_path(n) for n in re.findall(r'"([^"]+)"', m.group("names")))
        return g
    m = _COMMENTED.match(first)
    guard = m.group("guard").strip() if m else first
    if m:
        g.code, g.where, g.note = m.group("code").strip(), m.group("where"), (m.group("note") or "").strip()
        hint = _HINT_NAME.search(g.note)
        if hint and "__closure__" in guard:  # torch names the variable the closure holds
            g.closure_of = g.where.rsplit(" in ", 1)[-1]
            g.name, g.origin = hint.group("name"), "closure"
    if (h := _HASATTR.match(guard)) is not None:
        _set_source(g, h.group("src"))
        g.kind, g.path = "attribute", f"{g.path}.{h.group('name')}"
        g.before, g.after = ("absent", "present") if h.group("neg") else ("present", "absent")
        return g
    if (h := _DICT_CONTAINS.match(guard)) is not None:  # the attribute moved between the class and the instance
        _set_source(g, h.group("src"))
        g.kind, g.path = "attribute", f"{g.path}.{h.group('name')}"
        g.before, g.after = ("the class's", "the instance's own") if h.group("neg") else ("the instance's own", "the class's")
        return g
    if (h := _IS_NONE.match(guard)) is not None and m:  # `mask is None` (with the user's line): None when compiled
        _set_source(g, h.group("src"))
        g.kind, g.before = "value", "None"
        return g
    if (h := _KEY_ERROR.match(guard)) is not None and guard_path(h.group("src")).rsplit(".", 1)[-1] == "kwargs":
        _set_source(g, h.group("src"))  # the call no longer passes a keyword the compiled version read
        g.kind, g.before, g.after = "keywords", f"{h.group('key')}=", ""
        return g
    if (h := _EMPTY.match(guard)) is not None:  # `not kwargs`: a container that was empty when compiled
        _set_source(g, h.group("src"))
        g.kind, g.before = "length", "0"
        return g
    if (h := _LOW_SIZE.match(guard)) is not None and h.group("high") is None and int(h.group("low")) > 2:
        # `11 <= x.size()[0]` from the user's `if x.shape[0] > 10`: a condition the code asked of the dynamic size,
        # which this call's size misses (no 0/1 specialisation: that bound is 2)
        _set_source(g, h.group("src"))
        g.dim, g.kind, g.before = int(h.group("dim")), "symbolic", f">= {h.group('low')}"
    elif (h := _LOW_SIZE.match(guard)) is not None and h.group("high") is None:  # `2 <= s <= 8`: either bound (symbolic)
        _set_source(g, h.group("src"))
        g.dim, g.kind, g.before = int(h.group("dim")), "size_0_1", f">= {h.group('low')}"
    elif (h := _EQ.match(guard)) is not None:
        src, value = h.group("src").strip(), h.group("value").strip()
        if (ln := _LEN.match(src)) is not None:
            _set_source(g, ln.group("src"))
            g.kind = "length"
        else:
            _set_source(g, src)
            g.kind = ("training" if g.path.endswith(".training")
                      else "global" if src.startswith(("G['", 'G["')) else "value")
        g.before = value
    elif (h := _OBJ_ID.match(guard)) is not None:
        _set_source(g, h.group("src"))
        g.kind = "identity"
    elif (h := _TYPE_ID.match(guard)) is not None:
        _set_source(g, h.group("src"))
        g.kind = "type"
    elif m and (".size()" in guard or ".stride()" in guard or "Eq(" in guard or _SYMBOL.search(guard)):
        g.kind = "symbolic"
    return g


# -- guard trees ----------------------------------------------------------------------
_GUARD_LINE = re.compile(r"^[\s|]*\+- (?P<type>[A-Z_]+): (?P<expr>.*?)(?:\s+#\s.*)?$")
_TENSOR_TYPE = re.compile(r"^check_tensor\(.+?, (?P<type>[A-Za-z_][\w.]*), ")


def _tensor_src(expr: str) -> str:
    """The tensor of a ``check_tensor(SRC, Tensor, ...)`` guard."""
    i = expr.find("check_tensor(")
    if i < 0:
        return ""
    depth, start = 0, i + len("check_tensor(")
    for j in range(start, len(expr)):
        ch = expr[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return expr[start:j].strip()
    return ""


def _ints(expr: str, key: str) -> list[Optional[int]]:
    m = re.search(rf"\b{key}=\[(?P<body>[^\]]*)\]", expr)
    if not m:
        return []
    out: list[Optional[int]] = []
    for p in m.group("body").split(","):
        p = p.strip()
        if p:
            out.append(int(p) if re.fullmatch(r"-?\d+", p) else None)
    return out


def parse_guard_tree(tree: str) -> list[GuardEntry]:
    """Each guard of a printed guard tree (``GuardManager`` lines skipped). Never raises."""
    out: list[GuardEntry] = []
    try:
        for line in (tree or "").splitlines():
            m = _GUARD_LINE.match(line)
            if m is None:
                continue
            t, expr = m.group("type"), m.group("expr").strip()
            e = GuardEntry(t, expr)
            if t == "TENSOR_MATCH" and (src := _tensor_src(expr)):
                e.path, e.sizes, e.strides = guard_path(src), _ints(expr, "size"), _ints(expr, "stride")
                tt = _TENSOR_TYPE.match(expr)
                e.tensor_type = tt.group("type") if tt else ""
            elif (low := _LOW_SIZE.match(expr)) is not None:
                e.path, e.dim, e.lower_bound = guard_path(low.group("src")), int(low.group("dim")), int(low.group("low"))
                e.upper_bound = int(low.group("high")) if low.group("high") else None
                e.readable = f"{e.lower_bound} <= {e.path}.size()[{e.dim}]" + (
                    f" <= {e.upper_bound}" if e.upper_bound is not None else "")
            elif ".size()[" in expr and ".stride()" not in expr and "check_tensor(" not in expr:
                # a shape guard relating sizes (``L['idx'].size()[1] != 16``): the code compared them; the
                # stride guards (``x.stride()[0] == x.size()[1]``) say a layout, not a comparison of the code's
                e.compared_sizes = [f"{guard_path(m.group('src'))}.size()[{m.group('dim')}]" for m in _SIZE_IN.finditer(expr)]
                e.readable = _SIZE_IN.sub(lambda m: f"{guard_path(m.group('src'))}.size()[{m.group('dim')}]", expr)
            elif (eq := _EQ.match(expr)) is not None:
                src, value = eq.group("src").strip(), eq.group("value").strip()
                ln = _LEN.match(src)
                if ln:
                    e.path, e.length = guard_path(ln.group("src")), int(value) if value.isdigit() else None
                else:
                    e.path, e.value = guard_path(src), value
            elif (none := _IS_NONE.match(expr)) is not None:
                e.path, e.value = guard_path(none.group("src")), "None"
            elif (oid := _OBJ_ID.match(expr) or _TYPE_ID.match(expr)) is not None:
                e.path = guard_path(oid.group("src"))
            out.append(e)
    except Exception:  # noqa: BLE001 - a report must survive any text
        pass
    return out
