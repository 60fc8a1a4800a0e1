"""A custom op torch cannot run on fake tensors (GB0087: its fake raises NotImplementedError;
GB4315: it has none): the `register_fake` skeleton for that op, by its name."""

from __future__ import annotations

import re
from typing import Optional

from ....report.model import Confidence, Kind, Suggestion
from ..base import Context, Facts, Rule

_NODE = re.compile(r"call_function (?P<ns>\w+)\.(?P<op>\w+)(?:\.\w+)?\(\*\((?P<args>.*?)\),? \*\*\{(?P<kw>.*?)\}\): got "
                   r"(?P<error>NotImplementedError|RuntimeError\('There was no fake impl registered)", re.S)
_ARG = re.compile(r"FakeTensor\(\.\.\., size=\([^)]*\)\)|[^,]+")


def applies(f: Facts) -> bool:
    return f.code in ("GB0087", "GB4315") and bool(_NODE.search(f.explanation or f.text))


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    m = _NODE.search(f.explanation or f.text)
    if m is None or m.group("kw").strip():
        return None
    qualname = f"{m.group('ns')}::{m.group('op')}"
    args = [a.strip() for a in _ARG.findall(m.group("args")) if a.strip()]
    tensors = [i for i, a in enumerate(args) if a.startswith("FakeTensor")]
    if not tensors:
        return None
    names = [f"x{i}" if i in tensors else f"arg{i}" for i in range(len(args))]
    first = names[tensors[0]]
    missing = "has no fake implementation" if "no fake impl" in m.group("error") else "has a fake implementation that raises NotImplementedError"
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
