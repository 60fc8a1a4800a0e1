"""Lossless dataclass <-> JSON-able dict conversion for the report model, and the one
check of values against the model's types.

:func:`from_jsonable` rebuilds a model value from JSON and refuses anything that
does not fit the model (a missing field, a value of the wrong type) with a
:class:`ReportFormatError` naming the field (``compiles[0].start_time``) and what
was expected, so that a loaded report holds well-typed values and renders.
:func:`check_value` is the same check for one value: the trace builder uses it for
the fields it reads from torch's events. :func:`loads` parses JSON with a bound on
nesting (never a ``RecursionError``), with orjson where it is installed (several times
faster than ``json`` on the megabytes of JSON in a large log), falling back to ``json``
for whatever orjson refuses or cannot hold exactly (integers past 64 bits), so both give the same
values and the same errors.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import types
import typing
from typing import Any

from .model import CompileId

try:
    from orjson import loads as _fast_loads
except ImportError:  # orjson is a dependency; without it, json alone
    _fast_loads = json.loads

#: orjson's ``loads`` (``json.loads`` without it), unchecked: no bound on nesting, and an integer
#: past 64 bits made a float. For a caller that checks what it keeps (:func:`loads` for the rest).
fast_loads = _fast_loads

#: JSON nested deeper than this is refused: reports and torch's events nest a few levels;
#: deeper ones could only exhaust the interpreter's stack when the value is saved or shown.
MAX_JSON_DEPTH = 64


class ReportFormatError(ValueError):
    """A value that does not fit the report model (the message names the field and what was expected)."""


class NestingError(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` levels."""


def loads(text: "str | bytes", *, bounded: bool = True) -> Any:
    """``json.loads``, raising ``ValueError`` for text that is not JSON and :class:`NestingError`
    (a ``ValueError``) for JSON nested deeper than :data:`MAX_JSON_DEPTH`, never ``RecursionError``.

    ``bounded=False`` leaves out the check of :data:`MAX_JSON_DEPTH` (still never a
    ``RecursionError``: a value nested deeper than the parsers go raises :class:`NestingError`), for
    a caller that keeps only scalars of the value (a chromium event's name and times) or calls
    :func:`check_depth` on what it keeps."""
    if _long_digits(text):
        value = _json_loads(text)  # an integer orjson would make a float (2**64 and above, below -2**63)
    else:
        try:
            value = _fast_loads(text)
        except ValueError:
            value = _json_loads(text)  # NaN, Infinity, lone surrogates: json's values, or its error
    if bounded and (type(value) is dict or type(value) is list) and _may_nest_over(text, MAX_JSON_DEPTH):
        check_depth(value, text)  # (the quick test first: every line of a log is read here)
    return value


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_DIGITS_AS_ZERO_STR = str.maketrans("123456789", "000000000")


def _long_digits(text: "str | bytes") -> bool:
    """Whether ``text`` holds a run of 19 digits: the only JSON text that can hold an integer orjson
    cannot hold exactly (it makes one of 2**64 and above, or below -2**63, a float), read by ``json``
    instead (a run in a string or a long float's digits only costs the slower parse, with the same
    values). Every digit made a ``0``, then one search: a few times faster than a regex."""
    if isinstance(text, bytes):
        return b"0000000000000000000" in text.translate(_DIGITS_AS_ZERO)
    return "0000000000000000000" in text.translate(_DIGITS_AS_ZERO_STR)


def check_depth(value: Any, text: "str | bytes") -> None:
    """:class:`NestingError` where ``value`` (parsed from JSON ``text``) nests deeper than :data:`MAX_JSON_DEPTH`."""
    if isinstance(value, (dict, list)) and _may_nest_over(text, MAX_JSON_DEPTH) and _depth_over(value, MAX_JSON_DEPTH):
        raise NestingError(f"nested too deeply (more than {MAX_JSON_DEPTH} levels)")


def _json_loads(text: "str | bytes") -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise NestingError(f"nested too deeply (more than {MAX_JSON_DEPTH} levels)") from None


