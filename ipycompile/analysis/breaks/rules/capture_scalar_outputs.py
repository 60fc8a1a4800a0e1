"""`.item()` / `int(t)` whose Python number is needed (a size, an argument), in the user's
code or a library: `torch._dynamo.config.capture_scalar_outputs = True`.

Only where the line torch stopped at shows the conversion and the tensor it converts
provably holds one element (``x.sum().item()``): with the setting, a conversion of a
tensor of several elements (``x.shape[torch.tensor([1, 1])]``, whose index torch turns
into ``.item()``) makes the compile raise instead of break. Where that cannot be told,
no fix is offered (torch's own words are shown)."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Fix, Kind, Setting, Suggestion
from ..base import Context, Facts, Rule, explained, path, reset_note, statement_at
from ._scalar import converted, is_item, is_tolist, one_element, scalar_calls, tolist_calls

CONFIG = Fix(settings=[Setting("dynamo", "capture_scalar_outputs", "True")])


def applies(f: Facts) -> bool:
    return is_item(f) or is_tolist(f)


def _holds(f: Facts, ctx: Context) -> bool:
    """The line converts (``.item()``, ``int(t)``, ``float(t)``) only one-element tensors, or
    is a ``.tolist()`` (each element becomes a symbolic number, whatever the count)."""
    p, stmt = statement_at(f.stop, ctx)
    if stmt is None:
        return False
    if is_tolist(f):
        return bool(tolist_calls(stmt, f.stop.lineno))
    calls = scalar_calls(stmt, f.stop.lineno)
    return bool(calls) and all(one_element(p, converted(c)) for c in calls)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    if f.code == "GB0109":  # torch traces `.tolist()` of integer tensors only: no setting changes that
        return explained(
            Kind.CAPTURE_SCALAR_OUTPUTS, "`.tolist()` of a floating-point tensor: no setting keeps it in the graph",
            f"{path(ctx, f)} calls `.tolist()` on a tensor that is not of an integer dtype; torch traces `.tolist()` "
            "of integer tensors only (as symbolic integers, with `capture_scalar_outputs`), so this one breaks the "
            "graph with that setting or without it. Nothing to fix if the break is affordable; otherwise work on the "
            "tensor itself (tensor operations instead of a Python loop over its values), or convert it outside the "
            "compiled function.", f)
    if not _holds(f, ctx):
        return None
    if f.in_library:
        return Suggestion.of(
            "Let torch keep the library's .item() in the graph: capture_scalar_outputs",
            f"{path(ctx, f)} turns a tensor into a Python number (`{f.stop.source_line.strip()}`), in code you "
            "cannot edit. With this setting torch traces it as a symbolic number and the graph goes on. "
            + reset_note(), CONFIG, Confidence.MEDIUM, Kind.CAPTURE_SCALAR_OUTPUTS)
    return Suggestion.of(
        "Let torch trace the Python number: capture_scalar_outputs",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} turns a tensor into a Python number, and the code uses it as one (a size, an "
        "argument), not only in tensor arithmetic. With this setting torch traces the number symbolically and the "
        "graph goes on; code that branches on the number still breaks. " + reset_note(),
        CONFIG, Confidence.MEDIUM, Kind.CAPTURE_SCALAR_OUTPUTS)


RULE = Rule(Kind.CAPTURE_SCALAR_OUTPUTS, "`.item()` / `int(t)` / `.tolist()` whose Python numbers are needed: "
            "`torch._dynamo.config.capture_scalar_outputs = True`", applies, fix)
