"""`nonzero` and other ops whose output shape depends on the data:
`torch._dynamo.config.capture_dynamic_output_shape_ops = True`."""

from __future__ import annotations

import re
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..base import Context, Facts, Rule, path, reset_note


#: The ops torch 2.13 keeps in the graph with this setting (their meta kernels give a symbolic
#: size); another op (``linalg_lstsq``) only moves the break to its missing meta kernel.
SUPPORTED = {"nonzero", "argwhere", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
             "unique_consecutive", "repeat_interleave", "index", "nonzero_static"}


def applies(f: Facts) -> bool:
    return (f.code == "GB0036" or f.kind.startswith("Dynamic shape operator")) and "(no meta kernel)" not in f.kind


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    op = re.search(r"aten\.(\w+)", f.context or f.explanation or "")
    if op is None or op.group(1) not in SUPPORTED:
        return None
    name = op.group(1)
    where = "library code you cannot edit" if f.in_library else "your code"
    return Suggestion(
        "Let torch trace data-dependent output shapes: capture_dynamic_output_shape_ops",
        f"`{name}` at {path(ctx, f)} (in {where}) returns a tensor whose size depends on the values of its input, "
        "so torch stops the graph there. With this setting torch keeps it in the graph with a symbolic size. Code "
        "that then branches on that size, or loops over its elements, still breaks. " + reset_note(),
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True", Confidence.MEDIUM,
        Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)


RULE = Rule(Kind.CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, "`nonzero` and other ops whose output shape depends on data: "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`", applies, fix)
