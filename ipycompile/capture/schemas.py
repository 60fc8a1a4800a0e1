"""The schemas of the custom operators a report's breaks and failures name (a custom op with no
working fake), read from torch's operator registry while the capture closes, when the ops are
still registered in this process: argument names and types, and the results' types, as plain
records (:class:`~ipycompile.report.model.OpSchema`) the doctor writes a ``register_fake`` from."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

from ..report.model import OpArgument, OpSchema

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["op_schemas", "schema_record"]


def op_schemas(report: "CompileReport") -> list[OpSchema]:
    """One schema per custom op named by a break or failure of ``report`` (``TorchDetail.fake_op``),
    where torch is loaded and still knows it; none otherwise (a log read in another process)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    out: list[OpSchema] = []
    seen: set[tuple[str, str]] = set()
    for item in [*report.graph_breaks, *report.failures]:
        name, overload = item.said.fake_op, item.said.fake_overload
        if not name or "::" not in name or (name, overload) in seen:
            continue
        seen.add((name, overload))
        schema = _lookup(torch, name, overload)
        if schema is not None:
            out.append(schema_record(schema, name, "" if overload in ("", "default") else overload))
    return out


def _lookup(torch: Any, name: str, overload: str) -> Any:
    ns, op = name.split("::", 1)
    try:
        packet = getattr(getattr(torch.ops, ns), op)
        overloads = list(packet.overloads())
        chosen = overload if overload in overloads else ("default" if "default" in overloads else overloads[0])
        return getattr(packet, chosen)._schema
    except Exception:  # noqa: BLE001 - an op gone or never registered here: no schema, the doctor says less
        return None


def schema_record(schema: Any, name: str, overload: str = "") -> OpSchema:
    """A ``torch._C.FunctionSchema`` as a plain record."""
    args: list[OpArgument] = []
    for a in schema.arguments:
        default: Optional[str] = None
        if a.has_default_value():
            default = _default_text(a.default_value)
        alias = getattr(a, "alias_info", None)
        args.append(OpArgument(a.name, str(a.type), default, bool(a.kwarg_only), bool(alias is not None and alias.is_write)))
    return OpSchema(name, overload, args, [str(r.type) for r in schema.returns], str(schema))


def _default_text(value: Any) -> str:
    """A default as Python source (a string keeps its quotes; torch's dtype and layout defaults print as
    themselves)."""
    if isinstance(value, (bool, int, float, str, type(None), list, tuple)):
        return repr(value)
    return str(value)
