"""An operator whose output shape depends on the data and that has no meta kernel able to say
so (GB0037, e.g. ``aten.linalg_lstsq``): torch cannot trace it, even with
``capture_dynamic_output_shape_ops``, so it runs outside the graph. Nothing in the user's
code removes the break but not calling that op in the compiled code; name the op."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained



def applies(f: Facts) -> bool:
    return f.code == "GB0037" or f.kind.startswith("Dynamic shape operator (no meta kernel)")


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    op = f"`{f.said.operator}`" if f.said.operator else "this operator"
    return explained(
        Kind.NO_META_KERNEL, f"{op} has no meta kernel for its data-dependent output shape: it runs outside the graph",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls {op}, whose output shape depends on the values "
        "it is given; torch works out shapes while it traces with the op's meta kernel, and this op has none that "
        "can, so the graph breaks there and the op runs eagerly (no setting changes that: "
        "`capture_dynamic_output_shape_ops` needs the meta kernel too). Nothing to fix in the code if the break is "
        "affordable; otherwise compute it outside the compiled function, or with an operator that has one (for a "
        "least-squares solve of a square, well-conditioned system: `torch.linalg.solve`). For an operator of your "
        "own, `torch.library.register_fake` gives it the missing kernel.", f)


RULE = Rule(Kind.NO_META_KERNEL, "an operator without a meta kernel for its data-dependent output shape: it runs "
            "outside the graph; name it, and what to do", applies, fix)
