"""A data-dependent branch on a value from Python's ``random`` module (GB0170 where torch's trace of
the condition names a ``random_value_N: graph input``; capture reads the lines that drew them into
``TorchDetail.branch_random``).

torch does not bake a Python ``random`` value into the graph: it draws it again, in Python, each
time the compiled code runs (``OutputGraph.random_calls``; the draws keep the random sequence of the
code without torch.compile) and passes it to the graph as an input. An ``if`` on it is an ``if`` on
a graph input: which side runs is known only when the graph runs, so torch ends the graph there on
every call (LayerDrop, ``if random.uniform(0, 1) < p: continue``, as BART and Wav2Vec2 wrote it:
pytorch/pytorch#95425). Results are unchanged; the cost is the split graphs. No rewrite of ours is
proven for it: the answer says what happens and the ways out, with torch's hints. It is tried before
the ``torch.where`` / ``torch.cond`` rewrites: without torch.compile the condition is a Python bool,
which ``torch.where`` rejects (``torch.where(random.uniform(0, 1) < p, a, b)`` raises a TypeError)."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..base import Context, Facts, Rule, explained
from ._branch import is_branch


def applies(f: Facts) -> bool:
    return is_branch(f) and bool(f.said.branch_random)


def fix(f: Facts, ctx: Context) -> Optional[Suggestion]:
    drawn = f.said.branch_random
    lines = ", ".join(f"`{d.source_line.strip()}` at {ctx.where(d)}" for d in drawn if d.filename) or \
        "torch does not say which line drew it"
    which = "a value" if len(drawn) == 1 else "values"
    return explained(
        Kind.RANDOM_BRANCH, f"The branch at {ctx.where(f.stop)} depends on a Python `random` value, drawn anew on "
        "every call",
        f"`{f.stop.source_line.strip()}` at {ctx.where(f.stop)} branches on {which} from Python's `random` module: "
        f"{lines}. torch does not fix such a value when it compiles: it draws it again in Python each time the "
        "compiled code runs (the same random sequence as without torch.compile) and passes it to the graph as an "
        "input (torch: `random_value_0: graph input`). An `if` on it is a data-dependent branch: which side runs "
        "is known only when the graph runs, so torch ends the graph before the `if` on every call and runs the "
        "branch in Python. Results are those of the code without torch.compile; the cost is the split graphs. "
        "To keep one graph, the choice has to become tensor code that computes both sides (`torch.where` on a "
        "tensor condition, or `torch.cond`, torch's hint), or the draw and the branch have to stay outside the "
        "compiled code (compile what the branch chooses between, for a loop over layers each layer, not the "
        "loop). A `torch.rand` draw changes the random numbers from those of `random`.", f)


RULE = Rule(Kind.RANDOM_BRANCH, "a branch on a Python `random` value: torch draws it anew on every call and passes it "
            "to the graph, so the branch is data-dependent; what that costs and the ways out", applies, fix)