def _may_nest_over(text: "str | bytes", limit: int) -> bool:
    """Whether JSON ``text`` can nest more than ``limit`` levels: every level opens with a
    ``[`` or ``{``, so text with at most ``limit`` of them cannot (counted in C, which
    spares the walk of :func:`_depth_over` for nearly every payload of a log)."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > limit
    return text.count(b"[") + text.count(b"{") > limit


def _depth_over(value: Any, limit: int) -> bool:
    """Whether containers nest more than ``limit`` levels in ``value`` (iteratively, a level
    at a time: no recursion)."""
    level = [value]
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list = []
        for v in level:
            below += [x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, (dict, list))]
        level = below
        depth += 1
    return False


# -- to JSON -----------------------------------------------------------------------
_JSON_SCALARS = (str, int, float, bool, type(None))


def to_jsonable(obj: Any) -> Any:
    """The JSON-able form of a model value; :class:`ReportFormatError` for a value JSON cannot hold."""
    if isinstance(obj, CompileId):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if not isinstance(obj, _JSON_SCALARS):
        raise ReportFormatError(f"a {type(obj).__module__}.{type(obj).__qualname__} value ({_short(obj)}) "
                                "cannot be saved as JSON")
    if isinstance(obj, float) and not math.isfinite(obj):
        return nonfinite_text(obj)
    return obj


#: How a float JSON cannot hold is saved: standard JSON has no Infinity or NaN (``jq`` and
#: ``JSON.parse`` refuse Python's tokens), so they are saved as these strings and read back
#: as floats (in a field typed ``float``, and in free-form fields such as ``Compile.metrics``,
#: where these three strings always read back as floats).
NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def nonfinite_text(value: float) -> str:
    """``"NaN"``, ``"Infinity"`` or ``"-Infinity"``: how a non-finite float is saved."""
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def finite_json(value: Any) -> Any:
    """``value`` (JSON-able: dicts, lists, scalars) with every non-finite float written as
    :func:`nonfinite_text`, so that ``json.dumps(..., allow_nan=False)`` takes it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else nonfinite_text(value)
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def _any_value(data: Any) -> Any:
    """A free-form (``Any``) value as saved, with :data:`NONFINITE`'s strings read back as floats."""
    if isinstance(data, str):
        return NONFINITE.get(data, data) if len(data) <= 9 else data
    if isinstance(data, dict):
        return {k: _any_value(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_any_value(v) for v in data]
    return data


def unjsonable_field(obj: Any, where: str = "report") -> str:
    """Where in ``obj`` the first value JSON cannot hold is (``report.profile.settings.params['dtype']``), or ""."""
    stack = [(obj, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, CompileId) or isinstance(v, _JSON_SCALARS):
            continue
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend((getattr(v, f.name), f"{at}.{f.name}") for f in reversed(dataclasses.fields(v)))
        elif isinstance(v, dict):
            stack.extend((x, f"{at}[{k!r}]") for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f"{at}[{i}]") for i, x in reversed(list(enumerate(v))))
        else:
            return at
    return ""


# -- from JSON, checked ----------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    import sys

    module = sys.modules[cls.__module__]
    return typing.get_type_hints(cls, vars(module))


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _short(value: Any, n: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _got(value: Any) -> str:
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}")
    return f"{kind} ({_short(value)})" if not isinstance(value, (dict, list)) else kind


def describe(tp: Any) -> str:
    """A type of the model in words: ``a number``, ``a list of strings``, ``null or an integer``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else describe(a) for a in typing.get_args(tp))
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        if item is Any:
            return "a list"
        plural = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}.get(item)
        return f"a list of {plural}" if plural else f"a list, each {describe(item)}"
    if origin is dict:
        return "an object"
    if _is_enum(tp):
        return "a string (" + ", ".join(repr(m.value) for m in tp) + ")"
    if tp is CompileId:
        return "a compile id ('frame/compile', e.g. '0/1')"
    if dataclasses.is_dataclass(tp):
        return f"an object ({tp.__name__})"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false", Any: "any JSON value"}.get(
        tp, getattr(tp, "__name__", str(tp)))


def check_value(tp: Any, value: Any, where: str) -> Any:
    """``value`` if it fits the model type ``tp`` (as loaded from JSON: a compile id as its text),
    else :class:`ReportFormatError` naming ``where`` and what was expected."""
    return from_jsonable(tp, value, where)


def from_jsonable(tp: Any, data: Any, where: str = "report") -> Any:
    """Rebuild a value of type ``tp`` from what :func:`to_jsonable` produced, checking every
    field against the model: :class:`ReportFormatError` names the first that does not fit."""
    if tp is Any:
        return _any_value(data)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return from_jsonable(options[0], data, where)
        for a in options:
            try:
                return from_jsonable(a, data, where)
            except ReportFormatError:
                continue
        raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
    if _is_enum(tp):  # a closed set saved as its value; a value this version does not know stays as saved
        if isinstance(data, str):
            try:
                return tp(data)
            except ValueError:
                return data
        raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
    if tp is CompileId:
        if isinstance(data, str):
            try:
                return CompileId.parse(data)
            except ValueError:
                pass
        raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_jsonable(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ReportFormatError(f"{where}: the field {f.name!r} ({describe(hints[f.name])}) is missing")
        return tp(**kwargs)
    if origin is list:
        if not isinstance(data, list):
            raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
        (item,) = typing.get_args(tp) or (Any,)
        return [from_jsonable(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")
        _, value = typing.get_args(tp) or (str, Any)
        return {k: from_jsonable(value, v, f"{where}[{k!r}]") for k, v in data.items()}
    if tp is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return data
        if isinstance(data, str) and data in NONFINITE:  # how to_jsonable saves inf and nan
            return NONFINITE[data]
    elif tp is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        if isinstance(data, float) and data.is_integer() and math.isfinite(data):  # 3.0 written by another tool
            return int(data)
    elif isinstance(tp, type) and isinstance(data, tp):
        return data
    raise ReportFormatError(f"{where}: expected {describe(tp)}, got {_got(data)}")


#: The keys of ``python -m ipycompile report --json DIR`` (a job's summary, not a report).
_JOB_SUMMARY_KEYS = frozenset({"path", "files", "ignored", "divergence", "summaries"})


def report_from_dict(cls: type, data: Any, version: int) -> Any:
    """A :class:`~ipycompile.report.CompileReport` from its JSON form, checked: a clear
    :class:`ReportFormatError` for JSON that is not a report, or a report that renders."""
    if not isinstance(data, dict):
        raise ReportFormatError(f"a report is a JSON object, got {_got(data)}")
    if _JOB_SUMMARY_KEYS <= set(data) and "schema_version" not in data:
        raise ReportFormatError("this is a job summary written by `python -m ipycompile report --json DIR`, not a "
                                "report: its 'summaries' hold one report per rank (CompileReport.from_dict of each)")
    if "schema_version" not in data:
        keys = ", ".join(map(repr, list(data)[:6])) or "none"
        raise ReportFormatError(f"not an ipycompile report: it has no 'schema_version' (its keys: {keys})")
    found = data["schema_version"]
    if not isinstance(found, int) or isinstance(found, bool):
        raise ReportFormatError(f"report.schema_version: expected an integer, got {_got(found)}")
    if found > version:
        raise ReportFormatError(f"report schema_version {found} is newer than this ipycompile understands "
                                f"({version}); upgrade ipycompile to read it")
    return from_jsonable(cls, data)
