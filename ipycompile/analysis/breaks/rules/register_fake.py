"""A custom op torch cannot run on fake tensors (GB0087: its fake raises NotImplementedError;
GB4315: it has none): the `register_fake` skeleton for that op, by its name."""

from __future__ import annotations

from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..base import Context, Facts, Rule



def applies(f: Facts) -> bool:
    return f.code in ("GB0087", "GB4315") and bool(f.said.fake_op)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    d = f.said
    if not d.fake_op or d.fake_kwargs:
        return None
    qualname = d.fake_op
    args = list(d.fake_args)
    tensors = [i for i, a in enumerate(args) if a.startswith("FakeTensor")]
    if not tensors:
        return None
    names = [f"x{i}" if i in tensors else f"arg{i}" for i in range(len(args))]
    first = names[tensors[0]]
    missing = "has no fake implementation" if d.fake_missing else "has a fake implementation that raises NotImplementedError"
    code = "\n".join([
        "import torch",
        "",
        f'@torch.library.register_fake("{qualname}")  # once, where the op is defined',
        f"def _({', '.join(names)}):",
        f"    return torch.empty_like({first})  # a tensor of the result's shape and dtype: adapt if they differ",
    ])
    return Suggestion(
        f"Give the custom op `{qualname}` a fake implementation",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} calls the custom op `{qualname}`, which {missing}. "
        "torch runs every op on fake tensors (shapes and dtypes, no data) while it traces, so it cannot go on. "
        "Register a fake: a function of the same arguments that returns an empty tensor of the result's shape "
        f"and dtype, without computing anything. The code below assumes the result is shaped like `{first}`, "
        f"the op's first tensor argument; return `{first}.new_empty(...)` with the right shape where it is not."
        + (" (An existing fake that raises must be replaced: `register_fake` on the op's `CustomOpDef`, or "
           "`torch.library.register_fake(..., allow_override=True)` where the torch version has it.)"
           if "raises" in missing else ""),
        code, Confidence.MEDIUM, Kind.REGISTER_FAKE)


RULE = Rule(Kind.REGISTER_FAKE, "a custom op with no working fake implementation: the `register_fake` skeleton "
            "naming that op", applies, fix)
