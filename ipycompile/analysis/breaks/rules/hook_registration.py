"""Registering a hook inside compiled code (GB0467, "setattr() on unsupported type", where the class
torch could not set an attribute of is ``torch.utils.hooks.RemovableHandle``: capture reads the class
and the attribute from torch's context into ``TorchDetail.setattr_type`` / ``setattr_name``).

``register_forward_hook`` (and every ``register_*_hook``) returns a ``RemovableHandle``, whose
constructor counts handles in a class attribute (``RemovableHandle.next_id += 1``); torch does not
set attributes of a class while it traces, so the graph breaks at the registration. Where it is made:
the innermost frame of the break's stack outside torch's own code. In the user's code, the answer is
to register the hook before the compiled call; in a library's code, the library registers it inside
the user's call (transformers installs its output-capturing hooks the first time a call asks for
``output_attentions`` / ``output_hidden_states``): nothing in the user's code can move it, and a call
made once without compiling registers it before the compiled calls."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ....report.owners import Owner
from ..base import Context, Facts, Rule, explained
from ._calls import in_your_call

HANDLE = "torch.utils.hooks.RemovableHandle"


def applies(f: Facts) -> bool:
    return (f.code == "GB0467" or f.kind.startswith("setattr() on unsupported type")) and f.said.setattr_type == HANDLE


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    who = next((fr for fr in reversed(f.stack) if fr.filename and ctx.report.owner(fr.filename) is not Owner.TORCH),
               None)
    torch_says = (f"torch: `{f.explanation}`" if f.explanation else "") + (
        f", on `setattr({HANDLE}, '{f.said.setattr_name}', ...)`" if f.said.setattr_name else "")
    why = ("Registering a hook (`register_forward_hook` and the other `register_*_hook` methods) makes a "
           f"`{HANDLE}`, which counts its handles in an attribute of its class, and torch does not set attributes of "
           f"a class while it compiles ({torch_says}): the graph breaks at the registration.")
    if who is None:
        return None
    where = f"`{who.source_line.strip()}` at {ctx.where(who)}"
    if not ctx.library(who.filename):
        return explained(
            Kind.HOOK_REGISTRATION, f"A hook is registered inside the compiled code, at {ctx.where(who)}",
            f"{where} registers a hook inside the compiled code. {why} Register the hook before the compiled call "
            "(outside the compiled function; remove it after the call with its handle, `handle.remove()`, where it "
            "is meant for that call only): torch traces the hooks a module already has, and the registration no "
            "longer breaks the graph. Registered inside the function, a hook is also added again on every call, "
            "and each call runs all those added before it.", f)
    mine = in_your_call(f, ctx)
    return explained(
        Kind.HOOK_REGISTRATION, f"Library code registers a hook{' inside your call' if mine else ''}: the graph breaks "
        "there",
        f"{where}, in library code you do not own, registers a hook{mine}. {why} The registration is the library's, "
        "not a line of yours, so no change of yours moves it. Where the library registers its hooks once, the first "
        "time a call asks for them (transformers does so for `output_attentions` / `output_hidden_states`), make that "
        "call once without compiling, before the compiled calls (`with torch.compiler.set_stance(\"force_eager\"):` "
        "around it): the hooks are then in place and later compiled calls do not register them again.", f)


RULE = Rule(Kind.HOOK_REGISTRATION, "a hook registered inside compiled code (`register_forward_hook` in the user's code "
            "or a library's): register it before the compiled call, or make the library's first such call without "
            "compiling", applies, fix)
