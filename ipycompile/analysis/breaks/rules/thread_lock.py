"""A threading lock taken inside compiled code (GB0142, "Unsupported context manager", where the
context manager torch could not enter is a ``lock`` / ``RLock``: capture reads the type torch names
into ``TorchDetail.context_manager``).

torch cannot enter a lock while it traces (a lock orders threads at run time; a graph has no threads),
so the graph breaks at the ``with``. In the user's code, the lock belongs around the compiled call;
in a library's code, the library takes it inside the user's call and no change of the user's moves it
(transformers takes one while it installs its output-capturing hooks, the first time a call asks for
``output_attentions`` / ``output_hidden_states``)."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained
from ._calls import in_your_call

LOCKS = frozenset({"lock", "RLock", "_RLock", "Lock", "Semaphore", "BoundedSemaphore", "Condition"})


def applies(f: Facts) -> bool:
    return (f.code == "GB0142" or f.kind.startswith("Unsupported context manager")) and \
        f.said.context_manager in LOCKS


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    where = f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)}"
    why = (f"torch cannot enter a threading `{f.said.context_manager}` while it compiles (torch: `{f.explanation}`): "
           "a lock orders threads at run time, and a graph has none, so the graph breaks at the `with`.")
    if not f.in_library:
        return explained(
            Kind.THREAD_LOCK, f"A threading lock is taken inside the compiled code, at {ctx.where(f.stop)}",
            f"{where} takes a lock inside the compiled code. {why} Take the lock around the compiled call instead "
            "(outside the compiled function), where it orders the threads that call it.", f)
    mine = in_your_call(f, ctx)
    return explained(
        Kind.THREAD_LOCK, f"Library code takes a threading lock{' inside your call' if mine else ''}: the graph "
        "breaks there",
        f"{where}, in library code you do not own, takes a lock{mine}. {why} The lock is the library's, not a line "
        "of yours, so no change of yours moves it. Where the library takes it only for a one-time set-up on the "
        "first call that needs it (transformers does, to install the hooks for `output_attentions` / "
        "`output_hidden_states`), make that call once without compiling, before the compiled calls (`with "
        "torch.compiler.set_stance(\"force_eager\"):` around it).", f)


RULE = Rule(Kind.THREAD_LOCK, "a threading lock taken inside compiled code: take it around the compiled call, or, in "
            "a library's one-time set-up, make that first call without compiling", applies, fix)
