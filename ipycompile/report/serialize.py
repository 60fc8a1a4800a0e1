"""Generic, lossless dataclass <-> JSON-able dict conversion for the report model."""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any

from .model import CompileId


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, CompileId):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    import sys

    module = sys.modules[cls.__module__]
    return typing.get_type_hints(cls, vars(module))


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def from_jsonable(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` from what :func:`to_jsonable` produced."""
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return from_jsonable(args[0], data)
        enums = [a for a in args if _is_enum(a)]
        return from_jsonable(enums[0], data) if enums else data
    if _is_enum(tp):  # a closed set saved as its value; a value this version does not know stays as saved
        try:
            return tp(data)
        except ValueError:
            return data
    if tp is CompileId:
        return CompileId.parse(data)
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_jsonable(hints[f.name], data[f.name])
        return tp(**kwargs)
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return [from_jsonable(item, v) for v in data]
    if origin is dict:
        _, value = typing.get_args(tp) or (str, Any)
        return {k: from_jsonable(value, v) for k, v in data.items()}
    return data
